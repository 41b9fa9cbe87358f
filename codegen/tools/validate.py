"""Layer-by-layer validation: every intermediate tensor of the generated C
against the reference (onnxruntime for --numerics ort, the numpy oracle of
TFLite Micro's kernels for tflite).

The model is emitted with debug hooks (TINYAOT_TRACE after every layer); a
host build routes the hook to a Python callback through cffi, a firmware
build prints the bytes over semihosting. The reference never sees the
compiled graph, so a fault introduced while compiling (a wrong weight, a
wrong multiplier) shows up at the layer that has it.
"""
from __future__ import annotations

import re
import shutil

import numpy as np

from ..backend import emit_c
from ..build import board_or_error
from ..compiler import Compiled, compile_model
from ..errors import TinyAotError
from .fwbuild import build_firmware, build_host, private_dir


def load_inputs(path, key="inputs"):
    import os
    if not os.path.exists(str(path)):
        raise TinyAotError("no such inputs file", model=str(path))
    try:
        data = np.load(str(path), allow_pickle=False)
        files = list(data.files)
    except Exception:
        raise TinyAotError("not an .npz file", model=str(path)) from None
    if key not in files:
        raise TinyAotError(f"no '{key}' array (has: {', '.join(sorted(files))})", model=str(path))
    x = np.asarray(data[key])
    if x.dtype != np.int8:
        raise TinyAotError(f"'{key}' must be int8 (quantized), got {x.dtype}", model=str(path))
    return x


def with_hooks(c: Compiled) -> Compiled:
    """The same compiled model, re-emitted with TINYAOT_TRACE/PROFILE hooks."""
    module = emit_c(c.graph, c.plan, c.params, c.numerics, c.module.name, hooks=True)
    return Compiled(c.graph, c.plan, c.params, module, c.numerics, c.report)


def _per_input(c, inputs, model):
    g = c.graph
    xin = g.tensors[g.inputs[0]]
    per = inputs.reshape(len(inputs), -1) if inputs.ndim > 1 else inputs.reshape(1, -1)
    if per.shape[1] != xin.size:
        raise TinyAotError(f"each input must have {xin.size} values {list(xin.shape)}, "
                           f"got {per.shape[1]}", model=str(model), tensor=g.inputs[0])
    return per


def reference_tensors(model, numerics, per):
    """Per input: {tensor name: logical array} from the numpy oracle of the
    chosen numerics, run on a fresh compile of the model (it never sees the
    compiled graph being validated)."""
    from ..reference import run_graph
    fresh = compile_model(model, numerics=numerics)
    g = fresh.graph
    xin = g.tensors[g.inputs[0]]
    return [run_graph(g, numerics, {g.inputs[0]: x.reshape(xin.shape)}, fresh.params) for x in per]


def onnxruntime_tensors(model, per, g, names):
    """onnxruntime's own tensors: every intermediate of the same name (the
    model with those tensors added as outputs) and the plain session's final
    output. Exposing a tensor can keep ORT from fusing the node that makes
    it, so a tapped tensor may differ from what the plain session computes
    inside; the plain session's final output is the one that counts."""
    from ..reference.onnxruntime_oracle import run_onnxruntime
    xin = g.tensors[g.inputs[0]]
    wanted = [n for n in names if "@" not in n]
    taps, finals = [], []
    for x in per:
        feeds = {g.inputs[0]: x.reshape(xin.shape)}
        taps.append(run_onnxruntime(model, feeds, wanted))
        finals.append(run_onnxruntime(model, feeds)[g.outputs[0]])
    return taps, finals


def _traces_host(c, per, out_dir):
    from cffi import FFI
    so = build_host(c, out_dir, defines=['TINYAOT_HOOKS_HEADER="tinyaot_hooks_host.h"'])
    ffi = FFI()
    name = c.module.name
    ffi.cdef(f"""typedef void (*tinyaot_trace_fn_t)(int32_t, const void *, uint32_t);
                 void tinyaot_set_trace(tinyaot_trace_fn_t fn);
                 int {name}_run(const int8_t *input, int8_t *output);""")
    lib = ffi.dlopen(str(so))
    xout = c.graph.tensors[c.graph.outputs[0]]
    runs, status = [], []
    cur = {}

    @ffi.callback("void(int32_t, const void *, uint32_t)")
    def hook(layer, ptr, nbytes):
        cur[int(layer)] = bytes(ffi.buffer(ptr, nbytes))

    lib.tinyaot_set_trace(hook)
    for x in per:
        cur = {}
        xb = np.ascontiguousarray(x, dtype=np.int8)
        outb = ffi.new(f"int8_t[{xout.size}]")
        status.append(int(getattr(lib, f"{name}_run")(ffi.from_buffer("int8_t[]", xb), outb)))
        runs.append(cur)
    lib.tinyaot_set_trace(ffi.NULL)
    ffi.dlclose(lib)
    return runs, status


_TRACE_RE = re.compile(r"^TRACE (\d+) ([0-9a-f]*)$")


def _traces_qemu(c, b, per, out_dir):
    from ..targets.qemu import QemuError, run_firmware
    elf, _, _ = build_firmware(c, b, out_dir, per, b["harness_main"],
                               defines=['TINYAOT_HOOKS_HEADER="tinyaot_hooks_fw.h"',
                                        "TINYAOT_WANT_TRACE"])
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


