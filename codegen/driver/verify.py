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
from .firmware import build_generated, firmware_paths, write_harness
from .golden_check import check_golden, check_inputs, model_io
from .linkmap import board_flash_image, describe
from .toolchain import require_tools


# The golden arrays each numerics reproduces bit for bit (MLPerf Tiny goldens carry
# both; `outputs` is LiteRT's reference kernels, which neither numerics promises).
NUMERICS_GOLDEN_KEY = {"ort": "outputs_onnxruntime", "tflite": "outputs_tflm"}


def default_golden_key(path, numerics):
    """The golden array to compare with when the user names none."""
    try:
        with np.load(str(path), allow_pickle=False) as data:
            files = set(data.files)
    except Exception:
        return "outputs"  # load_golden reports the unreadable file
    key = NUMERICS_GOLDEN_KEY.get(numerics)
    return key if key in files else "outputs"


def load_golden(path, key="outputs"):
    path = str(path)
    if not os.path.exists(path):
        raise TinyAotError("no such golden file", model=path)
    try:
        data = np.load(path, allow_pickle=False)
        files = set(data.files)
    except Exception:
        raise TinyAotError("not a golden .npz file", model=path) from None
    if "inputs" not in files:
        raise TinyAotError("golden file has no 'inputs' array", model=path)
    if key not in files:
        raise TinyAotError(f"golden file has no '{key}' array (has: {', '.join(sorted(files))})",
                           model=path)
    return np.asarray(data["inputs"]), np.asarray(data[key])


def run_model(model, inputs, board="host", numerics="ort", build_dir=None, compiled=None,
              ram_limit=None, flash_limit=None, io_buffers="arena", depthwise_inplace=False,
              ort_threads=1, optimize="speed", inputs_file=None, float_fallback=True):
    """Compile, build and run every input; returns (outputs (N, out), info dict).
    inputs_file: where the inputs came from (the file an error names)."""
    b = board_or_error(board)
    from ..targets.parts import require_runnable
    require_runnable(b, "run/verify")
    require_tools(b)  # before the compile: a missing toolchain is one line, exit 2
    c = compiled or compile_model(model, numerics=numerics, io_buffers=io_buffers,
                                  depthwise_inplace=depthwise_inplace, ort_threads=ort_threads,
                                  optimize=optimize, float_fallback=float_fallback)
    check_budget(c, b, ram_limit, flash_limit, model=str(model))
    g = c.graph
    xin = g.tensors[g.inputs[0]]
    xout = g.tensors[g.outputs[0]]
    inputs = np.asarray(inputs)
    # dtype, shape and layout against the model, before any build
    check_inputs(inputs, model_io(c)[0], inputs_file or model)
    inputs = inputs.view(np.int8)  # the same bytes (uint8 models: passes/uint8.py)
    per = inputs.reshape(len(inputs), -1) if inputs.ndim > 1 else inputs.reshape(1, -1)
    tmp_dir = None
    if build_dir is None:
        # A private directory per run: concurrent runs (CI, -j, several
        # users of one checkout) never share SCons state.
        base = str(build_root())
        os.makedirs(base, exist_ok=True)
        tmp_dir = tempfile.mkdtemp(prefix=f"{c.module.name}-{numerics}-{board}-", dir=base)
    out_dir = build_dir or tmp_dir
    try:
        return _build_and_run(c, b, board, numerics, per, xin, xout, out_dir, ram_limit,
                              flash_limit, model)
    finally:
        if tmp_dir and not os.environ.get("TINYAOT_KEEP_BUILD"):
            shutil.rmtree(tmp_dir, ignore_errors=True)


