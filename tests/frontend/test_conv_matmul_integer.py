"""ConvInteger / MatMulInteger in a statically quantized graph
(op -> Cast(float) -> Mul(scale) [-> Add(bias)] -> QuantizeLinear), int8 and
uint8, per-tensor and per-channel: host C bit-exact with onnxruntime, which
runs those nodes unfused (checked: its optimized graph keeps them)."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from codegen.compiler import compile_model
from codegen.errors import TinyAotError, UnsupportedError
from codegen.frontend.ort_facts import optimized_graph
from codegen.driver.verify import run_model

from tests.helpers.qdq_builder import run_ort, save
from tests.helpers.qop_builder import all_inputs

ONNX_T = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}


def integer_model(kind, dtype=np.int8, bias=True, w_dtype=np.int8, per_channel=True,
                  mul_first=False, seed=0, ties=False):
    """x -> ConvInteger / MatMulInteger -> Cast -> Mul -> [Add] -> QuantizeLinear -> y."""
    r = np.random.default_rng(seed)
    off = 128 if dtype == np.uint8 else 0
    woff = 128 if w_dtype == np.uint8 else 0
    if kind == "conv":
        cout, wshape, xs, ys, vshape = 4, (4, 3, 3, 3), [1, 3, 6, 6], [1, 4, 6, 6], (1, 4, 1, 1)
        core = dict(op="ConvInteger", pads=[1, 1, 1, 1], strides=[1, 1])
    else:
        cout, wshape, xs, ys, vshape = 5, (12, 5), [2, 12], [2, 5], (5,)
        core = dict(op="MatMulInteger")
    w = (r.integers(-120, 121, wshape) + woff).astype(w_dtype)
    if per_channel:  # per-channel scales; onnxruntime's ConvInteger takes one weight zp only
        wz = ((r.integers(-6, 7, (cout,)) if kind == "mm" else np.array(-5)) + woff).astype(w_dtype)
        sc = (r.uniform(0.5, 1.5, vshape) * 2e-4).astype(np.float32)
    else:
        wz = np.array(woff + 3, w_dtype)
        sc = np.full((1,), 1.7e-4, np.float32)
    bb = (r.standard_normal(vshape) * 0.3).astype(np.float32)
    if ties:  # powers of two: (acc * 2^-12 + 2^-3) / 2^-4 is k + 0.5 when acc = 128 mod 256
        sc = np.full((1,), 2.0**-12, np.float32)
        bb = np.full(vshape, 0.125, np.float32)
    inits = [numpy_helper.from_array(np.array(3 + off, dtype), "xzp"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(wz, "wzp"),
             numpy_helper.from_array(sc, "sc"), numpy_helper.from_array(bb, "bb"),
             numpy_helper.from_array(np.float32(2.0**-4 if ties else 0.05), "ys"),
             numpy_helper.from_array(np.array(-2 + off, dtype), "yzp")]
    op = core.pop("op")
    nodes = [helper.make_node(op, ["x", "w", "xzp", "wzp"], ["acc"], name="core", **core),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT, name="cast"),
             helper.make_node("Mul", ["sc", "accf"] if mul_first else ["accf", "sc"], ["m"],
                              name="mul")]
    last = "m"
    if bias:
        nodes.append(helper.make_node("Add", ["m", "bb"], ["a"], name="add"))
        last = "a"
    nodes.append(helper.make_node("QuantizeLinear", [last, "ys", "yzp"], ["y"], name="q"))
    g = helper.make_graph(nodes, f"{kind}_integer",
                          [helper.make_tensor_value_info("x", ONNX_T[dtype], xs)],
                          [helper.make_tensor_value_info("y", ONNX_T[dtype], ys)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m, tuple(xs)


CASES = [("conv", np.int8, True, np.int8, True, False), ("conv", np.uint8, True, np.uint8, True, True),
         ("conv", np.int8, False, np.int8, False, False), ("conv", np.uint8, False, np.int8, True, False),
         ("mm", np.int8, True, np.int8, True, False), ("mm", np.uint8, True, np.uint8, False, True),
         ("mm", np.int8, False, np.uint8, True, False)]


@pytest.mark.parametrize("kind,dtype,bias,w_dtype,per_channel,mul_first,ties",
                         [c + (False,) for c in CASES] + [("mm", np.int8, True, np.int8, False,
                                                            False, True),
                                                           ("conv", np.uint8, True, np.int8, False,
                                                            False, True)])
def test_integer_op_bit_exact_with_onnxruntime(kind, dtype, bias, w_dtype, per_channel, mul_first,
                                               ties, tmp_path):
    m, xs = integer_model(kind, dtype, bias, w_dtype, per_channel, mul_first, ties=ties)
    path = save(m, tmp_path)
    # what onnxruntime runs: the nodes as written (no fusion to emulate)
    ops = [n.op_type for n in optimized_graph(path).graph.node]
    assert ops == [n.op_type for n in m.graph.node]
    c = compile_model(path)
    layer = "conv2d" if kind == "conv" else "fully_connected"
    assert [n.op for n in c.graph.nodes if n.op in ("conv2d", "fully_connected")] == [layer]
    x = all_inputs(xs, 300, dtype)
    outs, info = run_model(path, x, board="host", compiled=c, build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(x)
    want = run_ort(path, x)
    got = outs.view(want.dtype).reshape(want.shape)
    np.testing.assert_array_equal(got, want)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    assert ((want > lo) & (want < hi)).mean() > 0.5  # mostly not saturated: a real check
    if ties:  # rounding ties really occur (half to even decides them)
        from codegen.ops.conv2d import conv2d_acc
        g = c.graph
        wt = g.tensors[next(n for n in g.nodes if n.op in ("conv2d", "fully_connected")).inputs[1]]
        xi = x.astype(np.int64) - (3 + (128 if dtype == np.uint8 else 0))
        acc = (conv2d_acc(xi.reshape(-1, 3, 6, 6), wt.data, 0, (1, 1), (1, 1, 1, 1), (1, 1), 1)
               if kind == "conv"
               else xi @ wt.data.astype(np.int64).T)
        assert (acc % 256 == 128).sum() >= 5


def test_folding_the_epilogue_into_one_scale_would_differ():
    """Why the epilogue is kept as written: round((float(acc) * S + B) / s_y) is not
    round(float(acc) * (S / s_y)) + round(B / s_y) for every accumulator."""
    from codegen.numerics.ort_float import quantize, requantize_acc
    acc = np.arange(-20000, 20000, dtype=np.int32)
    s, b, sy = np.float32(1.7e-4), np.float32(0.123), np.float32(0.05)
    exact = quantize(((acc.astype(np.float32) * s).astype(np.float32) + b).astype(np.float32), sy, 0)
    folded = requantize_acc(acc, np.float32(s / sy), 0, -128, 127) + int(np.rint(b / sy))
    assert (exact != np.clip(folded, -128, 127)).any()


@pytest.mark.parametrize("kind,dtype,w_dtype,wzp", [("conv", np.int8, np.int8, -100),
                                                    ("conv", np.uint8, np.uint8, 20),
                                                    ("mm", np.uint8, np.int8, 90),
                                                    ("mm", np.int8, np.uint8, 230)])
def test_weights_whose_zero_point_does_not_fit_int8(kind, dtype, w_dtype, wzp, tmp_path):
    """w - zp beyond int8 (int16 weights: tinyaot_convolve_w16_s8 /
    tinyaot_fully_connected_w16_s8), bit-exact with onnxruntime."""
    m, xs = integer_model(kind, dtype, w_dtype=w_dtype, per_channel=False)
    wz = next(i for i in m.graph.initializer if i.name == "wzp")
    wz.CopyFrom(numpy_helper.from_array(np.array(wzp, w_dtype), "wzp"))
    path = save(m, tmp_path)
    c = compile_model(path)
    layer = next(n for n in c.graph.nodes if n.op in ("conv2d", "fully_connected"))
    w = c.graph.tensors[layer.inputs[1]]
    assert w.dtype == "int16" and (w.data.min() < -128 or w.data.max() > 127)
    kernel = "tinyaot_convolve_w16_s8" if kind == "conv" else "tinyaot_fully_connected_w16_s8"
    assert kernel in c.report["kernels"]
    x = all_inputs(xs, 100, dtype)
    outs, info = run_model(path, x, board="host", compiled=c, build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(x)
    want = run_ort(path, x)
    np.testing.assert_array_equal(outs.view(want.dtype).reshape(want.shape), want)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    assert ((want > lo) & (want < hi)).mean() > 0.5  # mostly not saturated: a real check


def test_tflite_numerics_is_refused_cleanly(tmp_path):
    m, _ = integer_model("mm")
    with pytest.raises(TinyAotError, match="node 'core'.*only --numerics ort"):
        compile_model(save(m, tmp_path), numerics="tflite")


def test_other_chains_are_reported(tmp_path):
    m, _ = integer_model("mm", bias=True)
    add = next(n for n in m.graph.node if n.op_type == "Add")
    add.input[1] = "m"  # Add(m, m): not a constant bias
    with pytest.raises(UnsupportedError, match="Add 'add': the other Add operand must be a float "
                                               "constant"):
        compile_model(save(m, tmp_path))


def test_dynamic_quantization_is_named(tmp_path):
    """DynamicQuantizeLinear -> MatMulInteger: scales computed at run time."""
    m, _ = integer_model("mm", bias=False)
    g = m.graph
    g.input[0].CopyFrom(helper.make_tensor_value_info("xf", TensorProto.FLOAT, [2, 12]))
    g.node.insert(0, helper.make_node("DynamicQuantizeLinear", ["xf"], ["x", "x_s", "x_zp"],
                                      name="dql"))
    g.node[1].input[2] = "x_zp"
    g.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.INT8, [2, 5]))
    path = save(m, tmp_path)
    with pytest.raises(UnsupportedError) as e:
        compile_model(path)
    msg = str(e.value)
    assert ("DynamicQuantizeLinear 'dql': dynamic quantization is not supported: quantize "
            "statically (tinyaot quantize)") in msg
    assert "MatMulInteger 'core': dynamic quantization is not supported" in msg


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["qemu-m4", "qemu-m3"])
def test_integer_op_on_cortex_m(board, tmp_path):
    """The float epilogue on the M4 FPU and on the M3's soft float == onnxruntime."""
    from tests.helpers.env import require_arm_toolchain
    require_arm_toolchain()
    m, xs = integer_model("conv", np.uint8, True, np.uint8, True, False, ties=False)
    path = save(m, tmp_path)
    x = all_inputs(xs, 8, np.uint8)
    outs, info = run_model(path, x, board=board, build_dir=tmp_path / "fw")
    assert info["status"] == [0] * len(x)
    want = run_ort(path, x)
    np.testing.assert_array_equal(outs.view(want.dtype).reshape(want.shape), want)
