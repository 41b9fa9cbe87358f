"""The one-SMLAL requantization without its sign fix (tinyaot_requant_fast.h:
TINYAOT_RQ_NEG_FIX) for layers whose clamp starts at or above their output zero point.

Oracles: TFLite's MultiplyByQuantizedMultiplier written here from gemmlowp's definitions
(SRDHM: (a*b + nudge) / 2^31 truncated, nudge 2^30 or 1 - 2^30 by the sign of a*b;
RoundingDivideByPOT: ties away from zero) for the arithmetic claim, and the numpy conv
oracle (codegen/ops/conv2d.py: conv2d_int) for the kernel built without the fix, on
qemu-m4 (the DSP asm) and qemu-m3 (the portable C twin).
"""
from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from codegen.kernels import specialize
from codegen.kernels.fast_pack import conv_scratch_bytes, smlal_requant
from tests.helpers.env import REPO, require_arm_toolchain


def _srdhm(a, b):
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    t = abs(ab + nudge) // (1 << 31)  # C's division truncates toward zero
    return t if ab + nudge >= 0 else -t


def _rdbpot(x, e):
    mask = (1 << e) - 1
    rem, thr = x & mask, (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > thr else 0)


def _tflite(v, m, e, zp, lo, hi):
    return min(max(_rdbpot(_srdhm(v, m), e) + zp, lo), hi)


def _no_fix(v, rec, lo, hi):
    """The kernels' form without the fix: ((R + v*m) >> 32) >> (e - 1), clamped."""
    m, sh, rlo, rhi = (int(w) for w in rec[:4])
    s = ((rhi << 32) | (rlo & 0xFFFFFFFF)) + v * m
    return min(max((s >> 32) >> sh, lo), hi)


def test_without_the_fix_only_outputs_below_the_zero_point_change():
    """Over negative accumulators near every rounding edge, the form without the fix
    gives TFLite's outputs wherever the clamp starts at or above the zero point (ReLU:
    act_min >= zp; with zp = -128 the whole int8 range), and differs for some where it
    starts below (so the fix stays there)."""
    rng = np.random.default_rng(17)
    differs = 0
    for _ in range(60):
        m, e = int(rng.integers(1 << 30, 1 << 31)), int(rng.integers(1, 16))
        for zp, lo in ((-128, -128), (-100, -100), (-100, -90), (5, -128)):
            rec = smlal_requant([m], [-e], [0], zp)
            assert rec is not None
            # accumulators whose scaled value sits at a half (the ties) and around them
            step = (1 << (31 + e)) / m
            vs = {int(-k * step / 2) + d for k in range(1, 200, 7) for d in (-2, -1, 0, 1, 2)}
            vs |= {int(v) for v in rng.integers(-(1 << 24), 0, 200)}
            for v in sorted(vs):
                want = _tflite(v, m, e, zp, lo, 127)
                got = _no_fix(v, rec, lo, 127)
                if lo >= zp:
                    assert got == want, (m, e, zp, lo, v)
                else:
                    differs += got != want
    assert differs > 0


def test_the_fix_bit_is_set_where_a_layer_clamps_below_its_zero_point():
    def rec(act_min, out_zp):
        return SimpleNamespace(act_min=act_min, out_zp=out_zp)
    k = "tinyaot_depthwise_conv_fast_s8"
    assert specialize.rq_fix_uses(k, rec(-128, -128)) == {}
    assert specialize.rq_fix_uses(k, rec(-100, -100)) == {}
    assert specialize.rq_fix_uses(k, rec(-128, -127)) == {specialize.RQ_FIX: 1 << 2}
    assert specialize.rq_fix_uses("tinyaot_fully_connected_fast_s8", rec(-128, 3)) == {}
    # the kernels' bit numbers are the generator's
    h = (REPO / "runtime_c/src/internal/tinyaot_specialize.h").read_text()
    bits = {name: int(b) for b, name in
            re.findall(r"#define TINYAOT_SPEC_FIX_\w+ (\d+) +/\* (\w+) \*/", h)}
    assert bits == specialize.FIX_BITS
    for name in bits:  # and each kernel source names its own bit
        src = next((REPO / "runtime_c/src").rglob(f"{name}.c")).read_text()
        suffix = re.search(r"#define TINYAOT_RQ_FIX_BIT TINYAOT_SPEC_FIX_(\w+)", src).group(1)
        assert re.search(rf"#define TINYAOT_SPEC_FIX_{suffix} {bits[name]} ", h), name
    assert f"#define {specialize.RQ_FIX} 0x04u" in specialize.header_text(
        {specialize.RQ_FIX: 4})


