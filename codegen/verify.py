"""Run a compiled model on a board and compare with golden vectors."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import numpy as np

from .backend import emit_harness_data
from .backend.fc_float_unrolled import FUNCTION_RE
from .build import board_or_error, build_generated
from .compiler import compile_model, write_outputs
from .errors import TinyAotError
from .paths import build_root


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
              ort_threads=1, optimize="speed"):
    """Compile, build and run every input; returns (outputs (N, out), info dict)."""
    from .targets.parts import require_runnable
    from .tools.budget import check_budget
    b = board_or_error(board)
    require_runnable(b, "run/verify")
    c = compiled or compile_model(model, numerics=numerics, io_buffers=io_buffers,
                                  depthwise_inplace=depthwise_inplace, ort_threads=ort_threads,
                                  optimize=optimize)
    check_budget(c, b, ram_limit, flash_limit, model=str(model))
    g = c.graph
    xin = g.tensors[g.inputs[0]]
    xout = g.tensors[g.outputs[0]]
    inputs = np.asarray(inputs)
    want = np.dtype(xin.dtype) if xin.dtype in ("int8", "uint8") else np.dtype(np.int8)
    if inputs.dtype != want:
        raise TinyAotError(f"inputs must be {want} (quantized), got {inputs.dtype}", model=str(model))
    inputs = inputs.view(np.int8)  # the same bytes (uint8 models: passes/uint8.py)
    per = inputs.reshape(len(inputs), -1) if inputs.ndim > 1 else inputs.reshape(1, -1)
    if per.shape[1] != xin.size:
        raise TinyAotError(f"each input must have {xin.size} values {list(xin.shape)}, "
                           f"got {per.shape[1]}", model=str(model), tensor=g.inputs[0])
    tmp_dir = None
    if build_dir is None:
        # A private directory per run: concurrent runs (CI, -j, several
        # users of one checkout) never share SCons state.
        base = str(build_root())
        os.makedirs(base, exist_ok=True)
        tmp_dir = tempfile.mkdtemp(prefix=f"{c.module.name}-{numerics}-{board}-", dir=base)
    out_dir = build_dir or tmp_dir
    try:
        return _build_and_run(c, b, board, numerics, per, xin, xout, out_dir, ram_limit)
    finally:
        if tmp_dir and not os.environ.get("TINYAOT_KEEP_BUILD"):
            shutil.rmtree(tmp_dir, ignore_errors=True)


def _build_and_run(c, b, board, numerics, per, xin, xout, out_dir, ram_limit=None):
    write_outputs(c, out_dir)
    info = {"board": board, "name": c.module.name, "report": c.report}
    if b["kind"] == "shared-library":
        from .targets.host import run_shared_library
        so = build_generated(out_dir, board, harness=False)
        outs, status = run_shared_library(so, c.module.name, per, xin.size, xout.size)
        info["status"] = status
        info["ticks"] = None
    else:
        from .targets.qemu import QemuError, firmware_size, run_firmware
        with open(os.path.join(out_dir, "harness_data.c"), "w") as f:
            f.write(emit_harness_data(c.module.name, per, xin.size, xout.size))
            if c.report.get("integrity"):  # integrity.py: the firmware checks its weights at boot
                from .integrity import harness_verify_c
                f.write(harness_verify_c(c.module.name))
        # also checks the worst-case stack against the board (info["stack"])
        elf = build_generated(out_dir, board, harness=True, ram_limit=ram_limit, info=info)
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
        info["flash_split"] = flash_split(elf, b, c)
    if xout.dtype == "uint8":
        outs = np.asarray(outs).view(np.uint8)
    return outs.reshape((len(per),) + tuple(xout.shape)), info


def _api_functions(name):
    """The generated C's entry points (io_buffers.py): _run, and in arena I/O mode also
    _invoke (the layers), _input and _output."""
    return {f"{name}_{f}" for f in ("run", "invoke", "input", "output")}


def flash_split(elf, board, c):
    """Flash bytes of the model alone: code (kernels + the <name>_ API) and weights."""
    nm = board.get("toolchain_prefix", "") + "nm"
    out = subprocess.run([nm, "-S", "--size-sort", str(elf)], capture_output=True, text=True).stdout
    code = weights = 0
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        size, typ, sym = int(parts[1], 16), parts[2], parts[3]
        if typ in "tT" and (sym.startswith("tinyaot_") and not sym.startswith("tinyaot_harness")
                            and not sym.startswith("tinyaot_sh_") and not sym.startswith("tinyaot_timer")
                            or sym in _api_functions(c.module.name)
                            or FUNCTION_RE.search(sym)):
            code += size
        elif typ in "rR" and sym[:1] == "l" and "_" in sym and sym[1:sym.index("_")].isdigit():
            weights += size
    return {"code": code, "weights": weights, "total": code + weights}


def verify_model(model, golden, board="host", numerics="ort", key="outputs", build_dir=None,
                 ram_limit=None, flash_limit=None, io_buffers="arena", depthwise_inplace=False,
                 ort_threads=1, optimize="speed"):
    if golden is None:
        raise TinyAotError("a golden file is needed (golden=PATH)", model=str(model))
    inputs, expected = load_golden(golden, key)
    c = compile_model(model, numerics=numerics, io_buffers=io_buffers,
                      depthwise_inplace=depthwise_inplace, ort_threads=ort_threads,
                      optimize=optimize)
    outs, info = run_model(model, inputs, board=board, numerics=numerics, compiled=c,
                           build_dir=build_dir, ram_limit=ram_limit, flash_limit=flash_limit)
    exp = expected.reshape(outs.shape) if expected.size == outs.size else None
    if exp is None:
        raise TinyAotError(f"golden '{key}' has {expected.size} values, the model gives {outs.size}",
                           model=str(golden))
    diff = outs.astype(np.int32) != exp.astype(np.int32)
    per_vec = diff.reshape(len(outs), -1).any(axis=1)
    rep = dict(c.report)
    rep.update({
        "board": board,
        "golden": os.path.basename(str(golden)),
        "key": key,
        "vectors": int(len(outs)),
        "vectors_passed": int((~per_vec).sum()),
        "mismatches": int(diff.sum()),
        "max_abs_diff": int(np.abs(outs.astype(np.int32) - exp.astype(np.int32)).max()) if outs.size else 0,
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
    if rep["mismatches"]:
        idx = np.argwhere(diff.reshape(len(outs), -1))
        rep["first_mismatches"] = [
            {"vector": int(v), "index": int(i), "got": int(outs.reshape(len(outs), -1)[v, i]),
             "expected": int(exp.reshape(len(outs), -1)[v, i])} for v, i in idx[:10]]
    return rep
