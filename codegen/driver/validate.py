"""Layer-by-layer validation: every intermediate tensor of the generated C
against the reference (onnxruntime's own tensors for --numerics ort, see
ort_taps.py, the numpy oracle where ORT has none; the numpy oracle of
TFLite Micro's kernels for tflite).

The model is emitted with debug hooks (TINYAOT_TRACE after every layer); a
host build routes the hook to a Python callback through cffi, a firmware
build prints the bytes over semihosting. The reference never sees the
compiled graph, so a fault introduced while compiling (a wrong weight, a
wrong multiplier) shows up at the layer that has it.
"""
from __future__ import annotations

import contextlib
import re
import shutil

import numpy as np

from ..backend import emit_c
from ..compiler import Compiled, compile_model
from ..errors import TinyAotError
from ..targets.boards import board_or_error
from .firmware import (DEBUG_C_DIR, Variant, as_records, build_compiled, build_host_library,
                       private_dir)


def load_inputs(path, key="inputs"):
    """The array `key` of an .npz (the first graph input's vectors): int8 / uint8
    (quantized) or float32 (a float input of the model)."""
    return load_input_arrays(path, 1, key)[0]


def load_input_arrays(path, n_inputs, key="inputs"):
    """One array per graph input: key, key1, ... (driver/golden_keys.py)."""
    import os
    from .golden_keys import golden_inputs, open_golden
    if not os.path.exists(str(path)):
        raise TinyAotError("no such inputs file", model=str(path))
    try:
        data = open_golden(path)
    except TinyAotError:
        raise TinyAotError("not an .npz file", model=str(path)) from None
    if key not in data:
        raise TinyAotError(f"no '{key}' array (has: {', '.join(sorted(data))})", model=str(path))
    return golden_inputs(data, path, n_inputs, key)


def with_hooks(c: Compiled) -> Compiled:
    """The same compiled model, re-emitted with TINYAOT_TRACE/PROFILE hooks."""
    module = emit_c(c.graph, c.plan, c.params, c.numerics, c.module.name, hooks=True,
                    optimize=c.report.get("optimize", "speed"), io=c.options.get("io", "model"))
    return Compiled(c.graph, c.plan, c.params, module, c.numerics, c.report, c.options)


@contextlib.contextmanager
def _no_progress(description, total):
    yield _no_tick


def _per_input(c, inputs, model):
    """The integer vectors of every graph input, per input vector: [(x0, x1, ...), ...].
    inputs: one array per graph input (or the one array of a one-input model); a float
    array at a float end is quantized as the numerics' reference quantizes it
    (numerics/quant.py: quantize_end)."""
    from ..numerics.quant import quantize_end
    from .golden_check import check_end_inputs
    g = c.graph
    arrays = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
    if len(arrays) != len(g.inputs):
        raise TinyAotError(f"the model has {len(g.inputs)} input(s), {len(arrays)} given",
                           model=str(model))
    din, _ = g.declared_ends()
    per_end = []
    for name, d, x in zip(g.inputs, din, arrays):
        t = g.tensors[name]
        x = np.asarray(x)
        # dtype, shape and layout (NHWC for NCHW), one line before anything runs
        s, zp = t.q.scalar() if t.q is not None else (1.0, 0)
        io = {"name": d.name, "dtype": "float32" if d.is_float else str(t.dtype),
              "qtype": str(t.dtype), "shape": [int(v) for v in t.shape], "scale": float(s),
              "zero_point": int(zp)}
        check_end_inputs(x, io, model, "inputs" if len(per_end) == 0 else f"inputs{len(per_end)}")
        if x.dtype == np.float32 and d.is_float:
            s, zp = t.q.scalar()
            x = quantize_end(c.numerics, x, s, zp, t.dtype)
        if x.dtype != np.dtype(t.dtype):
            raise TinyAotError(f"the model's input is {'float32 or ' if d.is_float else ''}"
                               f"{t.dtype}, the inputs are {x.dtype}", model=str(model),
                               tensor=d.name)
        per = x.reshape(len(x), -1) if x.ndim > 1 else x.reshape(1, -1)
        if per.shape[1] != t.size:
            raise TinyAotError(f"each input must have {t.size} values {list(t.shape)}, "
                               f"got {per.shape[1]}", model=str(model), tensor=d.name)
        per_end.append(per)
    if len({len(p) for p in per_end}) > 1:
        raise TinyAotError("every input needs the same number of vectors", model=str(model))
    return list(zip(*per_end))


def _no_tick(n=1):
    pass


