"""32-bit limits: checked before any allocation or C, clear one-line messages."""
from __future__ import annotations

import resource
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from codegen.compiler import compile_model
from codegen.errors import TinyAotError
from codegen.frontend.limits import LIMIT, check_plan_limits
from tests.helpers.env import REPO


def fc_model(path, feats=8, units=4, extra_inits=(), outputs=1, xshape=None):
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "z"),
             numpy_helper.from_array(np.ones((feats, units), np.int8), "w"),
             numpy_helper.from_array(np.array(0.01, np.float32), "sw"),
             numpy_helper.from_array(np.array(0, np.int8), "zw"), *extra_inits]
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xf"], name="dq_x"),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wf"], name="dq_w"),
             helper.make_node("MatMul", ["xf", "wf"], ["yf"], name="mm"),
             helper.make_node("QuantizeLinear", ["yf", "s", "z"], ["y"], name="q_y")]
    outs = [helper.make_tensor_value_info("y", TensorProto.INT8, None)]
    if outputs == 2:
        nodes.append(helper.make_node("Identity", ["y"], ["y2"], name="copy_y"))
        outs.append(helper.make_tensor_value_info("y2", TensorProto.INT8, None))
    x = helper.make_tensor_value_info("x", TensorProto.INT8, xshape or [1, feats])
    m = helper.make_model(helper.make_graph(nodes, "lim", [x], outs, inits),
                          opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, path)
    return path


def header_only(name, dims, dtype=TensorProto.INT8):
    """An initializer whose header claims `dims` but that carries no data."""
    t = TensorProto()
    t.name = name
    t.data_type = dtype
    t.dims.extend(dims)
    return t


def _compile_small_memory(path):
    """Compile with at most ~1 GiB of extra address space: a check that comes
    after an allocation of the claimed size would hit MemoryError instead."""
    old = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as f:
        vm = next(int(x.split()[1]) * 1024 for x in f if x.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), old[1]))
    try:
        return compile_model(path, numerics="tflite")
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old)


def test_ok_model_compiles(tmp_path):
    assert _compile_small_memory(fc_model(tmp_path / "ok.onnx")).report["arena_bytes"] >= 0


@pytest.mark.parametrize("dims,needle", [
    ([2**20, 2**20], "over the 32-bit limit"),    # 1 TiB claimed by the header
    ([2**31], "over the 32-bit limit"),
    ([-4, 2], "negative dimension"),
])
def test_huge_or_negative_initializer_header(tmp_path, dims, needle):
    path = fc_model(tmp_path / "m.onnx", extra_inits=[header_only("big", dims)])
    with pytest.raises(TinyAotError, match=needle) as e:
        _compile_small_memory(path)
    assert "tensor 'big'" in str(e.value) and "\n" not in str(e.value)


def test_constants_total_over_the_limit(tmp_path):
    inits = [header_only(f"c{i}", [1 << 30]) for i in range(3)]  # 3 x 1 GiB, none over alone
    path = fc_model(tmp_path / "m.onnx", extra_inits=inits)
    with pytest.raises(TinyAotError, match="constants total .* over the 32-bit limit"):
        _compile_small_memory(path)


def test_raw_data_shorter_than_dims(tmp_path):
    t = numpy_helper.from_array(np.ones(16, np.int8), "short")
    del t.dims[:]
    t.dims.extend([64])
    path = fc_model(tmp_path / "m.onnx", extra_inits=[t])
    with pytest.raises(TinyAotError, match="needs 64 bytes of data, the file has 16") as e:
        _compile_small_memory(path)
    assert "tensor 'short'" in str(e.value)


def test_huge_input_shape(tmp_path):
    path = fc_model(tmp_path / "m.onnx", xshape=[65536, 65536, 8])
    with pytest.raises(TinyAotError, match="over the 32-bit limit"):
        _compile_small_memory(path)


def test_huge_intermediate_from_input_shape_option(tmp_path):
    # the file is fine; --input-shape makes the MatMul output 2**33 bytes
    path = fc_model(tmp_path / "m.onnx")
    with pytest.raises(TinyAotError, match="over the 32-bit limit"):
        compile_model(path, numerics="tflite", input_shapes={"x": [2**31, 8]})


def test_two_outputs_pass_the_limits(tmp_path):
    # several outputs are each an end of the API (backend/io_api.py), no longer refused
    path = fc_model(tmp_path / "m.onnx", outputs=2)
    c = compile_model(path, numerics="tflite")
    assert len(c.graph.outputs) == 2
    assert "int8_t *output0, int8_t *output1" in c.module.header


def test_plan_limits():
    ok = SimpleNamespace(size=1024, blocks=[SimpleNamespace(name="t", offset=0, size=1024)])
    check_plan_limits(ok, "m.onnx")
    with pytest.raises(TinyAotError, match="arena needs"):
        check_plan_limits(SimpleNamespace(size=LIMIT + 1, blocks=[]), "m.onnx")
    far = SimpleNamespace(size=1024, blocks=[SimpleNamespace(name="t", offset=LIMIT - 4, size=8)])
    with pytest.raises(TinyAotError, match="tensor 't'"):
        check_plan_limits(far, "m.onnx")


def test_cli_exit_2_and_nothing_written(tmp_path):
    path = fc_model(tmp_path / "m.onnx", extra_inits=[header_only("big", [2**33])])
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "codegen.cli", "compile", str(path), "-o", str(out),
                        "--numerics", "tflite"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "32-bit limit" in p.stderr
    assert not out.exists()
