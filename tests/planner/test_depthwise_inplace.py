"""Depthwise convolution in place (codegen/planner/depthwise_inplace.py, a
planner option): the output overwrites the dying input, one input channel at
a time through an in_h * in_w scratch plane
(runtime_c/src/conv/tinyaot_depthwise_conv_inplace_s8.c).

Host builds are bit-exact with onnxruntime (ort) and with the numpy reference
(tflite, TFLite reference kernel semantics), also under poison, over strides,
paddings, dilations, kernel sizes and odd channel counts; the checker accepts
only the exact overlap; on models/mbv2_block_int8.onnx (peak at its depthwise
layer) the arena shrinks.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.planner import PlanError, check_plan
from codegen.reference import run_graph
from codegen.driver.verify import load_golden, run_model

from tests.helpers.env import REPO, shared_model
from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, run_ort, save

KERNEL = "tinyaot_depthwise_conv_inplace_s8"
MBV2 = REPO / "models" / "mbv2_block_int8.onnx"


def dw_model(c, h, w, k, stride, pad, dil, seed=0):
    """x [1,c,h,w] -> 1x1 expand to 4c -> depthwise k x k -> 1x1 project to c:
    the depthwise layer (4c in, 4c out) is the peak, as in a MobileNetV2 block."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("dw")
    x = b.dq("x", 0.05, -3)
    e = 4 * c

    def conv(inp, cin, cout, kk, **attrs):
        wt, s = b.weight(rng.normal(size=(cout, cin, kk, kk)).astype(np.float32) * 0.5)
        bias = b.bias(rng.normal(size=cout).astype(np.float32) * 0.2, s * np.float32(0.05))
        return b.dq(b.q(b.op("Conv", [inp, wt, bias], **attrs), 0.05, -3), 0.05, -3)

    t = conv(x, c, e, 1)
    t = conv(t, 1, e, k, group=e, kernel_shape=[k, k], strides=[stride] * 2, pads=[pad] * 4,
             dilations=[dil] * 2)
    wt, s = b.weight(rng.normal(size=(c, e, 1, 1)).astype(np.float32) * 0.3)
    b.q(b.op("Conv", [t, wt]), 0.08, 5, out="y")
    oh = (h + 2 * pad - dil * (k - 1) - 1) // stride + 1
    ow = (w + 2 * pad - dil * (k - 1) - 1) // stride + 1
    return b.model("x", (1, c, h, w), "y", (1, c, oh, ow)), (1, c, h, w)


def _host(c, x, tmp_path, monkeypatch, poison=None):
    monkeypatch.setenv("TINYAOT_HOST_CFLAGS", f"-DTINYAOT_POISON_BYTE={poison}" if poison else "")
    outs, info = run_model(None, x, board="host", numerics=c.numerics, compiled=c,
                           build_dir=tmp_path / f"gen-{poison}")
    assert info["status"] == [0] * len(x)
    return outs


def _oracle(path, c, x):
    if c.numerics == "ort":
        return run_ort(path, x)
    g = c.graph
    return np.stack([run_graph(g, "tflite", {g.inputs[0]: v}, c.params)[g.outputs[0]] for v in x])


@pytest.mark.parametrize("numerics", ["ort", "tflite"])
@pytest.mark.parametrize("c,h,w,k,stride,pad,dil", [
    (8, 6, 6, 3, 1, 1, 1),   # same size
    (3, 7, 5, 3, 2, 1, 1),   # stride 2: output smaller, odd channels
    (5, 9, 9, 3, 1, 2, 2),   # dilation 2
    (4, 8, 8, 3, 1, 0, 1),   # no padding: output smaller
    (16, 4, 4, 3, 1, 1, 1),
    (6, 9, 7, 3, 2, 2, 2),   # stride 2 and dilation 2, non-square
    (5, 8, 8, 5, 1, 2, 1),   # 5x5 kernel
])
def test_inplace_depthwise_is_bit_exact(numerics, c, h, w, k, stride, pad, dil, tmp_path, monkeypatch):
    m, shape = dw_model(c, h, w, k, stride, pad, dil)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    cc = compile_model(path, numerics=numerics, depthwise_inplace=True)
    kernels = [la["kernel"] for la in cc.module.layers]
    base = compile_model(path, numerics=numerics).plan.size
    used = KERNEL in kernels
    # in place exactly when it shrinks the arena; under ort the two convs
    # around the depthwise run in float (onnxruntime keeps them so), and the
    # float conv kernel's scratch (4 pixel columns of K floats) may set the
    # peak instead (then the planner keeps the ordinary kernel)
    assert used == (cc.plan.size < base)
    assert used == any(m["op"] == "conv2d" for m in cc.report["plan"]["inplace"])
    if numerics == "tflite":
        assert used
    expected = _oracle(path, cc, x)
    for poison in (None, "0xA5"):
        outs = _host(cc, x, tmp_path, monkeypatch, poison)
        np.testing.assert_array_equal(outs.reshape(expected.shape), expected)


