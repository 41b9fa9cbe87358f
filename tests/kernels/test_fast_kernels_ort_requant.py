"""onnxruntime numerics on the fast paths, against the numpy oracle of
codegen/reference (what ORT computes), never against the kernels' own code:

* the float requantization of the fast conv / depthwise kernels
  (TINYAOT_RQ_FLOAT_SAT: tinyaot_requant_float_sat, tinyaot_rqf_2x2_sat,
  tinyaot_rqf_2x1_sat) = ort_float.requantize_acc, on random accumulators,
  exact ties (power-of-two scales), float-rounding near-ties, saturation and
  huge accumulators: the portable twins on the host, the VCVTR inline asm on
  qemu-m4;
* tinyaot_add_fast_s8 with the compile-time tables of fast_pack.ort_add_tables
  (DequantizeLinear -> Add -> QuantizeLinear, and MLAS QLinearAdd) over every
  int8 pair of several parameter sets (ties, saturation, clamps, uint8,
  broadcast b): ort_float.dequantize / quantize and ort_qlinear_add, on the
  host and on qemu-m4;
* the fast conv / depthwise kernels with the {bias, scale} records are in
  tests/kernels/test_fast_kernels.py (numerics "ort_records").
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import cffi
import numpy as np
import pytest

from tests.helpers import kernels_cffi as K
from codegen.kernels.fast_pack import dequant_table, ort_add_tables
from codegen.numerics import ort_float as of
from codegen.numerics.ort_qlinear_add import qlinear_add, qlinear_add_params
from tests.helpers.env import REPO, require_arm_toolchain

F32 = np.float32
RUNTIME = Path(os.environ.get("TINYAOT_RUNTIME_C", REPO / "runtime_c"))
INC = RUNTIME / "include"
INTERNAL = RUNTIME / "src" / "internal"  # the shim tests the internal helpers
SHIM = REPO / "tests" / "helpers" / "c" / "ort_requant_shim.c"
NOUT = 7  # outputs per accumulator (shim_requant_float)


# ------------------------------------------------------------------ requantization

def requant_operands(seed=11):
    """(acc, scale, zp) int32 / float32 / int32: random, layer-like, exact
    ties, near ties, huge."""
    rng = np.random.default_rng(seed)
    acc, scale, zp = [], [], []

    def put(a, s, z):
        acc.append(np.asarray(a, np.int64))
        scale.append(np.asarray(s, F32))
        zp.append(np.asarray(z, np.int64))

    n = 4000
    put(rng.integers(-2**31, 2**31, n), F32(10.0) ** rng.uniform(-9, 0, n), rng.integers(-128, 128, n))
    # what layers produce: |acc * scale| up to a few hundred
    s = (F32(10.0) ** rng.uniform(-5, -1, n)).astype(F32)
    put(np.clip(np.rint(rng.uniform(-400, 400, n) / s), -2**31, 2**31 - 1), s, rng.integers(-128, 128, n))
    # exact ties: scale 2^-k, acc an odd multiple of 2^(k-1) (acc * scale = m + 0.5)
    k = rng.integers(1, 24, n)
    m = rng.integers(-200, 200, n)
    put((2 * m + 1) << (k - 1), (2.0 ** -k.astype(np.float64)).astype(F32), rng.integers(-128, 128, n))
    # near ties: acc around (m + 0.5) / scale, where float32 rounding of the product decides
    s = (F32(10.0) ** rng.uniform(-6, -1, n)).astype(F32)
    m = rng.integers(-200, 200, n)
    c = np.rint((m + 0.5) / s.astype(np.float64))
    for d in (-1, 0, 1):
        put(np.clip(c + d, -2**31, 2**31 - 1), s, rng.integers(-128, 128, n))
    # accumulators past 2^24 (float(acc) rounds) and at the int32 ends, big scales (VCVTR saturates)
    edge = np.array([-2**31, -2**31 + 1, -2**24 - 3, -2**24 - 1, -1, 0, 1, 2**24 + 1, 2**24 + 3,
                     2**31 - 2, 2**31 - 1])
    for sc in (1.0, 0.5, 2.0, 1e3, 3e-8, 1e-9, 7.62939453125e-06):
        for z in (-128, -1, 0, 5, 127):
            put(edge, np.full(edge.size, sc, F32), np.full(edge.size, z))
    acc = np.concatenate(acc)
    scale = np.concatenate(scale).astype(F32)
    zp = np.concatenate(zp)
    return acc.astype(np.int32), scale, zp.astype(np.int32)


def requant_oracle(acc, scale, zp):
    return np.stack([of.requantize_acc(a, s, z, -128, 127)
                     for a, s, z in zip(acc, scale, zp)]).astype(np.int8)


def _check_requant(acc, scale, zp, got):
    exp = requant_oracle(acc, scale, zp)
    # not vacuous: mostly unsaturated, and ties where half-away rounding would differ
    assert np.count_nonzero(np.abs(exp.astype(np.int32)) < 120) > acc.size // 3
    v = acc.astype(np.float32) * scale
    ties = (np.abs(v) < 100) & (np.abs(v - np.trunc(v)) == F32(0.5))
    assert np.count_nonzero(ties & (np.rint(v) != np.trunc(v + np.sign(v) * F32(0.5)))) > 100
    for j in range(NOUT):
        bad = np.nonzero(got[:, j] != exp)[0]
        assert bad.size == 0, (f"form {j}: acc {acc[bad[0]]} scale {scale[bad[0]]!r} zp {zp[bad[0]]}: "
                               f"got {got[bad[0], j]}, onnxruntime {exp[bad[0]]} ({bad.size} differ)")


@pytest.fixture(scope="module")
def shim():
    ffi = cffi.FFI()
    ffi.cdef("void shim_requant_float_n(int32_t n, const int32_t *acc, const int32_t *scale_bits,"
             " const int32_t *zp, int8_t *out);")
    d = tempfile.mkdtemp(prefix="tinyaot-ortrq-")
    so = Path(d) / "libortrq.so"
    subprocess.run(["gcc", "-std=c99", "-O2", "-shared", "-fPIC", "-ffp-contract=off", "-Wall",
                    "-Wextra", "-Werror", "-Wconversion", "-Wshadow", "-fsanitize=undefined",
                    "-fno-sanitize-recover=all", f"-I{INC}", f"-I{INTERNAL}", "-o", str(so), str(SHIM), "-lm"],
                   check=True, capture_output=True)
    yield ffi, ffi.dlopen(str(so))
    shutil.rmtree(d, ignore_errors=True)


def test_float_requant_portable_equals_onnxruntime(shim):
    ffi, L = shim
    acc, scale, zp = requant_operands()
    out = np.zeros((acc.size, NOUT), np.int8)
    bits = scale.view(np.int32)
    L.shim_requant_float_n(acc.size, ffi.from_buffer("int32_t[]", acc), ffi.from_buffer("int32_t[]", bits),
                           ffi.from_buffer("int32_t[]", zp), ffi.from_buffer("int8_t[]", out))
    _check_requant(acc, scale, zp, out)


REQUANT_HARNESS = r"""
#include <stdint.h>
#include <string.h>
#include "harness.h"
void shim_requant_float(int32_t acc, int32_t scale_bits, int32_t zp, int8_t *out);
const uint32_t tinyaot_harness_num_inputs = NUM_INPUTS;
const uint32_t tinyaot_harness_input_size = 12u;
const uint32_t tinyaot_harness_output_size = 8u;
int tinyaot_harness_run(const int8_t *input, int8_t *output)
{
    int32_t v[3];
    memcpy(v, input, 12);
    shim_requant_float(v[0], v[1], v[2], output);
    output[7] = 0;
    return 0;
}
"""


def _objdump(elf, board):
    return subprocess.run([board["toolchain_prefix"] + "objdump", "-d", str(elf)],
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.qemu
def test_float_requant_asm_on_qemu_m4_equals_onnxruntime(tmp_path):
    """The VCVTR / QADD / SSAT inline asm (Cortex-M4 FPU) gives onnxruntime's bits."""
    require_arm_toolchain()
    from codegen.targets.qemu import build_firmware, load_board, run_firmware

    board = load_board("qemu-m4")
    acc, scale, zp = requant_operands(seed=12)
    rng = np.random.default_rng(4)
    sel = np.sort(rng.choice(acc.size, 3000, replace=False))
    sel = np.unique(np.concatenate([sel, np.arange(acc.size - 385, acc.size)]))  # all the edges
    acc, scale, zp = acc[sel], scale[sel], zp[sel]
    words = np.stack([acc, scale.view(np.int32), zp], axis=1).astype("<i4").view(np.int8)
    src = tmp_path / "rq_data.c"
    src.write_text(REQUANT_HARNESS.replace("NUM_INPUTS", f"{acc.size}u")
                   + "const int8_t tinyaot_harness_inputs[] = {"
                   + ",".join(str(int(v)) for v in words.reshape(-1)) + "};\n")
    elf = build_firmware([board["harness_main"], src, SHIM], [INC, INTERNAL], board,
                         tmp_path / "rq.elf")
    assert "vcvtr.s32.f32" in _objdump(elf, board), "not the FPU asm path"
    res = run_firmware(elf, board, timeout=300)
    got = np.stack([np.frombuffer(r.data, np.int8)[:NOUT] for r in res.outputs])
    _check_requant(acc, scale, zp, got)


