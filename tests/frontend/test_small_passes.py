"""Small frontend passes, each with positive and negative cases:
constant folding, Q->DQ round trips, cancelled vs real transposes, uint8."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from codegen.compiler import compile_model
from codegen.frontend import load_model
from codegen.frontend.const_fold import fold_constants
from codegen.frontend.onnx_loader import infer_static_shapes
from codegen.ir import Graph, Node, QParams, Tensor
from codegen.passes.uint8 import uint8_to_int8
from codegen.reference import run_graph
from codegen.reference.onnxruntime_oracle import run_onnxruntime
from codegen.driver.verify import run_model


def _save(tmp_path, nodes, inits, xin, yout, name="m", opset=13):
    g = helper.make_graph(nodes, name, [xin], [yout], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    p = tmp_path / f"{name}.onnx"
    onnx.save(m, str(p))
    return p


def _q(name, s, zp, dtype=np.int8):
    return [numpy_helper.from_array(np.array(s, dtype=np.float32), f"{name}_s"),
            numpy_helper.from_array(np.array(zp, dtype=dtype), f"{name}_z")]


def _ops(g):
    return [n.op for n in g.nodes]


# ---- constant folding ------------------------------------------------------

def _reshape_by_shape_arith(tmp_path, shape_of="x"):
    """x int8 [1,2,3,4] -> Reshape(x, Concat(Gather(Shape(x), 0), [-1])) -> [1, 24]."""
    inits = [numpy_helper.from_array(np.array(0, dtype=np.int64), "i0"),
             numpy_helper.from_array(np.array([-1], dtype=np.int64), "m1"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "ax")]
    h = helper.make_node
    nodes = [h("Shape", [shape_of], ["sh"], name="shape"),
             h("Gather", ["sh", "i0"], ["n"], axis=0, name="gather"),
             h("Unsqueeze", ["n", "ax"], ["n1"], name="unsq"),
             h("Concat", ["n1", "m1"], ["target"], axis=0, name="concat"),
             h("Reshape", ["x", "target"], ["y"], name="reshape")]
    xin = helper.make_tensor_value_info("x", TensorProto.INT8, [1, 2, 3, 4])
    yout = helper.make_tensor_value_info("y", TensorProto.INT8, [1, 24])
    return _save(tmp_path, nodes, inits, xin, yout, "shape_arith")


def test_constant_folding_of_shape_arithmetic(tmp_path):
    p = _reshape_by_shape_arith(tmp_path)
    proto = infer_static_shapes(onnx.load(str(p)), p, {})
    new, n = fold_constants(proto, p)
    assert n == 4 and [x.op_type for x in new.graph.node] == ["Reshape"]
    target = {i.name: numpy_helper.to_array(i) for i in new.graph.initializer}["target"]
    np.testing.assert_array_equal(target, [1, -1])
    g = load_model(p)
    assert _ops(g) == ["reshape"]
    x = np.arange(24, dtype=np.int8).reshape(1, 2, 3, 4)
    out = run_graph(g, "ort", {g.inputs[0]: x})[g.outputs[0]]
    np.testing.assert_array_equal(out, run_onnxruntime(p, {"x": x})["y"])


def test_constant_folding_leaves_dynamic_and_quantization_nodes(tmp_path):
    # DequantizeLinear of an initializer must stay (it is how weights are read)
    w = numpy_helper.from_array(np.ones((2, 2), dtype=np.int8), "w")
    nodes = [helper.make_node("DequantizeLinear", ["w", "w_s", "w_z"], ["wf"], name="dq"),
             helper.make_node("Add", ["x", "wf"], ["y"], name="add")]
    xin = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    yout = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    p = _save(tmp_path, nodes, [w] + _q("w", 0.5, 0), xin, yout, "keep_dq")
    proto = infer_static_shapes(onnx.load(str(p)), p, {})
    new, n = fold_constants(proto, p)
    assert n == 0 and new is proto


# ---- Q -> DQ round trips ----------------------------------------------------

def _round_trip(tmp_path, second_zp):
    """x -DQ(a)-> -Q(a)-> t -DQ(a)-> -Q(c)-> u -DQ(c)-> -Q(b)-> y: the first pair
    is a no-op, the second one too iff c == a, the last (b != c) a requantize."""
    h = helper.make_node
    nodes = [h("DequantizeLinear", ["x", "a_s", "a_z"], ["xf"], name="dq1"),
             h("QuantizeLinear", ["xf", "a_s", "a_z"], ["t"], name="q1"),
             h("DequantizeLinear", ["t", "a_s", "a_z"], ["tf"], name="dq2"),
             h("QuantizeLinear", ["tf", "c_s", "c_z"], ["u"], name="q2"),
             h("DequantizeLinear", ["u", "c_s", "c_z"], ["uf"], name="dq3"),
             h("QuantizeLinear", ["uf", "b_s", "b_z"], ["y"], name="q3")]
    xin = helper.make_tensor_value_info("x", TensorProto.INT8, [1, 16])
    yout = helper.make_tensor_value_info("y", TensorProto.INT8, [1, 16])
    inits = _q("a", 0.05, 3) + _q("c", 0.05, second_zp) + _q("b", 0.07, 1)
    return _save(tmp_path, nodes, inits, xin, yout, f"rt{second_zp}")


@pytest.mark.parametrize("second_zp,expect", [(3, ["reshape", "reshape", "requantize"]),
                                              (-7, ["reshape", "requantize", "requantize"])])
def test_q_dq_round_trip(tmp_path, second_zp, expect):
    p = _round_trip(tmp_path, second_zp)
    g = load_model(p)
    assert _ops(g) == expect
    c = compile_model(p)
    kernels = [layer["kernel"] for layer in c.module.layers]
    assert kernels.count("tinyaot_requantize_s8") == expect.count("requantize")
    x = np.arange(-128, 128, 16, dtype=np.int8).reshape(1, 16)
    outs, _ = run_model(p, x, board="host", compiled=c, build_dir=tmp_path / f"gen{second_zp}")
    # Two requantizes in a row: ORT's optimizer rewrites the chain (its
    # optimized session rounds differently, a known gap); the model's own
    # semantics are ORT's unoptimized session.
    chained = expect.count("requantize") > 1
    np.testing.assert_array_equal(outs.reshape(1, 16),
                                  run_onnxruntime(p, {"x": x}, disable_opt=chained)["y"])


# ---- transposes: cancelled or a real layout kernel -------------------------

def _transposes(tmp_path, perms, name):
    """x -DQ-> Transpose* -> Reshape [1,24] -Q(other params)-> y."""
    h = helper.make_node
    nodes, cur = [h("DequantizeLinear", ["x", "a_s", "a_z"], ["xf"], name="dq")], "xf"
    for k, perm in enumerate(perms):
        nodes.append(h("Transpose", [cur], [f"t{k}"], perm=list(perm), name=f"tr{k}"))
        cur = f"t{k}"
    nodes.append(h("Reshape", [cur, "shape"], ["r"], name="flat"))
    nodes.append(h("QuantizeLinear", ["r", "b_s", "b_z"], ["y"], name="q"))
    inits = [numpy_helper.from_array(np.array([1, 24], dtype=np.int64), "shape")]
    inits += _q("a", 0.05, 3) + _q("b", 0.1, -2)
    xin = helper.make_tensor_value_info("x", TensorProto.INT8, [1, 2, 3, 4])
    yout = helper.make_tensor_value_info("y", TensorProto.INT8, [1, 24])
    return _save(tmp_path, nodes, inits, xin, yout, name)


@pytest.mark.parametrize("perms,real", [([(0, 2, 3, 1), (0, 3, 1, 2)], False),  # undo each other
                                        ([(0, 2, 3, 1)], True)])  # NCHW -> NHWC, then flatten
def test_transpose_cancelled_or_real_layout(tmp_path, perms, real):
    p = _transposes(tmp_path, perms, f"tr{len(perms)}")
    c = compile_model(p)
    assert ("layout" in _ops(c.graph)) == real
    x = np.arange(24, dtype=np.int8).reshape(1, 2, 3, 4)
    outs, _ = run_model(p, x, board="host", compiled=c, build_dir=tmp_path / "gen")
    np.testing.assert_array_equal(outs.reshape(1, 24), run_onnxruntime(p, {"x": x})["y"])


# ---- uint8 -> int8 -----------------------------------------------------------

def _u8_graph():
    g = Graph("u8")
    q_in = QParams(np.array([0.1], np.float32), np.array([130], np.int32))
    q_mid = q_in  # shared QParams object: must not be shifted twice
    g.add_tensor(Tensor("x", (1, 4), "uint8", q_in))
    g.add_tensor(Tensor("m", (1, 4), "uint8", q_mid))
    g.add_tensor(Tensor("y", (1, 4), "uint8",
                        QParams(np.array([0.2], np.float32), np.array([0], np.int32))))
    g.nodes = [Node("clamp", "c", ["x"], ["m"], {"act_lo": 0.0, "act_hi": None}),
               Node("requantize", "r", ["m"], ["y"], {"act_lo": None, "act_hi": None})]
    g.inputs, g.outputs = ["x"], ["y"]
    return g


def test_uint8_pass_shifts_zero_points_once_and_keeps_io_type():
    g = _u8_graph()
    x = np.array([[0, 129, 200, 255]], dtype=np.uint8)
    want = run_graph(g, "ort", {"x": x})["y"]
    uint8_to_int8(g)
    assert _ops(g) == ["sign_flip", "clamp", "requantize", "sign_flip"]
    assert g.tensors["x"].dtype == "uint8" and g.tensors["y"].dtype == "uint8"
    assert int(g.tensors["x"].q.zero_point[0]) == 130  # the user's parameters
    assert int(g.tensors["m"].q.zero_point[0]) == 2
    assert int(g.tensors["x@s8"].q.zero_point[0]) == 2
    assert int(g.tensors["y@s8"].q.zero_point[0]) == -128
    assert {g.tensors[t].dtype for n in g.nodes[1:-1] for t in n.inputs + n.outputs} == {"int8"}
    got = run_graph(g, "ort", {"x": x})["y"]
    np.testing.assert_array_equal(got, want)
    for numerics in ("ort", "tflite"):
        np.testing.assert_array_equal(run_graph(_u8_graph(), numerics, {"x": x})["y"],
                                      run_graph(uint8_to_int8(_u8_graph()), numerics, {"x": x})["y"])


def test_uint8_pass_leaves_int8_graphs_alone():
    g = _u8_graph()
    for t in g.tensors.values():
        t.dtype = "int8"
        t.q = QParams(t.q.scale, np.array([0], np.int32))
    before = g.dump()
    uint8_to_int8(g)
    assert g.dump() == before


def test_uint8_inputs_rejected_for_int8_model(tmp_path):
    from codegen.errors import TinyAotError
    p = _round_trip(tmp_path, 3)
    with pytest.raises(TinyAotError, match="is uint8: the model.s input .x. is int8"):
        run_model(p, np.zeros((1, 16), np.uint8), board="host", build_dir=tmp_path / "g")