def reference_tensors(model, numerics, per, tick=_no_tick):
    """Per input: {tensor name: logical array} from the numpy oracle of the
    chosen numerics, run on a fresh compile of the model (it never sees the
    compiled graph being validated)."""
    from ..reference import run_graph
    fresh = compile_model(model, numerics=numerics)
    g = fresh.graph
    out = []
    for xs in per:
        out.append(run_graph(g, numerics, {name: x.reshape(g.tensors[name].shape)
                                           for name, x in zip(g.inputs, xs)}, fresh.params))
        tick()
    return out


def onnxruntime_tensors(model, per, g, tick=_no_tick):
    """onnxruntime's own layer outputs (codegen/driver/ort_taps.py: taken from
    the graph ORT runs, proven unchanged) and the plain session's output."""
    from .ort_taps import run_taps
    return run_taps(model, g, list(per), tick)


def _traces_host(c, per, out_dir, tick):
    """Layer traces of the host build, through the quantized API entry (io_api.core_name)."""
    from cffi import FFI
    from ..backend.io_api import core_name
    from .firmware import harness_layout_of
    so = build_host_library(c, out_dir, Variant(
        "trace", defines=('TINYAOT_HOOKS_HEADER="tinyaot_hooks_host.h"',),
        include_dirs=(str(DEBUG_C_DIR),)))
    layout = harness_layout_of(c)  # the quantized tensors, one record per vector
    records = as_records(layout, [np.stack(col) for col in zip(*per)])
    ffi = FFI()
    name = c.module.name
    fn = core_name(name, [s.end for s in layout.inputs], [s.end for s in layout.outputs])
    params = ", ".join(("const int8_t *" if s.end.side == "input" else "int8_t *")
                       for s in layout.inputs + layout.outputs)
    ffi.cdef(f"""typedef void (*tinyaot_trace_fn_t)(int32_t, const void *, uint32_t);
                 void tinyaot_set_trace(tinyaot_trace_fn_t fn);
                 int {fn}({params});""")
    lib = ffi.dlopen(str(so))
    runs, status = [], []
    cur = {}

    @ffi.callback("void(int32_t, const void *, uint32_t)")
    def hook(layer, ptr, nbytes):
        cur[int(layer)] = bytes(ffi.buffer(ptr, nbytes))

    lib.tinyaot_set_trace(hook)
    for rec in records:
        cur = {}
        rec = np.ascontiguousarray(rec)
        out = np.zeros(max(layout.output_size, 1), dtype=np.int8)
        inb, outb = ffi.from_buffer("int8_t[]", rec), ffi.from_buffer("int8_t[]", out)
        args = [inb + s.offset for s in layout.inputs] + [outb + s.offset for s in layout.outputs]
        status.append(int(getattr(lib, fn)(*args)))
        runs.append(cur)
        tick()
    lib.tinyaot_set_trace(ffi.NULL)
    ffi.dlclose(lib)
    return runs, status


_TRACE_RE = re.compile(r"^TRACE (\d+) ([0-9a-f]*)$")


def _traces_qemu(c, b, per, out_dir):
    from ..targets.qemu import QemuError, run_firmware
    elf = build_compiled(c, b, out_dir, [np.stack(col) for col in zip(*per)], Variant(
        "trace", defines=('TINYAOT_HOOKS_HEADER="tinyaot_hooks_fw.h"', "TINYAOT_WANT_TRACE"),
        include_dirs=(str(DEBUG_C_DIR),))).elf
    try:
        res = run_firmware(elf, b, timeout=120 + 60 * len(per))
    except QemuError as e:
        raise TinyAotError(f"firmware run failed on {b['name']}: {e}") from None
    runs, cur, last = [], {}, None
    for line in res.output.splitlines():
        m = _TRACE_RE.match(line.strip())
        if m:
            i = int(m.group(1))
            if last is not None and i <= last:
                runs.append(cur)
                cur = {}
            cur[i] = bytes.fromhex(m.group(2))
            last = i
    if cur:
        runs.append(cur)
    if len(runs) != len(per):
        raise TinyAotError(f"expected traces of {len(per)} inputs from {b['name']}, got {len(runs)}")
    return runs, [r.status for r in res.outputs]


def _as_logical(t, raw):
    arr = np.frombuffer(raw, dtype=np.dtype(t.dtype))
    phys = arr.reshape(t.physical_shape)
    inv = np.argsort(t.physical_perm)
    return phys.transpose(inv)


