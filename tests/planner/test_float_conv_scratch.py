"""planner/float_conv_scratch.py: the float conv's input copy is kept only
where it costs no arena."""
from __future__ import annotations

import numpy as np
import pytest

from codegen.kernels.conv_f32_pack import input_mode, scratch_bytes
from codegen.compiler import compile_model
from codegen.planner import plan_arena
from codegen.driver.verify import load_golden, run_model

from tests.helpers.env import REPO


def _arena_with(g, compact):
    """Arena of g with every float conv's copy on (compact False) or off."""
    for n in g.nodes:
        if n.op == "conv2d" and n.attrs.get("ort_float"):
            if compact:
                n.attrs["f32_compact_input"] = True
            else:
                n.attrs.pop("f32_compact_input", None)
            x, w, y = (g.tensors[t].shape for t in (n.inputs[0], n.inputs[1], n.outputs[0]))
            n.attrs["scratch_bytes"] = scratch_bytes(x, w, y, n.attrs)
    return plan_arena(g, io_buffers="arena").size


@pytest.mark.parametrize("stem", ["mbv2_block_int8", "data_ops_int8", "conv1d_int8",
                                  "digits_cnn_int8"])
def test_chosen_arena_is_the_smaller_of_copy_and_compact(stem):
    c = compile_model(REPO / "models" / f"{stem}.onnx", numerics="ort")
    chosen = c.plan.size
    g = c.graph
    with_copies = _arena_with(g, compact=False)
    all_compact = _arena_with(g, compact=True)
    assert chosen <= min(with_copies, all_compact)
    if stem != "digits_cnn_int8":  # there the copies cost arena: the choice must drop them
        assert chosen < with_copies
        assert any(n.attrs.get("f32_compact_input") for n in c.graph.nodes)


def test_copy_kept_where_it_is_free():
    # digits: its float convs' copies fit under the peak that other layers set
    c = compile_model(REPO / "models" / "digits_cnn_int8.onnx", numerics="ort")
    convs = [n for n in c.graph.nodes if n.op == "conv2d" and n.attrs.get("ort_float")]
    modes = [input_mode(*(c.graph.tensors[t].shape for t in (n.inputs[0], n.outputs[0],
                                                             n.inputs[1])), n.attrs)
             for n in convs]
    assert convs and any(m != 0 for m in modes), modes


def test_compact_layers_stay_exact(tmp_path):
    stem = "mbv2_block_int8"
    inputs, expected = load_golden(REPO / "models" / f"{stem}_golden.npz")
    out, _ = run_model(REPO / "models" / f"{stem}.onnx", inputs, board="host", numerics="ort",
                       build_dir=tmp_path)
    np.testing.assert_array_equal(out.reshape(expected.shape), expected)