@pytest.mark.shared
def test_relu_models_compile_no_fix_and_one_that_needs_it_keeps_it():
    """kws01's and vww01's conv layers all end in ReLU (output zero point -128): no kernel
    keeps the fix; sww01's depthwise layers include one without a ReLU: the depthwise
    kernel keeps it, its 1x1 pair kernel does not."""
    from codegen.compiler import compile_model
    from tests.helpers.env import shared_model

    def fix(key):
        model, _ = shared_model(key)
        spec = compile_model(str(model.with_suffix(".tflite")), numerics="tflite").module.spec
        return spec.get(specialize.RQ_FIX, 0)
    assert fix("kws01") == 0
    assert fix("vww01") == 0
    assert fix("sww01") == 1 << specialize.FIX_BITS["tinyaot_depthwise_conv_fast_s8"]


def _pair_cases():
    from tests.helpers.pair_cases import pair_layer
    rng = np.random.default_rng(29)
    out = []
    for cin, cout, hw in ((64, 16, (5, 5)), (40, 12, (1, 7)), (16, 4, (2, 3)), (12, 8, (3, 3))):
        # many negative sums: an input zero point that makes x - zp mostly negative
        dims, q, x, words, want = pair_layer(rng, cin, cout, hw, in_zp=100, out_zp=-128)
        assert (want == -128).mean() > 0.2 and len(np.unique(want)) >= min(8, want.size // 3)
        out.append((f"{cin}->{cout} {hw}", dims, q, x, words, want))
    return out


def _run_without_the_fix(board, tmp_path, kernel, cases, needs_fix, masks=None):
    """Builds a firmware of `kernel` (tinyaot_<kernel>(&d, &q, x, w, scratch, output)) with a
    tinyaot_model_config.h that compiles no sign fix (and `masks`), runs `cases` (each
    (label, dims, q, x, words, want) of a layer that needs no fix) and then `needs_fix` (one
    that does), and checks the outputs against their wants and that the last one was
    refused (TINYAOT_ERR_NOT_BUILT); returns the firmware's disassembly."""
    require_arm_toolchain()
    from codegen.targets.qemu import load_board, run_firmware
    from tests.helpers.kernel_firmware import assert_outputs, cases_firmware, conv_case_c
    src = ["#include <stdint.h>", "#include <string.h>", '#include "harness.h"',
           '#include "tinyaot_fast_kernels.h"']
    calls, scratch = [], 4
    for i, (_, dims, q, x, words, _want) in enumerate(cases + [needs_fix]):
        src += conv_case_c(i, dims, q, x, words, "int32_t")
        scratch = max(scratch, conv_scratch_bytes(dims[6], dims[7], x.shape[-1]))
        calls.append(f"    case {i}: return tinyaot_{kernel}(&d{i}, &q{i}, x{i}, w{i}, "
                     f"scratch, output);")
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / specialize.HEADER).write_text(specialize.header_text(
        dict(masks or {}, **{specialize.RQ_FIX: 0})))
    b = load_board(board)
    out_size = max(c[5].size for c in cases) + 64
    elf, asm = cases_firmware(tmp_path, b, kernel, src, calls, scratch, out_size,
                              f"tinyaot_{kernel}.c", include_dirs=[cfg])
    res = run_firmware(elf, b, timeout=300)
    assert [r.status for r in res.outputs] == [0] * len(cases) + [-2]
    assert_outputs(res, [c[5] for c in cases], [c[0] for c in cases])
    return asm


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m3"])
def test_conv_1x1_pairs_without_the_fix_on_qemu(board, tmp_path):
    """tinyaot_convolve_1x1_w8_s8 built with TINYAOT_SPEC_RQ_FIX 0 (a model whose pointwise
    layers all end in ReLU): the oracle's outputs for layers with output zero point -128,
    no sign-fix shift in its asm (qemu-m4), and TINYAOT_ERR_NOT_BUILT for a layer whose
    zero point is above its clamp (it would need the fix)."""
    from tests.helpers.pair_cases import pair_layer
    needs_fix = pair_layer(np.random.default_rng(5), 16, 4, (2, 2), out_zp=-100)
    asm = _run_without_the_fix(board, tmp_path, "convolve_1x1_w8_s8", _pair_cases(),
                               ("fix",) + needs_fix)
    if board == "qemu-m4":
        body = asm.split("<c1_pixels_asm>:")[1].split("\n\n")[0]
        assert "smlad" in body and not re.search(r"lsrs?(\.w)?\s+\w+, \w+, #31", body)