def _compare(t, refs, runs, i):
    """max |diff|, mismatching elements and the first mismatch of layer i."""
    mism, mad, first = 0, 0, None
    for v, (ref, run) in enumerate(zip(refs, runs)):
        got, exp = _as_logical(t, run[i]), np.asarray(ref)
        if t.dtype == "float32":  # a float fallback layer: compared as bit patterns
            got = got.astype(np.float32).view(np.uint32)
            exp = exp.astype(np.float32).view(np.uint32)
        got = got.astype(np.int64).reshape(-1)
        exp = exp.astype(np.int64).reshape(-1)
        if got.size != exp.size:
            raise TinyAotError(f"layer {i}: reference has {exp.size} values, "
                               f"generated code {got.size}", tensor=t.name)
        d = np.abs(got - exp)
        bad = np.flatnonzero(d)
        mism += int(bad.size)
        mad = max(mad, int(d.max()) if d.size else 0)
        if bad.size and first is None:
            k = int(bad[0])
            first = {"vector": v, "index": k,
                     "index_nd": [int(x) for x in np.unravel_index(k, t.shape)],
                     "got": int(got[k]), "expected": int(exp[k])}
    return {"max_abs_diff": mad, "mismatches": mism, "first_mismatch": first}


def validate_model(model, inputs, board="host", numerics="ort", compiled=None, progress=None):
    """Returns the report dict; report['first_divergent_layer'] is None when
    every layer matches its reference. With ort, a layer's reference is
    onnxruntime's own tensor where ORT has one (row 'reference' =
    'onnxruntime'), else the numpy oracle with the reason ('oracle');
    final_output_vs_onnxruntime counts the final output's mismatches against
    the plain onnxruntime session. progress(description, total) -> context
    yielding advance() (console.progress on a terminal)."""
    b = board_or_error(board)
    from ..targets.parts import require_runnable
    require_runnable(b, "validate")
    from .toolchain import require_tools
    require_tools(b)
    c = compiled or compile_model(model, numerics=numerics)
    if c.numerics != numerics:
        raise TinyAotError(f"compiled for numerics {c.numerics}, validating {numerics}")
    c = with_hooks(c)
    g = c.graph
    per = _per_input(c, inputs, model)
    steps = len(per) * (3 if numerics == "ort" else 2)
    with (progress or _no_progress)(f"validate {c.module.name}", steps) as tick:
        refs = reference_tensors(model, numerics, per, tick)
        taps = onnxruntime_tensors(model, per, g, tick) if numerics == "ort" else None
        out_dir = private_dir(c, f"validate-{board}")
        try:
            if b["kind"] == "shared-library":
                runs, status = _traces_host(c, per, out_dir, tick)
            else:
                runs, status = _traces_qemu(c, b, per, out_dir)
                tick(len(per))
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)
    layers, first_bad = [], None
    for i, n in enumerate(g.nodes):
        t = g.tensors[n.outputs[0]]
        row = {"index": i, "op": n.op, "name": n.name, "tensor": t.name,
               "shape": list(t.shape), "elements": t.size, "compared": False,
               "reference": None, "reference_note": None,
               "max_abs_diff": None, "mismatches": None, "first_mismatch": None}
        if taps is not None and all(t.name in v for v in taps.values):
            ref = [v[t.name] for v in taps.values]
            row.update(reference="onnxruntime",
                       reference_note=taps.proof["exposed"][t.name]["ort_tensor"])
        elif all(t.name in r for r in refs):
            ref = [r[t.name] for r in refs]
            row.update(reference="oracle", reference_note=(
                taps.missing.get(t.name, "not exposed") if taps is not None else None))
        else:
            ref = None
            row["reference_note"] = "no reference tensor"
        if ref is not None and all(i in run for run in runs):
            row["compared"] = True
            row.update(_compare(t, ref, runs, i))
        layers.append(row)
    saturation = None
    if taps is not None:  # onnxruntime itself inexact (x86 without VNNI): driver/saturation.py
        from .saturation import explain_layers
        if len(g.inputs) == 1:  # the exact and saturating runs take one input
            saturation = explain_layers(model, [xs[0] for xs in per], layers, taps, runs,
                                        _as_logical, g)
    for row in layers:
        if row["compared"] and row["mismatches"] and first_bad is None:
            first_bad = row["index"]
    for row in layers:
        row["first_divergent"] = row["index"] == first_bad
    final_vs_ort = None
    if taps is not None:  # each graph output, traced after the layer that wrote it last
        final_vs_ort = 0
        for k, name in enumerate(g.outputs):
            last = max((i for i, n in enumerate(g.nodes) if name in n.outputs), default=None)
            if last is None:
                continue  # an input handed on unchanged: no layer
            yt = g.tensors[name]
            final_vs_ort += int(sum(np.count_nonzero(
                _as_logical(yt, run[last]).astype(np.int64).reshape(-1)
                != np.asarray(f[k]).astype(np.int64).reshape(-1))
                for f, run in zip(taps.finals, runs)))
    if saturation is not None and final_vs_ort and len(g.outputs) == 1:
        saturation["final_output_vs_onnxruntime"] = final_vs_ort  # as verify does
        last_row = layers[-1]
        if last_row["index"] in saturation["layers"]:
            final_vs_ort = 0
    return {"final_output_vs_onnxruntime": final_vs_ort, "onnxruntime_saturates": saturation,
            "model": str(model), "name": c.module.name, "board": board, "numerics": numerics,
            "reference": ("onnxruntime's own tensors (the graph the plain session runs, re-run "
                          "unoptimized with them as outputs); the numpy oracle where ORT has "
                          "no tensor of its own" if numerics == "ort"
                          else "numpy oracle of TFLite Micro's kernels (fresh compile)"),
            "onnxruntime_taps": taps.proof if taps is not None else None,
            "vectors": int(len(per)), "status": status, "layers": layers,
            "first_divergent_layer": first_bad,
            "compared_layers": sum(r["compared"] for r in layers),
            "onnxruntime_layers": sum(r["reference"] == "onnxruntime" for r in layers)}


