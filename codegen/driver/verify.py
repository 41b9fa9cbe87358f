"""Run a compiled model on a board and compare with golden vectors."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

import numpy as np

from ..compiler import compile_model, write_outputs
from ..errors import TinyAotError
from ..paths import build_root
from ..targets.boards import board_or_error
from .budget import check_budget, check_flash
from .firmware import (as_records, build_generated, firmware_paths, harness_layout_of,
                       write_harness)
from .golden_check import check_end_inputs, check_end_outputs, check_inputs, end_io, model_io
from .golden_keys import default_key, golden_inputs, golden_outputs, open_golden
from .linkmap import board_flash_image, describe
from .toolchain import require_tools


def default_golden_key(path, numerics):
    """The golden array to compare with when the user names none."""
    try:
        with np.load(str(path), allow_pickle=False) as data:
            return default_key({k: None for k in data.files}, numerics)
    except Exception:
        return "outputs"  # load_golden reports the unreadable file


def load_golden(path, key="outputs"):
    """(inputs, expected) of a one-input, one-output golden file (golden_keys.py)."""
    data = open_golden(path)
    if "inputs" not in data:
        raise TinyAotError("golden file has no 'inputs' array", model=str(path))
    if key not in data:
        raise TinyAotError(f"golden file has no '{key}' array (has: {', '.join(sorted(data))})",
                           model=str(path))
    return data["inputs"], data[key]


def _private_dir(c, numerics, board, build_dir):
    if build_dir is not None:
        return build_dir, None
    # A private directory per run: concurrent runs (CI, -j, several users of one
    # checkout) never share SCons state.
    base = str(build_root())
    os.makedirs(base, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f"{c.module.name}-{numerics}-{board}-", dir=base)
    return tmp, tmp


def _as_end_values(e, slot_dtype, x, model):
    """One graph input's vectors as the harness slot takes them (N, size): the end's own
    type, or at a float end also its quantized values, dequantized here exactly (the
    generated quantization gives them back, whatever its rounding)."""
    x = np.asarray(x)
    want = np.dtype(slot_dtype)
    if x.dtype != want:
        if want == np.float32 and x.dtype == np.dtype(e.qtype):
            x = ((x.astype(np.int32) - e.zero_point).astype(np.float32)
                 * np.float32(e.scale)).astype(np.float32)
        else:
            kind = "float32" if want == np.float32 else f"{want} (quantized)"
            raise TinyAotError(f"inputs for '{e.name}' must be {kind}, got {x.dtype}",
                               model=str(model), tensor=e.name)
    per = x.reshape(len(x), -1) if x.ndim > 1 else x.reshape(1, -1)
    if per.shape[1] != e.size:
        raise TinyAotError(f"each input must have {e.size} values {list(e.shape)}, got "
                           f"{per.shape[1]}", model=str(model), tensor=e.name)
    return per


def require_board_runs(b):
    """Before any compile: a build-only part cannot run, and a missing toolchain or QEMU
    is one line (exit 2) instead of a failed build."""
    from ..targets.parts import require_runnable
    require_runnable(b, "run/verify")
    require_tools(b)


def run_ends(model, inputs, board="host", numerics="ort", build_dir=None, compiled=None,
             ram_limit=None, flash_limit=None, io_buffers="arena", depthwise_inplace=False,
             ort_threads=1, optimize="speed", entry="model", inputs_file=None,
             float_fallback=True):
    """Compile, build and run every input vector. inputs: one array (N, ...) per graph
    input. entry "model": through <name>_run, each end as the model declares it (a float
    input may also be given quantized: it is dequantized first, exactly); "quantized": the
    quantized tensors. inputs_file: where the inputs came from (the file an error names).
    Returns ([one array (N, ...) per output], info dict)."""
    from ..backend.harness_data import unpack_outputs
    b = board_or_error(board)
    require_board_runs(b)
    c = compiled or compile_model(model, numerics=numerics, io_buffers=io_buffers,
                                  depthwise_inplace=depthwise_inplace, ort_threads=ort_threads,
                                  optimize=optimize, float_fallback=float_fallback)
    check_budget(c, b, ram_limit, flash_limit, model=str(model))
    layout = harness_layout_of(c, entry)
    if len(inputs) != len(layout.inputs):
        raise TinyAotError(f"the model has {len(layout.inputs)} input(s), "
                           f"{len(inputs)} given", model=str(model))
    # dtype, shape and layout against the model, before any build
    for k, (s, x) in enumerate(zip(layout.inputs, inputs)):
        io = dict(end_io(s.end), dtype=str(np.dtype(s.dtype)))
        check_end_inputs(x, io, inputs_file or model, "inputs" if k == 0 else f"inputs{k}")
    arrays = [_as_end_values(s.end, s.dtype, x, model) for s, x in zip(layout.inputs, inputs)]
    if len({len(a) for a in arrays}) > 1:
        raise TinyAotError("every input needs the same number of vectors", model=str(model))
    records = as_records(layout, arrays)
    out_dir, tmp_dir = _private_dir(c, numerics, board, build_dir)
    try:
        raw, info = _build_and_run(c, b, board, layout, records, out_dir, ram_limit,
                                   flash_limit, model)
    finally:
        if tmp_dir and not os.environ.get("TINYAOT_KEEP_BUILD"):
            shutil.rmtree(tmp_dir, ignore_errors=True)
    outs = [o.reshape((len(records),) + tuple(s.end.shape))
            for s, o in zip(layout.outputs, unpack_outputs(layout, raw))]
    return outs, info


def run_model(model, inputs, board="host", numerics="ort", build_dir=None, compiled=None,
              ram_limit=None, flash_limit=None, io_buffers="arena", depthwise_inplace=False,
              ort_threads=1, optimize="speed", inputs_file=None, float_fallback=True):
    """run_ends on a model with one input and one output, on its quantized tensors:
    returns (outputs (N, ...), info dict). inputs_file: where the inputs came from (the
    file an error names)."""
    b = board_or_error(board)
    require_board_runs(b)
    c = compiled or compile_model(model, numerics=numerics, io_buffers=io_buffers,
                                  depthwise_inplace=depthwise_inplace, ort_threads=ort_threads,
                                  optimize=optimize, float_fallback=float_fallback)
    g = c.graph
    if len(g.inputs) != 1 or len(g.outputs) != 1:
        raise TinyAotError(f"the model has {len(g.inputs)} inputs and {len(g.outputs)} "
                           "outputs: run it with run_ends", model=str(model))
    # dtype, shape and layout against the model, before any build
    check_inputs(inputs, model_io(c)[0], inputs_file or model)
    outs, info = run_ends(model, [inputs], board=board, numerics=numerics, build_dir=build_dir,
                          compiled=c, ram_limit=ram_limit, flash_limit=flash_limit,
                          entry="quantized", inputs_file=inputs_file)
    return outs[0], info


def _build_and_run(c, b, board, layout, records, out_dir, ram_limit=None, flash_limit=None,
                   model=None):
    """The output records (N, layout.output_size) and the run's info."""
    info = {"board": board, "name": c.module.name, "report": c.report}
    if b["kind"] == "shared-library":
        from ..backend.io_api import core_name
        from ..targets.host import run_library
        write_outputs(c, out_dir)
        so = build_generated(out_dir, board, harness=False)
        ins, outs = [s.end for s in layout.inputs], [s.end for s in layout.outputs]
        fn = f"{c.module.name}_run" if layout.entry == "model" else core_name(c.module.name, ins,
                                                                               outs)
        raw, status = run_library(so, fn, layout, records)
        info["status"] = status
        info["ticks"] = None
        return raw, info
    from ..targets.qemu import QemuError, firmware_size, run_firmware
    # --integrity: the firmware checks its weights at boot (integrity.py)
    write_harness(c, out_dir, records, boot_check=bool(c.report.get("integrity")), layout=layout)
    # also checks the worst-case stack against the board (info["stack"])
    elf = build_generated(out_dir, board, harness=True, ram_limit=ram_limit, info=info)
    # the linked image's flash (linkmap.py), the one figure every command shows
    info["flash_split"] = board_flash_image(
        firmware_paths(os.path.abspath(out_dir), c.module.name, board).map, b, c.module.name)
    check_flash(info["flash_split"], b, flash_limit, model=str(model or c.report.get("model")))
    timeout = 60 + 60 * len(records)
    try:
        res = run_firmware(elf, b, timeout=timeout)
    except QemuError as e:
        raise TinyAotError(f"firmware run failed on {board}: {e}") from None
    raw = np.stack([np.frombuffer(r.data, dtype=np.int8) for r in res.outputs])
    if raw.shape[1] != layout.output_size:
        raise TinyAotError(f"firmware printed {raw.shape[1]} output bytes per input, expected "
                           f"{layout.output_size}")
    info["status"] = [r.status for r in res.outputs]
    info["ticks"] = [r.ticks for r in res.outputs]
    info["instructions"] = [r.ticks * int(b["instructions_per_tick"]) for r in res.outputs]
    info["elf"] = elf
    info["size"] = firmware_size(elf, b)
    return raw, info


