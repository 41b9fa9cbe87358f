"""The float32 value of onnxruntime's float Gemm / MatMul, before QuantizeLinear, bit for bit.

int8 outputs hide almost every float rounding difference (the old single fma
chain passed every golden while ~90% of its floats differed from ORT), so the
MLAS summation order `--numerics ort` must repeat is checked on the float:

* onnxruntime's float output of DQ(x), DQ(w), DQ(b) -> Gemm / MatMul (the
  independent oracle: ORT 1.32 on this x86-64 host), against
* the numpy reference (codegen/numerics/mlas_fc_order.py, order picked by
  mlas_order from M, N, K, transB), and
* the C kernel runtime_c/src/fully_connected/tinyaot_fully_connected_f32_s8.c, compiled with
  its QuantizeLinear replaced by a function that records the float: the
  portable C on the host, the VMLA inline asm in a qemu-m4 firmware.
"""
from __future__ import annotations

import subprocess

import numpy as np
import onnx
import pytest

from codegen.kernels.fc_float_pack import fc_float_scratch_bytes, input_table, pack_fc_float
from codegen.numerics.mlas_fc_order import GEMV4, KBLOCK, LANES8, ORDER_CODE, mlas_order
from codegen.numerics.ort_float import fma_f32

from tests.helpers.env import require_arm_toolchain
from tests.helpers.kernels_cffi import CAPTURE_QUANTIZE_C, INCLUDE, SRC, capture_library
from tests.helpers.ort_gemm_cases import (M1_SHAPES, MN_SHAPES, bits_differ, cases, float_inputs,
                                          ort_case, reference)

F32 = np.float32

CAPTURE_C = CAPTURE_QUANTIZE_C + r"""
#include "quantize/tinyaot_dequantize_row_f32_s8.c"
#include "fully_connected/tinyaot_fully_connected_f32_s8.c"
int run_capture(int32_t rows, int32_t k, int32_t n, const tinyaot_float_fc_t *p,
                const int8_t *input, float *scratch, int8_t *output, float *y)
{
    cap_ = y;
    return tinyaot_fully_connected_f32_s8(rows, k, n, p, input, scratch, output);
}
"""

CDEF = """
typedef struct { int32_t order, k_block; float out_scale; int32_t out_zp, act_min, act_max;
                 const float *in_table, *weights, *bias; } tinyaot_float_fc_t;
int run_capture(int32_t rows, int32_t k, int32_t n, const tinyaot_float_fc_t *p,
                const int8_t *input, float *scratch, int8_t *output, float *y);
int32_t tinyaot_fully_connected_f32_s8_get_buffer_size(int32_t in_features);
"""

@pytest.mark.parametrize("which", ["m1", "mn"])
def test_reference_float_bit_exact_with_onnxruntime(which):
    """Every form tinyaot lowers to a float fully_connected, M = 1 (every MLPerf Tiny
    model) and M > 1 (ORT single-threaded: its thread split of N can change MLAS's
    K stride): the reference's float equals ORT's, bit for bit."""
    bad = []
    for form, m, k, n, y, xq, wq, p, tb, ops in cases(which):
        assert ops[-1] in ("Gemm", "MatMul", "FusedGemm", "Relu"), (form, ops)  # a float layer
        ref, order, _ = reference(xq, wq, p, tb, form == "gemm_relu")
        d = bits_differ(ref, y)
        if d:
            bad.append((form, m, k, n, order, d, y.size))
    assert not bad, bad


def test_orders_used():
    """The shapes above exercise each MLAS order, and the blocked one with K > its block."""
    used = {mlas_order(m, n, k, tb)[0] for m, k, n in M1_SHAPES + MN_SHAPES for tb in (0, 1)}
    assert used == {GEMV4, LANES8, KBLOCK}
    assert any(mlas_order(m, n, k, 0) == (KBLOCK, 256) and k > 256 for m, k, n in MN_SHAPES)
    assert any(mlas_order(m, n, k, 0) == (KBLOCK, 1024) and k > 1024 for m, k, n in MN_SHAPES)


