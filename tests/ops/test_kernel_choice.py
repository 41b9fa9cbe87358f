"""Op.select chooses a conv / FC layer's kernel in one place (codegen/ops/conv2d.py,
fully_connected.py, conv_transpose.py): asked once with the final --optimize, on a node
with no choice made yet or with the other mode's, it leaves on the node exactly the
attributes the compile pipeline (kernel selection, then the --optimize size pass, then
the planner) left there."""
import pytest

from codegen import ops
from codegen.compiler import compile_model

from tests.helpers.env import REPO, shared_model

CHOICE = ("fast_kernel", "int_w8", "f32_w8", "scratch_bytes")
CONV_LIKE = ("conv2d", "fully_connected", "conv_transpose")
MODELS = ["digits_cnn_int8", "conv1d_int8", "decoder_int8", "mbv2_block_int8", "ad01"]


def model_path(name):
    if name == "ad01":
        return shared_model("ad01")[0]
    return REPO / "models" / f"{name}.onnx"


@pytest.mark.parametrize("optimize", ["speed", "size"])
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
@pytest.mark.parametrize("name", MODELS)
def test_select_once_gives_the_pipelines_choice(name, numerics, optimize):
    c = compile_model(model_path(name), numerics=numerics, optimize=optimize)
    other = "size" if optimize == "speed" else "speed"
    nodes = [n for n in c.graph.nodes if n.op in CONV_LIKE]
    assert nodes, name
    kernels = set()
    for n in nodes:
        want = dict(n.attrs)
        kernels.add((want.get("fast_kernel"), want.get("int_w8"), want.get("f32_w8")))
        for k in CHOICE:
            n.attrs.pop(k, None)
        ops.get(n.op).select(c.graph, n, optimize)
        assert n.attrs == want, (n.name, "fresh")
        ops.get(n.op).select(c.graph, n, other)  # a choice already made, then changed
        ops.get(n.op).select(c.graph, n, optimize)
        assert n.attrs == want, (n.name, f"after {other}")
    if optimize == "size" and name != "decoder_int8":  # the size kernels were chosen
        assert any(k[1] or k[2] for k in kernels), kernels
