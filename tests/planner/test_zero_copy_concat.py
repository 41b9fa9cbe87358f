"""Zero-copy Concat (codegen/planner/concat_slices.py): producers write straight
into their slice of the concat output.

Random DAGs with concats: every plan passes the independent checker, is never
below its lower bound and never larger than the plan without slices. The
checker rejects a slice one byte off, a slice whose input is read after the
concat and a slice that the kernel would have to requantize. On the host,
models with nested and partly requantizing concats are bit-exact with
onnxruntime (ort) and with the numpy reference (tflite), also when every dead
block is poisoned, with a smaller arena than without zero-copy.
"""
from __future__ import annotations

import copy
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.compiler import compile_model
from codegen.ir import Graph, Node, QParams, Tensor
from codegen.planner import PlanError, check_plan, plan_arena
from codegen.reference import run_graph
from codegen.driver.verify import run_model

from tests.helpers.qdq_builder import QdqBuilder, all_int8_inputs, run_ort, save

OUT_Q = (0.05, 2)


def _q(scale=0.1):
    return QParams(np.array([scale], np.float32), np.array([0], np.int32))


@st.composite
def dags_with_concats(draw):
    n_nodes = draw(st.integers(1, 25))
    g = Graph("rand")
    g.add_tensor(Tensor("in", (1, draw(st.integers(1, 64))), "int8", _q()))
    g.inputs = ["in"]
    names = ["in"]
    for i in range(n_nodes):
        op = draw(st.sampled_from(["add", "conv2d", "concat", "clamp", "reshape"]))
        k = draw(st.integers(1, min(3, len(names)))) if op == "concat" else \
            (draw(st.integers(1, min(2, len(names)))) if op == "add" else 1)
        ins = draw(st.lists(st.sampled_from(names), min_size=k, max_size=k, unique=True))
        q = _q(draw(st.sampled_from([0.1, 0.1, 0.2])))  # mostly the same: zero-copy legal
        attrs = {}
        if op == "concat":
            shape = (1, sum(g.tensors[x].shape[1] for x in ins))
            attrs["axis"] = 1
        elif op in ("clamp", "reshape") or (op == "add" and draw(st.booleans())):
            shape = g.tensors[ins[0]].shape
        else:
            shape = (1, draw(st.integers(1, 4096)))
        g.add_tensor(Tensor(f"t{i}", shape, "int8", q))
        g.nodes.append(Node(op, f"n{i}", list(ins), [f"t{i}"], attrs))
        names.append(f"t{i}")
    g.outputs = [names[-1]]
    return g


@settings(max_examples=300, deadline=None)
@given(dags_with_concats(), st.sampled_from(["user", "arena"]))
def test_concat_slices_pass_the_checker_and_never_cost_bytes(g, io):
    plan = plan_arena(g, io_buffers=io)
    check_plan(g, plan)
    assert plan.size >= plan.lower_bound
    plain = plan_arena(g, io_buffers=io, concat_slices=False)
    assert not plain.to_json()["concat_slices"]
    assert plan.size <= plain.size
    for b in plan.blocks:
        if b.parent is not None:  # a slice: inside its parent, at its recorded offset
            assert b.parent.offset <= b.offset and b.offset + b.size <= b.parent.offset + b.parent.size
            assert b.offset % b.align == 0


def _two_branch_graph(q_b=None, late_reader=False):
    """in -> conv a (96 B), in -> conv b (96 B), concat(a, b) -> c (192 B) -> conv d."""
    g = Graph("g")
    for name, size, q in [("in", 16, _q()), ("a", 96, _q()), ("b", 96, q_b or _q()),
                          ("c", 192, _q()), ("d", 16, _q()), ("e", 16, _q())]:
        g.add_tensor(Tensor(name, (1, size), "int8", q))
    g.inputs, g.outputs = ["in"], ["e" if late_reader else "d"]
    g.nodes = [Node("conv2d", "n0", ["in"], ["a"]), Node("conv2d", "n1", ["in"], ["b"]),
               Node("concat", "n2", ["a", "b"], ["c"], {"axis": 1}),
               Node("conv2d", "n3", ["c"], ["d"])]
    if late_reader:  # b is read again after the concat
        g.nodes.append(Node("add", "n4", ["d", "b"], ["e"]))
    return g


def test_slices_halve_the_peak_and_the_checker_knows_the_exact_place():
    g = _two_branch_graph()
    plan = plan_arena(g)
    check_plan(g, plan)
    assert plan.size == plan.lower_bound == 192  # c, holding a and b ("in" is the caller's)
    assert plan_arena(g, concat_slices=False).size == 96 + 96 + 192  # a, b and c at the concat
    c, a, b = plan.where["c"], plan.where["a"], plan.where["b"]
    assert (a.offset, b.offset) == (c.offset, c.offset + 96)
    assert [s["input"] for s in plan.to_json()["concat_slices"]] == ["a", "b"]
    for shift in (-8, 8):  # one alignment step off: overlaps c where a different input goes
        bad = copy.deepcopy(plan)
        bad.size += 8
        bad.where["b"].offset += shift
        with pytest.raises(PlanError, match="overlap"):
            check_plan(g, bad)


