"""In-place elementwise ops, per-buffer alignment and the checker's exact rule."""
import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.ir import Graph, Node, QParams, Tensor
from codegen.planner import PlanError, check_plan, plan_arena


def _q():
    return QParams(np.array([0.1], np.float32), np.array([0], np.int32))


def _graph(spec, inputs=("in",), outputs=None, sizes=None):
    """spec: [(op, [inputs], output)], every tensor (1, size) int8."""
    sizes = sizes or {}
    g = Graph("g")
    names = set(inputs) | {o for _, _, o in spec}
    for t in sorted(names):
        g.add_tensor(Tensor(t, (1, sizes.get(t, 256)), "int8", _q()))
    g.inputs = list(inputs)
    g.outputs = list(outputs or [spec[-1][2]])
    g.nodes = [Node(op, f"n{i}", list(ins), [o]) for i, (op, ins, o) in enumerate(spec)]
    return g


CHAIN = [("conv2d", ["in"], "a"), ("clamp", ["a"], "b"), ("requantize", ["b"], "c"),
         ("lut", ["c"], "d"), ("conv2d", ["d"], "e"), ("conv2d", ["e"], "out")]


def test_elementwise_chain_runs_in_place_and_halves_the_arena():
    g = _graph(CHAIN)
    plan = plan_arena(g)
    check_plan(g, plan)
    base = plan_arena(g, inplace=False)
    check_plan(g, base)
    assert base.size == base.lower_bound == 512
    assert plan.size == plan.lower_bound == 512  # e and d/out still meet at the convs
    assert [m["op"] for m in plan.to_json()["inplace"]] == ["clamp", "requantize", "lut"]
    assert len({plan.where[t].offset for t in "abcd"}) == 1
    g2 = _graph(CHAIN[:4] + [("conv2d", ["d"], "out")], sizes={"out": 16})
    p2 = plan_arena(g2)
    check_plan(g2, p2)
    assert p2.size == 256 and plan_arena(g2, inplace=False).size == 512


def test_add_in_place_on_a_dying_operand_but_not_on_a_live_one():
    spec = [("conv2d", ["in"], "x"), ("conv2d", ["x"], "y"), ("add", ["x", "y"], "s"),
            ("conv2d", ["s"], "out")]
    g = _graph(spec)
    plan = plan_arena(g)
    check_plan(g, plan)
    assert plan.size == 512 and plan_arena(g, inplace=False).size == 768
    # x is read again later: no in place on x, only on y
    spec2 = spec[:3] + [("add", ["s", "x"], "out")]
    g2 = _graph(spec2)
    p2 = plan_arena(g2)
    check_plan(g2, p2)
    (m,) = [m for m in p2.to_json()["inplace"] if m["output"] == "s"]
    assert m["input"] == "y"


def test_no_in_place_on_a_broadcast_operand_or_a_size_change():
    spec = [("conv2d", ["in"], "x"), ("conv2d", ["in"], "k"), ("add", ["x", "k"], "s"),
            ("conv2d", ["s"], "out")]
    g = _graph(spec, sizes={"k": 1})
    plan = plan_arena(g)
    check_plan(g, plan)
    assert all(m["input"] == "x" for m in plan.to_json()["inplace"])
    g.tensors["k"] = Tensor("k", (1, 256), "int8", _q())
    g.tensors["x"] = Tensor("x", (1, 1), "int8", _q())  # a is the broadcast one now
    plan = plan_arena(g)
    check_plan(g, plan)
    assert plan.to_json()["inplace"] == [] or all(
        m["input"] != "x" for m in plan.to_json()["inplace"])
    g3 = _graph([("conv2d", ["in"], "a"), ("requantize", ["a"], "b"), ("conv2d", ["b"], "out")],
                sizes={"b": 128})
    assert plan_arena(g3).to_json()["inplace"] == []


def _same_offset_plan(g, t_in, t_out, shift=0):
    """Plan without in place, then force t_out onto t_in's bytes (+ shift)."""
    plan = plan_arena(g, inplace=False)
    plan = copy.deepcopy(plan)
    plan.where[t_out].offset = plan.where[t_in].offset + shift
    plan.size = max(plan.size, max(b.offset + b.size for b in plan.blocks if b.external is None))
    return plan


