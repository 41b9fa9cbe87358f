"""verify / validate: telling a reference that saturates from a layer that is wrong.

onnxruntime on x86-64 without VNNI sums uint8 x int8 products in int16 pairs with
saturation (numerics/u8s8_pairs.py); tinyaot's `ort` numerics sums exactly, as onnxruntime
does on VNNI CPUs and on Arm. Golden outputs made on such a machine (and onnxruntime's own
tensors when `validate` runs on one) then differ from tinyaot's for the inputs where a pair
overflows. A difference is accepted only when all of this holds for the input:

  - the reference does saturate on it: the exact run's layer inputs make some pair of
    some uint8 x int8 layer leave int16 (reference/x86_saturation.py);
  - the saturating emulation of onnxruntime reproduces the reference exactly;
  - tinyaot's output equals the exact integer computation (the `ort` oracle) exactly.

Everything else is compared as before, bit for bit.
"""
from __future__ import annotations

import numpy as np

from ..reference.run import run_graph
from ..reference.x86_saturation import pair_layers, run_graph_x86, saturation_events

DOC = "docs/numerics.md#when-onnxruntime-saturates"


def _ir_input(g, x):
    t = g.tensors[g.inputs[0]]
    return {g.inputs[0]: np.asarray(x).view(np.dtype(t.dtype)).reshape(t.shape)}


def _as_compared(y):
    """An output row as compared: a float32 one as its bits, an integer one as integers."""
    y = np.asarray(y).reshape(-1)
    return y.view(np.uint32).astype(np.int64) if y.dtype == np.float32 else y.astype(np.int64)


def explain_vectors(c, per, outs, expected, vectors):
    """For the golden vectors `vectors` that differ from tinyaot's outputs: which of them
    differ only because the reference saturates (see module doc), every graph output
    compared. per: one (n, ...) array per graph input; outs / expected: one (n, ...)
    array per graph output (tinyaot's, the golden's). A float input end (float32 rows) is
    quantized as onnxruntime's QuantizeLinear does, and at a float output end the integer
    results are dequantized as its DequantizeLinear does, float32 then compared as bits.
    Returns None when none does, else {"vectors", "layer", "op", "node", "pairs",
    "golden_mismatches"}."""
    from ..numerics.quant import dequantize_end, quantize_end
    g, params = c.graph, c.params
    if not pair_layers(g, params):
        return None

    def ir_in(v):
        feeds = {}
        for name, rows in zip(g.inputs, per):
            t = g.tensors[name]
            x = np.asarray(rows[v])
            if x.dtype == np.float32:  # a float end: the integers its QuantizeLinear makes
                s, zp = t.q.scalar()
                x = quantize_end("ort", x, s, zp, t.dtype)
            feeds[name] = np.asarray(x).view(np.dtype(t.dtype)).reshape(t.shape)
        return feeds

    def as_out(y, name, like):
        if np.asarray(like).dtype == np.float32:  # a float end: after its DequantizeLinear
            s, zp = g.tensors[name].q.scalar()
            y = dequantize_end(y, s, zp)
        return _as_compared(y)

    explained, first, pairs, raw = [], None, 0, 0
    for v in vectors:
        ins = ir_in(v)
        exact = run_graph(g, "ort", ins, params)
        events = saturation_events(g, params, exact)
        if not events:
            continue
        x86, _ = run_graph_x86(g, ins, params)
        ok, diff = True, 0
        for name, got_k, want_k in zip(g.outputs, outs, expected):
            got, want = _as_compared(got_k[v]), _as_compared(want_k[v])
            ok &= (np.array_equal(as_out(x86[name], name, want_k[v]), want)
                   and np.array_equal(as_out(exact[name], name, got_k[v]), got))
            diff += int(np.count_nonzero(got != want))
        if ok:
            explained.append(int(v))
            pairs += sum(e.pairs for e in events)
            raw += diff
            if first is None or events[0].layer < first.layer:
                first = events[0]
    if not explained:
        return None
    return {"vectors": explained, "layer": first.layer, "op": g.nodes[first.layer].op,
            "node": first.node, "pairs": pairs, "golden_mismatches": raw}


def saturation_line(s, what):
    """The one line verify prints."""
    return (f"note         {len(s['vectors'])} vector(s) differ from {what} "
            f"({s['golden_mismatches']} elements) only because onnxruntime saturates int16 "
            f"pair sums there (x86 without VNNI; first at layer {s['layer']}, {s['op']} "
            f"'{s['node'][:40]}'): checked against the exact integer computation instead, "
            f"bit-exact ({DOC})")


def explain_layers(model, per, rows, taps, runs, as_logical, g):
    """validate: the rows compared with onnxruntime's tensors that differ only because
    onnxruntime saturates (see module doc) are compared with the exact integer
    computation instead. Returns the summary dict, or None. `rows` are validate's layer
    rows (updated in place), `taps` the TapRun, `runs` tinyaot's traces."""
    from ..compiler import compile_model
    suspects = [r for r in rows if r["reference"] == "onnxruntime" and r["mismatches"]]
    if not suspects:
        return None
    fresh = compile_model(model, numerics="ort")  # the reference never sees the compiled graph
    fg, params = fresh.graph, fresh.params
    if not pair_layers(fg, params):
        return None
    exact, x86, events = [], [], []
    for x in per:
        ins = _ir_input(fg, x)
        exact.append(run_graph(fg, "ort", ins, params))
        env, ev = run_graph_x86(fg, ins, params)
        x86.append(env)
        events.append(ev)
    if not any(events):
        return None
    changed = []
    for r in suspects:
        t, i = r["tensor"], r["index"]
        if any(t not in e for e in exact):
            continue
        ok = True
        for v, run in enumerate(runs):
            got = as_logical(g.tensors[t], run[i]).astype(np.int64)
            ref = np.asarray(taps.values[v][t]).astype(np.int64)
            if np.array_equal(got.reshape(-1), ref.reshape(-1)):
                continue
            ex = exact[v][t].astype(np.int64).reshape(-1)
            em = x86[v][t].astype(np.int64).reshape(-1)
            if not (np.array_equal(em, ref.reshape(-1)) and np.array_equal(got.reshape(-1), ex)
                    and not np.array_equal(em, ex)):
                ok = False
                break
        if ok:
            changed.append(r)
            r["reference"] = "oracle"
            r["reference_note"] = "onnxruntime saturates int16 pairs (x86 without VNNI): exact sums"
            r.update(max_abs_diff=0, mismatches=0, first_mismatch=None)
    if not changed:
        return None
    first = min((e[0] for e in events if e), key=lambda e: e.layer)
    return {"layers": [r["index"] for r in changed], "inputs": sum(1 for e in events if e),
            "node": first.node, "op": fg.nodes[first.layer].op}
