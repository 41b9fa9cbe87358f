"""planner/staged_weights.py: fast layers read their weights and records from a copy in arena
bytes free at their step, only where that keeps the arena as small; the copy is what the
kernel reads, the outputs stay bit-exact, and on a part with flash wait states the layers'
data stalls go (cycle model, docs/cycle-model.md)."""
from __future__ import annotations

import re

import pytest

from codegen.compiler import compile_model
from codegen.planner import plan_arena
from codegen.planner.arena import staged_name

from tests.helpers.env import REPO, require_arm_toolchain, shared_model

MBV2 = REPO / "models" / "mbv2_block_int8.onnx"
MBV2_GOLDEN = REPO / "models" / "mbv2_block_int8_golden.npz"


def _staged(c):
    return {n.name: c.plan.where[staged_name(n)] for n in c.graph.nodes
            if staged_name(n) in c.plan.where}


def _live_spans(c, step):
    """[(tensor, lo, hi)] of the activations the plan keeps in the arena at `step`, from
    the graph alone: written at or before the step, read at or after it."""
    g, plan = c.graph, c.plan
    first, last = {}, {}
    for s, n in enumerate(g.nodes):
        for t in n.outputs:
            first.setdefault(t, s)
            last[t] = max(last.get(t, s), s)
        for t in n.inputs:
            if t and not g.tensors[t].is_const:
                last[t] = max(last.get(t, s), s)
                first.setdefault(t, -1)  # a graph input
    for t in g.outputs:
        last[t] = len(g.nodes)
    out = []
    for t in first:
        b = plan.where.get(t)
        if b is None or b.external is not None or not first[t] <= step <= last[t]:
            continue
        out.append((t, b.offset, b.offset + g.tensors[t].nbytes))
    return out


def test_staged_only_in_free_arena_bytes():
    """mbv2_block (ort): four layers staged (two integer convs their weights and records,
    two float convs their input table alone: their float weights would not fit), the arena
    as small as without staging (at its lower bound); each staged block overlaps no tensor
    live at its step; the depthwise candidate that is not staged would grow the arena."""
    c = compile_model(MBV2, numerics="ort")
    plain = compile_model(MBV2, numerics="ort", stage_weights=False)
    staged = _staged(c)
    assert sorted(staged) == ["/conv/Conv", "/expand/Conv", "/project/Conv", "/stem/Conv"], \
        sorted(staged)
    floats = {n.name: n for n in c.graph.nodes if n.attrs.get("ort_float")}
    for name in ("/stem/Conv", "/expand/Conv"):  # the table alone: the larger size grows it
        n = floats[name]
        assert n.attrs["staged_bytes"] == 1024 < n.attrs["stage_candidate"][0]
        n.attrs["staged_bytes"] = n.attrs["stage_candidate"][0]
        assert plan_arena(c.graph, io_buffers="arena").size > c.plan.size, name
        n.attrs["staged_bytes"] = 1024
    assert c.plan.size == plain.plan.size == c.plan.lower_bound
    steps = {n.name: s for s, n in enumerate(c.graph.nodes)}
    for name, b in staged.items():
        assert b.offset % 8 == 0 and b.offset + b.size <= c.plan.size
        for t, lo, hi in _live_spans(c, steps[name]):
            assert hi <= b.offset or b.offset + b.size <= lo, (name, t)
    dw = next(n for n in c.graph.nodes if n.name == "/dw/Conv")
    assert dw.attrs["stage_candidate"][0] > 0 and "staged_bytes" not in dw.attrs
    dw.attrs["staged_bytes"] = dw.attrs["stage_candidate"][0]
    assert plan_arena(c.graph, io_buffers="arena").size > c.plan.size


def test_the_checker_sees_staged_blocks():
    """planner/check.py (independent of the planner) refuses a staged block moved onto a
    tensor live at its step, or one smaller than the node asks for."""
    from codegen.planner.check import PlanError, check_plan
    c = compile_model(MBV2, numerics="ort")
    check_plan(c.graph, c.plan)
    steps = {n.name: s for s, n in enumerate(c.graph.nodes)}
    name, b = sorted(_staged(c).items())[0]
    t, lo, _ = _live_spans(c, steps[name])[0]
    keep = b.offset
    b.offset = lo
    with pytest.raises(PlanError, match="staged|tensors"):
        check_plan(c.graph, c.plan)
    b.offset = keep
    b.size -= 8
    with pytest.raises(PlanError, match="staged"):
        check_plan(c.graph, c.plan)