def test_output_larger_than_input_stays_out_of_place(tmp_path, monkeypatch):
    m, shape = dw_model(2, 3, 3, 1, 1, 1, 1)  # 1x1 kernel, pad 1: output 5x5 > input 3x3
    path = save(m, tmp_path)
    cc = compile_model(path, numerics="tflite", depthwise_inplace=True)
    assert KERNEL not in [la["kernel"] for la in cc.module.layers]
    assert not cc.report["plan"]["inplace"]
    x = all_int8_inputs(shape, 2)
    np.testing.assert_array_equal(_host(cc, x, tmp_path, monkeypatch).reshape(-1),
                                  _oracle(path, cc, x).reshape(-1))


@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_mbv2_block_arena_shrinks_and_stays_exact(numerics, tmp_path, monkeypatch):
    """Its peak is the depthwise layer (expanded input + output): 3,584 -> 2,656 B."""
    base = compile_model(MBV2, numerics=numerics)
    cc = compile_model(MBV2, numerics=numerics, depthwise_inplace=True)
    assert KERNEL in [la["kernel"] for la in cc.module.layers]
    assert (base.plan.size, cc.plan.size) == (3584, 2656)
    assert cc.plan.size == cc.plan.lower_bound
    inputs, golden = load_golden(REPO / "models" / "mbv2_block_int8_golden.npz")
    expected = golden if numerics == "ort" else _oracle(MBV2, cc, inputs)
    for poison in (None, "0x5A"):
        outs = _host(cc, inputs, tmp_path, monkeypatch, poison)
        np.testing.assert_array_equal(outs.reshape(expected.shape), expected)


def test_checker_allows_only_the_flagged_exact_overlap():
    cc = compile_model(MBV2, numerics="tflite", depthwise_inplace=True)
    g, plan = cc.graph, cc.plan
    check_plan(g, plan)
    node = next(n for n in g.nodes if n.attrs.get("inplace_depthwise"))
    node.attrs["inplace_depthwise"] = False  # an ordinary depthwise kernel may not overlap
    with pytest.raises(PlanError, match="overlap"):
        check_plan(g, plan)
    node.attrs["inplace_depthwise"] = True
    bad = copy.deepcopy(plan)
    bad.size += 64
    out = bad.where[node.outputs[0]]  # the merged block: move only the output
    moved = copy.copy(out)
    moved.offset = out.offset + 8
    bad.where[node.outputs[0]] = moved
    with pytest.raises(PlanError, match="overlap"):
        check_plan(g, bad)


@pytest.mark.shared
@pytest.mark.parametrize("key", ["kws01", "vww01", "sww01"])
def test_shared_models_peak_is_not_at_a_depthwise_layer_alone(key):
    """No shared arena gets smaller (each peak is also reached at a non-depthwise
    step; on vww01 the stride-2 merges would even cost 32 B), so the compiler
    keeps the plain plan and the fast kernels (README, Memory plan)."""
    path, _ = shared_model(key)
    base = compile_model(path, numerics="tflite")
    cc = compile_model(path, numerics="tflite", depthwise_inplace=True)
    assert cc.plan.size == base.plan.size
    assert KERNEL not in [la["kernel"] for la in cc.module.layers]
    assert not any(n.attrs.get("inplace_depthwise") for n in cc.graph.nodes)


@pytest.mark.qemu
def test_cli_flag_verifies_mbv2_block_in_place_on_qemu_m4():
    """`tinyaot verify --depthwise-inplace`: the golden (onnxruntime) outputs,
    bit-exact on the Cortex-M4, with a smaller arena than without the flag."""
    import json
    import subprocess
    import sys

    from tests.helpers.env import require_arm_toolchain
    require_arm_toolchain()
    golden = REPO / "models" / "mbv2_block_int8_golden.npz"

    def verify(*extra):
        p = subprocess.run([sys.executable, "-m", "codegen.cli", "verify", str(MBV2), "--golden",
                            str(golden), "--board", "qemu-m4", "--json", *extra],
                           capture_output=True, text=True, cwd=REPO)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    inplace, plain = verify("--depthwise-inplace"), verify()
    assert inplace["mismatches"] == 0 and inplace["vectors_passed"] == inplace["vectors"] == 16
    assert KERNEL in inplace["kernels"] and KERNEL not in plain["kernels"]
    assert inplace["arena_bytes"] < plain["arena_bytes"]