def validate_model(model, inputs, board="host", numerics="ort", compiled=None):
    """Returns the report dict; report['first_divergent_layer'] is None when
    every layer matches the oracle (and, for ort, final_output_vs_onnxruntime
    counts the final output's mismatches against the onnxruntime session)."""
    b = board_or_error(board)
    c = compiled or compile_model(model, numerics=numerics)
    if c.numerics != numerics:
        raise TinyAotError(f"compiled for numerics {c.numerics}, validating {numerics}")
    c = with_hooks(c)
    g = c.graph
    per = _per_input(c, np.asarray(inputs), model)
    names = [n.outputs[0] for n in g.nodes]
    refs = reference_tensors(model, numerics, per)
    taps = finals = None
    if numerics == "ort":
        taps, finals = onnxruntime_tensors(model, per, g, names)
    out_dir = private_dir(c, f"validate-{board}")
    try:
        if b["kind"] == "shared-library":
            runs, status = _traces_host(c, per, out_dir)
        else:
            runs, status = _traces_qemu(c, b, per, out_dir)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    layers, first_bad = [], None
    for i, n in enumerate(g.nodes):
        t = g.tensors[n.outputs[0]]
        row = {"index": i, "op": n.op, "name": n.name, "tensor": t.name,
               "shape": list(t.shape), "elements": t.size, "compared": False,
               "max_abs_diff": None, "mismatches": None, "first_mismatch": None}
        if all(t.name in r for r in refs) and all(i in run for run in runs):
            row["compared"] = True
            mism = 0
            mad = 0
            first = None
            for v, (ref, run) in enumerate(zip(refs, runs)):
                got = _as_logical(t, run[i]).astype(np.int64).reshape(-1)
                exp = np.asarray(ref[t.name]).astype(np.int64).reshape(-1)
                if got.size != exp.size:
                    raise TinyAotError(f"layer {i} '{n.name}': reference has {exp.size} values, "
                                       f"generated code {got.size}")
                d = np.abs(got - exp)
                bad = np.flatnonzero(d)
                mism += int(bad.size)
                mad = max(mad, int(d.max()) if d.size else 0)
                if bad.size and first is None:
                    k = int(bad[0])
                    first = {"vector": v, "index": k,
                             "index_nd": [int(x) for x in np.unravel_index(k, t.shape)],
                             "got": int(got[k]), "expected": int(exp[k])}
            row.update(max_abs_diff=mad, mismatches=mism, first_mismatch=first)
            if taps is not None and all(t.name in tp for tp in taps):
                row["onnxruntime_tap_mismatches"] = int(sum(
                    np.count_nonzero(_as_logical(t, run[i]).astype(np.int64).reshape(-1)
                                     != np.asarray(tp[t.name]).astype(np.int64).reshape(-1))
                    for tp, run in zip(taps, runs)))
            if mism and first_bad is None:
                first_bad = i
        layers.append(row)
    for row in layers:
        row["first_divergent"] = row["index"] == first_bad
    final_vs_ort = None
    if finals is not None:
        last = len(g.nodes) - 1
        yt = g.tensors[g.outputs[0]]
        final_vs_ort = int(sum(np.count_nonzero(
            _as_logical(yt, run[last]).astype(np.int64).reshape(-1)
            != np.asarray(f).astype(np.int64).reshape(-1)) for f, run in zip(finals, runs)))
    return {"final_output_vs_onnxruntime": final_vs_ort,
            "model": str(model), "name": c.module.name, "board": board, "numerics": numerics,
            "reference": ("numpy oracle of onnxruntime (fresh compile); final output also vs "
                          "the onnxruntime session" if numerics == "ort"
                          else "numpy oracle of TFLite Micro's kernels (fresh compile)"),
            "vectors": int(len(per)), "status": status, "layers": layers,
            "first_divergent_layer": first_bad,
            "compared_layers": sum(r["compared"] for r in layers)}


def format_validate(r, color=False):
    red = (lambda s: f"\033[31m{s}\033[0m") if color else (lambda s: s)
    lines = [f"validate {r['name']} on {r['board']} (numerics {r['numerics']}, reference "
             f"{r['reference']}, {r['vectors']} input(s))",
             f"{'#':>3}  {'op':<16} {'layer':<32} {'shape':<16} {'max|d|':>6} {'mismatch':>9} "
             f"{'ORT tap':>7}  first mismatch"]
    for row in r["layers"]:
        shape = "x".join(map(str, row["shape"]))
        if not row["compared"]:
            tail = f"{'-':>6} {'-':>9} {'-':>7}  (no reference tensor)"
        else:
            fm = row["first_mismatch"]
            where = (f"vector {fm['vector']} index {fm['index_nd']}: got {fm['got']}, "
                     f"expected {fm['expected']}") if fm else ""
            tap = row.get("onnxruntime_tap_mismatches")
            tail = f"{row['max_abs_diff']:>6} {row['mismatches']:>9} {'-' if tap is None else tap:>7}  {where}"
        line = f"{row['index']:>3}  {row['op']:<16} {row['name'][:32]:<32} {shape:<16} {tail}"
        if row["first_divergent"]:
            line = red(line + "   <-- first divergent layer")
        lines.append(line)
    if r.get("final_output_vs_onnxruntime") is not None:
        lines.append(f"final output vs the onnxruntime session: "
                     f"{r['final_output_vs_onnxruntime']} mismatching elements"
                     "  (ORT tap: mismatches against ORT's tensor of the same name)")
    if r["first_divergent_layer"] is None:
        lines.append(f"all {r['compared_layers']} compared layers bit-exact")
    else:
        row = r["layers"][r["first_divergent_layer"]]
        lines.append(f"FIRST DIVERGENCE: layer {row['index']} ({row['op']} '{row['name']}')")
    return "\n".join(lines)
