"""The fast kernels (runtime_c/include/tinyaot_fast_kernels.h) and what they
are built from, each against an independent oracle:

* tinyaot_intrinsics.h: the portable C versions (host) and the inline-asm
  versions (qemu-m4, a small firmware) against a Python transcription of the
  Armv7-M pseudocode, over edge and random operands;
* tinyaot_requant_fast.h / tinyaot_add_fast_s8 against the reference
  fixed-point functions (tinyaot_fixedpoint.h);
* the fast conv / depthwise / FC kernels against the reference kernels of
  tinyaot_kernels.h, and against a numpy oracle, on random layers (padding,
  strides, dilation, odd pixel counts, K not a multiple of 4, both numerics);
* the arena planner's scratch blocks (planner/arena.py, planner/check.py).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import cffi
import numpy as np
import pytest

from codegen.kernels.fast_pack import (add_tables, conv_gemm_weights, conv_scratch_bytes,
                                       fc_scratch_bytes, float_requant, pack_conv_gemm,
                                       pack_depthwise, pack_gemm, smlal_requant)

from tests.helpers.env import C_DIR, REPO, require_arm_toolchain
from tests.helpers.kernel_firmware import c_words, cases_firmware, requant_c

import os  # noqa: E402

# one worker builds the module's kernel library (pytest-xdist)
pytestmark = pytest.mark.xdist_group("fast_kernels")

# TINYAOT_RUNTIME_C: test another copy of runtime_c/ (how these tests were shown to fail)
RUNTIME = Path(os.environ.get("TINYAOT_RUNTIME_C", REPO / "runtime_c"))
INC = RUNTIME / "include"
SRC = RUNTIME / "src"
INTERNAL = SRC / "internal"  # the shim tests the internal helpers
SHIM = C_DIR / "fast_kernels_shim.c"
M32 = 0xFFFFFFFF

# ------------------------------------------------------------------ oracle


def _s(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def lo(x):
    return _s(x, 16)


def hi(x):
    return _s(x >> 16, 16)


def b(x, k):
    return _s(x >> (8 * k), 8)


def pack(l, h):
    return (l & 0xFFFF) | ((h & 0xFFFF) << 16)


def sat(v, lo_, hi_):
    return max(lo_, min(hi_, v))


def asr(x, s):
    return _s(x, 32) >> s


OPS = [  # (name, oracle(a, b, c) -> uint32), index = shim op code
    ("SXTB16", lambda a, b_, c: pack(b(a, 0), b(a, 2))),
    ("SXTB16_ROR8", lambda a, b_, c: pack(b(a, 1), b(a, 3))),
    ("SXTAB16", lambda a, b_, c: pack(lo(a) + b(b_, 0), hi(a) + b(b_, 2))),
    ("SXTAB16_ROR8", lambda a, b_, c: pack(lo(a) + b(b_, 1), hi(a) + b(b_, 3))),
    ("SMLAD", lambda a, b_, c: (c + lo(a) * lo(b_) + hi(a) * hi(b_)) & M32),
    ("SMLADX", lambda a, b_, c: (c + lo(a) * hi(b_) + hi(a) * lo(b_)) & M32),
    ("SMUAD", lambda a, b_, c: (lo(a) * lo(b_) + hi(a) * hi(b_)) & M32),
    ("SMLABB", lambda a, b_, c: (c + lo(a) * lo(b_)) & M32),
    ("SMLABT", lambda a, b_, c: (c + lo(a) * hi(b_)) & M32),
    ("SMLATB", lambda a, b_, c: (c + hi(a) * lo(b_)) & M32),
    ("SMLATT", lambda a, b_, c: (c + hi(a) * hi(b_)) & M32),
    ("QADD", lambda a, b_, c: sat(_s(a, 32) + _s(b_, 32), -2**31, 2**31 - 1) & M32),
    ("QSUB", lambda a, b_, c: sat(_s(a, 32) - _s(b_, 32), -2**31, 2**31 - 1) & M32),
    ("SSAT8", lambda a, b_, c: sat(_s(a, 32), -128, 127) & M32),
    ("SSAT16", lambda a, b_, c: sat(_s(a, 32), -32768, 32767) & M32),
    ("SSAT1", lambda a, b_, c: sat(_s(a, 32), -1, 0) & M32),
    ("SSAT32", lambda a, b_, c: a),
    ("USAT8", lambda a, b_, c: sat(_s(a, 32), 0, 255)),
    ("USAT0", lambda a, b_, c: 0),
    ("USAT31", lambda a, b_, c: sat(_s(a, 32), 0, 2**31 - 1)),
    ("PKHBT0", lambda a, b_, c: (a & 0xFFFF) | (b_ & 0xFFFF0000)),
    ("PKHBT16", lambda a, b_, c: (a & 0xFFFF) | ((b_ << 16) & 0xFFFF0000)),
    ("PKHBT5", lambda a, b_, c: (a & 0xFFFF) | ((b_ << 5) & 0xFFFF0000)),
    ("PKHTB0", lambda a, b_, c: (a & 0xFFFF0000) | (b_ & 0xFFFF)),
    ("PKHTB16", lambda a, b_, c: (a & 0xFFFF0000) | (asr(b_, 16) & 0xFFFF)),
    ("PKHTB7", lambda a, b_, c: (a & 0xFFFF0000) | (asr(b_, 7) & 0xFFFF)),
    ("PKHTB31", lambda a, b_, c: (a & 0xFFFF0000) | (asr(b_, 31) & 0xFFFF)),
    # Armv7-M A7.7.131: ((SInt(Ra) << 32) + SInt(Rn) * SInt(Rm) + 0x80000000)<63:32>
    ("SMMLAR", lambda a, b_, c: (((_s(c, 32) << 32) + _s(a, 32) * _s(b_, 32) + 0x80000000) >> 32) & M32),
    # SADD16 / SSUB16 (Armv7-M ARM, A7.7): each halfword's sum or difference, its low 16 bits
    ("SADD16", lambda a, b_, c: pack(lo(a) + lo(b_), hi(a) + hi(b_))),
    ("SSUB16", lambda a, b_, c: pack(lo(a) - lo(b_), hi(a) - hi(b_))),
]

EDGE32 = [0, 1, 2, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7F7F7F7F, 0x80808080,
          0x7FFF7FFF, 0x80008000, 0x80000000, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFF0000, 0x0000FFFF,
          0x00FF00FF, 0xFF00FF00, 0x12345678, 0xDEADBEEF]


def operands(n_random=3000, seed=1):
    rng = np.random.default_rng(seed)
    e = np.array(EDGE32, dtype=np.uint64)
    grid = np.array(np.meshgrid(e, e, e[::4], indexing="ij")).reshape(3, -1)
    rnd = rng.integers(0, 1 << 32, size=(3, n_random), dtype=np.uint64)
    return np.concatenate([grid, rnd], axis=1).astype(np.uint32)


def expected(op, a, b_, c):
    f = OPS[op][1]
    return np.array([f(int(x), int(y), int(z)) for x, y, z in zip(a, b_, c)], dtype=np.uint32)


# ------------------------------------------------------------------ host library

def _cdef_from(header):
    text = Path(header).read_text()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"#\s*ifdef\s+__cplusplus.*?#\s*endif", "", text, flags=re.S)
    return "\n".join(l for l in text.splitlines() if not l.strip().startswith("#"))


@pytest.fixture(scope="module")
def lib():
    ffi = cffi.FFI()
    ffi.cdef(_cdef_from(INC / "tinyaot_kernels.h"))
    ffi.cdef(_cdef_from(INC / "tinyaot_fast_kernels.h"))
    ffi.cdef("""
        void shim_binop(int32_t op, int32_t n, const uint32_t *a, const uint32_t *b,
                        const uint32_t *c, uint32_t *out);
        void shim_requant(int32_t n, const int32_t *acc, const int32_t *mult,
                          const int32_t *shift, const int32_t *zp, int8_t *ref, int8_t *fast);
        void shim_srdhm(int32_t n, const int32_t *a, const int32_t *b, int32_t *ref, int32_t *fast);
        void shim_requant_smlal(int32_t n, const int32_t *acc, const int32_t *rq, int8_t *out);
    """)
    d = tempfile.mkdtemp(prefix="tinyaot-fast-")
    so = Path(d) / "libfast.so"
    cmd = (["gcc", "-std=c99", "-O2", "-shared", "-fPIC", "-ffp-contract=off", "-Wall", "-Wextra",
            "-Werror", "-Wconversion", "-Wshadow", "-fsanitize=undefined",
            "-fno-sanitize-recover=all", f"-I{INC}", f"-I{INTERNAL}", "-o", str(so), str(SHIM)]
           + [str(p) for p in sorted(SRC.rglob("*.c"))] + ["-lm"])
    subprocess.run(cmd, check=True, capture_output=True)
    L = ffi.dlopen(str(so))
    yield ffi, L
    shutil.rmtree(d, ignore_errors=True)


def _ptr(ffi, arr, ctype):
    return ffi.cast(ctype + " *", ffi.from_buffer(arr))


# ------------------------------------------------------------------ intrinsics

@pytest.mark.parametrize("op", range(len(OPS)), ids=[o[0] for o in OPS])
def test_portable_intrinsics_match_arm_pseudocode(lib, op):
    ffi, L = lib
    a, b_, c = operands()
    out = np.zeros(a.size, dtype=np.uint32)
    L.shim_binop(op, a.size, _ptr(ffi, a, "uint32_t"), _ptr(ffi, b_, "uint32_t"),
                 _ptr(ffi, c, "uint32_t"), _ptr(ffi, out, "uint32_t"))
    exp = expected(op, a, b_, c)
    bad = np.nonzero(out != exp)[0]
    assert bad.size == 0, (f"{OPS[op][0]}({a[bad[0]]:#x}, {b_[bad[0]]:#x}, {c[bad[0]]:#x}) = "
                           f"{out[bad[0]]:#x}, Arm: {exp[bad[0]]:#x}")


def test_oracle_catches_a_wrong_intrinsic():
    """The oracle is not vacuous: SMLAD and SMLADX differ on most operands."""
    a, b_, c = operands(200)
    assert np.count_nonzero(expected(4, a, b_, c) != expected(5, a, b_, c)) > 150


HARNESS_RUN = r"""
#include <stdint.h>
#include <string.h>
#include "harness.h"
void shim_binop(int32_t op, int32_t n, const uint32_t *a, const uint32_t *b, const uint32_t *c,
                uint32_t *out);