# ------------------------------------------------------------------ Add

def _add_sets():
    """(name, params as prepare.py gives them, b broadcast)."""
    sets = []

    def dq(name, sa, za, sb, zb, sy, zy, lo=-128, hi=127, bcast=False):
        sets.append((name, {"a_zp": za, "b_zp": zb, "out_zp": zy, "act_min": lo, "act_max": hi,
                            "mode": 1, "a_scale": F32(sa), "b_scale": F32(sb), "out_scale": F32(sy)},
                     bcast))

    def ql(name, sa, za, sb, zb, sy, zy, u8, lo=-128, hi=127, bcast=False, swapped=False):
        p = {"a_zp": za, "b_zp": zb, "out_zp": zy, "act_min": lo, "act_max": hi}
        p.update(qlinear_add_params((F32(sa), za), (F32(sb), zb), (F32(sy), zy), u8, swapped))
        sets.append((name, p, bcast))

    dq("dq_ties", 0.5, 3, 0.25, -7, 1.0, -5)
    dq("dq_random", 0.0371, 12, 0.0213, -40, 0.0456, 7)
    dq("dq_relu", 0.0371, 12, 0.0213, -40, 0.0456, -128, lo=-128, hi=90)
    dq("dq_clamp", 0.08, -3, 0.05, 9, 0.07, 2, lo=-40, hi=60)
    dq("dq_saturating", 0.9, 0, 0.7, 1, 1e-3, 0)
    dq("dq_past_int32_saturating", 1e3, 0, 1e3, 1, 1e-7, 100)  # (a + b) / s_y >= 2^31
    dq("dq_broadcast", 0.0371, 12, 0.0213, -40, 0.0456, 7, bcast=True)
    ql("ql_s8", 0.0371, 12, 0.0213, -40, 0.0456, 7, False)
    ql("ql_u8", 0.0371, 12, 0.0213, -40, 0.0456, 7, True)
    ql("ql_ties", 0.5, 3, 0.25, -7, 1.0, -5, False)
    ql("ql_ties_u8_swapped", 0.5, 3, 0.25, -7, 1.0, -5, True, swapped=True)
    ql("ql_saturating", 0.9, 0, 0.7, 1, 1e-3, 0, True)
    ql("ql_clamp", 0.08, -3, 0.05, 9, 0.07, 2, False, lo=-40, hi=60)
    ql("ql_broadcast", 0.0371, 12, 0.0213, -40, 0.0456, 7, True, bcast=True)
    return sets


