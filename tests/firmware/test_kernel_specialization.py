"""A firmware's fast kernels compile only what its model uses (tinyaot_model_config.h,
codegen/kernels/specialize.py; runtime_c/src/internal/tinyaot_specialize.h).

The oracles: the golden outputs (onnxruntime / TFLite Micro) for the specialized build;
the firmware's own status line for a build whose header names none of the model's
specializations (every call must fail, never return a wrong result); and binutils'
symbol sizes for the code the header leaves out.
"""
from __future__ import annotations

import functools
import os
import subprocess

import pytest

from codegen.compiler import compile_model
from codegen.driver import firmware
from codegen.driver.verify import load_golden
from codegen.kernels import specialize
from codegen.targets.boards import board_or_error
from codegen.targets.qemu import run_firmware

from tests.helpers.env import require_arm_toolchain, shared_model


@functools.lru_cache(maxsize=None)
def _tflite_spec(key: str) -> dict:
    """The specialization masks of shared model `key`'s .tflite under tflite (compiled once
    per worker: two tests read vww01's and kws01's)."""
    model, _ = shared_model(key)
    return compile_model(str(model.with_suffix(".tflite")), numerics="tflite").module.spec

pytestmark = [pytest.mark.qemu, pytest.mark.shared]

FAST = ("tinyaot_convolve_fast_s8", "tinyaot_depthwise_conv_fast_s8",
        "tinyaot_fully_connected_fast_s8")


def _build_and_run(c, out_dir, inputs):
    fw = firmware.build_compiled(c, "qemu-m4", out_dir, inputs)
    return fw.elf, run_firmware(fw.elf, board_or_error("qemu-m4"), timeout=120)


def _text_bytes(elf):
    """Bytes of code (t/T symbols) in the ELF, per binutils."""
    out = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True,
                         check=True).stdout
    return sum(int(p[1], 16) for p in (ln.split() for ln in out.splitlines())
               if len(p) == 4 and p[2] in "tT")


@pytest.mark.parametrize("numerics", ["tflite", "ort"])
def test_kws01_specialized_kernels_exact_smaller_and_refuse_what_is_not_built(numerics, tmp_path):
    require_arm_toolchain()
    model, golden = shared_model("kws01")
    gkey = {"ort": "outputs_onnxruntime", "tflite": "outputs_tflm"}[numerics]
    inputs, expected = load_golden(golden, gkey)
    c = compile_model(model, numerics=numerics)
    assert FAST[0] in c.module.kernels and FAST[1] in c.module.kernels
    records = firmware.as_records(firmware.harness_layout_of(c), [inputs[:2]])

    # the model's own header: bit-exact against the golden
    spec_dir = tmp_path / "spec"
    elf, res = _build_and_run(c, spec_dir, records)
    assert [r.status for r in res.outputs] == [0, 0]
    for r, want in zip(res.outputs, expected[:2]):
        assert r.data == want.astype("int8").tobytes()
    header = (spec_dir / specialize.HEADER).read_text()
    for m in specialize.MASKS:
        assert f"#define {m} " in header

    # no header: every specialization compiled, the same outputs, more code
    full_dir = tmp_path / "full"
    firmware.write_harness(c, full_dir, records)
    os.remove(full_dir / specialize.HEADER)
    full_elf = firmware.build_generated(str(full_dir), "qemu-m4", harness=True)
    full = run_firmware(full_elf, board_or_error("qemu-m4"), timeout=120)
    assert [r.data for r in full.outputs] == [r.data for r in res.outputs]
    assert _text_bytes(elf) < _text_bytes(full_elf) - 20000

    # a header that names none of them: the fast kernels refuse each call (status -1)
    none_dir = tmp_path / "none"
    firmware.write_harness(c, none_dir, records)
    (none_dir / specialize.HEADER).write_text(specialize.header_text({}))
    _, bad = _build_and_run_dir(none_dir)
    assert [r.status for r in bad.outputs] == [-1, -1]


def _build_and_run_dir(gen_dir):
    elf = firmware.build_generated(str(gen_dir), "qemu-m4", harness=True)
    return elf, run_firmware(elf, board_or_error("qemu-m4"), timeout=120)