def test_no_slice_for_an_input_read_after_the_concat_or_requantized():
    for g in (_two_branch_graph(late_reader=True), _two_branch_graph(q_b=_q(0.2))):
        plan = plan_arena(g)
        check_plan(g, plan)
        assert [s["input"] for s in plan.to_json()["concat_slices"]] == ["a"]
        # forcing b into its slice anyway is caught by the independent checker
        plan.where["b"].offset = plan.where["c"].offset + 96
        with pytest.raises(PlanError, match="overlap"):
            check_plan(g, plan)


def nested_concat_model(requant=False):
    """x [1,4,3,4] -> Relu a, LeakyRelu b; c = Concat(a, b); d = LeakyRelu(c);
    y = Concat(c, d [, Relu(x) requantized]) along channels (NCHW: contiguous)."""
    b = QdqBuilder("nested_concat")
    x = b.dq("x", 0.04, 3)
    a = b.dq(b.q(b.op("Relu", [x]), *OUT_Q), *OUT_Q)
    lr = b.dq(b.q(b.op("LeakyRelu", [x], alpha=0.3), *OUT_Q), *OUT_Q)
    c = b.dq(b.q(b.op("Concat", [a, lr], axis=1), *OUT_Q), *OUT_Q)
    d = b.dq(b.q(b.op("LeakyRelu", [c], alpha=0.1), *OUT_Q), *OUT_Q)
    parts = [c, d]
    if requant:
        parts.append(b.dq(b.q(b.op("Relu", [x]), 0.03, -100), 0.03, -100))
    b.q(b.op("Concat", parts, axis=1), *OUT_Q, out="y")
    chans = 16 + (4 if requant else 0)
    return b.model("x", (1, 4, 3, 4), "y", (1, chans, 3, 4)), (1, 4, 3, 4)


def _host(c, x, tmp_path, monkeypatch, poison):
    monkeypatch.setenv("TINYAOT_HOST_CFLAGS", f"-DTINYAOT_POISON_BYTE={poison}" if poison else "")
    outs, info = run_model(None, x, board="host", numerics=c.numerics, compiled=c,
                           build_dir=tmp_path / f"gen-{poison}")
    assert info["status"] == [0] * len(x)
    return outs


@pytest.mark.parametrize("numerics", ["ort", "tflite"])
@pytest.mark.parametrize("requant", [False, True])
def test_nested_zero_copy_concat_is_bit_exact_under_poison(numerics, requant, tmp_path, monkeypatch):
    m, shape = nested_concat_model(requant)
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    c = compile_model(path, numerics=numerics)
    slices = c.report["plan"]["concat_slices"]
    assert len(slices) >= 4  # a and b in c, c and d in y: nested
    plain = plan_arena(c.graph, io_buffers="arena", concat_slices=False)
    assert c.plan.size < plain.size
    if numerics == "ort":
        expected = run_ort(path, x)
    else:
        g = c.graph
        expected = np.stack([run_graph(g, numerics, {g.inputs[0]: v}, c.params)[g.outputs[0]]
                             for v in x])
    for poison in (None, "0xA5", "0x5A"):
        outs = _host(c, x, tmp_path, monkeypatch, poison)
        np.testing.assert_array_equal(outs.reshape(expected.shape), expected)
    if requant:  # the requantized input is still copied by the kernel, the others are not
        assert "tinyaot_concat_s8" in c.report["kernels"]
    else:
        assert "tinyaot_concat_s8" not in c.report["kernels"]


def test_a_slice_not_written_by_its_producer_is_caught_by_poison(tmp_path, monkeypatch):
    """Mutation: the concat skips an input (NULL) that the plan did NOT place in
    its slice; under poison the output is wrong, so the bit-exact test above
    would catch an emitter that skipped copies it must make."""
    m, shape = nested_concat_model()
    path = save(m, tmp_path)
    x = all_int8_inputs(shape, 3)
    good = compile_model(path)
    c = compile_model(path)
    plan = plan_arena(c.graph, io_buffers="arena", concat_slices=False)
    from codegen.backend import emit_c
    from codegen.compiler import Compiled
    module = emit_c(c.graph, plan, c.params, c.numerics, c.module.name)
    src = module.source
    first = src.index("_in[")  # the first concat's input pointers: skip its first input
    line_end = src.index("\n", first)
    line = src[first:line_end]
    mutated = re.sub(r"\{ \(ARENA \+ \d+\)", "{ NULL", line, count=1)
    assert mutated != line
    module.source = src[:first] + mutated + src[line_end:]
    bad = Compiled(c.graph, plan, c.params, module, c.numerics, c.report)
    expected = run_ort(path, x)
    ok = _host(good, x, tmp_path / "good", monkeypatch, "0xA5")
    np.testing.assert_array_equal(ok.reshape(expected.shape), expected)
    wrong = _host(bad, x, tmp_path / "bad", monkeypatch, "0xA5")
    assert not np.array_equal(wrong.reshape(expected.shape), expected)
