"""--optimize size (codegen/passes/kernel_select.py): int8 weights in flash, same outputs.

* The kernels on int8 weights alone: tests/kernels/test_int8_weight_kernels.py.
* Whole models against the golden vectors: ad01 (two float FC layers) and
  ic01 (six float convs with fma segments) under `ort`, kws01 under `tflite`
  (TFLM's outputs), tinyaot's own models under `ort`, on the host; four of
  them under ASan + UBSan; ad01 `ort` on qemu-m55, where the speed build does
  not fit.
* Flash: the size build's constant data against the int8 weight bytes counted
  in the ONNX file itself (an independent number), and below the speed build's.
* The option is validated and the flash budget error suggests it.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from codegen.cli import main
from codegen.compiler import compile_model
from codegen.errors import TinyAotError
from codegen.targets.boards import board_or_error
from codegen.driver.verify import default_golden_key, load_golden, run_model, verify_model

from tests.helpers.env import require_arm_toolchain, shared_model


# ------------------------------------------------------------------ whole models

def onnx_int8_weight_bytes(path):
    """Bytes of the model's int8 / uint8 weight tensors (rank >= 2), read from the ONNX
    file itself: what the weights take stored one byte each."""
    m = onnx.load(str(path))
    return sum(numpy_helper.to_array(t).size for t in m.graph.initializer
               if t.data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
               and len(t.dims) >= 2)


def _channels(c):
    """Output channels of the conv / FC layers (per-channel parameters: bias, scales)."""
    g = c.graph
    return sum(g.tensors[n.inputs[1]].shape[0] for n in g.nodes
               if n.op in ("conv2d", "fully_connected"))


def _host_mismatches(key, numerics, optimize):
    model, golden = shared_model(key)
    c = compile_model(model, numerics=numerics, optimize=optimize)
    inputs, expected = load_golden(golden, default_golden_key(golden, numerics))
    outs, _ = run_model(model, inputs, board="host", numerics=numerics, compiled=c)
    return c, int((outs.reshape(expected.shape) != expected).sum())


@pytest.mark.parametrize("key,numerics,float_kernel", [
    ("ad01", "ort", "tinyaot_fully_connected_f32_w8_s8"),
    ("ic01", "ort", "tinyaot_convolve_f32_w8_s8"),
    ("kws01", "tflite", None),
])
def test_size_bit_exact_and_int8_weights(key, numerics, float_kernel):
    c, bad = _host_mismatches(key, numerics, "size")
    assert bad == 0
    r = c.report
    assert r["optimize"] == "size"
    kernels = set(r["kernels"])
    if float_kernel:  # ORT's float layers on the int8-weight kernels, none left on the speed ones
        assert float_kernel in kernels
        assert not kernels & {"tinyaot_fully_connected_f32_s8", "tinyaot_convolve_f32_s8",
                              "tinyaot_convolve_f32_m1_s8"}
    assert not any(k.endswith("_fast_s8") for k in kernels), kernels  # portable kernels, no tables
    int8_bytes = onnx_int8_weight_bytes(shared_model(key)[0])
    # every weight one byte, plus at most 16 B of per-channel parameters (bias,
    # scales or multipliers / shifts) and 4 KiB of segment records and tables
    assert int8_bytes <= r["weights_bytes"] <= int8_bytes + 16 * _channels(c) + 4096
    speed = compile_model(shared_model(key)[0], numerics=numerics)
    assert speed.report["optimize"] == "speed"
    assert r["weights_bytes"] < speed.report["weights_bytes"]
    if key == "ad01":  # the float FC's float32 weights: about 3x the int8 bytes more
        assert speed.report["weights_bytes"] > 2 * int8_bytes
    if key == "ic01":  # the float convs' int8 weights, dequantized a block at a time
        assert "tinyaot_convolve_f32_b8_s8" in speed.report["kernels"]


def test_default_is_speed_and_size_is_deterministic():
    model, _ = shared_model("ad01")
    a = compile_model(model, numerics="ort", optimize="size")
    b = compile_model(model, numerics="ort", optimize="size")
    assert a.module.source == b.module.source and a.module.header == b.module.header
    assert "optimize: size" in a.module.header
    d = compile_model(model, numerics="ort")
    assert "optimize: speed" in d.module.header and d.report["optimize"] == "speed"
    assert "tinyaot_fully_connected_f32_s8" in d.report["kernels"]


@pytest.mark.qemu
def test_ad01_ort_fits_qemu_m55_only_with_size(tmp_path, capsys):
    """Speed: 'does not fit' with the hint (exit 2, nothing written); size: fits, 8/8
    bit-exact with onnxruntime on the Cortex-M55."""
    require_arm_toolchain()
    model, golden = shared_model("ad01")
    out = tmp_path / "speed"
    assert main(["compile", str(model), "--board", "qemu-m55", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "does not fit" in err and "try --optimize size" in err, err
    assert not out.exists()
    r = verify_model(model, golden, board="qemu-m55", numerics="ort",
                     key="outputs_onnxruntime", optimize="size")
    assert r["mismatches"] == 0 and r["vectors_passed"] == r["vectors"] == 8
    assert r["flash"]["total"] <= 512 * 1024
    # one timer read per inference: an input-independent count reads within one tick
    # (a count near a tick's edge reads either side of it; the exact per-input counts
    # are firmware/test_instruction_counts.py's and test_models_on_qemu_m4.py's)
    tick = board_or_error("qemu-m55")["instructions_per_tick"]
    assert r["instructions_per_inference"] - r["instructions_min"] <= tick


@pytest.mark.qemu
def test_ad01_tflite_size_stores_fewer_bits(tmp_path):
    """ad01's .tflite under --optimize size: every FC layer's weights in fewer than eight
    bits where that is smaller (tinyaot_fully_connected_bits_s8, kernels/bits_pack.py),
    8/8 bit-exact with TFLite Micro on qemu-m4, the linked image at least 40 KB below the
    speed build's (which keeps one byte a weight: the pair kernel)."""
    require_arm_toolchain()
    onnx_path, golden = shared_model("ad01")
    model = onnx_path.with_suffix(".tflite")
    c = compile_model(model, numerics="tflite", optimize="size")
    # nine layers in 4 to 7 bits; the 128 x 8 one keeps a byte a weight (the pair kernel)
    assert sorted(c.report["kernels"]) == ["tinyaot_fully_connected_bits_s8",
                                           "tinyaot_fully_connected_fast_w8_s8"]
    bits = [layer.get("weight_bits") for layer in c.report["layers"]]
    assert sum(b is not None for b in bits) == 9 and all(b is None or 4 <= b <= 7 for b in bits)
    sizes = {}
    for optimize in ("speed", "size"):
        r = verify_model(model, golden, board="qemu-m4", numerics="tflite", key="outputs_tflm",
                         optimize=optimize, build_dir=tmp_path / optimize)
        assert r["mismatches"] == 0 and r["vectors_passed"] == r["vectors"] == 8, optimize
        sizes[optimize] = r["flash"]["total"]
    assert sizes["speed"] - sizes["size"] >= 40_000, sizes


