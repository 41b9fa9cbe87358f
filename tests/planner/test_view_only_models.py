"""Models that are only zero-copy views (input -> Reshape -> output, Q(DQ(x))
with equal parameters): no kernel writes the output, so the generated code
copies the input's bytes into it. Host C == onnxruntime, both I/O modes."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from codegen.compiler import compile_model
from codegen.driver.verify import run_model

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, run_ort, save
from tests.helpers.qop_builder import all_inputs


def reshape_only(dtype=TensorProto.INT8):
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], "alias_only",
        [helper.make_tensor_value_info("x", dtype, [1, 2, 3, 4])],
        [helper.make_tensor_value_info("y", dtype, [6, 4])],
        [numpy_helper.from_array(np.array([6, 4], np.int64), "shape")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def qdq_views():
    """DQ -> Reshape -> Flatten -> Q with the input's parameters (a Q(DQ) round trip)."""
    b = QdqBuilder("alias_qdq")
    x = b.dq("x", 0.05, 3)
    r = b.op("Reshape", [x, b.const_int([1, 6, 4], np.int64)])
    f = b.op("Flatten", [r], axis=1)
    b.q(f, 0.05, 3, out="y")
    return b.model("x", (1, 2, 3, 4), "y", (1, 24))


@pytest.mark.parametrize("case", ["reshape_int8", "reshape_uint8", "qdq"])
@pytest.mark.parametrize("io_buffers", ["user", "arena"])
def test_alias_only_model_writes_its_output(case, io_buffers, tmp_path):
    if case == "qdq":
        m, dtype = qdq_views(), np.int8
    else:
        dtype = np.uint8 if case == "reshape_uint8" else np.int8
        m = reshape_only(TensorProto.UINT8 if dtype == np.uint8 else TensorProto.INT8)
    path = save(m, tmp_path)
    c = compile_model(path, io_buffers=io_buffers)
    assert all(n.op in ("reshape", "transpose", "reinterpret", "sign_flip") for n in c.graph.nodes)
    x = all_inputs((1, 2, 3, 4), 3, dtype) if dtype == np.uint8 else all_int8_inputs((1, 2, 3, 4), 3)
    outs, info = run_model(path, x, board="host", compiled=c, build_dir=tmp_path / "gen")
    assert info["status"] == [0] * len(x)
    want = run_ort(path, x)
    np.testing.assert_array_equal(outs.view(want.dtype).reshape(want.shape), want)
    np.testing.assert_array_equal(outs.view(dtype).reshape(len(x), -1), x.reshape(len(x), -1))


def test_output_written_even_when_caller_buffer_is_dirty(tmp_path):
    """The cffi call with an output buffer full of 0x55: every byte is replaced."""
    from cffi import FFI

    from codegen.driver.firmware import build_generated
    from codegen.compiler import write_outputs

    path = save(reshape_only(), tmp_path)
    c = compile_model(path, io_buffers="user")  # the caller's buffers: _run must copy in -> out
    assert "__builtin_memmove(output, input" in c.module.source
    out = tmp_path / "gen"
    write_outputs(c, out)
    so = build_generated(str(out), "host", harness=False)
    ffi = FFI()
    ffi.cdef(f"int {c.module.name}_run(const int8_t *input, int8_t *output);")
    lib = ffi.dlopen(str(so))
    x = np.arange(-12, 12, dtype=np.int8)
    y = np.full(24, 0x55, np.int8)
    assert getattr(lib, f"{c.module.name}_run")(ffi.from_buffer("int8_t[]", x),
                                                 ffi.from_buffer("int8_t[]", y)) == 0
    np.testing.assert_array_equal(y, x)
    # the header states the (absent) quantization as scale 1, zero point 0
    assert "_OUTPUT_ZERO_POINT (0)" in c.module.header