def test_old_single_fma_chain_was_wrong_on_ad01_shapes():
    """Evidence: the previous kernel's order (one fma chain over k, then + bias) differs
    from ORT on most float outputs of ad01's two float layers; the MLAS order on none."""
    for k, n in [(640, 128), (128, 640)]:
        y, xq, wq, p, tb, _ = ort_case("matmul_add", 1, k, n, seed=7)
        xf, wf = float_inputs(xq, wq, p)
        acc = np.zeros(n, F32)
        for kk in range(k):
            acc = fma_f32(acc, xf[0, kk], wf[:, kk])
        old = (acc + p["bias_f"]).astype(F32)
        assert bits_differ(old, y[0]) > n // 2
        assert bits_differ(reference(xq, wq, p, tb, False)[0], y) == 0


def test_pack_gemv4_layout():
    """The packed weights hold every weight once, in the kernel's read order."""
    wf = np.arange(7 * 10, dtype=F32).reshape(7, 10)
    pk = pack_fc_float(wf, GEMV4)
    assert sorted(pk.tolist()) == sorted(wf.reshape(-1).tolist())
    # block 0, k group 0: outputs 0..3, k 0..3 each; then group 1
    assert pk[:16].tolist() == wf[:4, :4].reshape(-1).tolist()
    assert pk[16:20].tolist() == wf[0, 4:8].tolist()
    assert pk[32:36].tolist() == wf[0, 8:10].tolist() + wf[1, 8:10].tolist()  # k tail
    assert pk[40:].tolist() == wf[4:].reshape(-1).tolist()  # leftover outputs row-major
    assert pack_fc_float(wf, LANES8).tolist() == wf.reshape(-1).tolist()
    # 13 outputs: a block of 8 (its k group 0: outputs 0..7, 4 k each), a block of 4, 1 left
    wf = np.arange(13 * 10, dtype=F32).reshape(13, 10)
    pk = pack_fc_float(wf, GEMV4)
    assert sorted(pk.tolist()) == sorted(wf.reshape(-1).tolist())
    assert pk[:32].tolist() == wf[:8, :4].reshape(-1).tolist()
    assert pk[32:36].tolist() == wf[0, 4:8].tolist()
    assert pk[64:80].tolist() == wf[:8, 8:10].reshape(-1).tolist()  # the block's k tails
    assert pk[80:96].tolist() == wf[8:12, :4].reshape(-1).tolist()  # the block of 4
    assert pk[-10:].tolist() == wf[12].tolist()


# ------------------------------------------------------------------ the C kernel

def kernel_args(xq, wq, p, order, kb):
    xf, wf = float_inputs(xq, wq, p)
    return dict(order=ORDER_CODE[order], k_block=kb,
                table=input_table(p["in_scale"], p["in_zp"]),
                weights=np.ascontiguousarray(pack_fc_float(wf, order), F32),
                bias=np.ascontiguousarray(p["bias_f"], F32))


@pytest.fixture(scope="module")
def capture_lib(tmp_path_factory):
    return capture_library(tmp_path_factory.mktemp("fc_capture"), CAPTURE_C, CDEF, "-O2")


