"""The weight-specialized float FC (kernels/fc_float_unrolled.py) on qemu-m4.

onnxruntime keeps DQ -> MatMul -> Add -> Relu / Clip -> Q in float (a fused
Gemm, MLAS's GEMV4 order for one row). tinyaot emits such a layer as
straight-line VFP code without the zero weights' products on FPU targets:

* its int8 outputs equal onnxruntime's, bit for bit, on layers full of zeros
  (zero groups, groups with one nonzero weight, all-zero outputs and blocks,
  negative x so that products are -0, x == 0), for every packing of the
  QuantizeLinear (zero point -128, odd / even zp + 128, int32 totals) and
  clamps (Relu with zp > -128, Clip);
* the instruction count drops by exactly what the zero weights predict
  (the prediction computed here from the int8 weights);
* each build carries one copy of the weights (FPU: the unrolled stream;
  host: the loop kernel's packed array);
* ad01 (two such layers) stays bit-exact with its golden vectors.
"""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from codegen.kernels.fc_float_unrolled import MIN_ZERO_FRACTION
from codegen.targets.boards import board_or_error
from codegen.compiler import compile_model

from tests.helpers.env import require_arm_toolchain, shared_model
from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, run_ort, save

pytestmark = pytest.mark.qemu

SX, ZX, SW = 0.03, 5, 0.004  # x = 0.03 * (q - 5): negative, zero and positive inputs
K, N = 68, 40  # 17 k groups (the last pair has one group), 5 blocks of 8 outputs


@pytest.fixture(autouse=True)
def _toolchain():
    require_arm_toolchain()


def fc_model(tmp_path, name, wq, bq, act, zp, sy):
    """int8 x [1, K] -> DQ -> MatMul(DQ(wq.T)) -> Add(DQ(bq)) -> Relu / Clip(0, 2) -> Q(sy, zp)."""
    b = QdqBuilder(name)
    x = b.dq("x", SX, ZX)
    w = b.dq(b.const_int(np.ascontiguousarray(wq.T), np.int8), SW, 0)
    y = b.op("MatMul", [x, w])
    # a bias scale other than sx * sw: ORT cannot make it a QGemm and keeps a float Gemm
    bias = b.dq(b.const_int(bq, np.int32), np.float32(SX * SW / 2), 0, dtype=np.int32)
    y = b.op("Add", [y, bias])
    if act == "relu":
        y = b.op("Relu", [y])
    else:
        y = b.op("Clip", [y, b.const_int(np.float32(0), np.float32),
                          b.const_int(np.float32(2.0), np.float32)])
    b.q(y, sy, zp, out="y")
    n, k = wq.shape
    return save(b.model("x", [1, k], "y", [1, n]), tmp_path, f"{name}.onnx")