def test_three_output_depthwise_rows_are_compiled_where_a_layer_runs_them(tmp_path):
    """The depthwise kernel's three-output passes (about 6 KB of asm) are in a firmware
    only when one of its layers takes them on DW_ROW3_MIN_QUADS quads or more, or runs
    DW_ROW3_MIN_GROUPS groups of three outputs x quads through them (TINYAOT_SPEC_DW_KINDS):
    kws01's 64-channel 3x3 stride-1 layers do; the default model's one depthwise layer
    (onnxruntime's float path) does not, and its image is as small as before them. Any
    number of quads takes the passes (vww01's 8-channel 48x48 layer); a small layer of
    fewer quads alone (8x8 on 8 or 24 channels) does not compile them."""
    import re
    from types import SimpleNamespace

    from codegen.paths import DEFAULT_MODEL
    require_arm_toolchain()

    def dims(c, h, w):  # 3x3 'same' at stride 1
        return SimpleNamespace(in_c=c, in_h=h, in_w=w, out_h=h, out_w=w, k_h=3, k_w=3,
                               stride_h=1, stride_w=1, dil_h=1, dil_w=1, pad_top=1,
                               pad_left=1)
    sat = specialize.RQ_SMLAL_SAT
    assert specialize.depthwise_row3(sat, dims(8, 48, 48))   # 2 quads, 705 groups
    assert not specialize.depthwise_row3(sat, dims(8, 8, 8))  # 2 quads x 20 groups
    assert specialize.depthwise_row3(sat, dims(32, 8, 8))     # 8 quads x 20 groups
    assert not specialize.depthwise_row3(sat, dims(24, 8, 8))  # 6 quads x 20 groups
    from tests.helpers.env import DEFAULT_GOLDEN
    model, golden = shared_model("kws01")
    for path, gold, numerics, row3 in ((model, golden, "tflite", True),
                                       (model, golden, "ort", True),
                                       (DEFAULT_MODEL, DEFAULT_GOLDEN, "ort", False)):
        c = compile_model(str(path), numerics=numerics)
        out = tmp_path / f"{path.stem}-{numerics}"
        inputs, _ = load_golden(gold, "outputs_onnxruntime" if numerics == "ort" else
                                "outputs_tflm")
        records = firmware.as_records(firmware.harness_layout_of(c), [inputs[:1]])
        fw = firmware.build_compiled(c, "qemu-m4", out, records)
        header = (out / specialize.HEADER).read_text()
        bits = int(re.search(rf"#define {specialize.DW_KINDS} 0x(\w+)u", header).group(1), 16)
        syms = subprocess.run(["arm-none-eabi-nm", str(fw.elf)], capture_output=True,
                              text=True, check=True).stdout
        assert bool(bits >> specialize.DW_ROW3 & 1) == row3, (path, numerics)
        assert ("dw3x3_triples" in syms) == row3, (path, numerics)
        # kws01's rows go quad by quad: the group-by-group pass is not compiled
        assert not bits >> specialize.DW_ROW3G & 1 and "dw3x3_row3g" not in syms, path


def test_one_word_window_rows_are_compiled_where_a_layer_has_them():
    """The im2col columns' one-shifted-word rows (im2col_word_rows, TINYAOT_SPEC_IM2COL_WORD)
    are compiled for a conv whose undilated window rows are at most a quad, on an input row
    of a word or more, with a window crossing the left or right edge; not for whole-quad
    rows, rows with tails, or windows that never cross an edge."""
    from types import SimpleNamespace

    def uses(in_c, in_w, k_h, k_w, pad_left, out_w, stride_w=1):
        d = SimpleNamespace(in_c=in_c, in_w=in_w, k_h=k_h, k_w=k_w, pad_left=pad_left,
                            out_w=out_w, stride_w=stride_w, dil_w=1)
        return bool(specialize.im2col_uses(d)[specialize.IM2COL] >> specialize.IM2COL_WORD & 1)
    assert uses(1, 10, 10, 4, 1, 5, 2)          # kws01's first conv
    assert uses(1, 28, 3, 3, 1, 28)             # 3x3 'same' on one channel
    assert uses(2, 8, 3, 2, 0, 8)               # cut by the right edge only
    assert not uses(1, 28, 3, 3, 0, 26)         # 'valid': no window crosses an edge
    assert not uses(4, 8, 3, 3, 1, 8)           # whole quads per pixel
    assert not uses(3, 8, 3, 3, 1, 8)           # 3x3 on 3 channels: tails
    assert not uses(1, 3, 3, 3, 1, 3)           # an input row narrower than a word
    # kws01's first conv (10x4 on one channel, 'same') compiles them; vww01 has no such layer
    for key, word in (("kws01", True), ("vww01", False)):
        assert bool(_tflite_spec(key).get(specialize.IM2COL, 0) >> specialize.IM2COL_WORD & 1) \
            == word, key