ADD_SETS = _add_sets()
A_ALL = np.arange(-128, 128).astype(np.int8)


def _add_oracle(p, a, b):
    if p["mode"] == 2:
        return qlinear_add(a, b, p).astype(np.int8)
    return of.quantize((of.dequantize(a, p["a_scale"], p["a_zp"])
                        + of.dequantize(b, p["b_scale"], p["b_zp"])).astype(F32),
                       p["out_scale"], p["out_zp"], p["act_min"], p["act_max"]).astype(np.int8)


def _add_fields(p, tables):
    return {"a_zp": p["a_zp"], "b_zp": p["b_zp"], "out_zp": p["out_zp"],
            "act_min": p["act_min"], "act_max": p["act_max"], "a_scale": F32(p["a_scale"]),
            "b_scale": F32(p["b_scale"]), "out_scale": F32(p.get("out_scale", 0.0)),
            "use_float": p["mode"], "left_shift": 0, "a_mult": 0, "a_shift": 0, "b_mult": 0,
            "b_shift": 0, "out_mult": 0, "out_shift": 0,
            "qlinear_fixed": F32(p.get("qlinear_fixed", 0.0)), "u8_shift": p.get("u8_shift", 0),
            "a_lut": None if tables is None else tables[0],
            "b_lut": None if tables is None else tables[1], "out_rq": None}