def test_the_kernel_reads_the_copy():
    """The staged layers' calls get the arena copies of their weights, their records'
    struct points at the copy of the records, and both copies are made before the call;
    the other layers read flash."""
    c = compile_model(MBV2, numerics="tflite")
    src = c.module.source
    steps = {n.name: s for s, n in enumerate(c.graph.nodes)}
    staged = _staged(c)
    assert staged
    for name, b in staged.items():
        lid = f"l{steps[name]}"
        copies = re.findall(rf"__builtin_memcpy\(ARENA \+ (\d+), {lid}_(rq|wp), sizeof", src)
        assert sorted(k for _, k in copies) == ["rq", "wp"], (name, copies)
        at = {k: int(o) for o, k in copies}
        assert all(b.offset <= o < b.offset + b.size for o in at.values())
        assert re.search(rf"{lid}_q = {{[^}}]*\.rq = \(const int32_t \*\)\(const void \*\)"
                         rf"\(ARENA \+ {at['rq']}\)", src), name
        call = re.search(rf"^    if \(tinyaot_\w+\(&{lid}_d, &{lid}_q, .*$", src, re.M).group(0)
        assert f"(ARENA + {at['wp']})" in call and f"{lid}_wp" not in call, call
        assert src.index(f"sizeof {lid}_wp") < src.index(call)
    other = [s for n, s in steps.items() if n not in staged]
    assert not any(f"sizeof l{s}_wp" in src for s in other)
    assert c.report["arena_bytes"] == c.plan.size
    assert {la["index"] for la in c.report["layers"] if la.get("staged_bytes")} == \
        {steps[n] for n in staged}


def test_report_says_what_is_staged():
    """tinyaot report: each layer's staged bytes, their sum and count under the arena line;
    a model with none says nothing more."""
    require_arm_toolchain()
    from codegen.driver.report import report_model, report_totals
    c = compile_model(MBV2, numerics="ort")
    r = report_model(MBV2, numerics="ort", compiled=c)
    want = {la["index"]: la["staged_bytes"] for la in c.report["layers"] if la.get("staged_bytes")}
    assert {x["index"]: x["staged_bytes"] for x in r["layers"] if x["staged_bytes"]} == want
    t = r["totals"]
    assert t["staged_bytes"] == sum(want.values()) and t["staged_layers"] == len(want) == 4
    assert f"4 layers read {sum(want.values()):,} B of weights and tables" in report_totals(r)[0]
    plain = report_model(MBV2, numerics="ort",
                         compiled=compile_model(MBV2, numerics="ort", stage_weights=False))
    assert plain["totals"]["staged_bytes"] == 0 and "layers read" not in report_totals(plain)[0]


def test_staged_outputs_stay_exact_on_the_host():
    """mbv2_block's golden vectors (onnxruntime's) through the staged build on host gcc.
    Under tflite numerics the staged shared models (vww01's sixteen layers, kws01's and
    ic01's first convs) are checked against TFLite Micro's outputs on the host
    (tests/end_to_end/test_models_on_host.py) and on qemu-m4 (tests/firmware/)."""
    from codegen.driver.verify import verify_model
    c = compile_model(MBV2, numerics="ort")
    assert _staged(c)
    rep = verify_model(MBV2, MBV2_GOLDEN, board="host", numerics="ort", compiled=c)
    assert rep["mismatches"] == 0 and rep["vectors_passed"] == rep["vectors"] > 0


def test_float_layers_read_the_staged_table():
    """mbv2_block (ort): a float conv with its input table staged reads the table's copy
    (its plan struct points at it) and its float weights from flash; onnxruntime's golden
    vectors stay exact (test_staged_outputs_stay_exact_on_the_host)."""
    c = compile_model(MBV2, numerics="ort")
    steps = {n.name: s for s, n in enumerate(c.graph.nodes)}
    for name in ("/stem/Conv", "/expand/Conv"):
        lid, b = f"l{steps[name]}", c.plan.where[staged_name(c.graph.nodes[steps[name]])]
        src = c.module.source
        off = int(re.search(rf"__builtin_memcpy\(ARENA \+ (\d+), {lid}_xt, sizeof {lid}_xt\);",
                            src).group(1))
        assert b.offset <= off < b.offset + b.size
        pl = re.search(rf"{lid}_pl = {{[^}}]*}}", src).group(0)
        assert f".table = (const float *)(const void *)(ARENA + {off})" in pl, pl
        assert f".weights = {lid}_wp" in pl, pl