REF_SHORT = {"onnxruntime": "ort", "oracle": "oracle", None: "-"}


def validate_rows(r):
    """The table as (header, rows, divergent row index), plain strings; shared
    by the plain and the rich renderings."""
    header = ["#", "op", "layer", "shape", "ref", "max|d|", "mismatch", "first mismatch / note"]
    rows = []
    for row in r["layers"]:
        cells = [str(row["index"]), row["op"], row["name"][:32], "x".join(map(str, row["shape"])),
                 REF_SHORT[row["reference"]]]
        if not row["compared"]:
            cells += ["-", "-", f"({row['reference_note']})"]
        else:
            fm = row["first_mismatch"]
            note = (f"vector {fm['vector']} index {fm['index_nd']}: got {fm['got']}, "
                    f"expected {fm['expected']}") if fm else ""
            if row["reference"] == "oracle" and row["reference_note"]:
                note = (note + "  " if note else "") + f"(ORT: {row['reference_note']})"
            cells += [str(row["max_abs_diff"]), str(row["mismatches"]), note]
        rows.append(cells)
    return header, rows, r["first_divergent_layer"]


def validate_footer(r):
    """Summary lines below the table: [(text, rich style or None)]."""
    lines = []
    taps = r.get("onnxruntime_taps")
    if taps is not None:
        n_ort = r["onnxruntime_layers"]
        lines.append((f"{n_ort} of {len(r['layers'])} layers against onnxruntime's own tensors "
                      f"(ORT's graph unchanged: {'yes' if taps['graph_unchanged'] else 'NO'}); "
                      f"{len(r['layers']) - n_ort} against the oracle (ORT has no tensor of its own)",
                      None))
    sat = r.get("onnxruntime_saturates")
    if sat:
        idx = next((row["index"] for row in r["layers"] if row["name"] == sat["node"]), "?")
        lines.append((f"onnxruntime saturates int16 pair sums (x86 without VNNI) from layer {idx} "
                      f"({sat['op']} '{sat['node'][:40]}') on {sat['inputs']} of {r['vectors']} "
                      f"input(s): {len(sat['layers'])} layer(s) compared with the exact integer "
                      f"computation instead (docs/numerics.md)", "yellow"))
    final = r.get("final_output_vs_onnxruntime")
    if final is not None:
        lines.append((f"final output vs the onnxruntime session: {final} mismatching elements",
                      "bold red" if final else "green"))
    if r["first_divergent_layer"] is None:
        lines.append((f"all {r['compared_layers']} compared layers bit-exact", "bold green"))
    else:
        row = r["layers"][r["first_divergent_layer"]]
        lines.append((f"FIRST DIVERGENCE: layer {row['index']} ({row['op']} '{row['name']}')",
                      "bold red"))
    return lines


def validate_title(r):
    return (f"validate {r['name']} on {r['board']} (numerics {r['numerics']}, reference "
            f"{r['reference']}, {r['vectors']} input(s))")


def format_validate(r):
    """The plain-text table (what non-terminals get)."""
    header, rows, bad = validate_rows(r)
    lines = [validate_title(r),
             f"{'#':>3}  {'op':<16} {'layer':<32} {'shape':<16} {'ref':<6} {'max|d|':>6} "
             f"{'mismatch':>9}  first mismatch / note"]
    for k, c in enumerate(rows):
        line = f"{c[0]:>3}  {c[1]:<16} {c[2]:<32} {c[3]:<16} {c[4]:<6} {c[5]:>6} {c[6]:>9}  {c[7]}"
        if k == bad:
            line += "   <-- first divergent layer"
        lines.append(line.rstrip())
    return "\n".join(lines + [t for t, _ in validate_footer(r)])


def print_validate(r):
    from .console import print_table
    header, rows, bad = validate_rows(r)
    print_table(format_validate(r), validate_title(r), header, rows, right=(0, 5, 6),
                mark_row=bad, mark="<-- first divergent layer", footer=validate_footer(r))