def test_depthwise_rows_group_by_group_where_that_reads_less_flash():
    """The three-output rows' pass goes group by group (a call per group over all quads,
    dw3x3_row3g_*, TINYAOT_SPEC_DW_ROW3G) where that reads fewer bytes of code, weights and
    records from flash than quad by quad: vww01's 6x6 layers (4 groups, 32 quads: 4 x
    (1300 + 32 x 152) = 24,656 B against 32 x 1452 = 46,464 B), not kws01's 25x5 ones (23
    groups, 16 quads) nor vww01's 24x24 ones (154 groups on 8 quads). The constants are the
    kernel's; a model with such a layer compiles the pass, one without does not."""
    import re
    from types import SimpleNamespace

    from tests.helpers.env import REPO
    inc = (REPO / "runtime_c/src/conv/tinyaot_depthwise_conv_fast_s8_3x3.inc").read_text()
    for name in ("DW3_CODE_BYTES", "DW3_QUAD_BYTES"):
        assert int(re.search(rf"#define {name} (\d+)", inc).group(1)) == getattr(specialize, name)

    def dims(c, h, w):  # 3x3 'same' at stride 1
        return SimpleNamespace(in_c=c, in_h=h, in_w=w, out_h=h, out_w=w, k_h=3, k_w=3,
                               stride_h=1, stride_w=1, dil_h=1, dil_w=1, pad_top=1,
                               pad_left=1)
    assert specialize.depthwise_row3_group_major(dims(128, 6, 6))
    assert not specialize.depthwise_row3_group_major(dims(64, 25, 5))
    assert not specialize.depthwise_row3_group_major(dims(32, 24, 24))
    for key, group in (("vww01", True), ("kws01", False)):
        bits = _tflite_spec(key).get(specialize.DW_KINDS, 0)
        assert bool(bits >> specialize.DW_ROW3G & 1) == group, key
        # the stride-2 rows' pass: vww01's 3x3 stride-2 layers (48x48 -> 24x24 on 4 quads:
        # 22 rows x 7 groups), kws01 has none
        assert bool(bits >> specialize.DW_ROW3S2 & 1) == group, key


def test_average_pooling_four_channel_passes_only_in_speed_builds(tmp_path):
    """tinyaot_avgpool_s8's four-channel passes (about 400 B) are compiled into a speed
    build only (TINYAOT_SPEC_POOL_KINDS): the default model's size build sums each channel
    on its own and is no larger than before them; both give the golden outputs."""
    import re

    from codegen.paths import DEFAULT_MODEL
    from tests.helpers.env import DEFAULT_GOLDEN
    require_arm_toolchain()
    inputs, expected = load_golden(DEFAULT_GOLDEN, "outputs_onnxruntime")
    code = {}
    for optimize, quads in (("speed", True), ("size", False)):
        c = compile_model(str(DEFAULT_MODEL), optimize=optimize)
        out = tmp_path / optimize
        records = firmware.as_records(firmware.harness_layout_of(c), [inputs[:2]])
        elf, res = _build_and_run(c, out, records)
        assert [r.data for r in res.outputs] == [w.astype("int8").tobytes() for w in expected[:2]]
        header = (out / specialize.HEADER).read_text()
        bits = int(re.search(rf"#define {specialize.POOL_KINDS} 0x(\w+)u", header).group(1), 16)
        syms = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True,
                              text=True, check=True).stdout
        assert bool(bits >> specialize.POOL_QUADS & 1) == quads
        # the kernel and its static helpers (inlined or not)
        names = ("avgpool", "window_sum", "avg_out")
        code[optimize] = sum(int(p[1], 16) for p in (ln.split() for ln in syms.splitlines())
                             if len(p) == 4 and any(k in p[3] for k in names))
    assert code["speed"] > code["size"] + 300, code