def _compare(e, got, exp):
    """One output: got (N, ...) as the API returned it, exp the golden array. A float
    array is compared as float32 bits; an integer array as integers, and at a float end
    with the quantized value behind each float (requantized; a float that is not exactly
    a dequantized value counts as a mismatch). -> (diff mask (N, size), |diff|, how)."""
    n = len(got)
    got = got.reshape(n, -1)
    if exp.size != got.size:
        raise ValueError(f"has {exp.size} values, the model's output '{e.name}' {got.size}")
    exp = exp.reshape(n, -1)
    if exp.dtype == np.float32:
        if got.dtype != np.float32:
            raise ValueError(f"is float32, the model's output '{e.name}' is {got.dtype}: "
                             "compare with a key of quantized values")
        diff = got.view(np.uint32) != exp.view(np.uint32)
        return diff, np.abs(got.astype(np.float64) - exp.astype(np.float64)), "float32"
    if got.dtype == np.float32:  # an integer key at a float end: the values behind it
        s = np.float32(e.scale)
        q = np.rint(got.astype(np.float64) / float(s)) + e.zero_point
        lo, hi = (0, 255) if e.qtype == "uint8" else (-128, 127)
        q = np.clip(q, lo, hi).astype(np.int32)
        back = ((q - e.zero_point).astype(np.float32) * s).astype(np.float32)
        exact = back.view(np.uint32) == got.view(np.uint32)
        diff = (q != exp.astype(np.int32)) | ~exact
        return diff, np.abs(q - exp.astype(np.int32)), f"{e.qtype} (requantized)"
    got, exp = got.astype(np.int32), exp.astype(np.int32)
    return got != exp, np.abs(got - exp), e.qtype