def _fast_conv_case(rng, cin, cout, hw, k, out_zp):
    """(dims, q, x NHWC, weight words, want NHWC) of a tinyaot_convolve_fast_s8 layer,
    'same' k x k at stride 1, its one-SMLAL records holding the biases (as ops/conv2d.py
    emits them), against the numpy conv oracle."""
    from codegen.kernels.fast_pack import conv_gemm_weights, pack_conv_gemm
    from codegen.ops.conv2d import conv2d_int
    from tests.helpers.kernels_cffi import conv_dims_fields
    from tests.helpers.requant_cases import requant_fields
    in_zp = int(rng.integers(-20, 20))
    x = rng.integers(-128, 128, (1, cin) + hw).astype(np.int8)
    w = rng.integers(-127, 128, (cout, cin, k, k)).astype(np.int8)
    q, p = requant_fields(rng, cout, in_zp, "tflite")
    q["out_zp"] = p.out_zp = out_zp
    pad = k // 2
    attrs = {"kernel": (k, k), "strides": (1, 1), "pads": (pad, pad, pad, pad),
             "dilations": (1, 1), "group": 1}
    from codegen.ops.conv2d import conv2d_acc
    acc = conv2d_acc(x, w, in_zp, (1, 1), attrs["pads"], (1, 1), 1) + q["bias"].reshape(-1, 1, 1)
    e = int(np.ceil(np.log2(max(float(np.abs(acc).max()), 1.0) / 90.0))) + 1
    p.shift = q["shift"] = np.full(cout, -min(max(e, 1), 31), np.int32)
    q["rq"] = smlal_requant(q["mult"], q["shift"], q["bias"], out_zp)
    assert q["rq"] is not None
    want = conv2d_int(x, w, attrs, p)[0]
    q["bias"] = None  # the records hold it
    dims = conv_dims_fields(x.shape, (1, cout) + want.shape[1:], attrs)
    words = pack_conv_gemm(conv_gemm_weights(w))
    return dims, q, x[0].transpose(1, 2, 0), words, want.transpose(1, 2, 0)


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m3"])
def test_fast_conv_without_the_fix_on_qemu(board, tmp_path):
    """tinyaot_convolve_fast_s8 built with TINYAOT_SPEC_RQ_FIX 0: its int16 group loops
    (2, 4, 5 and 8 quads: straight, one pass, a quad then a pass, two passes; pointwise
    and a 3x3 im2col layer) requantize without the sign fix (m, shift and R in r3-r5:r7,
    one sum spilled) and give the oracle's outputs for output zero point -128; a layer
    whose zero point is above its clamp gets TINYAOT_ERR_NOT_BUILT."""
    rng = np.random.default_rng(41)
    shapes = [(8, 16, (4, 4), 1), (16, 8, (3, 3), 1), (20, 12, (2, 3), 1), (32, 4, (2, 2), 1),
              (4, 8, (5, 5), 3)]
    cases = [(f"{c}->{o} {hw} {k}x{k}",) + _fast_conv_case(rng, c, o, hw, k, -128)
             for c, o, hw, k in shapes]
    for c in cases:
        assert (c[5] == -128).mean() > 0.2 and len(np.unique(c[5])) >= 8, c[0]
    needs_fix = ("fix",) + _fast_conv_case(rng, 8, 8, (2, 2), 1, -100)
    asm = _run_without_the_fix(board, tmp_path, "convolve_fast_s8", cases, needs_fix,
                               {specialize.CONV_MODES: 0xff, specialize.CONV_REMS: 0xff,
                                specialize.CONV_KINDS: 0x3, specialize.IM2COL: 0x7})
    if board == "qemu-m4":
        assert re.search(r"smlal\s+r5, r7", asm)  # (the loops' requantization without the fix)
