"""The TFLite fixed-point helpers (runtime_c/src/internal/tinyaot_fixedpoint.h) have
no data-dependent control flow, so an inference costs the same for every input
(issue #8):

- at the instruction level: each helper, compiled by arm-none-eabi-gcc -O2 for
  the boards' cores, contains no conditional branch (IT-predicated instructions
  are fine: QEMU counts them whether or not they execute);
- on the target: the helpers run in QEMU on edge and random operands, agree
  with the numpy oracle (codegen/numerics/tflite_fixedpoint.py) and take the
  same number of instructions for every input.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from codegen.backend import emit_harness_data
from codegen.numerics import tflite_fixedpoint as tf
from codegen.targets import qemu

from tests.helpers.env import REPO, require_arm_toolchain

INCLUDE = REPO / "runtime_c" / "src" / "internal"  # tinyaot_fixedpoint.h: the kernels' helper
TESTS_C = REPO / "tests" / "helpers" / "c"
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1

# One non-inlined wrapper per helper; shifts that are per-layer parameters in
# the kernels are constants here (both signs), as they are after inlining.
WRAPPERS = r"""
#include "tinyaot_fixedpoint.h"
int32_t w_s32(uint32_t u) { return tinyaot_fp_s32(u); }
int32_t w_asr(int32_t x, int32_t s) { return tinyaot_fp_asr(x, s); }
int32_t w_clamp(int32_t v, int32_t lo, int32_t hi) { return tinyaot_fp_clamp(v, lo, hi); }
int32_t w_max(int32_t a, int32_t b) { return tinyaot_fp_max(a, b); }
int32_t w_clz(uint32_t x) { return tinyaot_fp_clz32(x); }
int32_t w_srdhm(int32_t a, int32_t b) { return tinyaot_srdhm(a, b); }
int32_t w_rdbpot(int32_t x, int32_t e) { return tinyaot_rdbpot(x, e); }
int32_t w_srmpot(int32_t x) { return tinyaot_fp_srmpot(x, 2) + tinyaot_fp_srmpot(x, -3); }
int32_t w_exp5(int32_t a) { return tinyaot_fp_exp_on_negative_values(a, 5); }
int32_t w_exp12(int32_t a) { return tinyaot_fp_exp_on_negative_values(a, 12); }
int32_t w_recip(int32_t a) { return tinyaot_fp_one_over_one_plus_x_for_x_in_0_1(a); }
int32_t w_mbqm_r(int32_t x, int32_t m) { return tinyaot_mbqm(x, m, -7); }
int32_t w_mbqm_l(int32_t x, int32_t m) { return tinyaot_mbqm(x, m, 3); }
int32_t w_mbqm_gto(int32_t x, int32_t m, int32_t s) { return tinyaot_mbqm_greater_than_one(x, m, s); }
int32_t w_mbqm_stoe(int32_t x, int32_t m, int32_t s) { return tinyaot_mbqm_smaller_than_one_exp(x, m, s); }
int8_t w_requant(int32_t acc, int32_t m, int32_t zp, int32_t lo, int32_t hi) {
  return tinyaot_requant_tflite(acc, m, -9, zp, lo, hi);
}
int32_t w_avg(int32_t s, int32_t c) { return tinyaot_avgpool_round_tflite(s, c); }
int8_t w_add(int32_t x, int32_t y, const int32_t *p) {
  return tinyaot_add_tflite_s8(x, y, p[0], p[1], p[2], 20, p[4], p[5], p[6], p[7], p[8], p[9],
                               p[10], p[11]);
}
int8_t w_mul(int32_t x, int32_t y, const int32_t *p) {
  return tinyaot_mul_tflite_s8(x, y, p[0], p[1], p[2], p[3], -8, p[5], p[6]);
}
"""
CPUS = {
    "cortex-m4": ["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
    "cortex-m3": ["-mcpu=cortex-m3", "-mfloat-abi=soft"],
    "cortex-m33": ["-mcpu=cortex-m33", "-mfloat-abi=hard"],
    "cortex-m55": ["-mcpu=cortex-m55", "-mfloat-abi=hard"],
}
_FN_RE = re.compile(r"^[0-9a-f]+ <(\w+)>:$")
# b<cond> (not plain b / bl / bx), cbz, cbnz; Armv8.1-M loop instructions too.
_COND_BRANCH_RE = re.compile(r"\t(b(?:eq|ne|cs|cc|hs|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)(?:\.[nw])?"
                             r"|cbn?z|wls|le|dls)\t")


def conditional_branches(objdump_text):
    """{function: [conditional branch lines]}."""
    out, fn = {}, None
    for line in objdump_text.splitlines():
        if m := _FN_RE.match(line):
            fn = m.group(1)
            out[fn] = []
        elif fn and _COND_BRANCH_RE.search(line):
            out[fn].append(line.strip())
    return out


@pytest.mark.parametrize("cpu", sorted(CPUS))
def test_helpers_have_no_conditional_branch(cpu, tmp_path):
    gcc, objdump = shutil.which("arm-none-eabi-gcc"), shutil.which("arm-none-eabi-objdump")
    if not (gcc and objdump):
        require_arm_toolchain()
        pytest.skip("arm-none-eabi-objdump missing")
    src, obj = tmp_path / "wrap.c", tmp_path / "wrap.o"
    src.write_text(WRAPPERS)
    subprocess.run([gcc, *CPUS[cpu], "-mthumb", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror",
                    "-Wconversion", f"-I{INCLUDE}", "-c", str(src), "-o", str(obj)], check=True)
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(obj)], capture_output=True,
                          text=True, check=True).stdout
    found = conditional_branches(text)
    wrappers = [m.group(1) for m in re.finditer(r"\b(w_\w+)\(", WRAPPERS)]
    assert set(wrappers) <= set(found), sorted(set(wrappers) - set(found))
    assert {f: b for f, b in found.items() if b} == {}


def test_branch_detector_sees_a_branch(tmp_path):
    """The check above can fail: the old, branching SRDHM is flagged."""
    gcc, objdump = shutil.which("arm-none-eabi-gcc"), shutil.which("arm-none-eabi-objdump")
    if not (gcc and objdump):
        require_arm_toolchain()
        pytest.skip("arm-none-eabi-objdump missing")
    src, obj = tmp_path / "old.c", tmp_path / "old.o"
    src.write_text("#include <stdint.h>\n"
                   "int32_t old_srdhm(int32_t a, int32_t b, int32_t *o) {\n"
                   "  if (a == b && a == INT32_MIN) { *o = 1; return INT32_MAX; }\n"
                   "  int64_t ab = (int64_t)a * b;\n"
                   "  int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));\n"
                   "  return (int32_t)((ab + nudge) / ((int64_t)1 << 31));\n}\n")
    subprocess.run([gcc, *CPUS["cortex-m4"], "-mthumb", "-O2", "-c", str(src), "-o", str(obj)],
                   check=True)
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(obj)], capture_output=True,
                          text=True, check=True).stdout
    assert conditional_branches(text)["old_srdhm"]


# ------------------------------------------------------------------ on target

N = 300  # records per input: tests/helpers/c/fpt.h FPT_N
EDGE = [I32_MIN, I32_MIN + 1, -(1 << 30) - 1, -(1 << 30), -(1 << 30) + 1, -65536, -255, -3, -2,
        -1, 0, 1, 2, 3, 255, 65535, (1 << 30) - 1, 1 << 30, (1 << 30) + 1, I32_MAX - 1, I32_MAX]


def _operands(rng, n_inputs):
    """(n_inputs, N, 3) int64 operands, in each helper's domain (by position i % 10)."""
    x = rng.integers(I32_MIN, I32_MAX, (n_inputs, N, 3), endpoint=True)
    pick = rng.random((n_inputs, N, 3)) < 0.4
    x[pick] = rng.choice(EDGE, pick.sum())
    small = rng.random((n_inputs, N, 3)) < 0.3
    x[small] = rng.integers(-300, 300, small.sum())
    op = np.arange(N) % 10
    x[:, op == 4, 0] = -np.abs(x[:, op == 4, 0]).clip(0, I32_MAX)  # exp: a <= 0
    x[:, op == 5, 0] = np.abs(x[:, op == 5, 0]).clip(0, I32_MAX)   # 1/(1+x): x >= 0
    for k in (6, 7):
        x[:, op == k, 1] = np.abs(x[:, op == k, 1]).clip(0, I32_MAX)  # multipliers >= 0
    return x