def _add_cases(p, bcast):
    """Every (a, b) int8 pair: one call per b value over all 256 a."""
    for bv in range(-128, 128):
        b = np.full(1 if bcast else 256, bv, np.int8)
        yield bv, b, 0 if bcast else 1, _add_oracle(p, A_ALL, b)


def _assert_add_not_vacuous(name, exp_all):
    exp = np.concatenate(exp_all).astype(np.int32)
    assert len(np.unique(exp)) > 40 or name.endswith("saturating"), name
    if name.endswith("saturating"):
        assert np.count_nonzero(np.abs(exp) >= 127) > exp.size // 2


@pytest.mark.parametrize("name,p,bcast", ADD_SETS, ids=[s[0] for s in ADD_SETS])
def test_add_tables_portable_equals_onnxruntime(name, p, bcast):
    tables = ort_add_tables(p, bcast)
    assert tables is not None
    exp_all = []
    for bv, b, stride, exp in _add_cases(p, bcast):
        got = K.add_fast_s8(256, _add_fields(p, tables), A_ALL, b, stride)
        ref = K.add_fast_s8(256, _add_fields(p, None), A_ALL, b, stride)  # tinyaot_add_s8
        assert np.array_equal(ref, exp), (name, bv, "reference kernel vs oracle")
        bad = np.nonzero(got != exp)[0]
        assert bad.size == 0, f"{name}: a={A_ALL[bad[0]]} b={bv}: got {got[bad[0]]}, onnxruntime {exp[bad[0]]}"
        exp_all.append(exp)
    _assert_add_not_vacuous(name, exp_all)


