"""The compile pipeline: ONNX -> IR -> passes -> plan -> C, plus the report."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field

from . import __version__
from .backend import emit_c
from .kernels.c_format import c_ident
from .errors import TinyAotError
from .frontend import load_model
from .passes import run_passes
from .planner import check_plan, plan_arena
from .prepare import NUMERICS, prepare_node


@dataclass
class Compiled:
    graph: object
    plan: object
    params: dict
    module: object
    numerics: str
    report: dict
    # compile_model's arguments (tools/budget.py recompiles with --optimize size for its hint)
    options: dict = field(default_factory=dict)


def model_name(path) -> str:
    return c_ident(os.path.splitext(os.path.basename(str(path)))[0])


def _ort_threads(v):
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 64:
        raise TinyAotError(f"--ort-threads must be an integer from 1 to 64 (got {v!r})")
    return v


def compile_model(path, numerics="ort", name=None, input_shapes=None, dump=None,
                  hooks=False, io_buffers="arena", search_order=True, integrity=None,
                  io="int8", depthwise_inplace=False, ort_threads=1,
                  optimize="speed") -> Compiled:
    if numerics not in NUMERICS:
        raise TinyAotError(f"unknown numerics '{numerics}' (choose from {', '.join(NUMERICS)})")
    ort_threads = _ort_threads(ort_threads)
    from .passes.optimize import check_optimize, optimize_for_size
    check_optimize(optimize)
    g = load_model(path, input_shapes)
    from .frontend.limits import check_graph_limits, check_plan_limits, ort_rejects
    check_graph_limits(g, path)  # one input/output, 32-bit tensor sizes
    if numerics == "ort":
        with ort_rejects(path):  # onnxruntime refusing the model is a user error
            from .frontend.ort_facts import gather_ort_facts
            gather_ort_facts(g, path, ort_threads)
    run_passes(g, dump=dump)
    if optimize == "size":  # passes/optimize.py: int8 weights, portable kernels
        optimize_for_size(g)
        if dump:
            dump("optimize size (int8 weights in flash)", g)
    if io_buffers not in ("user", "arena"):
        raise TinyAotError(f"unknown --io-buffers '{io_buffers}' (choose from user, arena)")
    order_info = None
    if search_order:  # planner/order.py: the topological order with the lowest peak
        from .planner.order import choose_order
        g.nodes, order_info = choose_order(g, io_buffers)

    def plain(gr):
        return plan_arena(gr, io_buffers=io_buffers)

    plan = plain(g)
    if numerics == "ort" and optimize == "speed":  # float convs: a float input copy only where it costs no arena
        from .planner.float_conv_scratch import plan_float_conv_scratch
        plan = plan_float_conv_scratch(g, plan, plain)
    if depthwise_inplace:  # planner/depthwise_inplace.py: a planner option, off by default
        from .planner.depthwise_inplace import plan_with_depthwise_inplace
        plan = plan_with_depthwise_inplace(g, io_buffers, plain)
    check_plan(g, plan)
    check_plan_limits(plan, path)
    from .frontend.limits import out_of_range_params
    with out_of_range_params(path) as guard:  # fixed-point parameters TFLite cannot represent
        params = {}
        for n in g.nodes:
            guard.node = n.name
            params[n.name] = prepare_node(g, n, numerics)
    module = emit_c(g, plan, params, numerics, name or model_name(path), hooks=hooks,
                    optimize=optimize, unroll_fc=not integrity)
    from .backend.float_io import IO_MODES, add_float_io
    if io not in IO_MODES:
        raise TinyAotError(f"unknown --io '{io}' (choose from {', '.join(IO_MODES)})")
    if io == "float":  # <name>_run_f32 around <name>_run (backend/float_io.py)
        add_float_io(module, g)
    report = {
        "tinyaot_version": __version__,
        "model": os.path.basename(str(path)),
        "name": module.name,
        "numerics": numerics,
        "optimize": optimize,
        "arena_bytes": plan.size,
        "arena_lower_bound_bytes": plan.lower_bound,
        "weights_bytes": module.weights_bytes,
        "macs": sum(layer["macs"] for layer in module.layers),
        "layers": module.layers,
        "kernels": sorted(module.kernels),
        "plan": plan.to_json(),
        "io_buffers": io_buffers,
        "execution_order": order_info,
        "input": {"name": g.inputs[0], "shape": list(g.tensors[g.inputs[0]].shape)},
        "output": {"name": g.outputs[0], "shape": list(g.tensors[g.outputs[0]].shape)},
    }
    from .backend.io_types import io_report
    report["io"] = io_report(g)  # dtype, scale/zp, float or integer model boundary
    report["io"]["api"] = io  # float: <name>_run_f32 as well
    if integrity:  # integrity.py: <name>_verify() recomputes a digest of the weights
        from .integrity import add_integrity
        report["integrity"] = add_integrity(module, integrity)
    options = {"path": path, "numerics": numerics, "input_shapes": input_shapes,
               "io_buffers": io_buffers, "ort_threads": ort_threads, "optimize": optimize}
    return Compiled(g, plan, params, module, numerics, report, options)


def write_outputs(c: Compiled, out_dir):
    """Write <name>.c, <name>.h and report.json atomically (all or nothing)."""
    out_dir = os.path.abspath(str(out_dir))
    parent = os.path.dirname(out_dir) or "."
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tinyaot-", dir=parent)
    try:
        with open(os.path.join(tmp, f"{c.module.name}.c"), "w") as f:
            f.write(c.module.source)
        with open(os.path.join(tmp, f"{c.module.name}.h"), "w") as f:
            f.write(c.module.header)
        with open(os.path.join(tmp, "report.json"), "w") as f:
            json.dump(c.report, f, indent=2, sort_keys=True, default=_jsonable)
            f.write("\n")
        if os.path.isdir(out_dir):
            for fn in os.listdir(tmp):
                os.replace(os.path.join(tmp, fn), os.path.join(out_dir, fn))
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def _jsonable(o):
    import numpy as np
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, tuple)):
        return list(o)
    return str(o)