# ------------------------------------------------------------------ the option

def test_bad_optimize_value_is_a_clear_error(tmp_path, capsys):
    model, _ = shared_model("ad01")
    out = tmp_path / "o"
    with pytest.raises(SystemExit) as e:  # argparse: usage + the choices, exit 2
        main(["compile", str(model), "--optimize", "tiny", "-o", str(out)])
    assert e.value.code == 2
    assert "--optimize: invalid choice: 'tiny'" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(TinyAotError, match="unknown --optimize 'tiny'"):
        compile_model(model, optimize="tiny")


def test_every_compiling_command_has_the_option():
    from codegen.cli import build_parser
    ap = build_parser()
    sub = next(a for a in ap._actions if a.dest == "cmd").choices
    for cmd in ("compile", "run", "verify", "bench", "export", "report", "validate", "profile"):
        opts = {o for a in sub[cmd]._actions for o in a.option_strings}
        assert "--optimize" in opts, cmd


def test_no_hint_when_size_does_not_fit_either(tmp_path, capsys):
    model, _ = shared_model("ad01")
    assert main(["compile", str(model), "--board", "qemu-m55", "--flash-limit", "100K",
                 "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "does not fit" in err and "--optimize size" not in err


def test_hint_for_tflite_too(tmp_path, capsys):
    """ic01 tflite: the int16-packed weights of the fast convs (a 167 KB image) over a
    128 KiB limit, the size build's int8 weights (97 KB) within it. (ad01, the example
    before, now fits qemu-m55 in either build: its FC layers keep int8 weights.)"""
    model, _ = shared_model("ic01")
    args = ["compile", str(model), "--numerics", "tflite", "--board", "qemu-m4",
            "--flash-limit", "128K", "-o", str(tmp_path / "o")]
    assert main(args) == 2
    assert "try --optimize size" in capsys.readouterr().err
    assert main(args + ["--optimize", "size"]) == 0


# ------------------------------------------------------------------ sanitizers, strict warnings

@pytest.mark.parametrize("key,numerics", [("ad01", "ort"), ("sww01", "ort"), ("ic01", "ort"),
                                          ("kws01", "tflite"), ("ad01", "tflite")])
def test_size_c_under_asan_ubsan_and_strict_warnings(key, numerics, tmp_path):
    """The size build's generated C and kernels: -Wconversion -Wshadow clean, and bit-exact
    under AddressSanitizer + UBSan (sww01: the M=1 / transpose-B segments)."""
    import os
    import subprocess
    from pathlib import Path

    from codegen.compiler import write_outputs
    from tests.helpers.sanitizers import (BASE_FLAGS, MAIN_C, RUNTIME_INC, RUNTIME_SRCS, SAN_ENV,
                                          SAN_FLAGS, need_gcc, strict_compile)
    need_gcc()
    model, golden = shared_model(key)
    c = compile_model(model, numerics=numerics, optimize="size")
    inputs, expected = load_golden(golden, default_golden_key(golden, numerics))
    gen = Path(write_outputs(c, tmp_path / "gen"))
    name = c.module.name
    used = [s for s in RUNTIME_SRCS if s.stem in c.module.kernels]
    assert strict_compile([gen / f"{name}.c", *used], [RUNTIME_INC, gen], tmp_path) == []
    (gen / "main.c").write_text(MAIN_C.format(name=name, NAME=name.upper()))
    exe = tmp_path / "size_asan"
    p = subprocess.run(["gcc", *SAN_FLAGS, *BASE_FLAGS, f"-I{RUNTIME_INC}", f"-I{gen}",
                        str(gen / f"{name}.c"), str(gen / "main.c"), *map(str, RUNTIME_SRCS),
                        "-lm", "-o", str(exe)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    flat = np.ascontiguousarray(inputs.astype(np.int8).reshape(len(inputs), -1))
    fin, fout = tmp_path / "in.bin", tmp_path / "out.bin"
    fin.write_bytes(flat.tobytes())
    p = subprocess.run([str(exe), str(fin), str(fout), str(len(flat))], capture_output=True,
                       text=True, env=dict(os.environ, **SAN_ENV), timeout=300)
    assert p.returncode == 0 and (p.stdout + p.stderr).strip() == "", (p.stdout + p.stderr)[-3000:]
    outs = np.frombuffer(fout.read_bytes(), dtype=np.int8)
    np.testing.assert_array_equal(outs.reshape(expected.shape), expected.astype(np.int8))


@pytest.mark.parametrize("name", ["digits_cnn", "mbv2_block", "conv1d", "decoder", "data_ops",
                                  "misc_ops"])
def test_own_models_size_bit_exact_with_onnxruntime(name):
    """tinyaot's own models (every operator, depthwise, 1-D, ConvTranspose, MatMul, Add ...)
    under size on the host against their golden onnxruntime outputs, and smaller."""
    from codegen.paths import REPO_ROOT
    model = REPO_ROOT / "models" / f"{name}_int8.onnx"
    golden = REPO_ROOT / "models" / f"{name}_int8_golden.npz"
    inputs, expected = load_golden(golden, "outputs")
    c = compile_model(model, numerics="ort", optimize="size")
    outs, _ = run_model(model, inputs, board="host", numerics="ort", compiled=c)
    assert int((outs.reshape(expected.shape) != expected).sum()) == 0
    assert c.report["weights_bytes"] <= compile_model(model, numerics="ort").report["weights_bytes"]


def test_fleet_row_says_size_would_fit():
    """scons board=all: a 'does not fit' row names optimize=size when that build fits."""
    from codegen.driver import fleet
    model, golden = shared_model("ad01")  # ort: float layers' float weights, 1.27 MB
    r = fleet.verify_on_board(model, golden, "qemu-m55", "ort", "outputs_onnxruntime")
    assert r["result"] == fleet.NOFIT and r["detail"].endswith("fits with optimize=size"), r