def sparse_weights(seed):
    """[N, K] int8 with ~45% zeros and the edge cases of the skipping."""
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 128, (N, K)) * rng.choice([-1, 1], (N, K))
    w[rng.random((N, K)) < 0.45] = 0
    w[0] = 0                                   # an output that is its bias
    w[1] = 0                                   # one nonzero weight per k group
    w[1, 4 * np.arange(K // 4) + rng.integers(0, 4, K // 4)] = rng.integers(1, 128, K // 4)
    w[:8, 8:16] = 0                            # block 0: a whole pair of groups
    w[:8, 20:24] = 0                           # block 0: the first group of a pair
    w[:8, 28:32] = 0                           # block 0: the second group of a pair
    w[8:16] = 0                                # block 1: no weight at all
    w[16:24] = 0                               # block 2: 12 weights (one refill only)
    w[16 + rng.integers(0, 8, 12), rng.choice(K, 12, replace=False)] = 7
    return w.astype(np.int8)


def dense_weights(seed):
    rng = np.random.default_rng(seed)
    return (rng.integers(1, 128, (N, K)) * rng.choice([-1, 1], (N, K))).astype(np.int8)


def biases(seed, huge=False):
    rng = np.random.default_rng(seed)
    b = rng.integers(-20000, 20000, N).astype(np.int32)
    if huge:  # totals far outside int16 after / scale: the per-value packing
        b[5], b[30] = 2_000_000_000, -2_000_000_000
    return b


def exact_run(path, xs):
    """(outputs, exact instructions per inference) of the qemu-m4 firmware."""
    from tests.helpers.exact_counts import exact_counts
    counts, outs = exact_counts(path, xs, "ort")
    assert len(set(counts)) == 1, counts  # no data-dependent control flow
    return outs, counts[0]


# (act, zp, output scale, huge biases, what the generated code must show). ORT
# drops a Relu before a QuantizeLinear of zero point -128 and fuses the rest into
# an integer QGemm: float layers have a bound above -128 (ad01's first layer,
# tested below, takes the unclamped zp -128 path)
CASES = [
    ("clip", -128, 0.05, False, ["usat16", "usub8"]),              # zp + 128 == 0: no add
    ("relu", 3, 0.05, False, ["qadd16", "usub8"]),                 # odd zp + 128; Relu clamp
    ("relu", 96, 0.05, False, ["vadd.f32 s24, s24, s", "usub8"]),  # even zp + 128: MAGIC
    ("clip", -20, 0.05, False, ["vadd.f32 s24, s24, s", "usub8"]),  # Clip: both bounds
    ("clip", -127, 0.05, False, ["qadd16", "usub8"]),
    ("relu", 10, 0.05, True, ["qadd %[a]", "ssat", "ssub8"]),      # int32 totals
    ("clip", -128, 0.01, True, ["qadd %[a]", "ssat", "ssub8"]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_unrolled_fc_equals_onnxruntime_on_qemu_m4(tmp_path, case):
    act, zp, sy, huge, marks = CASES[case]
    wq, bq = sparse_weights(case), biases(case, huge)
    path = fc_model(tmp_path, f"fcu{case}", wq, bq, act, zp, sy)
    c = compile_model(path, numerics="ort")
    (node,) = c.graph.nodes
    assert node.attrs["ort_float"] and c.params[node.name].fc_order == "gemv4"
    src = c.module.source
    assert "static __attribute__((noinline)) void l0_fc_unrolled" in src
    for m in marks:
        assert m in src, m
    xs = all_int8_inputs((1, K), 8, seed=case)
    xs[1] = ZX   # every x exactly 0
    xs[2] = -128  # every x negative
    outs, _ = exact_run(path, xs)
    exp = run_ort(path, xs)
    np.testing.assert_array_equal(outs.reshape(exp.shape), exp)
    assert len(np.unique(exp)) > 8  # not a layer that saturates everywhere


def _refills(groups):
    """(VLDMs, weights in the last) for one block: the (group, output) units of
    each k group ([sizes], groups in order) packed in VLDMs of up to 16 weights,
    whole units, each VLDM taking the largest total of the group's remaining
    units that fits (most 4s, then 3s, then 2s on ties) before a new one."""
    from itertools import product

    n, used = 0, 16
    for sizes in groups:
        left = {z: sizes.count(z) for z in (1, 2, 3, 4)}
        while sum(left.values()):
            room = 16 - used
            best = max(((4 * a + 3 * b + 2 * c + d, a, b, c, d)
                        for a, b, c, d in product(*(range(left[z] + 1) for z in (4, 3, 2, 1)))
                        if 4 * a + 3 * b + 2 * c + d <= room), default=(0,))
            if best[0] == 0:
                n, used = n + 1, 0
                continue
            used += best[0]
            for z, cnt in zip((4, 3, 2, 1), best[1:]):
                left[z] -= cnt
    return n, used


def predicted_cost(wq, tail):
    """Instructions of the block loop that depend on the weights, from the
    int8 weights alone: per block of 8 outputs and k group, an output with
    nz nonzero weights costs nz + 1 (VMUL, VMLAs, VADD), 1 (a VMLA) or 0;
    a pair of k groups costs one x VLDM when one of them has a nonzero weight
    (plus an ADD over skipped groups before it); the weights' VLDMs (_refills)
    but the first (shared with the biases); the `tail` QuantizeLinear
    constants ride on the last VLDM when they fit, else cost one VMOV."""
    n, k = wq.shape
    total = 0
    for o in range(0, n, 8):
        blk = wq[o:o + 8].reshape(8, k // 4, 4) != 0
        nz = blk.sum(2)  # [output, group]
        total += int(np.where(nz >= 2, nz + 1, nz).sum())
        loads, last = _refills([[int(v) for v in nz[:, g] if v] for g in range(k // 4)])
        total += max(loads - 1, 0) + (0 if loads >= 2 and last + tail <= 16 else 1)
        live = nz.any(0)  # groups with a nonzero weight in this block
        skipped = False
        for g0 in range(0, k // 4, 2):
            pair = live[g0:g0 + 2]
            if pair.any():
                total += 1 + (skipped or not pair[0])
                skipped = len(pair) == 2 and not pair[1]
            else:
                skipped = True
    return total


def test_instruction_count_drops_by_the_skipped_products(tmp_path):
    """Two layers of one shape and QuantizeLinear, one almost dense (just
    MIN_ZERO_FRACTION zeros: unrolled too) and one full of zeros: the exact
    qemu-m4 counts differ by what the weights predict (all else -- row
    dequantization, call, QuantizeLinear -- is the same code)."""
    bq = biases(50)
    xs = all_int8_inputs((1, K), 2, seed=50)
    wd, ws = dense_weights(51), sparse_weights(52)
    wd.reshape(-1)[np.random.default_rng(53).choice(
        N * K, int(np.ceil(N * K * MIN_ZERO_FRACTION)), replace=False)] = 0
    counts = []
    for name, wq in (("dense", wd), ("sparse", ws)):
        path = fc_model(tmp_path, name, wq, bq, "relu", 3, 0.05)
        assert "l0_fc_unrolled" in compile_model(path, numerics="ort").module.source
        outs, count = exact_run(path, xs)
        np.testing.assert_array_equal(outs.reshape(-1), run_ort(path, xs).reshape(-1))
        counts.append(count)
    saved = predicted_cost(wd, 1) - predicted_cost(ws, 1)
    assert saved > 1000
    assert counts[0] - counts[1] == saved
    # the almost dense layer pays ~4.2 instructions per k group and output (VMUL, VMLAs,
    # VADD; a fifth of its weights are zero)
    assert predicted_cost(wd, 1) > 4.0 * N * K // 4


def test_each_build_carries_one_copy_of_the_weights(tmp_path):
    """FPU firmware: the unrolled stream, no packed array; host: the packed
    array, no stream and no unrolled function (the loop kernel runs)."""
    from codegen.driver.firmware import build_compiled, private_dir
    import shutil

    path = fc_model(tmp_path, "fcw", sparse_weights(60), biases(60), "relu", 3, 0.05)
    c = compile_model(path, numerics="ort")
    b = board_or_error("qemu-m4")
    out_dir = private_dir(c, "fcu-syms")
    try:
        elf = build_compiled(c, b, out_dir, np.zeros((1, K), np.int8)).elf
        syms = subprocess.run([b["toolchain_prefix"] + "nm", str(elf)], capture_output=True,
                              text=True, check=True).stdout.split()
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    assert "l0_wu" in syms and "l0_xt" in syms
    assert not {"l0_wp", "l0_bf", "l0_fp", "tinyaot_fully_connected_f32_s8"} & set(syms)
    assert any(s.startswith("l0_fc_unrolled") for s in syms)
    (tmp_path / "m.c").write_text(c.module.source)
    (tmp_path / f"{c.module.name}.h").write_text(c.module.header)
    from tests.helpers.kernels_cffi import INCLUDE
    subprocess.run(["gcc", "-O2", "-c", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE}",
                    f"-I{tmp_path}", str(tmp_path / "m.c"), "-o", str(tmp_path / "m.o")],
                   check=True)
    host = subprocess.run(["nm", str(tmp_path / "m.o")], capture_output=True, text=True,
                          check=True).stdout.split()
    assert "l0_wp" in host and "l0_bf" in host and "tinyaot_fully_connected_f32_s8" in host
    assert "l0_wu" not in host and not any(s.startswith("l0_fc_unrolled") for s in host)


def test_dense_or_integrity_layers_keep_the_loop_kernel(tmp_path):
    """No zero weight (nothing to skip) or --integrity (one digest of one set of
    arrays): the loop kernel everywhere, no unrolled code."""
    path = fc_model(tmp_path, "fcd", dense_weights(70), biases(70), "relu", 3, 0.05)
    assert "fc_unrolled" not in compile_model(path, numerics="ort").module.source
    path = fc_model(tmp_path, "fci", sparse_weights(71), biases(71), "relu", 3, 0.05)
    assert "fc_unrolled" in compile_model(path, numerics="ort").module.source
    assert "fc_unrolled" not in compile_model(path, numerics="ort",
                                              integrity="crc32").module.source
    assert "fc_unrolled" not in compile_model(path, numerics="ort",
                                              optimize="size").module.source


@pytest.mark.shared
def test_ad01_ort_unrolled_golden_on_qemu_m4(monkeypatch):
    """A real model's layer through the straight-line code: ad01's first layer (8.7 %
    zero weights) runs the loop kernel by default (below MIN_ZERO_FRACTION, where the
    loop is the faster); at 5 % it is unrolled, and exact."""
    from codegen.driver.verify import verify_model
    from codegen.kernels import fc_float_unrolled as fu

    onnx_path, golden = shared_model("ad01")
    assert "fc_unrolled(" not in compile_model(onnx_path, numerics="ort").module.source
    monkeypatch.setattr(fu, "MIN_ZERO_FRACTION", 0.05)
    c = compile_model(onnx_path, numerics="ort")
    src = c.module.source
    # layer 0 has 8.7 % zero weights, layer 9 1.6 % (below 5 %: the loop)
    assert "l0_fc_unrolled(" in src and "l9_fc_unrolled(" not in src
    assert compile_model(onnx_path, numerics="ort").module.source == src  # deterministic
    rep = verify_model(onnx_path, golden, board="qemu-m4", numerics="ort",
                       key="outputs_onnxruntime")
    assert rep["vectors"] == 8 and rep["mismatches"] == 0, rep.get("first_mismatches")
    # the flash split counts the unrolled code (~4 bytes an instruction, ~100k instructions)
    assert rep["flash"]["code"] > 380_000