def c_float(capture_lib, xq, a):
    ffi, lib = capture_lib
    m, k = xq.shape
    n = a["bias"].size
    keep = [a["table"], a["weights"], a["bias"]]
    fp = ffi.new("tinyaot_float_fc_t *", [a["order"], a["k_block"], 1.0, 0, -128, 127] +
                 [ffi.from_buffer("float[]", v) for v in keep])
    nbytes = lib.tinyaot_fully_connected_f32_s8_get_buffer_size(k)
    assert nbytes == fc_float_scratch_bytes(k)
    scratch = np.full(nbytes // 4, np.nan, F32)  # the kernel must write it before reading
    out = np.zeros(m * n, np.int8)
    y = np.zeros(m * n, F32)
    x = np.ascontiguousarray(xq)
    assert lib.run_capture(m, k, n, fp, ffi.from_buffer("int8_t[]", x),
                           ffi.from_buffer("float[]", scratch), ffi.from_buffer("int8_t[]", out),
                           ffi.from_buffer("float[]", y)) == 0
    return y.reshape(m, n)


@pytest.mark.parametrize("which", ["m1", "mn"])
def test_c_kernel_float_bit_exact_with_onnxruntime(capture_lib, which):
    """The portable C kernel's float (before QuantizeLinear) equals ORT's and the reference's."""
    bad = []
    for form, m, k, n, y, xq, wq, p, tb, _ in cases(which):
        ref, order, kb = reference(xq, wq, p, tb, False)
        cy = c_float(capture_lib, xq, kernel_args(xq, wq, p, order, kb))
        if form == "gemm_relu":
            cy = np.maximum(cy, F32(0))
        if bits_differ(cy, y) or bits_differ(cy, np.maximum(ref, 0) if form == "gemm_relu"
                                             else ref):
            bad.append((form, m, k, n, order, bits_differ(cy, y), y.size))
    assert not bad, bad


# ------------------------------------------------------------------ the asm on qemu-m4

HARNESS = r"""
#include <stdint.h>
#include <string.h>
#include "harness.h"
#include "tinyaot_kernels.h"
int run_capture(int32_t rows, int32_t k, int32_t n, const tinyaot_float_fc_t *p,
                const int8_t *input, float *scratch, int8_t *output, float *y);
struct fc_case { int32_t rows, k, n; tinyaot_float_fc_t p; const int8_t *x; };
static float scratch_[2048] __attribute__((aligned(8)));
static int8_t out_[4096];
static float y_[MAX_Y];
const uint32_t tinyaot_harness_input_size = 1u;
const uint32_t tinyaot_harness_output_size = MAX_Y * 4u;
int tinyaot_harness_run(const int8_t *input, int8_t *output)
{
    const struct fc_case *c = &cases_[(uint8_t)input[0]];
    memset(y_, 0, sizeof y_);
    run_capture(c->rows, c->k, c->n, &c->p, c->x, scratch_, out_, y_);
    memcpy(output, y_, sizeof y_);
    return 0;
}
"""


def _c_floats(name, v):
    return (f"static const float {name}[] __attribute__((aligned(8))) = {{" +
            ",".join(f"{float(f).hex()}f".replace("0x", "0x") for f in np.asarray(v, F32)) +
            "};\n")


@pytest.mark.qemu
def test_asm_kernel_float_bit_exact_on_qemu_m4(tmp_path):
    """The Cortex-M4 VMLA path (inline asm, FPv4) gives ORT's floats, every M = 1 form."""
    require_arm_toolchain()
    from codegen.targets.qemu import build_firmware, load_board, run_firmware

    board = load_board("qemu-m4")
    # 4 MiB of flash: ad01's big shapes in their real form (MatMul + Add) only
    sel = [c for c in cases("m1") if c[2] * c[3] <= 50000 or c[0] == "matmul_add"]
    max_y = max(c[1] * c[3] for c in sel)
    data, rows = [], []
    for i, (form, m, k, n, y, xq, wq, p, tb, _) in enumerate(sel):
        _, order, kb = reference(xq, wq, p, tb, False)
        a = kernel_args(xq, wq, p, order, kb)
        data.append(_c_floats(f"t{i}", a["table"]) + _c_floats(f"w{i}", a["weights"]) +
                    _c_floats(f"b{i}", a["bias"]) +
                    f"static const int8_t x{i}[] = {{{','.join(str(int(v)) for v in xq.reshape(-1))}}};\n")
        rows.append(f"{{{m}, {k}, {n}, {{{a['order']}, {a['k_block']}, 1.0f, 0, -128, 127, "
                    f"t{i}, w{i}, b{i}}}, x{i}}}")
    src = tmp_path / "fc_cases.c"
    src.write_text("#include <stdint.h>\n#include \"tinyaot_kernels.h\"\n"
                   "struct fc_case { int32_t rows, k, n; tinyaot_float_fc_t p; const int8_t *x; };\n"
                   + "".join(data) + "const struct fc_case cases_[] = {" + ",\n".join(rows)
                   + "};\n" + f"const uint32_t tinyaot_harness_num_inputs = {len(sel)}u;\n"
                   + "const int8_t tinyaot_harness_inputs[] = {"
                   + ",".join(str(i) for i in range(len(sel))) + "};\n")
    harness = tmp_path / "fc_harness.c"
    harness.write_text(HARNESS.replace("MAX_Y", str(max_y)).replace(
        "struct fc_case { int32_t rows, k, n; tinyaot_float_fc_t p; const int8_t *x; };",
        "struct fc_case { int32_t rows, k, n; tinyaot_float_fc_t p; const int8_t *x; };\n"
        "extern const struct fc_case cases_[];"))
    cap = tmp_path / "fc_capture.c"
    cap.write_text(CAPTURE_C)
    elf = build_firmware([board["harness_main"], src, harness, cap], [INCLUDE, SRC], board,
                         tmp_path / "fc.elf")
    asm = subprocess.run([board["toolchain_prefix"] + "objdump", "-d", str(elf)],
                         capture_output=True, text=True, check=True).stdout
    assert "vmul.f32" in asm and "vldmia" in asm, "not the asm path"
    res = run_firmware(elf, board, timeout=300)
    assert len(res.outputs) == len(sel)
    bad = []
    for (form, m, k, n, y, *_), r in zip(sel, res.outputs):
        got = np.frombuffer(r.data, dtype="<f4")[:m * n].reshape(m, n)
        if form == "gemm_relu":
            got = np.maximum(got, F32(0))
        if bits_differ(got, y):
            bad.append((form, m, k, n, bits_differ(got, y)))
    assert not bad, bad


# ------------------------------------------------------------------ end to end

@pytest.mark.parametrize("rows", [1, 3])
def test_ad01_float_layers_compiled_equal_onnxruntime(tmp_path, rows):
    """ad01's first and last layers are float Gemms in ORT (MatMul + Add fused,
    transB=0): tinyaot marks them ort_float with MLAS's order -- the M1 kernel for
    batch 1, the K-blocked SGEMM for a batch of 3 (ad01 with its batch dimension set
    to 3) -- and the host build gives ORT's int8 outputs (single-threaded ORT)."""
    import onnxruntime as ort
    from tests.helpers.env import shared_model
    from tests.helpers.qdq_builder import all_int8_inputs, host_run_checked

    src, _ = shared_model("ad01")
    m = onnx.load(str(src))
    for v in list(m.graph.input) + list(m.graph.output):
        v.type.tensor_type.shape.dim[0].dim_value = rows
    del m.graph.value_info[:]
    path = tmp_path / f"ad01_m{rows}.onnx"
    onnx.save(m, str(path))
    xs = all_int8_inputs((rows, 640), 4, seed=rows)
    outs, c = host_run_checked(path, xs, "ort", tmp_path, "tinyaot_fully_connected_f32_s8")
    floats = [nd for nd in c.graph.nodes if nd.op == "fully_connected" and nd.attrs["ort_float"]]
    assert len(floats) == 2 and all(nd.attrs.get("ort_trans_b", 0) == 0 for nd in floats)
    want = [GEMV4, GEMV4] if rows == 1 else [KBLOCK, KBLOCK]
    assert [c.params[nd.name].fc_order for nd in floats] == want
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    exp = np.stack([sess.run(None, {sess.get_inputs()[0].name: v})[0] for v in xs])
    np.testing.assert_array_equal(outs.reshape(exp.shape), exp)


@pytest.mark.skipif((__import__("os").cpu_count() or 1) < 2, reason="needs ORT's thread pool")
def test_threaded_onnxruntime_m_above_1_is_not_reproduced():
    """Documents a limit: with M > 1 ORT's default session splits N across its
    threads, and each thread's MLAS picks its K stride from its own N, so the float
    sums depend on the host's core count. tinyaot reproduces the single-threaded
    session (intra_op_num_threads=1); with 2+ threads this shape differs."""
    y1, xq, wq, p, tb, _ = ort_case("matmul_add", 3, 640, 128, seed=5, threads=1)
    y2 = ort_case("matmul_add", 3, 640, 128, seed=5, threads=2)[0]
    ref = reference(xq, wq, p, tb, False)[0]
    assert bits_differ(ref, y1) == 0
    assert bits_differ(ref, y2) > 0


QUANT_HARNESS = r"""
#include <stdint.h>
#include <string.h>
#include "harness.h"
#include "tinyaot_kernels.h"
struct fc_case { int32_t rows, k, n; tinyaot_float_fc_t p; const int8_t *x; };
extern const struct fc_case cases_[];
static float scratch_[2048] __attribute__((aligned(8)));
const uint32_t tinyaot_harness_input_size = 1u;
const uint32_t tinyaot_harness_output_size = NOUT;
int tinyaot_harness_run(const int8_t *input, int8_t *output)
{
    const struct fc_case *c = &cases_[(uint8_t)input[0]];
    return tinyaot_fully_connected_f32_s8(c->rows, c->k, c->n, &c->p, c->x, scratch_, output);
}
"""


@pytest.mark.qemu
def test_asm_quantize_row_on_qemu_m4(tmp_path):
    """The FPv4 QuantizeLinear (VCVTR, then an integer clamp) gives MLAS's integers:
    zero weights make every float total its bias exactly, so the biases are the
    edge values -- halves (ties to even), clamp bounds, huge, +-0 -- over output
    scales (powers of two: exact quotients), zero points and Relu-like bounds; K and N
    that take the blocks of 8 (quantized in the block loop: an odd k group, pairs)
    followed by a block of 4 and leftover outputs."""
    require_arm_toolchain()
    from codegen.numerics import ort_float as of
    from codegen.targets.qemu import build_firmware, load_board, run_firmware

    board = load_board("qemu-m4")
    rng = np.random.default_rng(11)
    data, rows, exp = [], [], []
    params = [(0.5, 0, -128, 127, 4, 512), (0.125, 17, -128, 127, 4, 512),
              (1.0, -128, -128, 127, 4, 512), (0.0390625, 5, 5, 127, 4, 512),
              (float(F32(0.0371)), -3, -128, 100, 4, 512), (0.125, 17, -128, 127, 12, 519),
              (0.0390625, 5, 5, 127, 16, 519), (0.5, 96, -128, 127, 8, 517)]
    nout = max(p[-1] for p in params)
    for i, (sc, zp, lo, hi, k, n) in enumerate(params):
        v = np.concatenate([np.arange(-140, 140, dtype=np.float64) + 0.5,
                            rng.uniform(-300, 300, n - 280 - 8),
                            [0.0, -0.0, 1e30, -1e30, 3e9, -3e9, 2.5e-39, 127.49999]])
        bias = (v * sc).astype(F32)
        exp.append(of.quantize(bias, F32(sc), zp, lo, hi).astype(np.int8))
        data.append(_c_floats(f"b{i}", bias) + _c_floats(f"t{i}", np.ones(256, F32)) +
                    _c_floats(f"w{i}", np.zeros(k * n, F32)))
        rows.append(f"{{1, {k}, {n}, {{0, {k}, {float(F32(sc)).hex()}f, {zp}, {lo}, {hi}, "
                    f"t{i}, w{i}, b{i}}}, xz}}")
    src = tmp_path / "q_cases.c"
    src.write_text("#include <stdint.h>\n#include \"tinyaot_kernels.h\"\n"
                   "struct fc_case { int32_t rows, k, n; tinyaot_float_fc_t p; const int8_t *x; };\n"
                   "static const int8_t xz[16] = {0};\n" + "".join(data)
                   + "const struct fc_case cases_[] = {" + ",\n".join(rows) + "};\n"
                   + f"const uint32_t tinyaot_harness_num_inputs = {len(params)}u;\n"
                   + "const int8_t tinyaot_harness_inputs[] = {"
                   + ",".join(str(i) for i in range(len(params))) + "};\n")
    harness = tmp_path / "q_harness.c"
    harness.write_text(QUANT_HARNESS.replace("NOUT", f"{nout}u"))
    elf = build_firmware([board["harness_main"], src, harness,
                          SRC / "fully_connected" / "tinyaot_fully_connected_f32_s8.c",
                          SRC / "quantize" / "tinyaot_dequantize_row_f32_s8.c"], [INCLUDE], board,
                         tmp_path / "q.elf")
    asm = subprocess.run([board["toolchain_prefix"] + "objdump", "-d", str(elf)],
                         capture_output=True, text=True, check=True).stdout
    assert "vcvtr.s32.f32" in asm, "not the asm path"
    res = run_firmware(elf, board, timeout=120)
    got = np.stack([np.frombuffer(r.data, dtype=np.int8) for r in res.outputs])
    bad = [(params[i], int((got[i, :e.size] != e).sum())) for i, e in enumerate(exp)
           if (got[i, :e.size] != e).any()]
    assert not bad, bad