def check_golden_file(c, golden, key, data=None):
    """A golden file against compiled model c before any build: each input and expected
    output array against its end of the API (one line, exit 2, when one does not fit).
    Returns (input ends, output ends, inputs, [(key, expected)] per output)."""
    from ..backend.io_api import api_ends
    data = open_golden(golden) if data is None else data
    ins, outs_e = api_ends(c.graph, c.options.get("io", "model"))
    inputs = golden_inputs(data, golden, len(ins))
    expected = golden_outputs(data, golden, key, [e.name for e in outs_e])
    for k, (e, x) in enumerate(zip(ins, inputs)):
        check_end_inputs(x, end_io(e), golden, "inputs" if k == 0 else f"inputs{k}")
    n_in = 1 if np.asarray(inputs[0]).ndim <= 1 else len(inputs[0])
    for e, (gkey, exp) in zip(outs_e, expected):
        check_end_outputs(exp, n_in, end_io(e), golden, gkey)
    return ins, outs_e, inputs, expected


def verify_model(model, golden, board="host", numerics="ort", key="outputs", build_dir=None,
                 ram_limit=None, flash_limit=None, io_buffers="arena", depthwise_inplace=False,
                 ort_threads=1, optimize="speed", compiled=None, float_fallback=True,
                 tuning=None):
    """Run the golden inputs through <name>_run (each end as the model declares it) and
    compare every output with its golden array (golden_keys.py)."""
    if golden is None:
        raise TinyAotError("a golden file is needed (golden=PATH)", model=str(model))
    data = open_golden(golden)
    require_board_runs(board_or_error(board))
    c = compiled or compile_model(model, numerics=numerics, io_buffers=io_buffers,
                                  depthwise_inplace=depthwise_inplace, ort_threads=ort_threads,
                                  optimize=optimize, float_fallback=float_fallback,
                                  tuning=tuning)
    ins, outs_e, inputs, expected = check_golden_file(c, golden, key, data)
    outs, info = run_ends(model, inputs, board=board, numerics=numerics, compiled=c,
                          build_dir=build_dir, ram_limit=ram_limit, flash_limit=flash_limit,
                          inputs_file=golden)
    n = len(outs[0])
    diffs, mags, hows = [], [], []
    for e, got, (gkey, exp) in zip(outs_e, outs, expected):
        try:
            diff, mag, how = _compare(e, got, exp)
        except ValueError as err:
            raise TinyAotError(f"golden '{gkey}' {err}", model=str(golden)) from None
        diffs.append(diff)
        mags.append(mag)
        hows.append(how)
    golden_mismatches = int(sum(int(d.sum()) for d in diffs))
    bad = np.zeros(n, dtype=bool)
    for d in diffs:
        bad |= d.any(axis=1)
    saturation = None
    if numerics == "ort" and bad.any() and not any(e.native_float for e in outs_e):
        # onnxruntime itself inexact: driver/saturation.py (every input and output; not a
        # float32 result of the float fallback)
        from .saturation import explain_vectors
        saturation = explain_vectors(c, [np.asarray(x).reshape(n, -1) for x in inputs],
                                     [np.asarray(o).reshape(n, -1) for o in outs],
                                     [np.asarray(x).reshape(n, -1) for _, x in expected],
                                     np.flatnonzero(bad))
        if saturation is not None:  # checked against the exact integer computation instead
            for k in range(len(diffs)):
                diffs[k] = diffs[k].copy()
                diffs[k][saturation["vectors"]] = False
                mags[k] = mags[k] * diffs[k]
    per_out, bad_vec, first = [], np.zeros(n, dtype=bool), []
    total, worst, floats = 0, 0, False
    for k, (e, got, (gkey, exp), diff, mag, how) in enumerate(
            zip(outs_e, outs, expected, diffs, mags, hows)):
        floats |= how == "float32"
        bad_vec |= diff.any(axis=1)
        m = int(diff.sum())
        mag = mag * diff
        mad = (float(mag.max()) if how == "float32" else int(mag.max())) if mag.size else 0
        total += m
        worst = max(worst, mad)
        per_out.append({"index": k, "name": e.name, "key": gkey, "compared_as": how,
                        "elements": int(diff.size), "mismatches": m, "max_abs_diff": mad})
        g2, x2 = got.reshape(n, -1), exp.reshape(n, -1)
        for v, i in np.argwhere(diff)[:10]:
            cast = float if how == "float32" or got.dtype == np.float32 else int
            first.append({"output": k, "vector": int(v), "index": int(i),
                          "got": cast(g2[v, i]), "expected": cast(x2[v, i])})
    rep = dict(c.report)
    rep.update({
        "board": board,
        "golden": os.path.basename(str(golden)),
        "key": key,
        "vectors": int(n),
        "vectors_passed": int((~bad_vec).sum()),
        "mismatches": int(total),
        "max_abs_diff": float(worst) if floats else int(worst),
        "golden_mismatches": golden_mismatches,
        "reference_saturates": saturation,
        "elements": int(sum(o["elements"] for o in per_out)),
        "outputs_compared": per_out,
        "status": info["status"],
    })
    if info.get("instructions"):
        ins_n = info["instructions"]
        rep["instructions_per_inference"] = int(max(ins_n))
        rep["instructions_min"] = int(min(ins_n))
        rep["instructions_same_for_all_inputs"] = len(set(ins_n)) == 1
        rep["flash_bytes"] = info["flash_split"]["total"]
        rep["flash"] = info["flash_split"]
        rep["firmware_size"] = info["size"]
        if info.get("stack"):
            rep["stack"] = info["stack"]  # worst case, checked against the board at build time
    else:
        rep["instructions_per_inference"] = None
        rep["flash_bytes"] = None
        rep["flash"] = None
        rep["flash_note"] = f"{board} builds a shared library: no flash"
    if total:
        rep["first_mismatches"] = first[:10]
    return rep