def test_checker_allows_exactly_the_in_place_overlap():
    g = _graph(CHAIN)
    check_plan(g, _same_offset_plan(g, "a", "b"))  # clamp: a dies at step 1
    with pytest.raises(PlanError, match="overlap"):  # shifted: partial overlap
        check_plan(g, _same_offset_plan(g, "a", "b", shift=8))
    with pytest.raises(PlanError, match="overlap"):  # conv2d is not elementwise
        check_plan(g, _same_offset_plan(g, "d", "e"))
    # the input is still read after the step
    g2 = _graph([("conv2d", ["in"], "a"), ("clamp", ["a"], "b"), ("add", ["a", "b"], "out")])
    with pytest.raises(PlanError, match="overlap"):
        check_plan(g2, _same_offset_plan(g2, "a", "b"))
    # add in place on a broadcast b (stride 0) is not safe
    g3 = _graph([("conv2d", ["in"], "a"), ("conv2d", ["in"], "k"), ("add", ["a", "k"], "s"),
                 ("conv2d", ["s"], "out")], sizes={"k": 256, "a": 1, "s": 256})
    g3.tensors["s"] = Tensor("s", (1, 256), "int8", _q())
    with pytest.raises(PlanError, match="overlap"):
        check_plan(g3, _same_offset_plan(g3, "k", "s"))


@st.composite
def elementwise_dags(draw):
    g = Graph("rand")
    width = draw(st.sampled_from([16, 64, 256]))
    g.add_tensor(Tensor("in", (1, width), "int8", _q()))
    g.inputs = ["in"]
    names = ["in"]
    for i in range(draw(st.integers(1, 30))):
        op = draw(st.sampled_from(["conv2d", "clamp", "requantize", "lut", "add", "reshape"]))
        a = draw(st.sampled_from(names))
        ins = [a]
        shape = g.tensors[a].shape
        if op == "add":
            ins.append(draw(st.sampled_from(names)))
            shape = g.tensors[a].shape if g.tensors[ins[1]].shape == shape else (1, width)
            if g.tensors[ins[1]].shape != shape:
                ins[1] = a
        elif op == "conv2d":
            shape = (1, draw(st.sampled_from([16, 64, 256])))
        t = Tensor(f"t{i}", shape, "int8", _q())
        g.add_tensor(t)
        g.nodes.append(Node(op, f"n{i}", ins, [t.name]))
        names.append(t.name)
    g.outputs = [names[-1]]
    return g


@settings(max_examples=200, deadline=None)
@given(elementwise_dags(), st.sampled_from(["user", "arena"]))
def test_random_elementwise_dags_in_place_plans_pass_the_checker(g, io):
    plan = plan_arena(g, io_buffers=io)
    check_plan(g, plan)
    base = plan_arena(g, inplace=False, io_buffers=io)
    assert plan.lower_bound <= base.lower_bound
    assert plan.size >= plan.lower_bound
    for m in plan.to_json()["inplace"]:  # the merged output shares the input's bytes
        assert plan.where[m["input"]].offset == plan.where[m["output"]].offset


def test_alignment_is_per_buffer_and_checked():
    g = _graph([("conv2d", ["in"], "a"), ("clamp", ["a"], "b"), ("maxpool", ["b"], "c"),
                ("requantize", ["c"], "d"), ("conv2d", ["d"], "out")],
               sizes={"a": 100, "b": 100, "c": 20, "d": 20})
    g.nodes[4].attrs["align"] = 16  # e.g. an MVE kernel reading d
    plan = plan_arena(g)
    check_plan(g, plan)
    align = {b.name: b.align for b in plan.blocks}
    assert align["a"] == 8  # conv2d output (and the clamp in place on it)
    assert align["c"] == 16  # d is in place on c, and the last conv asks for 16
    assert all(b.offset % b.align == 0 for b in plan.blocks if b.external is None)
    bad = copy.deepcopy(plan)
    bad.where["a"].offset += 4
    bad.size += 8
    with pytest.raises(PlanError, match="aligned"):
        check_plan(g, bad)
    # int32 tensors: at least their element size even without a conv
    g2 = _graph([("requantize", ["in"], "a"), ("requantize", ["a"], "out")])
    g2.tensors["a"] = Tensor("a", (1, 3), "int32", _q())
    p2 = plan_arena(g2)
    check_plan(g2, p2)
    assert p2.where["a"].align >= 4
