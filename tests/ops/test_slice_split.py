"""Slice and Split (exact copies): on an integer tensor, on a DequantizeLinear
output, and as DQ -> Slice/Split -> Q (equal parameters: a copy; different:
copy + requantize); negative indices, clamping, steps != 1 (negative too);
Split by input (opset 13+), attribute (< 13), equal parts and num_outputs
(opset 18); NCHW models whose internal layout is NHWC (after a conv), so the
kernel sees physical strides. Generated C on the host is bit-exact with
onnxruntime (ort) and with the numpy reference (tflite), which for a pure
copy is the input itself indexed by numpy."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from codegen.compiler import compile_model
from codegen.errors import TinyAotError

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, host_run_checked, run_ort, save

Q = (0.05, 3)


def host_run(path, x, numerics, tmp_path, kernel="tinyaot_slice_s8"):
    return host_run_checked(path, x, numerics, tmp_path, kernel)


def _front(b, c, conv, rng):
    """x -> DQ (and a 1x1 conv + QDQ, which makes the internal layout NHWC)."""
    x = b.dq("x", *Q)
    if conv:
        w, _ = b.weight(rng.normal(size=(c, c, 1, 1)).astype(np.float32) * 0.4)
        x = b.dq(b.q(b.op("Conv", [x, w]), *Q), *Q)
    return x


def slice_model(shape, starts, ends, axes, steps, conv=False, out_q=Q, opset=17):
    rng = np.random.default_rng(0)
    b = QdqBuilder("slice")
    x = _front(b, shape[1], conv, rng)
    ins = [x, b.const_int(starts, np.int64), b.const_int(ends, np.int64)]
    ins.append(b.const_int(axes, np.int64) if axes is not None else "")
    if steps is not None:
        ins.append(b.const_int(steps, np.int64))
    y = b.op("Slice", ins)
    b.q(y, *out_q, out="y")
    ref = np.zeros(shape, np.float32)
    idx = [slice(None)] * len(shape)
    for i, a in enumerate(axes if axes is not None else range(len(starts))):
        idx[a] = slice(starts[i], ends[i], steps[i] if steps is not None else 1)
    oshape = ref[tuple(idx)].shape  # numpy's slicing follows the same clamping rules
    return b.model("x", shape, "y", oshape, opset=opset), tuple(idx)


SLICES = [  # shape, starts, ends, axes, steps, conv
    ((1, 3, 5, 6), [1], [3], [1], None, False),                    # channel axis
    ((1, 5, 6, 7), [1, -4], [4, 100], [1, 3], [2, 1], True),       # C stride 2 in NHWC, clamp
    ((1, 7, 4, 9), [-1, 8], [-100, 0], [1, 3], [-2, -3], True),     # negative steps
    ((1, 1, 8, 5), [6, 1], [1, -1], [2, 3], [-1, 2], False),
    ((1, 3, 4, 4), [0, 0, 1, 1], [1, 3, 3, 4], None, None, True),  # axes omitted
    ((2, 12), [3], [11], [-1], [4], False),                        # 2-D, negative axis
]


@pytest.mark.parametrize("shape,starts,ends,axes,steps,conv", SLICES)
def test_slice_qdq_copy_bit_exact_both_numerics(shape, starts, ends, axes, steps, conv, tmp_path):
    m, idx = slice_model(shape, starts, ends, axes, steps, conv)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, c = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    if conv:  # the conv's output is stored NHWC: the slice reads physical strides
        assert c.graph.tensors[[n for n in c.graph.nodes if n.op == "slice"][0].inputs[0]].perm
    else:  # a pure copy: exactly numpy's slice of the input
        np.testing.assert_array_equal(outs, x[(slice(None),) + idx])
    outs_t, _ = host_run(path, x, "tflite", tmp_path / "t")
    if not conv:
        np.testing.assert_array_equal(outs_t, x[(slice(None),) + idx])


def test_slice_requantize_ort(tmp_path):
    m, _ = slice_model((1, 5, 4, 6), [1, 1], [5, 6], [1, 3], [1, 2], conv=True, out_q=(0.08, -7))
    path = save(m, tmp_path)
    x = all_int8_inputs((1, 5, 4, 6), 3)
    outs, c = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    assert "tinyaot_requantize_s8" in c.report["kernels"]


def int_model(op_nodes, inits, shape, oshape, opset):
    g = helper.make_graph(op_nodes, "intslice",
                          [helper.make_tensor_value_info("x", TensorProto.INT8, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, list(oshape))],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


@pytest.mark.parametrize("opset", [10, 13])
def test_slice_directly_on_integer_tensor(opset, tmp_path):
    from onnx import numpy_helper
    inits = [numpy_helper.from_array(np.asarray(v, np.int64), k) for k, v in
             (("st", [1, -3]), ("en", [3, 1000]), ("ax", [1, 2]))]
    inits += [numpy_helper.from_array(np.float32(0.05), "s"),
              numpy_helper.from_array(np.int8(3), "z")]
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax"], ["ys"]),  # on the int8 tensor
             helper.make_node("DequantizeLinear", ["ys", "s", "z"], ["f"]),
             helper.make_node("QuantizeLinear", ["f", "s", "z"], ["y"])]
    m = int_model(nodes, inits, (1, 4, 5), (1, 2, 3), opset)
    path = save(m, tmp_path)
    x = all_int8_inputs((1, 4, 5), 3)
    outs, _ = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    np.testing.assert_array_equal(outs, x[:, :, 1:3, -3:])


def split_concat_model(shape, axis, n, split=None, opset=17, attr=False, num_outputs=False,
                       conv=False, out_qs=None):
    """DQ -> Split -> (Q -> DQ per piece) -> Concat of the pieces in reverse -> Q."""
    rng = np.random.default_rng(1)
    b = QdqBuilder("split")
    x = _front(b, shape[1], conv, rng)
    outs = [f"piece{j}" for j in range(n)]
    ins = [x]
    kw = {"axis": axis}
    if split is not None and not attr:
        ins.append(b.const_int(split, np.int64))
    elif split is not None:
        kw["split"] = list(split)
    if num_outputs:
        kw["num_outputs"] = n
    b.nodes.append(helper.make_node("Split", ins, outs, name="the_split", **kw))
    out_qs = out_qs or [Q] * n
    parts = [b.dq(b.q(o, *q), *Q) for o, q in zip(outs, out_qs)]
    b.q(b.op("Concat", parts[::-1], axis=axis), *Q, out="y")
    return b.model("x", shape, "y", shape, opset=opset)


SPLITS = [  # shape, axis, n, split, opset, attr, num_outputs, conv
    ((1, 6, 3, 4), 1, 2, None, 17, False, False, False),           # equal halves
    ((1, 7, 3, 5), 1, 3, [2, 4, 1], 17, False, False, True),       # split input, NHWC channels
    ((1, 5, 4, 6), 3, 2, [1, 5], 11, True, False, False),          # attribute (opset < 13)
    ((1, 3, 7, 2), 2, 3, None, 18, False, True, False),            # num_outputs: 3, 3, 1
    ((1, 1, 5, 5), -1, 5, None, 13, False, False, True),
]


@pytest.mark.parametrize("shape,axis,n,split,opset,attr,num_outputs,conv", SPLITS)
def test_split_bit_exact_both_numerics(shape, axis, n, split, opset, attr, num_outputs, conv,
                                       tmp_path):
    m = split_concat_model(shape, axis, n, split, opset, attr, num_outputs, conv)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    outs, c = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    assert sum(n_.op == "slice" for n_ in c.graph.nodes) == n
    if not conv:  # reversing the pieces is a pure copy
        ax = axis % len(shape)
        sizes = split or ([-(-shape[ax] // n)] * (n - 1) + [shape[ax] - (n - 1) * -(-shape[ax] // n)]
                          if num_outputs else [shape[ax] // n] * n)
        pieces = np.split(x, np.cumsum(sizes)[:-1], axis=ax + 1)
        np.testing.assert_array_equal(outs, np.concatenate(pieces[::-1], axis=ax + 1))
    host_run(path, x, "tflite", tmp_path / "t")


def test_split_requantize_one_piece_ort(tmp_path):
    m = split_concat_model((1, 4, 3, 3), 1, 2, conv=True, out_qs=[(0.09, 5), Q])
    path = save(m, tmp_path)
    x = all_int8_inputs((1, 4, 3, 3), 3)
    outs, _ = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))


@pytest.mark.parametrize("kind", ["step0", "badsplit"])
def test_invalid_slice_split_is_a_clean_error(kind, tmp_path):
    if kind == "step0":
        b = QdqBuilder("bad")
        x = b.dq("x", *Q)
        ins = [x, b.const_int([0], np.int64), b.const_int([2], np.int64),
               b.const_int([1], np.int64), b.const_int([0], np.int64)]
        b.q(b.op("Slice", ins), *Q, out="y")
        g = helper.make_graph(b.nodes, "bad",
                              [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 3, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)],
                              b.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        node = b.nodes[1].name
    else:
        m = split_concat_model((1, 6, 3, 4), 1, 2, [2, 2])
        m.graph.output[0].type.tensor_type.ClearField("shape")
        node = "the_split"
    with pytest.raises(TinyAotError) as e:
        compile_model(save(m, tmp_path))
    assert node in str(e.value) and "m.onnx" in str(e.value)


def test_split_directly_on_integer_tensor(tmp_path):
    """int8 graph input -> Split (no DequantizeLinear in front) -> DQ -> Concat of
    the pieces swapped -> Q."""
    from onnx import numpy_helper
    inits = [numpy_helper.from_array(np.float32(0.05), "s"), numpy_helper.from_array(np.int8(3), "z"),
             numpy_helper.from_array(np.asarray([1, 4], np.int64), "sp")]
    nodes = [helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=2),
             helper.make_node("DequantizeLinear", ["a", "s", "z"], ["fa"]),
             helper.make_node("DequantizeLinear", ["b", "s", "z"], ["fb"]),
             helper.make_node("Concat", ["fb", "fa"], ["f"], axis=2),
             helper.make_node("QuantizeLinear", ["f", "s", "z"], ["y"])]
    m = int_model(nodes, inits, (1, 3, 5, 2), (1, 3, 5, 2), 13)
    path = save(m, tmp_path)
    x = all_int8_inputs((1, 3, 5, 2), 3)
    outs, _ = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    np.testing.assert_array_equal(outs, np.concatenate([x[:, :, :, 1:], x[:, :, :, :1]], axis=3))


@pytest.mark.parametrize("qdq_between", [False, True])
def test_slice_of_a_slice_is_one_copy(qdq_between, tmp_path):
    """x[:, 1:6, ::2, ::-1] as three Slice nodes (as torch exports it), with or
    without Q -> DQ between them: one slice of x, bit-exact with onnxruntime."""
    b = QdqBuilder("chain")
    y = _front(b, 6, True, np.random.default_rng(2))
    for st, en, ax, sp in (([1], [6], [1], [1]), ([0], [100], [2], [2]), ([-1], [-100], [3], [-1])):
        y = b.op("Slice", [y] + [b.const_int(v, np.int64) for v in (st, en, ax, sp)])
        if qdq_between:
            y = b.dq(b.q(y, *Q), *Q)
    b.q(y, *Q, out="y")
    m = b.model("x", (1, 6, 5, 4), "y", (1, 5, 3, 4))
    path = save(m, tmp_path)
    x = all_int8_inputs((1, 6, 5, 4), 3)
    outs, c = host_run(path, x, "ort", tmp_path)
    np.testing.assert_array_equal(outs, run_ort(path, x).reshape(outs.shape))
    slices = [n for n in c.graph.nodes if n.op == "slice"]
    assert len(slices) == 1 and slices[0].attrs["steps"] == (1, 1, 2, -1)
    assert slices[0].attrs["starts"] == (0, 1, 0, 3)
