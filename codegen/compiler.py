"""The compile pipeline: ONNX or TFLite -> IR -> passes -> plan -> C, plus the report."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field

from . import __version__, ops
from .backend import emit_c
from .backend.io_api import API_MODES, api_ends
from .backend.io_api import io_report as ends_report
from .backend.io_types import io_report
from .errors import TinyAotError
from .frontend import is_tflite, load_model
from .frontend.limits import check_graph_limits, check_plan_limits, ort_rejects, out_of_range_params
from .frontend.ort_facts import gather_ort_facts
from .integrity import add_integrity
from .kernels import specialize
from .kernels.c_format import c_ident
from .numerics import NUMERICS
from .passes.dce import eliminate_dead_code
from .passes.kernel_select import check_optimize, select_kernels
from .passes.layer_signature import layer_signature, signature_key
from .passes.layout import assign_layouts
from .passes.uint8 import uint8_to_int8
from .planner import check_plan, plan_arena
from .planner.depthwise_inplace import plan_with_depthwise_inplace
from .planner.float_conv_blocks import plan_float_conv_blocks
from .planner.float_conv_scratch import plan_float_conv_scratch
from .planner.staged_weights import plan_staged_weights
from .planner.w8_columns import plan_w8_columns
from .planner.winograd import plan_winograd
from .planner.order import choose_order


@dataclass
class Compiled:
    graph: object
    plan: object
    params: dict
    module: object
    numerics: str
    report: dict
    # compile_model's arguments (driver/budget.py recompiles with --optimize size for its hint)
    options: dict = field(default_factory=dict)


def model_name(path) -> str:
    return c_ident(os.path.splitext(os.path.basename(str(path)))[0])


def _ort_threads(v):
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 64:
        raise TinyAotError(f"--ort-threads must be an integer from 1 to 64 (got {v!r})")
    return v


@dataclass
class Options:
    """What compile_model was asked for (compile_model's keyword arguments)."""
    numerics: str | None = None  # None: tflite for a .tflite model, else ort
    name: str | None = None
    input_shapes: dict | None = None
    dump: object = None  # dump(title, graph) after each IR stage (--dump-ir)
    hooks: bool = False
    io_buffers: str = "arena"
    search_order: bool = True
    integrity: str | None = None
    io: str = "model"  # the API's ends (backend/io_api.py): model, int8, float
    depthwise_inplace: bool = False
    ort_threads: int = 1
    optimize: str = "speed"
    float_fallback: bool = True  # nodes no integer kernel takes run in float32
    # `tinyaot tune`'s choice (--tuning FILE, codegen/tuning/record.py): {node name:
    # {"variant": speed|size|loop, "signature": layer_signature key}}, None: --optimize alone
    tuning: dict | None = None
    tuning_source: str | None = None  # the record's file, for messages
    # planner/staged_weights.py: fast layers read their weights from a copy in free arena
    # bytes (tests turn it off to compare)
    stage_weights: bool = True


@dataclass
class _Build:
    """What the stages hand each other."""
    path: object
    opt: Options
    g: object = None
    order_info: object = None
    plan: object = None
    params: dict = None
    module: object = None
    report: dict = None


def _check_options(b):
    o = b.opt
    if o.numerics is None:  # a .tflite file is computed as TFLite Micro computes it
        o.numerics = "tflite" if is_tflite(b.path) else "ort"
    if o.numerics == "ort" and is_tflite(b.path):
        raise TinyAotError("--numerics ort needs an ONNX model (onnxruntime does not run "
                           ".tflite files); use --numerics tflite", model=str(b.path))
    if o.numerics not in NUMERICS:
        raise TinyAotError(f"unknown numerics '{o.numerics}' (choose from {', '.join(NUMERICS)})")
    o.ort_threads = _ort_threads(o.ort_threads)
    check_optimize(o.optimize)
    if o.io_buffers not in ("user", "arena"):
        raise TinyAotError(f"unknown --io-buffers '{o.io_buffers}' (choose from user, arena)")
    if o.io not in API_MODES:
        raise TinyAotError(f"unknown --io '{o.io}' (choose from {', '.join(API_MODES)})")


def _front_end(b):
    """The model file -> integer IR; under ort, onnxruntime's decisions recorded on it."""
    b.g = load_model(b.path, b.opt.input_shapes, b.opt.float_fallback)
    check_graph_limits(b.g, b.path)  # inputs/outputs the API can take, 32-bit tensor sizes
    if b.opt.numerics == "ort":
        with ort_rejects(b.path):  # onnxruntime refusing the model is a user error
            gather_ort_facts(b.g, b.path, b.opt.ort_threads)


def _ir(fn):
    def stage(b):
        fn(b.g)
    return stage


def _select_kernels(b):
    # each operator's Op.select, for --optimize speed|size (a tuning record: per layer)
    select_kernels(b.g, b.opt.optimize, _tuned_variants(b))


def _tuned_variants(b):
    """{node name: variant} of a tuning record, checked against this model's layers."""
    o = b.opt
    if not o.tuning:
        return None
    src = o.tuning_source or "the tuning record"
    nodes = {n.name: n for n in b.g.nodes}
    out = {}
    for name, choice in sorted(o.tuning.items()):
        n = nodes.get(name)
        if n is None:
            raise TinyAotError(f"{src}: layer '{name}' is not in this model; the record was "
                               "tuned for another model: run tinyaot tune on it",
                               model=str(b.path))
        key = signature_key(layer_signature(b.g, n, o.numerics))
        if choice.get("signature") != key:
            raise TinyAotError(f"{src}: layer '{name}' differs from the one tuned (signature "
                               f"{choice.get('signature')}, this model's {key}, numerics "
                               f"{o.numerics}): run tinyaot tune again", model=str(b.path))
        out[name] = choice["variant"]
    return out


def _order(b):
    if b.opt.search_order:  # planner/order.py: the topological order with the lowest peak
        b.g.nodes, b.order_info = choose_order(b.g, b.opt.io_buffers)


def _plan(b):
    g, o = b.g, b.opt

    def plain(gr):
        return plan_arena(gr, io_buffers=o.io_buffers)

    plan = plain(g)
    if o.numerics == "ort" and o.optimize == "speed":  # float convs: a float input copy only where it costs no arena
        plan = plan_float_conv_scratch(g, plan, plain)
    if o.depthwise_inplace:  # planner/depthwise_inplace.py: a planner option, off by default
        plan = plan_with_depthwise_inplace(g, o.io_buffers, plain)
    # the passes below fill the arena the passes above leave, never grow it
    if o.numerics == "ort" and o.optimize == "speed":  # float convs: int8 weights in flash,
        # dequantized a block at a time where the block costs no arena
        plan = plan_float_conv_blocks(g, plan, plain, lambda n: ops.get(n.op).select(g, n, "speed"))
    # 3x3 stride-1 convs: Winograd where its scratch costs no arena
    plan = plan_winograd(g, plan, plain, lambda n: ops.get(n.op).select(g, n, "speed"))
    # few-pixel convs: the fast GEMM on int8 weights where its columns cost no arena (last:
    # it fills the arena up to the peak the passes above leave)
    plan = plan_w8_columns(g, plan, plain, lambda n: ops.get(n.op).select(g, n, "speed"))
    # weights read once per output pixel: copied to the arena bytes still free at their step
    if o.stage_weights:
        plan = plan_staged_weights(g, plan, plain)
    check_plan(g, plan)
    check_plan_limits(plan, b.path)
    b.plan = plan


def _prepare(b):
    with out_of_range_params(b.path) as guard:  # fixed-point parameters TFLite cannot represent
        b.params = {}
        for n in b.g.nodes:
            guard.node = n.name
            b.params[n.name] = ops.prepare(b.g, n, b.opt.numerics)


def _emit(b):
    o = b.opt
    # o.io: the API's ends as the model declares them, all quantized, or also all float
    # (<name>_run_f32): backend/io_api.py, backend/float_io.py
    b.module = emit_c(b.g, b.plan, b.params, o.numerics, o.name or model_name(b.path),
                      hooks=o.hooks, optimize=o.optimize, unroll_fc=not o.integrity, io=o.io)


def _report(b):
    g, plan, module, o = b.g, b.plan, b.module, b.opt
    b.report = {
        "tinyaot_version": __version__,
        "model": os.path.basename(str(b.path)),
        "name": module.name,
        "numerics": o.numerics,
        "optimize": o.optimize,
        **({"tuning": _tuning_report(g, o)} if o.tuning else {}),
        "arena_bytes": plan.size,
        "arena_lower_bound_bytes": plan.lower_bound,
        "weights_bytes": module.weights_bytes,
        "macs": sum(layer["macs"] for layer in module.layers),
        "layers": module.layers,
        "kernels": sorted(module.kernels),
        "plan": plan.to_json(),
        "io_buffers": o.io_buffers,
        "execution_order": b.order_info,
        "input": {"name": g.inputs[0], "shape": list(g.tensors[g.inputs[0]].shape)},
        "output": {"name": g.outputs[0], "shape": list(g.tensors[g.outputs[0]].shape)},
    }
    b.report["io"] = io_report(g)  # the first input / output: dtype, scale/zp, model boundary
    # every input and output: the IR tensor, the model's name and type, what the API takes
    b.report["io"]["inputs"], b.report["io"]["outputs"] = ends_report(*api_ends(g, o.io))
    b.report["inputs"] = [{"name": e["name"], "shape": e["shape"]} for e in b.report["io"]["inputs"]]
    b.report["outputs"] = [{"name": e["name"], "shape": e["shape"]}
                           for e in b.report["io"]["outputs"]]
    b.report["io"]["api"] = o.io  # model / int8 / float (<name>_run_f32 as well)
    if o.integrity:  # integrity.py: <name>_verify() recomputes a digest of the weights
        b.report["integrity"] = add_integrity(module, o.integrity)
    fallback = float_fallback_layers(g, module)
    if fallback:  # frontend/float_fallback.py: layers run in float32
        b.report["float_fallback"] = fallback
        _warn_float_fallback(b.path, o.numerics, fallback)


def _tuning_report(g, o):
    """The record's file and each tuned layer's variant (the report's layers say the kernel)."""
    return {"record": os.path.basename(o.tuning_source) if o.tuning_source else None,
            "variants": {n.name: n.attrs["variant"] for n in g.nodes if "variant" in n.attrs}}


def float_fallback_layers(g, module):
    """The float fallback's layers (frontend/float_fallback.py), as the report lists them."""
    wanted = {name for _, name, _ in getattr(g, "float_fallback", ())}
    onnx_op = {name: op for op, name, _ in getattr(g, "float_fallback", ())}
    return [{"index": li["index"], "node": li["name"], "onnx_op": onnx_op[li["name"]],
             "op": li["op"], "kernel": li["kernel"]}
            for li in module.layers if li["name"] in wanted]


_WARNED = set()


def _warn_float_fallback(path, numerics, layers):
    """One warning line on stderr per model and numerics (a process compiles a model more
    than once, e.g. the memory budget's --optimize size figure)."""
    import sys
    key = (str(path), numerics, tuple(x["node"] for x in layers))
    if key in _WARNED:
        return
    _WARNED.add(key)
    who = {"ort": "onnxruntime's", "tflite": "TFLite Micro's"}.get(numerics, numerics)
    nodes = ", ".join(f"{x['onnx_op']} '{x['node']}'" for x in layers)
    print(f"tinyaot: warning: {path}: {len(layers)} node(s) run in float32 (float fallback, "
          f"{who} float kernels): {nodes}; --no-float-fallback refuses them", file=sys.stderr)


# The compiler, stage by stage: model -> IR -> passes -> plan -> parameters -> C.
# (title, stage, dump title): --dump-ir prints the IR after each stage that has a dump title.
PIPELINE = [
    ("check options", _check_options, None),
    ("front end: model -> IR (frontend/), onnxruntime's decisions", _front_end, "frontend"),
    ("uint8 -> int8", _ir(uint8_to_int8), "uint8 -> int8 (zero points - 128, exact)"),
    ("dead-code elimination", _ir(eliminate_dead_code), "dead-code elimination"),
    ("layouts", _ir(assign_layouts), "layout (NHWC, zero-copy reshapes)"),
    ("kernel selection (ops/*.select, --optimize speed|size)", _select_kernels,
     "kernel selection (fast conv / depthwise / FC, scratch)"),
    ("execution order", _order, None),
    ("arena plan", _plan, None),
    ("layer parameters (ops/*.prepare)", _prepare, None),
    ("C emission (ops/*.emit, backend/)", _emit, None),
    ("report", _report, None),
]


def compile_model(path, numerics=None, name=None, input_shapes=None, dump=None,
                  hooks=False, io_buffers="arena", search_order=True, integrity=None,
                  io="model", depthwise_inplace=False, ort_threads=1,
                  optimize="speed", float_fallback=True, tuning=None,
                  stage_weights=True) -> Compiled:
    """tuning: None, or a tuning record's path or codegen/tuning/record.py's
    (choices, source) pair: each layer's kernel variant (`tinyaot tune`)."""
    choices, source = _tuning_choices(tuning)
    opt = Options(numerics, name, input_shapes, dump, hooks, io_buffers, search_order, integrity,
                  io, depthwise_inplace, ort_threads, optimize, float_fallback, choices, source,
                  stage_weights)
    b = _Build(path, opt)
    for title, stage, dump_title in PIPELINE:
        stage(b)
        if dump and dump_title:
            dump(dump_title, b.g)
    options = {"path": path, "numerics": opt.numerics, "input_shapes": input_shapes,
               "io_buffers": io_buffers, "ort_threads": opt.ort_threads, "optimize": optimize,
               "io": io, "float_fallback": float_fallback}
    if tuning is not None:
        options["tuning"] = tuning
    return Compiled(b.g, b.plan, b.params, b.module, opt.numerics, b.report, options)


def _tuning_choices(tuning):
    if tuning is None:
        return None, None
    if isinstance(tuning, tuple):
        return tuning
    from .tuning.record import load_choices  # a record file: its choices
    return load_choices(tuning), str(tuning)


def write_outputs(c: Compiled, out_dir):
    """Write <name>.c, <name>.h, tinyaot_model_config.h (the fast kernels' specializations,
    kernels/specialize.py) and report.json atomically (all or nothing)."""
    out_dir = os.path.abspath(str(out_dir))
    parent = os.path.dirname(out_dir) or "."
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tinyaot-", dir=parent)
    try:
        with open(os.path.join(tmp, f"{c.module.name}.c"), "w") as f:
            f.write(c.module.source)
        with open(os.path.join(tmp, f"{c.module.name}.h"), "w") as f:
            f.write(c.module.header)
        with open(os.path.join(tmp, specialize.HEADER), "w") as f:  # the kernels' build
            f.write(specialize.header_text(c.module.spec, [c.module.name]))
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