@pytest.mark.shared
def test_shared_models_stage_where_the_arena_has_room():
    """kws01: every pointwise and depthwise layer is at the arena's peak, so only the first
    conv (6.4 KB of weights and records, 7.6 KB free at its step) is staged; vww01: the
    eighteen layers with room and at least 16 output pixels, among them the two 6x6
    pointwise layers on the int8 pair kernel (ops/conv2d.py: _pairs_candidate; before, the
    planner gave them column blocks of the few-pixel int8 kernel they did not run, and no
    copy); ic01: three fast convs, a Winograd layer and the three residual adds' tables.
    Arenas unchanged."""
    model, _ = shared_model("kws01")
    c = compile_model(model.with_suffix(".tflite"), numerics="tflite")
    steps = {n.name: s for s, n in enumerate(c.graph.nodes)}
    assert [steps[n] for n in _staged(c)] == [1]
    assert c.plan.size == compile_model(model.with_suffix(".tflite"), numerics="tflite",
                                        stage_weights=False).plan.size
    model, _ = shared_model("vww01")
    c = compile_model(model.with_suffix(".tflite"), numerics="tflite")
    steps = {n.name: s for s, n in enumerate(c.graph.nodes)}
    assert sorted(steps[n] for n in _staged(c)) == [1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                                    14, 15, 16, 18, 20, 22]
    assert c.plan.size == c.plan.lower_bound
    for i in (13, 15):  # the pair kernel reads its weights and records from the copy
        la = c.report["layers"][i]
        assert la["kernel"] == "tinyaot_convolve_1x1_w8_s8" and la["staged_bytes"], la
        call = re.search(rf"tinyaot_convolve_1x1_w8_s8\(&l{i}_d, &l{i}_q, [^;]*;", c.module.source)
        assert call and "ARENA +" in call.group(0), i
        q = re.search(rf"l{i}_q = {{[^}}]*}}", c.module.source).group(0)
        assert "ARENA + " in q, q
    model, _ = shared_model("ic01")  # the first Winograd layer too (its weights: 8.5 KB)
    c = compile_model(model.with_suffix(".tflite"), numerics="tflite")
    kinds = {la["kernel"] for la in c.report["layers"] if la.get("staged_bytes")}
    assert kinds == {"tinyaot_convolve_fast_s8", "tinyaot_convolve_winograd_s8",
                     "tinyaot_add_fast_s8"}, kinds
    assert c.plan.size == c.plan.lower_bound
    adds = [la["index"] for la in c.report["layers"] if la["kernel"] == "tinyaot_add_fast_s8"]
    assert len(adds) == 3
    for i in adds:  # the residual adds read their two tables and output record from the arena
        p = re.search(rf"l{i}_p = {{[^}}]*}}", c.module.source).group(0)
        for f in ("a_lut", "b_lut", "out_rq"):
            assert f".{f} = (const int32_t *)(const void *)(ARENA + " in p, (f, p)
    model, _ = shared_model("vww01")  # ort: the float first conv's table and weights
    c = compile_model(model.with_suffix(".onnx"), numerics="ort")
    first = c.report["layers"][1]
    assert first["kernel"] == "tinyaot_convolve_f32_s8" and first["staged_bytes"] > 1024
    assert "sizeof l1_wp" in c.module.source


@pytest.mark.qemu
@pytest.mark.shared
def test_staging_removes_the_data_stalls_on_the_stm32l4r5():
    """vww01 (tflite) on qemu-m4, priced for the STM32L4R5 (5 wait states, 256-byte data
    cache): with staging the data stalls fall by more than 70 % (1.91 M -> 0.25 M when
    this was written; 1.28 M -> 0.32 M since the depthwise 3x3 passes read a channel
    quad's weights once per call, not once per three outputs, which left staging less to
    remove: the part's cycles -7 %, not -12 %) while the ideal part's cycles grow by less
    than 1 % (the copies)."""
    require_arm_toolchain()
    from codegen.driver.profile import profile_model
    model, _ = shared_model("vww01")
    path = model.with_suffix(".tflite")
    runs = {}
    for stage in (True, False):
        c = compile_model(path, numerics="tflite", stage_weights=stage)
        r = profile_model(path, board="qemu-m4", numerics="tflite", compiled=c, cycles=True,
                          parts=["ideal", "stm32l4r5"])
        runs[stage] = {p["name"]: p for p in r["cycles"]["parts"]}
    on, off = runs[True], runs[False]
    assert on["stm32l4r5"]["data_stall"] < 0.30 * off["stm32l4r5"]["data_stall"]
    assert on["stm32l4r5"]["cycles"] < 0.95 * off["stm32l4r5"]["cycles"]
    assert off["ideal"]["cycles"] < on["ideal"]["cycles"] < 1.01 * off["ideal"]["cycles"]
