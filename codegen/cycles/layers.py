"""Per-layer cycles from a profiling run (TINYAOT_PROFILE stamps seen as MARK lines).

The profiling firmware stores one word per layer into tinyaot_profile_stamps
right after the layer; the plugin records its counts at each of those stores,
so a layer's cycles are the difference between its stamp and the one before
(the first layer's: since the inference began). The hook's few instructions
are charged to the following layer, as in the instruction profile.
"""
from __future__ import annotations


def layer_deltas(marks: dict, n_layers: int, part_names):
    """[(instructions, {part: cycles})] per layer from one inference's marks."""
    prev_ins, prev = 0, {p: 0 for p in part_names}
    out = []
    for i in range(n_layers):
        if i not in marks:
            out.append((None, {p: None for p in part_names}))
            continue
        ins, cyc = marks[i]
        out.append((ins - prev_ins, {p: cyc[p] - prev[p] for p in part_names}))
        prev_ins, prev = ins, cyc
    return out


def cycles_summary(run):
    """The per-inference figures of a CycleRun (its first inference)."""
    inf = run.inferences[0]
    return {
        "core": run.core, "instructions": inf.instructions,
        "estimate": "modelled from documented timings (docs/cycle-model.md), not measured",
        "parts": [{"name": p.name, "title": p.title, "clock_hz": p.clock_hz,
                   "cycles": inf.cycles[p.name], "ms": round(p.ms(inf.cycles[p.name]), 4),
                   "ifetch_stall": inf.ifetch_stall[p.name], "data_stall": inf.data_stall[p.name],
                   "verified_part_data": p.verified}
                  for p in run.parts],
    }


def attach_cycles(result: dict, run):
    """Add `cycles` to a profile/report result and `cycles` to each of its layers."""
    names = [p.name for p in run.parts]
    deltas = layer_deltas(run.marks[0] if run.marks else {}, len(result["layers"]), names)
    for row, (ins, cyc) in zip(result["layers"], deltas):
        row["cycles"] = cyc
        row["instructions_exact"] = ins
    result["cycles"] = cycles_summary(run)
    return result


def merge_into_report(report: dict, profile: dict):
    """`report --cycles`: the profile's per-layer cycles into the report's layers."""
    by_index = {x["index"]: x for x in profile["layers"]}
    for row in report["layers"]:
        src = by_index.get(row["index"], {})
        row["cycles"] = src.get("cycles")
        row["instructions"] = src.get("instructions_exact")
    report["totals"]["cycles"] = profile["cycles"]
    return report