def test_dequant_table_is_onnxruntime_dequantize_linear():
    """Against ORT itself: DequantizeLinear of every int8."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    for s, z in ((0.0371, 12), (1e-3, -128), (0.5, 127)):
        node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])
        g = helper.make_graph([node], "dq", [helper.make_tensor_value_info("x", TensorProto.INT8, [256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256])],
                              [helper.make_tensor("s", TensorProto.FLOAT, [], [s]),
                               helper.make_tensor("z", TensorProto.INT8, [], [z])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        y = sess.run(None, {"x": A_ALL})[0]
        assert np.array_equal(y.view(np.int32), dequant_table(F32(s), z).view(np.int32))
        assert onnx.checker.check_model(m) is None


def test_qlinear_add_tables_refused_when_mlas_would_overflow():
    """MLAS maps t >= 2^31 to the low bound, VCVTR to the high one: no tables then."""
    p = {"a_zp": 0, "b_zp": 0, "out_zp": 0, "act_min": -128, "act_max": 127}
    p.update(qlinear_add_params((F32(1e3), 0), (F32(1e3), 0), (F32(1e-6), 0), False))
    assert ort_add_tables(p, False) is None


ADD_HARNESS = r"""
#include <stdint.h>
#include <string.h>
#include "harness.h"
#include "tinyaot_fast_kernels.h"
SETS
const uint32_t tinyaot_harness_num_inputs = NUM_INPUTS;
const uint32_t tinyaot_harness_input_size = 4u;
const uint32_t tinyaot_harness_output_size = 256u;
int tinyaot_harness_run(const int8_t *input, int8_t *output)
{
    int8_t a[256], b[256];
    const int32_t set = input[0];
    for (int32_t i = 0; i < 256; ++i) {
        a[i] = (int8_t)(i - 128);
        b[i] = input[1];
    }
    return tinyaot_add_fast_s8(256, &sets[set], a, b, bcast[set] ? 0 : 1, output);
}
"""


def _c_float(v):
    return f"{float(F32(v)).hex()}f" if np.isfinite(v) else "0.0f"


@pytest.mark.qemu
def test_add_tables_on_qemu_m4_equal_onnxruntime(tmp_path):
    """tinyaot_add_fast_s8's FPU path (VDIV / VFMA, VCVTR, QADD, SSAT) on every int8 pair."""
    require_arm_toolchain()
    from codegen.targets.qemu import build_firmware, load_board, run_firmware

    board = load_board("qemu-m4")
    decl, inits, bc = [], [], []
    for i, (name, p, bcast) in enumerate(ADD_SETS):
        la, lb = ort_add_tables(p, bcast)
        decl.append(f"static const int32_t la{i}[256] = {{{','.join(map(str, la.tolist()))}}};\n"
                    f"static const int32_t lb{i}[256] = {{{','.join(map(str, lb.tolist()))}}};\n")
        f = _add_fields(p, (f"la{i}", f"lb{i}"))
        inits.append("{" + ", ".join(
            f".{k} = {_c_float(v) if isinstance(v, np.floating) else v}" for k, v in f.items()
            if k not in ("a_lut", "b_lut", "out_rq")) + f", .a_lut = la{i}, .b_lut = lb{i}, .out_rq = 0}}")
        bc.append(str(int(bcast)))
    sets = ("".join(decl) + "static const tinyaot_add_params_t sets[] = {" + ",\n".join(inits) + "};\n"
            + f"static const int bcast[] = {{{','.join(bc)}}};\n")
    inputs = [(i, bv) for i in range(len(ADD_SETS)) for bv in range(-128, 128, 3)] + \
             [(i, bv) for i in range(len(ADD_SETS)) for bv in (127,)]
    data = ",".join(f"{i},{bv},0,0" for i, bv in inputs)
    src = tmp_path / "add_data.c"
    src.write_text(ADD_HARNESS.replace("SETS", sets).replace("NUM_INPUTS", f"{len(inputs)}u")
                   + f"const int8_t tinyaot_harness_inputs[] = {{{data}}};\n")
    srcs = [board["harness_main"], src, RUNTIME / "src" / "elementwise" / "tinyaot_add_fast_s8.c",
            RUNTIME / "src" / "elementwise" / "tinyaot_add_s8.c"]
    elf = build_firmware(srcs, [INC], board, tmp_path / "add.elf")
    dis = _objdump(elf, board)
    assert "vcvtr.s32.f32" in dis and "vdiv.f32" in dis and "vfma.f32" in dis, "not the FPU path"
    res = run_firmware(elf, board, timeout=300)
    assert len(res.outputs) == len(inputs)
    for (i, bv), r in zip(inputs, res.outputs):
        name, p, bcast = ADD_SETS[i]
        exp = _add_oracle(p, A_ALL, np.full(1 if bcast else 256, bv, np.int8))
        got = np.frombuffer(r.data, np.int8)
        bad = np.nonzero(got != exp)[0]
        assert bad.size == 0, f"{name}: a={A_ALL[bad[0]]} b={bv}: got {got[bad[0]]}, onnxruntime {exp[bad[0]]}"