def output_diff(outs, exp):
    """(mismatch mask, element -> JSON value). Integers compare as integers; a float32
    output (the float fallback) bit for bit, every NaN equal to every NaN."""
    if outs.dtype != np.float32:
        return outs.astype(np.int32) != exp.astype(np.int32), int
    e = np.asarray(exp, np.float32)
    nan = np.isnan(outs) & np.isnan(e)
    return (outs.view(np.uint32) != e.view(np.uint32)) & ~nan, float


def max_abs_diff(outs, exp, diff):
    """The largest |got - expected| over the elements `diff` marks (0 when none)."""
    if not diff.any():
        return 0.0 if outs.dtype == np.float32 else 0
    if outs.dtype != np.float32:
        return int(np.abs(outs.astype(np.int32) - exp.astype(np.int32))[diff].max())
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(outs.astype(np.float64) - np.asarray(exp, np.float64))[diff]
    return float(d.max())


def print_verify(r, file=None):
    """The text report of `tinyaot verify` and of `scons board=B`."""
    file = file or sys.stdout
    p = lambda s: print(s, file=file)  # noqa: E731
    opt = "" if r.get("optimize", "speed") == "speed" else f", optimize {r['optimize']}"
    p(f"model        {r['model']}  ({r['name']}, numerics {r['numerics']}{opt})")
    p(f"board        {r['board']}")
    io = ("input and output inside" if r.get("io_buffers") == "arena"
          else "input and output in the caller's buffers")
    p(f"arena        {r['arena_bytes']} B  (lower bound {r['arena_lower_bound_bytes']} B; {io})")
    if r.get("flash"):
        p(f"flash        {describe(r['flash'])}")
    else:
        p(f"flash        none ({r.get('flash_note', 'not measured')}; weights "
          f"{r['weights_bytes']} B)")
    if r.get("stack"):
        st = r["stack"]
        p(f"stack        {st['worst_case_bytes']} B worst case (board reserves {st['reserved_bytes']} B); "
          f"RAM {st['ram_needed_bytes']} B of {st['ram_limit_bytes']} B")
    if r.get("instructions_per_inference"):
        same = "same for every input" if r.get("instructions_same_for_all_inputs") else \
            f"min {r['instructions_min']}"
        p(f"instructions {r['instructions_per_inference']} per inference ({same}; "
          f"{r['macs']} MACs)")
    ok = r["vectors_passed"]
    sat = r.get("reference_saturates")
    how = f"; {len(sat['vectors'])} against the exact integer computation" if sat else ""
    p(f"golden       {ok}/{r['vectors']} vectors bit-exact ({r['key']}{how}), "
      f"{r['mismatches']} mismatching elements, max |diff| {r['max_abs_diff']}")
    if r.get("reference_saturates"):
        from .saturation import saturation_line
        p(saturation_line(r["reference_saturates"], f"'{r['key']}'"))
    per = r.get("outputs_compared", [])
    if len(per) > 1 or any(o["compared_as"] != "int8" for o in per):
        for o in per:
            p(f"  output {o['index']} '{o['name']}' ({o['key']}, as {o['compared_as']}): "
              f"{o['mismatches']} of {o['elements']} differ, max |diff| {o['max_abs_diff']}")
    for m in r.get("first_mismatches", [])[:5]:
        where = f"output {m['output']} " if len(per) > 1 else ""
        p(f"  {where}vector {m['vector']} element {m['index']}: got {m['got']}, "
          f"expected {m['expected']}")
    p("PASS" if r["mismatches"] == 0 else "FAIL")