def _build_and_run(c, b, board, numerics, per, xin, xout, out_dir, ram_limit=None,
                   flash_limit=None, model=None):
    info = {"board": board, "name": c.module.name, "report": c.report}
    if b["kind"] == "shared-library":
        from ..targets.host import run_shared_library
        write_outputs(c, out_dir)
        so = build_generated(out_dir, board, harness=False)
        outs, status = run_shared_library(so, c.module.name, per, xin.size, xout.nbytes)
        info["status"] = status
        info["ticks"] = None
    else:
        from ..targets.qemu import QemuError, firmware_size, run_firmware
        # --integrity: the firmware checks its weights at boot (integrity.py)
        write_harness(c, out_dir, per, boot_check=bool(c.report.get("integrity")))
        # also checks the worst-case stack against the board (info["stack"])
        elf = build_generated(out_dir, board, harness=True, ram_limit=ram_limit, info=info)
        # the linked image's flash (linkmap.py), the one figure every command shows
        info["flash_split"] = board_flash_image(
            firmware_paths(os.path.abspath(out_dir), c.module.name, board).map, b, c.module.name)
        check_flash(info["flash_split"], b, flash_limit, model=str(model or c.report.get("model")))
        timeout = 60 + 60 * len(per)
        try:
            res = run_firmware(elf, b, timeout=timeout)
        except QemuError as e:
            raise TinyAotError(f"firmware run failed on {board}: {e}") from None
        outs = np.stack([np.frombuffer(r.data, dtype=np.int8) for r in res.outputs])
        info["status"] = [r.status for r in res.outputs]
        info["ticks"] = [r.ticks for r in res.outputs]
        info["instructions"] = [r.ticks * int(b["instructions_per_tick"]) for r in res.outputs]
        info["elf"] = elf
        info["size"] = firmware_size(elf, b)
    if xout.dtype in ("uint8", "float32"):  # the output's bytes, read as its type
        outs = np.ascontiguousarray(outs).view(np.dtype(xout.dtype))
    return outs.reshape((len(per),) + tuple(xout.shape)), info


def verify_model(model, golden, board="host", numerics="ort", key="outputs", build_dir=None,
                 ram_limit=None, flash_limit=None, io_buffers="arena", depthwise_inplace=False,
                 ort_threads=1, optimize="speed", compiled=None, float_fallback=True):
    if golden is None:
        raise TinyAotError("a golden file is needed (golden=PATH)", model=str(model))
    inputs, expected = load_golden(golden, key)
    require_tools(board_or_error(board))
    c = compiled or compile_model(model, numerics=numerics, io_buffers=io_buffers,
                                  depthwise_inplace=depthwise_inplace, ort_threads=ort_threads,
                                  optimize=optimize, float_fallback=float_fallback)
    check_golden(c, inputs, expected, golden, key)  # before any build: one clear line
    outs, info = run_model(model, inputs, board=board, numerics=numerics, compiled=c,
                           build_dir=build_dir, ram_limit=ram_limit, flash_limit=flash_limit,
                           inputs_file=golden)
    exp = expected.reshape(outs.shape)
    diff, val = output_diff(outs, exp)
    per_vec = diff.reshape(len(outs), -1).any(axis=1)
    golden_mismatches = int(diff.sum())
    saturation = None
    # onnxruntime itself inexact on integer outputs: driver/saturation.py
    if numerics == "ort" and outs.dtype != np.float32 and per_vec.any():
        from .saturation import explain_vectors
        per = np.asarray(inputs).reshape(len(outs), -1)
        saturation = explain_vectors(c, per, outs, exp, np.flatnonzero(per_vec))
        if saturation is not None:  # checked against the exact integer computation instead
            diff = diff.copy()
            diff.reshape(len(outs), -1)[saturation["vectors"]] = False
            per_vec = diff.reshape(len(outs), -1).any(axis=1)
    rep = dict(c.report)
    rep.update({
        "board": board,
        "golden": os.path.basename(str(golden)),
        "key": key,
        "vectors": int(len(outs)),
        "vectors_passed": int((~per_vec).sum()),
        "mismatches": int(diff.sum()),
        "max_abs_diff": max_abs_diff(outs, exp, diff),
        "golden_mismatches": golden_mismatches,
        "reference_saturates": saturation,
        "elements": int(outs.size),
        "status": info["status"],
    })
    if info.get("instructions"):
        ins = info["instructions"]
        rep["instructions_per_inference"] = int(max(ins))
        rep["instructions_min"] = int(min(ins))
        rep["instructions_same_for_all_inputs"] = len(set(ins)) == 1
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
    if rep["mismatches"]:
        idx = np.argwhere(diff.reshape(len(outs), -1))
        rep["first_mismatches"] = [
            {"vector": int(v), "index": int(i), "got": val(outs.reshape(len(outs), -1)[v, i]),
             "expected": val(exp.reshape(len(outs), -1)[v, i])} for v, i in idx[:10]]
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
    for m in r.get("first_mismatches", [])[:5]:
        p(f"  vector {m['vector']} element {m['index']}: got {m['got']}, expected {m['expected']}")
    p("PASS" if r["mismatches"] == 0 else "FAIL")