def _expected(x):
    a, b, c = (x[..., k] for k in range(3))
    op = np.broadcast_to(np.arange(N) % 10, a.shape)
    cnt = (c & 0x7FFFFFFF) | 1
    clz = np.array([32 - int(v).bit_length() for v in (a & 0xFFFFFFFF).ravel()]).reshape(a.shape)
    table = [
        np.where(a < b, b, np.where(a > c, c, a)),
        tf.saturating_rounding_doubling_high_mul(a, b),
        tf.rounding_divide_by_pot(a, b & 31),
        tf.avgpool_round(a, cnt),
        tf.exp_on_negative_values(np.minimum(a, 0), 5),
        tf.one_over_one_plus_x_for_x_in_0_1(np.maximum(a, 0)),
        tf.multiply_by_quantized_multiplier(a, np.maximum(b, 0), 7),
        tf.multiply_by_quantized_multiplier(a, np.maximum(b, 0), -9),
        np.maximum(a, b),
        clz,
    ]
    out = np.zeros(a.shape, dtype=np.int64)
    for k, v in enumerate(table):
        out = np.where(op == k, v, out)
    return out


@pytest.mark.qemu
@pytest.mark.parametrize("board_name", ["qemu-m4", "qemu-m3"])
def test_helpers_on_target_match_oracle_with_one_cost(board_name, tmp_path):
    require_arm_toolchain()
    board = qemu.load_board(board_name)
    rng = np.random.default_rng(8)
    x = _operands(rng, 12)
    per = x.astype("<i4").view(np.int8).reshape(len(x), -1)
    data = tmp_path / "harness_data.c"
    data.write_text(emit_harness_data("fpt", per, per.shape[1], 4 * N))
    elf = qemu.build_firmware([board["harness_main"], data, TESTS_C / "fixedpoint_target.c"],
                              [INCLUDE, TESTS_C], board, tmp_path / "fpt.elf")
    res = qemu.run_firmware(elf, board, timeout=60)
    got = np.stack([np.frombuffer(r.data, dtype="<i4") for r in res.outputs]).reshape(len(x), N)
    want = _expected(x)
    bad = np.argwhere(got != want)
    assert not len(bad), [(int(i), int(j) % 10, x[i, j].tolist(), int(got[i, j]), int(want[i, j]))
                          for i, j in bad[:5]]
    ticks = [r.ticks for r in res.outputs]
    assert len(set(ticks)) == 1, ticks