const uint32_t tinyaot_harness_num_inputs = NUM_INPUTS;
const uint32_t tinyaot_harness_input_size = 12u;
const uint32_t tinyaot_harness_output_size = NUM_OPS * 4u;
int tinyaot_harness_run(const int8_t *input, int8_t *output)
{
    uint32_t a, b, c, r;
    memcpy(&a, input, 4);
    memcpy(&b, input + 4, 4);
    memcpy(&c, input + 8, 4);
    for (int32_t op = 0; op < (int32_t)NUM_OPS; ++op) {
        shim_binop(op, 1, &a, &b, &c, &r);
        memcpy(output + 4 * op, &r, 4);
    }
    return 0;
}
"""


@pytest.mark.qemu
def test_dsp_asm_intrinsics_on_qemu_m4(tmp_path):
    """The inline-asm versions (built for Cortex-M4 with DSP) give the Arm results."""
    require_arm_toolchain()
    from codegen.targets.qemu import build_firmware, load_board, run_firmware

    board = load_board("qemu-m4")
    a, b_, c = operands(600, seed=7)
    sel = np.random.default_rng(3).choice(a.size, size=800, replace=False)
    a, b_, c = a[sel], b_[sel], c[sel]
    words = np.stack([a, b_, c], axis=1).astype("<u4").view(np.int8).reshape(len(a), 12)
    data = ",".join(str(int(v)) for v in words.reshape(-1))
    src = tmp_path / "intr_data.c"
    src.write_text(HARNESS_RUN.replace("NUM_INPUTS", f"{len(a)}u").replace("NUM_OPS", f"{len(OPS)}u")
                   + f"const int8_t tinyaot_harness_inputs[] = {{{data}}};\n")
    elf = build_firmware([board["harness_main"], src, SHIM], [INC, INTERNAL], board,
                         tmp_path / "intr.elf")
    asm = subprocess.run([board["toolchain_prefix"] + "objdump", "-d", str(elf)],
                         capture_output=True, text=True, check=True).stdout
    for insn in ("smlad", "smladx", "sxtab16", "sxtb16", "smlatt", "pkhtb", "ssat", "usat", "qadd",
                 "smmlar"):
        assert re.search(rf"\s{insn}\s", asm), f"{insn} not in the firmware: not the asm path"
    res = run_firmware(elf, board, timeout=120)
    assert len(res.outputs) == len(a)
    outs = np.stack([np.frombuffer(r.data, dtype="<u4") for r in res.outputs])
    for op in range(len(OPS)):
        exp = expected(op, a, b_, c)
        bad = np.nonzero(outs[:, op] != exp)[0]
        assert bad.size == 0, (f"asm {OPS[op][0]}({a[bad[0]]:#x}, {b_[bad[0]]:#x}, {c[bad[0]]:#x})"
                               f" = {outs[bad[0], op]:#x}, Arm: {exp[bad[0]]:#x}")


# ------------------------------------------------------------------ requant

def test_fast_requant_equals_reference(lib):
    ffi, L = lib
    rng = np.random.default_rng(5)
    n = 200000
    edge = np.array([-2**31, -2**31 + 1, -2**30 - 1, -2**30, -65536, -257, -2, -1, 0, 1, 2, 255,
                     65535, 2**30, 2**31 - 2, 2**31 - 1], dtype=np.int64)
    acc = np.concatenate([rng.integers(-2**31, 2**31, n // 2), rng.integers(-2**20, 2**20, n // 2),
                          np.tile(edge, 64)])
    m = len(acc)
    mult = np.concatenate([rng.integers(2**30, 2**31, m - 2048),
                           rng.choice([0, 1, 2**30, 2**30 + 1, 2**31 - 1], 2048)])
    rng.shuffle(mult)
    shift = rng.integers(-31, 32, m)
    zp = rng.integers(-128, 128, m)
    acc, mult, shift, zp = (x.astype(np.int32) for x in (acc, mult, shift, zp))
    ref = np.zeros(m, np.int8)
    fast = np.zeros(m, np.int8)
    L.shim_requant(m, *(_ptr(ffi, x, "int32_t") for x in (acc, mult, shift, zp)),
                   _ptr(ffi, ref, "int8_t"), _ptr(ffi, fast, "int8_t"))
    assert np.count_nonzero(ref != -128) > m // 10  # not a saturated, vacuous comparison
    bad = np.nonzero(ref != fast)[0]
    assert bad.size == 0, (acc[bad[0]], mult[bad[0]], shift[bad[0]], ref[bad[0]], fast[bad[0]])
    ra = np.zeros(m, np.int32)
    fa = np.zeros(m, np.int32)
    L.shim_srdhm(m, _ptr(ffi, acc, "int32_t"), _ptr(ffi, mult, "int32_t"), _ptr(ffi, ra, "int32_t"),
                 _ptr(ffi, fa, "int32_t"))
    assert np.array_equal(ra, fa)


def _mbqm_oracle(acc, mult, shift, zp):
    """tflite::MultiplyByQuantizedMultiplier (double rounding) + zp, saturated,
    in Python integers from its definition (gemmlowp SRDHM, RDBPOT)."""
    out = []
    for a, m, s, z in zip(acc.tolist(), mult.tolist(), shift.tolist(), zp.tolist()):
        left, right = max(s, 0), max(-s, 0)
        a = _s(a << left, 32)
        ab = a * m
        nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
        x = int((ab + nudge) / (1 << 31)) if abs(ab + nudge) < 2**52 else \
            (abs(ab + nudge) >> 31) * (1 if ab + nudge >= 0 else -1)
        mask = (1 << right) - 1
        r = (x & mask)
        thr = (mask >> 1) + (1 if x < 0 else 0)
        out.append(sat((x >> right) + (1 if r > thr else 0) + z, -128, 127))
    return np.array(out, dtype=np.int8)


def test_smlal_requant_equals_double_rounding(lib):
    """tinyaot_mbqm_smlal (portable twin; the asm one runs in every qemu-m4
    model test) against the reference helper and a Python oracle: every
    shift from -1 to -31, accumulators over the whole int32 range, the ranges
    layers produce, and the tie points of both roundings."""
    ffi, L = lib
    rng = np.random.default_rng(17)
    n = 100000  # (the records are built in Python, a channel at a time: ~30 s at 400,000)
    shift = rng.integers(-31, 0, n)
    mult = rng.integers(2**30, 2**31, n)
    mult[:1000] = rng.choice([0, 2**30, 2**31 - 1], 1000)
    e = -shift
    acc = np.concatenate([rng.integers(-2**31, 2**31, n // 4), rng.integers(-2**22, 2**22, n // 4),
                          rng.integers(-300, 300, n // 4), np.zeros(n - 3 * (n // 4), np.int64)])
    # ties: acc * mult close to an odd multiple of 2^(30 + e) or of 2^30
    k = n - 3 * (n // 4)
    tgt = (2 * rng.integers(-2**8, 2**8, k) + 1) * (np.int64(1) << np.minimum(30 + e[-k:], 40)) \
        // 2**8
    acc[-k:] = np.clip(tgt * 2**8 // mult[-k:] + rng.integers(-2, 3, k), -2**31, 2**31 - 1)
    zp = rng.integers(-128, 128, n)
    acc, mult, shift, zp = (x.astype(np.int32) for x in (acc, mult, shift, zp))
    mult[5:200] = 0
    shift[5:100] = rng.integers(0, 4, 95)  # multiplier 0: any shift
    # the zero point rides in R (its high word gets zp * 2^(e-1)) where that fits an int32:
    # |zp| * 2^(e-1) <= 2^29; a layer with a channel beyond it gets no records
    e1 = np.where(mult == 0, 1, -shift.astype(np.int64))
    fits = np.abs(zp.astype(np.int64)) << (e1 - 1) <= 2**29
    assert 0 < np.count_nonzero(~fits) < n // 2
    assert smlal_requant(mult, shift, 0, zp) is None
    zp = np.where(fits, zp, 0).astype(np.int32)
    rq = smlal_requant(mult, shift, 0, zp)
    assert rq is not None and smlal_requant(mult, np.where(shift == -3, 1, shift), 0, zp) is None
    out = np.zeros(n, np.int8)
    ref = np.zeros(n, np.int8)
    ref_fast = np.zeros(n, np.int8)
    L.shim_requant_smlal(n, _ptr(ffi, acc, "int32_t"), _ptr(ffi, rq, "int32_t"),
                         _ptr(ffi, out, "int8_t"))
    L.shim_requant(n, *(_ptr(ffi, x, "int32_t") for x in (acc, mult, shift, zp)),
                   _ptr(ffi, ref, "int8_t"), _ptr(ffi, ref_fast, "int8_t"))
    assert np.count_nonzero((ref != -128) & (ref != 127)) > n // 4  # not all saturated
    bad = np.nonzero(out != ref)[0]
    assert bad.size == 0, (acc[bad[0]], mult[bad[0]], shift[bad[0]], ref[bad[0]], out[bad[0]])
    sel = rng.choice(n, 20000, replace=False)
    assert np.array_equal(out[sel], _mbqm_oracle(acc[sel], mult[sel], shift[sel], zp[sel]))


def test_smlal_records_hold_the_zero_point_over_an_accumulator_range(lib):
    """With each channel's accumulator range (codegen/ops/conv_records.acc_range), the
    records hold the output zero point where no range could: shifts down to -31 (R's
    high word alone would pass int32 there), and channels whose bias dwarfs what their
    weights add (vww01's late layers: a bias near 2^30, shift -27), whose MBQM is one
    value over the range and whose records say so (multiplier 0). Every accumulator of
    the range through the records (tinyaot_mbqm_smlal's portable twin, no zero point
    added) equals the double-rounding oracle plus the zero point."""
    ffi, L = lib
    rng = np.random.default_rng(23)
    n = 3000
    mult = rng.integers(2**30, 2**31, n)
    shift = rng.integers(-31, 0, n)
    zp = rng.integers(-128, 128, n)
    span = rng.integers(0, 2**16, n)
    bias = rng.integers(-2**20, 2**20, n)
    big = rng.random(n) < 0.3  # bias-dominated channels
    nb = np.count_nonzero(big)
    bias[big] = rng.choice([-1, 1], nb) * rng.integers(2**29, 2**30, nb)
    shift[big] = rng.integers(-31, -22, nb)
    lo, hi = bias - span, bias + span
    assert smlal_requant(mult, shift, bias, zp) is None  # not without the ranges
    rq = smlal_requant(mult, shift, bias, zp, (lo, hi))
    assert rq is not None
    words = rq.reshape(n, 5)
    assert np.count_nonzero(words[big, 0] == 0) > np.count_nonzero(big) // 2  # constant
    assert np.count_nonzero(words[~big, 0] != 0) > np.count_nonzero(~big) // 2
    # the range's ends, and points inside it, each channel's record repeated
    k = 8
    t = np.concatenate([np.zeros((n, 1)), np.ones((n, 1)), rng.random((n, k - 2))], axis=1)
    acc = (lo[:, None] + np.round(t * (hi - lo)[:, None])).astype(np.int64).reshape(-1)
    ch = np.repeat(np.arange(n), k)
    recs = np.ascontiguousarray(words[ch].reshape(-1)).astype(np.int32)
    acc32 = acc.astype(np.int32)
    out = np.zeros(acc.size, np.int8)
    L.shim_requant_smlal(acc.size, _ptr(ffi, acc32, "int32_t"), _ptr(ffi, recs, "int32_t"),
                         _ptr(ffi, out, "int8_t"))
    want = _mbqm_oracle(acc32, mult[ch].astype(np.int32), shift[ch].astype(np.int32), zp[ch])
    assert np.array_equal(out, want)
    assert len(np.unique(want)) > 100  # not all saturated


def test_accumulator_range_holds_every_sum_a_layer_can_make():
    """conv_records.acc_range (what the records' zero point is checked over) contains
    every accumulator: bias + sum w * (x - zp) at its extreme inputs for any input zero
    point, and the folded form (bias - zp * sum w) + sum w * x; a channel whose sums can
    pass int32 gets the whole int32 range (the kernels wrap as TFLite does)."""
    from codegen.ops.conv_records import acc_range
    rng = np.random.default_rng(31)
    w = rng.integers(-127, 128, (64, 75))
    bias = rng.integers(-2**20, 2**20, 64)
    lo, hi = acc_range(bias, w)
    for zp in (-128, -5, 0, 127):
        up = np.where(w > 0, 127 - zp, -128 - zp)  # the input that maximizes each product
        top = bias + (w * up).sum(axis=1)
        bot = bias + (w * np.where(w > 0, -128 - zp, 127 - zp)).sum(axis=1)
        assert np.all(lo <= bot) and np.all(top <= hi)
        folded = bias - zp * w.sum(axis=1)
        assert np.all(lo <= folded - 128 * np.abs(w).sum(axis=1))
        assert np.all(folded + 128 * np.abs(w).sum(axis=1) <= hi)
    lo, hi = acc_range(np.array([2**31 - 100]), np.ones((1, 4)))
    assert (lo[0], hi[0]) == (-(1 << 31), (1 << 31) - 1)


# ------------------------------------------------------------------ kernels

def _requant(ffi, keep, cout, numerics, rng, in_zp, out_zp, lo=-128, hi=127):
    bias = rng.integers(-3000, 3000, cout).astype(np.int32)
    keep += [bias]
    q = ffi.new("tinyaot_requant_t *")
    q.in_zp, q.out_zp, q.act_min, q.act_max = in_zp, out_zp, lo, hi
    q.bias = _ptr(ffi, bias, "int32_t")
    if numerics in ("ort", "ort_records"):
        scale = (rng.uniform(0.3, 3.0, cout) / 2000).astype(np.float32)
        keep.append(scale)
        q.scale = _ptr(ffi, scale, "float")
        q.mult = ffi.NULL
        q.shift = ffi.NULL
    else:
        mult = rng.integers(2**30, 2**31, cout).astype(np.int32)
        shift = rng.integers(-12, -7, cout).astype(np.int32)
        keep += [mult, shift]
        q.scale = ffi.NULL
        q.mult = _ptr(ffi, mult, "int32_t")
        q.shift = _ptr(ffi, shift, "int32_t")
    return q, bias


def _attach_smlal(ffi, keep, q, cout, numerics):
    """tflite_smlal: also give the kernels the one-SMLAL words (after any change
    to the shifts), as the code generator does; ort_records: the {bias, scale}
    records of onnxruntime's requantization (whole int8 range only)."""
    if numerics == "ort_records":
        assert q.act_min == -128 and q.act_max == 127
        scale = np.frombuffer(ffi.buffer(q.scale, 4 * cout), np.float32)
        bias = np.frombuffer(ffi.buffer(q.bias, 4 * cout), np.int32)
        rq = float_requant(scale, bias)
        keep.append(rq)
        q.rq = _ptr(ffi, rq, "int32_t")
        return
    if numerics != "tflite_smlal":
        return
    mult = np.frombuffer(ffi.buffer(q.mult, 4 * cout), np.int32)
    shift = np.frombuffer(ffi.buffer(q.shift, 4 * cout), np.int32)
    bias = np.frombuffer(ffi.buffer(q.bias, 4 * cout), np.int32)
    rq = smlal_requant(mult, shift, bias, q.out_zp)
    assert rq is not None
    keep.append(rq)
    q.rq = _ptr(ffi, rq, "int32_t")


def _dims(ffi, vals):
    d = ffi.new("tinyaot_conv_dims_t *")
    (d.in_h, d.in_w, d.in_c, d.out_h, d.out_w, d.out_c, d.k_h, d.k_w, d.stride_h, d.stride_w,
     d.dil_h, d.dil_w, d.pad_top, d.pad_left, d.groups) = vals
    return d


def _out_size(n, k, s, dil, p0, p1):
    return (n + p0 + p1 - dil * (k - 1) - 1) // s + 1


def np_conv(x, w, in_zp, stride, dil, pads, groups=1):
    """int32 accumulators of an NHWC conv, zero-point padding (oracle)."""
    h, wd, c = x.shape
    oc, cg, kh, kw = w.shape
    oh = _out_size(h, kh, stride[0], dil[0], pads[0], pads[2])
    ow = _out_size(wd, kw, stride[1], dil[1], pads[1], pads[3])
    xp = np.full((h + pads[0] + pads[2], wd + pads[1] + pads[3], c), in_zp, np.int64)
    xp[pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x
    xp -= in_zp
    acc = np.zeros((oh, ow, oc), np.int64)
    og = oc // groups
    for ky in range(kh):
        for kx in range(kw):
            win = xp[ky * dil[0]:ky * dil[0] + stride[0] * (oh - 1) + 1:stride[0],
                     kx * dil[1]:kx * dil[1] + stride[1] * (ow - 1) + 1:stride[1]]
            for g in range(groups):
                acc[..., g * og:(g + 1) * og] += (
                    win[..., g * cg:(g + 1) * cg] @ w[g * og:(g + 1) * og, :, ky, kx].T.astype(np.int64))
    return acc


CONV_CASES = [  # h, w, cin, cout, kh, kw, stride, dil, pads(t, l, b, r)
    (5, 5, 8, 16, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),
    (7, 6, 3, 8, 3, 3, (2, 2), (1, 1), (1, 1, 1, 1)),
    (8, 8, 3, 5, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    (9, 7, 1, 6, 4, 3, (2, 1), (1, 1), (1, 1, 2, 1)),
    (6, 5, 12, 7, 3, 3, (1, 1), (2, 2), (2, 2, 2, 2)),
    (5, 4, 20, 9, 2, 2, (1, 2), (1, 1), (0, 1, 1, 0)),
    (3, 3, 2, 3, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    (1, 1, 7, 4, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),
    # rows not whole quads (their tails in quads after all rows): dilated edges,
    # 16 rows of 6 (tails of 2), 5 rows of 25 (tails of 1), edges everywhere
    (9, 9, 3, 4, 3, 3, (1, 1), (2, 2), (2, 2, 2, 2)),
    (17, 4, 3, 3, 16, 2, (1, 1), (1, 1), (0, 1, 0, 0)),
    (6, 6, 5, 3, 5, 5, (1, 1), (1, 1), (2, 2, 2, 2)),
    # one window row (its tail padded in place): pointwise pairs on 7 channels, 1x3 on 3
    (3, 4, 7, 5, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),
    (4, 6, 3, 4, 1, 3, (1, 1), (1, 1), (0, 1, 0, 1)),
    # rows of one quad cut by an edge (one word shifted): 10x4-like on one channel
    # (both edges, 2 and 3 values inside), 3x2 on two (its left edge), and an input
    # narrower than a word (value by value)
    (11, 7, 1, 8, 5, 4, (2, 2), (1, 1), (2, 2, 2, 2)),
    (5, 5, 2, 4, 3, 2, (1, 1), (1, 1), (1, 1, 1, 0)),
    (4, 2, 1, 3, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
]
# in_c % 4 == 0: edge windows as zero quads + one run (padding at every edge,
# a window wider than the input, one wholly in the padding), and every
# nquads % 8 of the unrolled GEMM (nquads = k_h * ceil(k_w * in_c / 4)): the
# 4-channel group loop's nquads % 4 below and above 4 quads, with 0-3 channels
# left after the groups
QUAD_CONV_CASES = [  # nquads, pixels, out_c
    (6, 7, 16, 6, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),    # 36 (% 8 = 4), 42, 6
    (5, 5, 8, 7, 3, 3, (1, 1), (1, 1), (2, 1, 0, 2)),     # 18 (2), 30, odd 7
    (5, 3, 4, 5, 3, 2, (2, 1), (1, 1), (1, 3, 1, 3)),     # 6 (6), 24, 5
    (3, 5, 12, 9, 5, 5, (1, 1), (1, 1), (2, 2, 2, 2)),    # 75 (3), 15 odd, 9
    (3, 1, 4, 3, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),     # 9 (1), 3, 3
    (5, 6, 16, 5, 1, 2, (1, 2), (1, 1), (0, 1, 0, 1)),    # 8 (0), 20, 5
    (4, 6, 32, 4, 1, 2, (1, 2), (1, 1), (0, 1, 0, 1)),    # 16 (0), 16, 4
    (4, 4, 20, 6, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),    # 45 (5), 16, 6
    (4, 5, 28, 3, 3, 3, (2, 2), (1, 1), (1, 1, 1, 1)),    # 63 (7), 6, 3
    (3, 9, 8, 4, 1, 7, (1, 1), (1, 1), (0, 3, 0, 3)),     # 14 (6), 27 odd, 4
    (4, 4, 16, 8, 3, 3, (1, 1), (1, 1), (0, 0, 0, 0)),    # 36, no padding: inside only
    # fewer than 8 quads (the record asm's straight entries) and a lone channel
    (4, 5, 4, 6, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),     # 1, 20, 6
    (3, 5, 16, 6, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),    # 4, 15 odd, 6
    (3, 4, 8, 1, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),     # 2, 12, 1
    (3, 5, 12, 8, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0)),    # 3, 15 odd, 8: two groups of four
]


@pytest.mark.parametrize("numerics", ["tflite", "tflite_smlal", "ort", "ort_records"])
@pytest.mark.parametrize("case", CONV_CASES + QUAD_CONV_CASES,
                         ids=lambda c: "x".join(map(str, c[:6])) + "p" + "".join(map(str, c[8])))
def test_fast_conv_matches_reference_kernel_and_numpy(lib, case, numerics):
    ffi, L = lib
    h, wd, cin, cout, kh, kw, stride, dil, pads = case
    rng = np.random.default_rng(hash(case) % 2**32)
    in_zp, out_zp = int(rng.integers(-128, 128)), int(rng.integers(-20, 20))
    x = rng.integers(-128, 128, (h, wd, cin)).astype(np.int8)
    w = rng.integers(-127, 128, (cout, cin, kh, kw)).astype(np.int8)
    oh = _out_size(h, kh, stride[0], dil[0], pads[0], pads[2])
    ow = _out_size(wd, kw, stride[1], dil[1], pads[1], pads[3])
    keep = []
    lo, hi = (-128, 127) if numerics == "ort_records" else (-100, 120)
    q, bias = _requant(ffi, keep, cout, numerics, rng, in_zp, out_zp, lo, hi)
    _attach_smlal(ffi, keep, q, cout, numerics)
    d = _dims(ffi, [h, wd, cin, oh, ow, cout, kh, kw, stride[0], stride[1], dil[0], dil[1],
                    pads[0], pads[1], 1])
    wref = np.ascontiguousarray(w.transpose(0, 2, 3, 1))
    wp = pack_conv_gemm(conv_gemm_weights(w))
    nbytes = L.tinyaot_convolve_fast_s8_get_buffer_size(d)
    assert nbytes == conv_scratch_bytes(kh, kw, cin)
    scratch = np.zeros(nbytes // 4 + 4, np.uint32)
    ref = np.zeros((oh, ow, cout), np.int8)
    fast = np.full((oh, ow, cout), 0x5A, np.int8)
    assert L.tinyaot_convolve_s8(d, q, _ptr(ffi, x, "int8_t"), _ptr(ffi, wref, "int8_t"),
                                 _ptr(ffi, ref, "int8_t")) == 0
    assert L.tinyaot_convolve_fast_s8(d, q, _ptr(ffi, x, "int8_t"), _ptr(ffi, wp, "int32_t"),
                                      _ptr(ffi, scratch, "uint32_t"), _ptr(ffi, fast, "int8_t")) == 0
    assert np.array_equal(ref, fast)
    # the numpy oracle pins the accumulators: an all-clamped output would prove nothing
    acc = np_conv(x.astype(np.int64), w, in_zp, stride, dil, pads) + bias
    assert len(np.unique(ref)) > min(10, ref.size // 2)
    if numerics in ("ort", "ort_records"):
        s = np.frombuffer(ffi.buffer(q.scale, 4 * cout), np.float32)
        v = np.clip((acc.astype(np.float32) * s), lo - out_zp, hi - out_zp)
        assert np.array_equal(np.rint(v).astype(np.int64) + out_zp, ref.astype(np.int64))
        assert np.array_equal(np.rint(v).astype(np.int64) + out_zp, fast.astype(np.int64))


@pytest.mark.parametrize("numerics", ["tflite", "tflite_smlal", "ort", "ort_records"])
@pytest.mark.parametrize("case", [
    (6, 6, 8, 3, 3, (1, 1), (1, 1), (1, 1, 1, 1)),
    (9, 8, 12, 3, 3, (2, 2), (1, 1), (0, 0, 1, 1)),
    (10, 4, 4, 10, 4, (2, 1), (1, 1), (4, 1, 5, 2)),
    (7, 7, 16, 3, 3, (1, 1), (2, 3), (2, 3, 2, 3)),
    (4, 4, 4, 5, 5, (1, 1), (1, 1), (2, 2, 2, 2)),
], ids=lambda c: "x".join(map(str, c[:5])))
def test_fast_depthwise_matches_reference_kernel(lib, case, numerics):
    ffi, L = lib
    h, wd, c, kh, kw, stride, dil, pads = case
    rng = np.random.default_rng(hash(case) % 2**32 + 1)
    in_zp, out_zp = int(rng.integers(-128, 128)), int(rng.integers(-20, 20))
    x = rng.integers(-128, 128, (h, wd, c)).astype(np.int8)
    w = rng.integers(-127, 128, (c, 1, kh, kw)).astype(np.int8)
    oh = _out_size(h, kh, stride[0], dil[0], pads[0], pads[2])
    ow = _out_size(wd, kw, stride[1], dil[1], pads[1], pads[3])
    keep = []
    q, bias = _requant(ffi, keep, c, numerics, rng, in_zp, out_zp)
    if numerics not in ("ort", "ort_records"):
        shift = np.frombuffer(ffi.buffer(q.shift, 4 * c), np.int32)
        shift[:] = rng.integers(-9, -5, c)  # 9-25 MACs per output: keep outputs unsaturated
    _attach_smlal(ffi, keep, q, c, numerics)
    d = _dims(ffi, [h, wd, c, oh, ow, c, kh, kw, stride[0], stride[1], dil[0], dil[1],
                    pads[0], pads[1], c])
    wt = np.ascontiguousarray(w[:, 0].transpose(1, 2, 0))  # kh, kw, c
    wp = pack_depthwise(wt.reshape(-1, c))
    ref = np.zeros((oh, ow, c), np.int8)
    fast = np.full((oh, ow, c), 0x5A, np.int8)
    assert L.tinyaot_depthwise_conv_s8(d, q, _ptr(ffi, x, "int8_t"), _ptr(ffi, wt, "int8_t"),
                                       _ptr(ffi, ref, "int8_t")) == 0
    assert L.tinyaot_depthwise_conv_fast_s8(d, q, _ptr(ffi, x, "int8_t"), _ptr(ffi, wp, "int32_t"),
                                            _ptr(ffi, fast, "int8_t")) == 0
    assert len(np.unique(ref)) > 10
    assert np.array_equal(ref, fast)
    acc = np_conv(x.astype(np.int64), w, in_zp, stride, dil, pads, groups=c) + bias
    if numerics in ("ort", "ort_records"):
        s = np.frombuffer(ffi.buffer(q.scale, 4 * c), np.float32)
        v = np.clip(acc.astype(np.float32) * s, -128 - out_zp, 127 - out_zp)
        assert np.array_equal(np.rint(v).astype(np.int64) + out_zp, ref.astype(np.int64))
        assert np.array_equal(np.rint(v).astype(np.int64) + out_zp, fast.astype(np.int64))


def _fc_case(rows, k, n, numerics, clamp, seed, scale_mul=1.0, out_zp=None):
    """A random FC layer for tinyaot_fully_connected_fast_s8 and its expected
    output from the numpy oracle: exact int64 sum (x - in_zp) . w + bias,
    then MLAS's float requantization (ort) or TFLite's double rounding.
    scale_mul (ort) pushes float(acc) * scale past int32 (saturations);
    out_zp replaces the random output zero point."""
    from codegen.numerics.ort_float import requantize_acc

    rng = np.random.default_rng(seed)
    c = {"rows": rows, "k": k, "n": n, "numerics": numerics,
         "in_zp": int(rng.integers(-128, 128)), "out_zp": int(rng.integers(-20, 20))}
    if out_zp is not None:
        c["out_zp"] = out_zp
    c["lo"], c["hi"] = (c["out_zp"], int(rng.integers(60, 127))) if clamp else (-128, 127)
    c["x"] = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    c["w"] = rng.integers(-127, 128, (n, k)).astype(np.int8)
    c["bias"] = rng.integers(-3000, 3000, n).astype(np.int32)
    acc = (c["x"].astype(np.int64) - c["in_zp"]) @ c["w"].astype(np.int64).T + c["bias"]
    spread = float(np.sqrt(k)) * 150 * 74  # ~ the accumulators' standard deviation
    if numerics == "ort":  # per-channel scales that spread the outputs over int8
        c["scale"] = (rng.uniform(0.5, 2.0, n) * 40 / spread * scale_mul).astype(np.float32)
        exp = requantize_acc(acc, c["scale"], c["out_zp"], c["lo"], c["hi"])
    else:
        c["mult"] = rng.integers(2**30, 2**31, n).astype(np.int32)
        sh = -int(np.round(np.log2(spread / 40)))
        c["shift"] = (sh + rng.integers(-1, 2, n)).clip(-31, -1).astype(np.int32)
        c["rq"] = smlal_requant(c["mult"], c["shift"], c["bias"], c["out_zp"]) \
            if numerics == "tflite_smlal" \
            else None
        exp = _mbqm_oracle(acc.reshape(-1), np.tile(c["mult"], rows), np.tile(c["shift"], rows),
                           np.full(acc.size, c["out_zp"])).reshape(rows, n)
        exp = np.clip(exp, c["lo"], c["hi"])
    c["expected"] = exp.astype(np.int8)
    return c


# shapes: K % 4 != 0, K < 8, quad counts nq = ceil(K / 4) that enter the
# unrolled loops part way (nq % 8 != 0; asm group loop: pairs of quads
# nq // 2 % 16 != 0) and take several passes (nq = 11, 17, 36, 160), an odd
# nq (a single quad first; alone for nq = 1), N % 4 != 0 (padded last group),
# rows > 1 (K = 18: the second row is not word-aligned, so it is widened in C)
FC_SHAPES = [(1, 640, 128), (1, 128, 20), (1, 8, 128), (1, 37, 10), (2, 64, 6), (3, 5, 9),
             (1, 1, 1), (1, 7, 3), (2, 44, 13), (1, 68, 4), (1, 141, 8), (1, 3, 8), (2, 36, 5),
             (2, 18, 4)]


@pytest.mark.parametrize("clamp", [False, True])
@pytest.mark.parametrize("numerics", ["tflite", "tflite_smlal", "ort"])
@pytest.mark.parametrize("rows,k,n", FC_SHAPES)
def test_fast_fully_connected_matches_oracle_and_reference(lib, rows, k, n, numerics, clamp):
    """Portable twin (host) against the numpy oracle and the reference kernel."""
    ffi, L = lib
    c = _fc_case(rows, k, n, numerics, clamp, seed=rows * 1000 + k * 10 + n)
    keep = [c["x"], c["w"], c["bias"]]
    q = ffi.new("tinyaot_requant_t *")
    q.in_zp, q.out_zp, q.act_min, q.act_max = c["in_zp"], c["out_zp"], c["lo"], c["hi"]
    q.bias = _ptr(ffi, c["bias"], "int32_t")
    q.scale = _ptr(ffi, c["scale"], "float") if numerics == "ort" else ffi.NULL
    for f in ("mult", "shift", "rq"):
        v = c.get(f)
        setattr(q, f, ffi.NULL if v is None else _ptr(ffi, v, "int32_t"))
        keep.append(v)
    nbytes = L.tinyaot_fully_connected_fast_s8_get_buffer_size(k)
    assert nbytes == fc_scratch_bytes(k)
    scratch = np.zeros(nbytes // 4 + 1, np.uint32)
    scratch[-1] = 0xDEADBEEF  # the kernel stays inside its scratch
    ref = np.zeros((rows, n), np.int8)
    fast = np.full((rows, n + 4), 0x5A, np.int8)  # and inside its output rows
    wp = pack_gemm(c["w"], 4)
    assert L.tinyaot_fully_connected_s8(rows, k, n, q, _ptr(ffi, c["x"], "int8_t"),
                                        _ptr(ffi, c["w"], "int8_t"), _ptr(ffi, ref, "int8_t")) == 0
    out = np.zeros(rows * n + 4, np.int8)
    out[-4:] = 0x5A
    assert L.tinyaot_fully_connected_fast_s8(rows, k, n, q, _ptr(ffi, c["x"], "int8_t"),
                                             _ptr(ffi, wp, "int32_t"), _ptr(ffi, scratch, "uint32_t"),
                                             _ptr(ffi, out, "int8_t")) == 0
    assert scratch[-1] == 0xDEADBEEF and np.all(out[-4:] == 0x5A)
    assert np.array_equal(out[:-4].reshape(rows, n), c["expected"])
    assert np.array_equal(ref, c["expected"])
    if ref.size > 20:
        assert len(np.unique(ref)) > 5
    if clamp and ref.size > 20:
        assert np.any(ref == c["lo"])  # the clamp is exercised


def test_fc_packing_is_the_kernel_read_order():
    """pack_gemm(w, 4): per group of 4 rows, per quad, rows 0..3 each as
    {k0, k2}, {k1, k3}; zero rows and columns pad N and K."""
    w = np.arange(1, 5 * 6 + 1, dtype=np.int8).reshape(5, 6)
    words = pack_gemm(w, 4).view(np.uint32)
    halves = np.stack([(words & 0xFFFF).astype(np.uint16).view(np.int16),
                       (words >> 16).astype(np.uint16).view(np.int16)], axis=1).reshape(-1)
    assert halves.size == 2 * 2 * 4 * 2 * 2  # 2 groups, 2 quads (K 6 -> 8), 4 rows, 2 words, 2 halves
    g = halves.reshape(2, 2, 4, 2, 2)  # group, quad, row, word, half
    wp = np.zeros((8, 8), np.int16)
    wp[:5, :6] = w
    for grp in range(2):
        for j in range(2):
            for r in range(4):
                row = wp[4 * grp + r, 4 * j:4 * j + 4]
                assert list(g[grp, j, r].reshape(-1)) == [row[0], row[2], row[1], row[3]]


@pytest.mark.parametrize("opt", ["-O0", "-Og", "-Os", "-O3"])
def test_fast_fully_connected_builds_at_every_optimization_level(opt, tmp_path):
    """The FC asm wants all 14 free core registers; at -O0 it is left out (the
    C twin runs) instead of failing (GCC 12 then never returns)."""
    require_arm_toolchain()
    subprocess.run(["arm-none-eabi-gcc", "-mthumb", "-mcpu=cortex-m4", "-mfloat-abi=hard",
                    "-mfpu=fpv4-sp-d16", opt, "-std=c99", "-ffp-contract=off", "-Wall", "-Wextra",
                    "-Werror", f"-I{INC}", "-c", str(SRC / "fully_connected" / "tinyaot_fully_connected_fast_s8.c"),
                    "-o", str(tmp_path / "fc.o")], check=True, capture_output=True, timeout=120)


FC_QEMU_CASES = [(rows, k, n, numerics, clamp) for rows, k, n in FC_SHAPES
                 for numerics in ("tflite", "tflite_smlal", "ort") for clamp in (False, True)]
# ort: float(acc) * scale beyond int32 (VCVTR and QADD saturate) and scales
# that round every output to the zero point
FC_QEMU_EXTREME = [((1, 37, 10, "ort", clamp), mul) for clamp in (False, True) for mul in (1e9, 1e-6)]
# ort with output zero point -128 and [-128, 127] (every ad01 layer: the asm's USAT
# path), outputs over both clamps, saturated, all zero point
FC_QEMU_ZP128 = [((1, k, n, "ort", False), mul) for k, n in [(128, 20), (44, 13), (3, 8)]
                 for mul in (6.0, 1e9, 1e-6)]


def _fc_cases_on_qemu(tmp_path, board, name, cases, packed, q_src, insns):
    """Every case's tinyaot_fully_connected_fast_s8 call (weights packed[i],
    tinyaot_requant_t `q<i>` from q_src[i]) in one qemu firmware that must hold
    `insns`; returns each case's output [rows][n]."""
    from codegen.targets.qemu import run_firmware

    out_size = max(c["rows"] * c["n"] for c in cases)
    scratch = max(fc_scratch_bytes(c["k"]) for c in cases)
    src = ["#include <stdint.h>", "#include <string.h>", '#include "harness.h"',
           '#include "tinyaot_fast_kernels.h"']
    calls = []
    for i, c in enumerate(cases):
        src.append(c_words(f"x{i}", "int8_t", c["x"]))
        src.append(c_words(f"w{i}", "int32_t", packed[i]))
        src += q_src[i]
        calls.append(f"    case {i}: return tinyaot_fully_connected_fast_s8({c['rows']}, {c['k']}, "
                     f"{c['n']}, &q{i}, x{i}, w{i}, scratch, output);")
    elf, asm = cases_firmware(tmp_path, board, name, src, calls, scratch, out_size,
                               "tinyaot_fully_connected_fast_s8.c")
    for insn in insns:
        assert re.search(rf"\s{re.escape(insn)}\s", asm), f"{insn} not in the firmware"
    res = run_firmware(elf, board, timeout=120)
    assert len(res.outputs) == len(cases)
    return [np.frombuffer(r.data, np.int8)[:c["rows"] * c["n"]].reshape(c["rows"], c["n"])
            for c, r in zip(cases, res.outputs)]


@pytest.mark.qemu
def test_fast_fully_connected_asm_on_qemu_m4(tmp_path):
    """The inline-asm paths (DSP + VFP) on qemu-m4 against the numpy oracle,
    every shape and requantization mode of the host test."""
    require_arm_toolchain()
    from codegen.targets.qemu import load_board

    board = load_board("qemu-m4")
    cases = [_fc_case(*cs, seed=7 + i) for i, cs in enumerate(FC_QEMU_CASES)]
    cases += [_fc_case(*cs, seed=3 + i, scale_mul=mul) for i, (cs, mul) in enumerate(FC_QEMU_EXTREME)]
    assert {127, -128} <= set(np.concatenate([c["expected"].reshape(-1) for c in cases[-4:]]).tolist())
    zp128 = [_fc_case(*cs, seed=50 + i, scale_mul=mul, out_zp=-128)
             for i, (cs, mul) in enumerate(FC_QEMU_ZP128)]
    assert {127, -128} <= set(zp128[0]["expected"].reshape(-1).tolist())
    assert len(np.unique(zp128[0]["expected"])) > 5
    cases += zp128
    outs = _fc_cases_on_qemu(tmp_path, board, "fc", cases, [pack_gemm(c["w"], 4) for c in cases],
                             [requant_c(i, c) for i, c in enumerate(cases)],
                             ("smlad", "vcvtr.s32.f32", "sel", "smlal", "usat"))
    for c, got in zip(cases, outs):
        what = {f: c[f] for f in ("rows", "k", "n", "numerics", "lo", "hi")}
        assert np.array_equal(got, c["expected"]), (what, np.argwhere(got != c["expected"])[:4])


# ---------------------------------------------------------- ort, fixed-point records
# shapes of the fixed-point FC (TINYAOT_FC_FIXED): K = 128 and K = 8 (the asm's
# straight bodies), other K (its general entry: odd quad counts, several
# passes, K % 4 != 0), N % 4 != 0 and N < 4 (the C group), rows > 1
FC_FIXED_SHAPES = [(1, 128, 128), (1, 8, 128), (2, 128, 13), (1, 37, 10), (1, 640, 12),
                   (1, 12, 8), (2, 18, 4), (1, 4, 5), (1, 3, 3), (3, 44, 16)]


def _fc_fixed_case(rows, k, n, seed, out_zp=None):
    """_fc_case (ort, int8 bounds) with one scale for the layer (as the MLPerf
    models), whose every channel has the exact SMMLAR form (another seed until
    it does), its packed weights and records."""
    from codegen.kernels.fast_pack import pack_gemm_fixed
    from codegen.kernels.ort_requant_fixed import fc_fixed_requant
    from codegen.numerics.ort_float import requantize_acc

    for s in range(seed, seed + 40):
        c = _fc_case(rows, k, n, "ort", False, s, scale_mul=4.0, out_zp=out_zp)
        c["scale"] = np.full(n, c["scale"][0], np.float32)
        acc = (c["x"].astype(np.int64) - c["in_zp"]) @ c["w"].astype(np.int64).T + c["bias"]
        c["expected"] = requantize_acc(acc, c["scale"], c["out_zp"], -128, 127).astype(np.int8)
        fixed = fc_fixed_requant(c["w"], c["bias"], c["scale"], c["in_zp"], c["out_zp"], -128, 127)
        if fixed is not None:
            c["wp"] = pack_gemm_fixed(c["w"], fixed)
            return c
    raise AssertionError(f"no seed gave a fixed-point layer for {rows, k, n}")


def _fc_records_case(rows, k, n, seed):
    """Arbitrary records (B, M, R different in every channel, unlike a layer's
    shared scale and zero point), the expected output from Arm's SMMLAR
    definition: clamp(((sum + B) * M + 2^31) >> 32 + R, 0, 255) - 128."""
    from codegen.kernels.fast_pack import pack_gemm_fixed

    rng = np.random.default_rng(seed)
    c = {"rows": rows, "k": k, "n": n, "in_zp": int(rng.integers(-128, 128)), "out_zp": 0}
    c["x"] = rng.integers(-128, 128, (rows, k)).astype(np.int8)
    c["w"] = rng.integers(-127, 128, (n, k)).astype(np.int8)
    acc = (c["x"].astype(np.int64) - c["in_zp"]) @ c["w"].astype(np.int64).T
    spread = float(np.sqrt(k)) * 150 * 74
    rec = np.stack([rng.integers(-3000, 3000, n),
                    (rng.uniform(0.3, 3.0, n) * 2.0 ** 32 * 40 / spread).astype(np.int64),
                    rng.integers(-100, 300, n)], axis=1)
    v = ((acc + rec[:, 0]) * rec[:, 1] + (1 << 31)) >> 32
    c["expected"] = (np.clip(v + rec[:, 2], 0, 255) - 128).astype(np.int8)
    c["wp"] = pack_gemm_fixed(c["w"], rec)
    return c


def _fixed_cases():
    cases = [_fc_fixed_case(*sh, seed=100 + 50 * i, out_zp=-128 if i % 2 else None)
             for i, sh in enumerate(FC_FIXED_SHAPES)]
    both = np.concatenate([c["expected"].reshape(-1) for c in cases])
    assert {-128, 127} <= set(both.tolist()) and len(np.unique(both)) > 100
    assert {c["out_zp"] for c in cases} - {-128}  # other zero points too
    return cases + [_fc_records_case(*sh, seed=7 + i) for i, sh in enumerate(FC_FIXED_SHAPES)]


def test_fast_fully_connected_fixed_point_host(lib):
    """The portable twin of the fixed-point records against the numpy oracle
    (MLAS's float requantization of the exact sums)."""
    ffi, L = lib
    for c in _fixed_cases():
        rows, k, n = c["rows"], c["k"], c["n"]
        q = ffi.new("tinyaot_requant_t *")
        q.in_zp, q.out_zp, q.act_min, q.act_max = c["in_zp"], c["out_zp"], -128, 127
        scratch = np.zeros(fc_scratch_bytes(k) // 4 + 1, np.uint32)
        scratch[-1] = 0xDEADBEEF
        out = np.full(rows * n + 4, 0x5A, np.int8)
        assert L.tinyaot_fully_connected_fast_s8(rows, k, n, q, _ptr(ffi, c["x"], "int8_t"),
                                                 _ptr(ffi, c["wp"], "int32_t"),
                                                 _ptr(ffi, scratch, "uint32_t"),
                                                 _ptr(ffi, out, "int8_t")) == 0
        assert scratch[-1] == 0xDEADBEEF and np.all(out[-4:] == 0x5A)
        assert np.array_equal(out[:-4].reshape(rows, n), c["expected"]), (rows, k, n)


@pytest.mark.qemu
def test_fast_fully_connected_fixed_point_asm_on_qemu_m4(tmp_path):
    """The SMMLAR group loop (straight K = 128 / K = 8 bodies and the general
    entry) on qemu-m4 against the numpy oracle."""
    require_arm_toolchain()
    from codegen.targets.qemu import load_board

    board = load_board("qemu-m4")
    cases = _fixed_cases()
    q = [[f"static const tinyaot_requant_t q{i} = {{ {c['in_zp']}, {c['out_zp']}, -128, 127, "
          "NULL, NULL, NULL, NULL, NULL, 0.0f, NULL };"] for i, c in enumerate(cases)]
    outs = _fc_cases_on_qemu(tmp_path, board, "fcfixed", cases, [c["wp"] for c in cases], q,
                             ("smmlar", "usat16", "pkhbt"))
    for c, got in zip(cases, outs):
        assert np.array_equal(got, c["expected"]), ((c["rows"], c["k"], c["n"]),
                                                    np.argwhere(got != c["expected"])[:4])


def test_fast_add_matches_reference_kernel(lib):
    ffi, L = lib
    from codegen.numerics import tflite_fixedpoint as tfp
    rng = np.random.default_rng(11)
    for trial in range(40):
        sa, sb = (float(v) for v in rng.uniform(0.005, 0.2, 2))
        so = float(rng.uniform(1.0, 2.5)) * max(sa, sb)
        za, zb = (int(v) for v in rng.integers(-128, 128, 2))
        zo = int(rng.integers(-30, 30))
        p = ffi.new("tinyaot_add_params_t *")
        prm = tfp.add_params(sa, za, sb, zb, so, zo)
        p.act_min, p.act_max = -128, 127
        p.use_float = 0
        for key, val in prm.items():
            setattr(p, key, int(val))
        n = 4096
        a = rng.integers(-128, 128, n).astype(np.int8)
        bb = rng.integers(-128, 128, n).astype(np.int8)
        ref = np.zeros(n, np.int8)
        fast = np.zeros(n, np.int8)
        stride = int(trial % 2)
        if trial % 4 >= 2:  # half the trials with the compile-time tables
            p.act_min, p.act_max = (-128, 127) if trial % 8 < 4 else (-120, 110)
            a_lut, b_lut, out_rq = add_tables(prm)
            assert out_rq is not None
            keep = [a_lut, b_lut, out_rq]
            p.a_lut, p.b_lut, p.out_rq = (_ptr(ffi, x, "int32_t") for x in keep)
        assert L.tinyaot_add_s8(n, p, _ptr(ffi, a, "int8_t"), _ptr(ffi, bb, "int8_t"), stride,
                                _ptr(ffi, ref, "int8_t")) == 0
        assert L.tinyaot_add_fast_s8(n, p, _ptr(ffi, a, "int8_t"), _ptr(ffi, bb, "int8_t"), stride,
                                     _ptr(ffi, fast, "int8_t")) == 0
        assert len(np.unique(ref)) > (20 if stride else 10)  # a broadcast b narrows the range
        assert np.array_equal(ref, fast), trial


# ------------------------------------------------------------------ planner

def test_scratch_blocks_are_planned_and_checked():
    from codegen.compiler import compile_model
    from codegen.planner import PlanError, check_plan
    from codegen.planner.arena import scratch_name

    c = compile_model(REPO / "models" / "digits_cnn_int8.onnx", numerics="tflite")
    g, plan = c.graph, c.plan
    scratch_nodes = [(i, n) for i, n in enumerate(g.nodes) if n.attrs.get("scratch_bytes")]
    assert scratch_nodes, "no layer of the default model uses a scratch buffer"
    for step, n in scratch_nodes:
        b = plan.where[scratch_name(n)]
        assert (b.first, b.last) == (step, step) and b.size == n.attrs["scratch_bytes"]
        assert b.offset % 8 == 0 and b.offset + b.size <= plan.size
        assert f"ARENA + {b.offset})" in c.module.source
    # move one scratch block onto a tensor live at the same step: the checker must object
    step, n = scratch_nodes[-1]
    b = plan.where[scratch_name(n)]
    x = plan.where[n.inputs[0]]
    if x.external is None:
        saved = b.offset
        b.offset = x.offset
        with pytest.raises(PlanError, match="overlap"):
            check_plan(g, plan)
        b.offset = saved
    saved = b.size
    b.size = 0
    with pytest.raises(PlanError, match="scratch"):
        check_plan(g, plan)
    b.size = saved
    check_plan(g, plan)


def _conv_case(case, numerics, seed):
    """A random conv layer for tinyaot_convolve_fast_s8 and its expected output
    from the numpy oracle (np_conv + bias, then MLAS's float requantization or
    TFLite's double rounding); ort_records / tflite_smlal: with the records the
    code generator gives the kernel (its inline-asm paths on qemu-m4)."""
    from codegen.numerics.ort_float import requantize_acc

    h, wd, cin, cout, kh, kw, stride, dil, pads = case
    rng = np.random.default_rng(seed)
    oh = _out_size(h, kh, stride[0], dil[0], pads[0], pads[2])
    ow = _out_size(wd, kw, stride[1], dil[1], pads[1], pads[3])
    c = {"dims": [h, wd, cin, oh, ow, cout, kh, kw, stride[0], stride[1], dil[0], dil[1],
                  pads[0], pads[1], 1], "numerics": numerics, "n_out": oh * ow * cout,
         "in_zp": int(rng.integers(-128, 128)), "out_zp": int(rng.integers(-20, 20)),
         "lo": -128, "hi": 127, "scratch": conv_scratch_bytes(kh, kw, cin)}
    if numerics in ("tflite", "ort"):  # the clamped modes
        c["lo"], c["hi"] = c["out_zp"], int(rng.integers(60, 127))
    c["x"] = rng.integers(-128, 128, (h, wd, cin)).astype(np.int8)
    w = rng.integers(-127, 128, (cout, cin, kh, kw)).astype(np.int8)
    c["w"] = pack_conv_gemm(conv_gemm_weights(w))
    c["bias"] = rng.integers(-3000, 3000, cout).astype(np.int32)
    acc = (np_conv(c["x"].astype(np.int64), w, c["in_zp"], stride, dil, pads) + c["bias"]).reshape(-1)
    spread = float(np.sqrt(kh * kw * cin)) * 150 * 74  # ~ the accumulators' standard deviation
    if numerics.startswith("ort"):
        c["scale"] = (rng.uniform(0.5, 2.0, cout) * 40 / spread).astype(np.float32)
        c["rq"] = float_requant(c["scale"], c["bias"]) if numerics == "ort_records" else None
        exp = requantize_acc(acc, np.tile(c["scale"], oh * ow), c["out_zp"], c["lo"], c["hi"])
    else:
        c["mult"] = rng.integers(2**30, 2**31, cout).astype(np.int32)
        sh = -int(np.round(np.log2(spread / 40)))
        c["shift"] = (sh + rng.integers(-1, 2, cout)).clip(-31, -1).astype(np.int32)
        c["rq"] = smlal_requant(c["mult"], c["shift"], c["bias"], c["out_zp"]) \
            if numerics == "tflite_smlal" \
            else None
        exp = _mbqm_oracle(acc, np.tile(c["mult"], oh * ow), np.tile(c["shift"], oh * ow),
                           np.full(acc.size, c["out_zp"]))
        exp = np.clip(exp, c["lo"], c["hi"])
    c["expected"] = np.asarray(exp).astype(np.int8)
    return c


@pytest.mark.qemu
def test_fast_conv_asm_on_qemu_m4(tmp_path):
    """The inline-asm paths of tinyaot_convolve_fast_s8 (the 4-channel x 2-pixel
    group loop for every nquads % 4, the channels left after the groups, im2col,
    edge windows) on qemu-m4 against the numpy oracle."""
    require_arm_toolchain()
    from codegen.targets.qemu import load_board, run_firmware

    board = load_board("qemu-m4")
    cases = [_conv_case(cs, numerics, seed=11 + i)
             for i, (cs, numerics) in enumerate(
                 [(cs, nm) for cs in QUAD_CONV_CASES + CONV_CASES
                  for nm in ("ort_records", "tflite_smlal", "tflite", "ort")])]
    # room after every case's output: a store past it (the harness zeroes the buffer) fails
    out_size = max(c["n_out"] for c in cases) + 256
    scratch = max(c["scratch"] for c in cases)
    src = ["#include <stdint.h>", "#include <string.h>", '#include "harness.h"',
           '#include "tinyaot_fast_kernels.h"']
    calls = []
    for i, c in enumerate(cases):
        src.append(c_words(f"x{i}", "int8_t", c["x"]))
        src.append(c_words(f"w{i}", "int32_t", c["w"]))
        src += requant_c(i, c)
        src.append(f"static const tinyaot_conv_dims_t d{i} = {{ {', '.join(map(str, c['dims']))} }};\n")
        calls.append(f"    case {i}: return tinyaot_convolve_fast_s8(&d{i}, &q{i}, x{i}, w{i}, "
                     "scratch, output);")
    elf, asm = cases_firmware(tmp_path, board, "conv", src, calls, scratch, out_size,
                               "tinyaot_convolve_fast_s8.c")
    for pat in (r"smlad\s+lr, r3, r5, lr", r"strd\s+\w+, \w+, \[\w+\], #16",
                r"vcvtr\.s32\.f32"):
        assert re.search(pat, asm), f"{pat} not in the firmware"
    res = run_firmware(elf, board, timeout=300)
    assert len(res.outputs) == len(cases)
    nonsat = 0
    for c, r in zip(cases, res.outputs):
        got = np.frombuffer(r.data, np.int8)[:c["n_out"]]
        what = (c["dims"], c["numerics"])
        assert np.array_equal(got, c["expected"]), (what, np.argwhere(got != c["expected"])[:4])
        assert not np.frombuffer(r.data, np.int8)[c["n_out"]:].any(), (what, "stored past")
        nonsat += np.count_nonzero((got > c["lo"]) & (got < c["hi"]))
    assert nonsat > sum(c["n_out"] for c in cases) // 2  # mostly unclamped outputs


def _fragile_pairs(a_lut, b_lut, out_rq, rng, n):
    """n input pairs, most of them where a rounding step decides the output: the one-SMLAL
    rescale's high word h = (R + v * m - 2^31 [v < 0]) >> 32 (v = a_lut[a] + b_lut[b]) at a
    multiple of 2^sh or one below it (an error of one in h, or in the negative-sum
    correction's borrow, changes the output), or v < 0 with the low word borrowing. (Pairs
    where both hold, so that a lost borrow would change the output, do not occur with
    TFLite's add parameters here: rlo = 2^30.)"""
    av, bv = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")
    v = a_lut[av + 128].astype(np.int64) + b_lut[bv + 128].astype(np.int64)
    m, sh, rlo, rhi = (int(x) for x in out_rq[:4])
    r = (rhi << 32) + (rlo & 0xFFFFFFFF)
    full = r + v * m - np.where(v < 0, 1 << 31, 0)
    h = full >> 32
    edge = ((h & ((1 << sh) - 1)) == 0) | ((h & ((1 << sh) - 1)) == (1 << sh) - 1)
    borrow = (v < 0) & (((r + v * m) & 0xFFFFFFFF) < (1 << 31))
    pick = np.flatnonzero((edge | borrow).reshape(-1))
    pick = rng.choice(pick, min(pick.size, n * 3 // 4), replace=False)
    pick = np.concatenate([pick, rng.integers(0, 65536, n)])[:n]
    return ((pick // 256) - 128).astype(np.int8), ((pick % 256) - 128).astype(np.int8)


@pytest.mark.qemu
def test_fast_add_tables_asm_on_qemu_m4(tmp_path, lib):
    """The table add's asm loop (the whole int8 range, b not broadcast, the output zero point
    folded into the rounding: shifts up to 22) on qemu-m4 against the reference kernel on the
    host, over zero points at both ends and shifts on both sides of the fold's limit (the C
    loops take those above it)."""
    require_arm_toolchain()
    from codegen.numerics import tflite_fixedpoint as tfp
    from codegen.targets.qemu import load_board
    from tests.helpers.kernel_firmware import assert_outputs, c_words, cases_firmware
    ffi, L = lib
    board = load_board("qemu-m4")
    rng = np.random.default_rng(23)
    src = ["#include <stdint.h>", "#include <string.h>", '#include "harness.h"',
           '#include "tinyaot_fast_kernels.h"']
    calls, wants, labels, shifts = [], [], [], set()
    calls.append("    case -1: return (int)scratch[0]; /* (the harness's scratch, unused) */")
    for i in range(16):
        sa, sb = (float(v) for v in rng.uniform(0.005, 0.2, 2))
        so = float(rng.uniform(1.0, 2.5)) * max(sa, sb) * (1.0 if i % 2 else 2.0 ** 6)
        za, zb = (int(v) for v in rng.integers(-128, 128, 2))
        zo = (-128, 127, 0)[i % 3] if i < 6 else int(rng.integers(-128, 128))
        prm = tfp.add_params(sa, za, sb, zb, so, zo)
        a_lut, b_lut, out_rq = add_tables(prm)
        shifts.add(int(out_rq[1]) <= 22)
        a, b = _fragile_pairs(a_lut, b_lut, out_rq, rng, 1000 + 131 * i)
        n = a.size
        p = ffi.new("tinyaot_add_params_t *")
        p.act_min, p.act_max, p.use_float = -128, 127, 0
        for key, val in prm.items():
            setattr(p, key, int(val))
        ref = np.zeros(n, np.int8)
        assert L.tinyaot_add_s8(n, p, _ptr(ffi, a, "int8_t"), _ptr(ffi, b, "int8_t"), 1,
                                _ptr(ffi, ref, "int8_t")) == 0
        fields = ", ".join(f".{k} = {int(v)}" for k, v in prm.items())
        src += [c_words(f"a{i}", "int8_t", a), c_words(f"b{i}", "int8_t", b),
                c_words(f"la{i}", "int32_t", a_lut), c_words(f"lb{i}", "int32_t", b_lut),
                c_words(f"r{i}", "int32_t", out_rq),
                f"static const tinyaot_add_params_t p{i} = {{ {fields}, .act_min = -128, "
                f".act_max = 127, .a_lut = la{i}, .b_lut = lb{i}, .out_rq = r{i} }};"]
        calls.append(f"    case {i}: return tinyaot_add_fast_s8({n}, &p{i}, a{i}, b{i}, 1, output);")
        wants.append(ref)
        labels.append((zo, int(out_rq[1])))
    assert shifts == {True, False}, labels
    elf, asm = cases_firmware(tmp_path, board, "add_tables", src, calls, 4,
                              max(w.size for w in wants),
                              ["tinyaot_add_fast_s8.c", "tinyaot_add_s8.c"])
    assert re.search(r"\sand(\.w)?\s.*#2147483648", asm), "the asm loop is not in the firmware"
    from codegen.targets.qemu import run_firmware
    res = run_firmware(elf, board, timeout=300)
    assert_outputs(res, wants, labels)
