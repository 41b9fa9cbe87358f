"""tinyaot budgets, report, validate, profile, quantize (codegen/driver/)."""
import json
import subprocess
import sys

import numpy as np
import onnx
import pytest

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, REPO, require_arm_toolchain

try:
    import tomllib
except ModuleNotFoundError:
    import tomli as tomllib


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO)


def board_toml(name):
    with open(REPO / "boards" / name / "board.toml", "rb") as f:
        return tomllib.load(f)


def one_line_error(proc):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


# ------------------------------------------------------------------ budgets

def test_ram_budget_boundary_is_exact_and_failure_writes_nothing(tmp_path):
    stack = board_toml("qemu-m4")["stack_size"]
    ok = tmp_path / "ok"
    p = run_cli("compile", DEFAULT_MODEL, "--board", "qemu-m4", "-o", ok, "--json")
    assert p.returncode == 0, p.stderr
    arena = json.loads((ok / "report.json").read_text())["arena_bytes"]
    assert arena > 0
    # Exactly arena + reserved stack fits ...
    fits = tmp_path / "fits"
    p = run_cli("compile", DEFAULT_MODEL, "--board", "qemu-m4", "-o", fits,
                "--ram-limit", arena + stack)
    assert p.returncode == 0, p.stderr
    assert (fits / "digits_cnn_int8.c").exists()
    # ... one byte less does not, and nothing is written.
    over = tmp_path / "over"
    p = run_cli("compile", DEFAULT_MODEL, "--board", "qemu-m4", "-o", over,
                "--ram-limit", arena + stack - 1)
    err = one_line_error(p)
    assert f"needs {arena + stack} B RAM" in err, err
    assert f"arena {arena} B" in err and "stack 64 KiB" in err and "1 B over" in err, err
    assert not over.exists()
    assert set(tmp_path.iterdir()) == {ok, fits}  # no temporary directory left behind


def test_ram_limit_with_units_and_flash_limit(tmp_path):
    p = run_cli("compile", DEFAULT_MODEL, "--board", "qemu-m4", "-o", tmp_path / "a",
                "--ram-limit", "64K")
    err = one_line_error(p)
    assert "--ram-limit has 64 KiB" in err
    ok = tmp_path / "b"
    assert run_cli("compile", DEFAULT_MODEL, "-o", ok).returncode == 0
    weights = json.loads((ok / "report.json").read_text())["weights_bytes"]
    p = run_cli("compile", DEFAULT_MODEL, "--board", "qemu-m4", "-o", tmp_path / "c",
                "--flash-limit", weights - 1)
    err = one_line_error(p)
    assert f"needs at least {weights} B flash" in err, err
    assert not (tmp_path / "c").exists()
    one_line_error(run_cli("compile", DEFAULT_MODEL, "--ram-limit", "lots", "-o", tmp_path / "d"))


def test_verify_checks_the_budget_before_building(tmp_path):
    # qemu-m4's stack alone (64 KiB) exceeds a 32 KiB part: fails before any build or QEMU run.
    p = run_cli("verify", DEFAULT_MODEL, "--golden", DEFAULT_GOLDEN, "--board", "qemu-m4",
                "--ram-limit", "32K")
    err = one_line_error(p)
    assert "does not fit" in err and "--ram-limit has 32 KiB" in err


# ------------------------------------------------------------------ validate

def _golden_inputs(n=4):
    return np.load(DEFAULT_GOLDEN)["inputs"][:n]


def _corrupt_weight(c, layer, flat_index=3, bit=0x40):
    w = c.graph.tensors[c.graph.nodes[layer].inputs[1]]
    w.data = w.data.copy()
    w.data.flat[flat_index] = np.int8(int(w.data.flat[flat_index]) ^ bit)


@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_validate_clean_model_every_layer_exact_on_host(numerics):
    p = run_cli("validate", DEFAULT_MODEL, "--inputs", DEFAULT_GOLDEN, "--limit", 4,
                "--numerics", numerics, "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["first_divergent_layer"] is None
    assert r["vectors"] == 4
    assert r["compared_layers"] >= 12
    assert all(row["mismatches"] == 0 for row in r["layers"] if row["compared"])


@pytest.mark.parametrize("numerics,layer", [("ort", 8), ("ort", 4), ("tflite", 2)])
def test_validate_points_at_the_layer_with_a_corrupted_weight(numerics, layer):
    from codegen.compiler import compile_model
    from codegen.driver.validate import validate_model
    c = compile_model(DEFAULT_MODEL, numerics=numerics)
    _corrupt_weight(c, layer)
    r = validate_model(DEFAULT_MODEL, _golden_inputs(8), board="host", numerics=numerics,
                       compiled=c)
    assert r["first_divergent_layer"] == layer, [(x["index"], x["mismatches"]) for x in r["layers"]]
    for row in r["layers"][:layer]:
        assert row["mismatches"] in (0, None)
    bad = r["layers"][layer]
    assert bad["mismatches"] > 0 and bad["first_mismatch"] is not None
    # With ort the reference of that layer is onnxruntime's own tensor.
    assert bad["reference"] == ("onnxruntime" if numerics == "ort" else "oracle")
    # The first mismatch lies in the output channel of the corrupted weight.
    w = c.graph.tensors[c.graph.nodes[layer].inputs[1]]
    oc = np.unravel_index(3, w.shape)[0]
    assert bad["first_mismatch"]["index_nd"][1] == oc


@pytest.mark.qemu
def test_validate_on_qemu_m4_finds_the_corrupted_layer():
    require_arm_toolchain()
    from codegen.compiler import compile_model
    from codegen.driver.validate import validate_model
    c = compile_model(DEFAULT_MODEL, numerics="ort")
    r = validate_model(DEFAULT_MODEL, _golden_inputs(2), board="qemu-m4", numerics="ort")
    assert r["first_divergent_layer"] is None and r["compared_layers"] >= 12
    _corrupt_weight(c, 8)
    r = validate_model(DEFAULT_MODEL, _golden_inputs(2), board="qemu-m4", numerics="ort",
                       compiled=c)
    assert r["first_divergent_layer"] == 8


def test_validate_bad_inputs_is_a_clean_error(tmp_path):
    bad = tmp_path / "x.npz"
    np.savez(bad, inputs=np.zeros((2, 64), np.float32))
    err = one_line_error(run_cli("validate", DEFAULT_MODEL, "--inputs", bad))
    assert "int8" in err


# ------------------------------------------------------------------ profile

@pytest.mark.qemu
def test_profile_layers_sum_to_the_whole_inference(tmp_path):
    require_arm_toolchain()
    from codegen.driver.verify import run_model
    png = tmp_path / "p.png"
    p = run_cli("profile", DEFAULT_MODEL, "--board", "qemu-m4", "--json", "--png", png)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    ipt = board_toml("qemu-m4")["instructions_per_tick"]
    n = len(r["layers"])
    # Per-layer counts (same run) add up to the whole inference within one tick.
    assert abs(r["layers_instructions"] - r["total_instructions"]) <= ipt
    # And to the count of the normal, hook-free firmware (another build, another
    # run): the hooks cost a handful of instructions each.
    _, info = run_model(DEFAULT_MODEL, _golden_inputs(1), board="qemu-m4")
    plain = info["instructions"][0]
    assert abs(r["layers_instructions"] - plain) <= ipt + 16 * n, (r["layers_instructions"], plain)
    # MACs per layer are the emitter's; the convolutions dominate.
    assert r["macs"] == sum(x["macs"] for x in r["layers"]) > 0
    conv = sum(x["instructions"] for x in r["layers"] if x["op"] == "conv2d")
    assert conv > 0.5 * r["total_instructions"]
    assert abs(sum(x["share"] for x in r["layers"]) - 1) < 0.01
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_profile_needs_a_qemu_board():
    err = one_line_error(run_cli("profile", DEFAULT_MODEL, "--board", "host"))
    assert "QEMU board" in err


# ------------------------------------------------------------------ report

@pytest.mark.qemu
@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m3"])
def test_report_flash_split_and_stack(board):
    require_arm_toolchain()
    from codegen.compiler import compile_model
    from codegen.driver.export import kernel_closure
    p = run_cli("report", DEFAULT_MODEL, "--board", board, "--json", "--measure-stack")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    c = compile_model(DEFAULT_MODEL)
    g = c.graph
    # Weights in flash: per layer, the int8 weight tensor of the graph byte for
    # byte (reference kernels) or at least that much (packed for fast kernels).
    t = r["totals"]
    wsum = 0
    for x in r["layers"]:
        n = g.nodes[x["index"]]
        if n.op in ("conv2d", "fully_connected"):
            size = g.tensors[n.inputs[1]].size
            if x["kernel"] in ("tinyaot_convolve_s8", "tinyaot_depthwise_conv_s8",
                               "tinyaot_fully_connected_s8"):
                assert x["flash_weights"] == size, x
            elif x["kernel"] in ("tinyaot_convolve_f32_s8", "tinyaot_convolve_f32_m1_s8",
                                 "tinyaot_fully_connected_f32_s8"):  # not _f32_b8_s8: int8
                assert x["flash_weights"] >= 4 * size, x  # dequantized to float32 at compile time
            else:
                assert x["flash_weights"] >= size, x
        else:
            assert x["flash_weights"] == 0
        wsum += x["flash_weights"]
    assert t["flash"]["weights"] == wsum > 0
    assert t["flash"]["total"] == t["flash"]["code"] + t["flash"]["weights"] + t["flash"]["tables"]
    assert t["flash"]["total"] < t["firmware"]["text"] + t["firmware"]["data"]
    # Every kernel the model calls has code in the link (and the kernels those call: the
    # float convs' tiles), and nothing else.
    assert set(t["flash"]["per_kernel"]) == {p.stem for p in kernel_closure(c.module.kernels)}
    assert set(c.module.kernels) <= set(t["flash"]["per_kernel"])
    assert t["arena_bytes"] == c.plan.size
    st = t["stack"]
    # the default (arena I/O): the firmware calls _invoke, the inference alone
    entry = "digits_cnn_int8_invoke" if c.plan.io_buffers == "arena" else "digits_cnn_int8_run"
    assert st["path"][0] == entry and st["path"][1] in c.module.kernels
    assert 0 < st["worst_case_bytes"] < st["reserved_bytes"]
    # The static bound (.su over the call graph) against a painted stack in QEMU:
    # a sound bound, and a tight one. The fast conv kernel picks its
    # requantization loop at run time from the layer's records, and the static
    # bound covers the deepest loop (the tflite SMLAL one, 28 B deeper than the
    # ort float-record loop this model runs: qemu-m4 616 vs 588 B painted).
    assert not st["measured"]["overflowed_paint"]
    assert 0 <= st["worst_case_bytes"] - st["measured"]["measured_bytes"] <= 32, st
    assert st["firmware_path"][0] == "main" and st["firmware_worst_case_bytes"] > st["worst_case_bytes"]
    rows = r["layers"]
    assert [x["index"] for x in rows] == list(range(len(g.nodes)))
    for x in rows:
        if x["buffer"] == "arena":
            assert 0 <= x["arena_offset"] and x["arena_offset"] + x["bytes"] <= t["arena_bytes"]
            assert x["lifetime"][0] <= x["index"] <= x["lifetime"][1]
    assert sum(x["macs"] for x in rows) == c.report["macs"]


def test_report_needs_a_firmware_board():
    err = one_line_error(run_cli("report", DEFAULT_MODEL, "--board", "host"))
    assert "firmware board" in err


# ------------------------------------------------------------------ quantize

def test_quantize_cli_matches_the_model_script_and_evaluates(tmp_path):
    sys.path.insert(0, str(REPO / "models"))
    try:
        import make_digits_cnn as m
    except ImportError as e:  # torch / scikit-learn are the [models] extra
        pytest.skip(f"models extra not installed: {e}")
    splits = m.load_splits()
    f32 = REPO / "models" / "digits_cnn_f32.onnx"
    calib = tmp_path / "calib.npz"
    np.savez(calib, inputs=splits["calib"][0])
    ev = tmp_path / "test.npz"
    np.savez(ev, inputs=splits["test"][0], labels=splits["test"][1])
    out = tmp_path / "q.onnx"
    p = run_cli("quantize", f32, "--calib", calib, "-o", out, "--eval", ev, "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    script = m.quantize(str(f32), splits["calib"][0], str(tmp_path / "script.onnx"))
    assert out.read_bytes() == open(script, "rb").read()
    # models/README.md: float 97.56 %, int8 97.33 % on the 450 test digits.
    assert r["eval_samples"] == 450
    assert abs(r["float_accuracy"] - 0.9756) < 0.0005
    assert abs(r["int8_accuracy"] - 0.9733) < 0.0005
    q = onnx.load(str(out))
    ops = {n.op_type for n in q.graph.node}
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    # Folder of .npy gives the same model; other methods give a different one.
    d = tmp_path / "calib_dir"
    d.mkdir()
    for i, x in enumerate(splits["calib"][0]):
        np.save(d / f"{i:04d}.npy", x)
    out2 = tmp_path / "q2.onnx"
    assert run_cli("quantize", f32, "--calib", d, "-o", out2).returncode == 0
    assert out2.read_bytes() == out.read_bytes()
    out3 = tmp_path / "q3.onnx"
    assert run_cli("quantize", f32, "--calib", calib, "-o", out3,
                   "--method", "percentile").returncode == 0
    assert out3.read_bytes() != out.read_bytes()


def test_quantize_rejects_an_int8_model(tmp_path):
    calib = tmp_path / "c.npz"
    np.savez(calib, inputs=np.zeros((2, 1, 8, 8), np.float32))
    out = tmp_path / "q.onnx"
    err = one_line_error(run_cli("quantize", DEFAULT_MODEL, "--calib", calib, "-o", out))
    assert "float32" in err or "already quantized" in err
    assert not out.exists()


# ------------------------------------------------------------------ verify key

@pytest.mark.parametrize("numerics,key", [("ort", "outputs_onnxruntime"), ("tflite", "outputs_tflm")])
def test_verify_defaults_to_the_numerics_golden_array(numerics, key, tmp_path):
    """Without --key, verify compares with the array the numerics reproduces
    (MLPerf Tiny goldens carry `outputs` from LiteRT's reference kernels too)."""
    from codegen.driver.verify import run_model
    g = dict(np.load(DEFAULT_GOLDEN))
    right, _ = run_model(DEFAULT_MODEL, g["inputs"], board="host", numerics=numerics,
                         build_dir=tmp_path / "b")
    right = right.reshape(g["outputs"].shape).astype(g["outputs"].dtype)
    wrong = right.copy()
    wrong.flat[0] = np.int8(wrong.flat[0] ^ 1)
    path = tmp_path / "golden.npz"
    np.savez(path, inputs=g["inputs"], outputs=wrong, **{key: right})
    base = ("verify", DEFAULT_MODEL, "--golden", path, "--board", "host", "--numerics", numerics)
    assert run_cli(*base).returncode == 0
    assert run_cli(*base, "--key", "outputs").returncode == 1
