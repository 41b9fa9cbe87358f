"""add: elementwise int8 a + b (ONNX Add).

Operands: two activations of one shape, or an activation and a quantized constant
(DequantizeLinear of an int8 / uint8 initializer, quantized per tensor) that broadcasts onto
it: one value, a row [N] onto [M, N] (the bias onnxruntime's quantize_static adds after a
MatMul as its own QLinearAdd, or DQ -> Add -> Q), one value per channel ([C, 1, 1] on NCHW,
[C] on NHWC: an unfolded BatchNorm, a conv bias added on its own), any broadcast up to rank 4.
A broadcast constant is stored in the output's physical order and the kernel runs once per
innermost run of it (_const_runs). The constant becomes operand b; when the ONNX node had it first,
`swapped` records it (onnxruntime's QLinearAdd folds its operands in ONNX order). An int32
constant added to a pending conv / FC without a bias becomes that layer's bias instead
(ops/pending_folds.py, asked before this lowering).

TFLite ADD and SUB (a `subtract` node: TFLM's SUB is ADD's AddFunc with input 2's multiplier
negated) are lowered here too.

Per numerics (the record's use_float):
  0  TFLite ADD: both inputs rescaled to a common fixed point (left_shift 20), summed,
     rescaled to the output;
  1  DequantizeLinear -> onnxruntime's float Add -> QuantizeLinear;
  2  onnxruntime's QLinearAdd where ORT fuses the group (frontend/ort_facts.py: ort_fused),
     MLAS's fixed form (numerics/ort_qlinear_add.py); a one-value b is folded first;
  3  the same for a per-channel constant whose value a kernel call repeats (b_stride 0 over
     an NCHW plane): MLAS folds only a one-value operand, so the kernel must not.
Under --optimize speed the layer runs tinyaot_add_fast_s8 with compile-time tables of each
input's rescaled value (kernels/fast_pack.py); under size, tinyaot_add_s8 computes them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from ..errors import TinyAotError
from ..kernels.c_format import c_struct
from ..kernels.fast_pack import add_tables, ort_add_tables
from ..numerics import ort_float as of
from ..numerics import tflite_fixedpoint as tfp
from ..numerics.ort_qlinear_add import qlinear_add, qlinear_add_params
from ..numerics.quant import act_bounds
from .base import Op, Pending, Traits, Unsupported, layer_mode
from .physical import physical

F32 = np.float32
TFLITE, ORT_FLOAT, ORT_QLINEAR = 0, 1, 2
STAGE_MIN_READS = 16  # speed builds: tables read this often are staged (select)
ORT_QLINEAR_EACH = 3  # ORT_QLINEAR with a constant b that a kernel call repeats (stride 0)


@dataclass
class AddParams:  # tinyaot_add_params_t
    CTYPE: ClassVar[str] = "tinyaot_add_params_t"
    a_zp: int
    b_zp: int
    out_zp: int
    act_min: int
    act_max: int
    a_scale: float = 0.0  # ORT_FLOAT; ORT_QLINEAR: s_a / s_y
    b_scale: float = 0.0  # ORT_FLOAT; ORT_QLINEAR: s_b / s_y (0 for a folded scalar)
    out_scale: float = 0.0  # ORT_FLOAT
    use_float: int = TFLITE  # TFLITE, ORT_FLOAT or ORT_QLINEAR
    left_shift: int = 0  # TFLITE
    a_mult: int = 0
    a_shift: int = 0
    b_mult: int = 0
    b_shift: int = 0
    out_mult: int = 0
    out_shift: int = 0
    qlinear_fixed: float = 0.0  # ORT_QLINEAR: the zero points folded in
    u8_shift: int = 0  # ORT_QLINEAR: 128 when onnxruntime ran the add on uint8
    a_lut: str = "NULL"  # C: tinyaot_add_fast_s8's tables (emit), NULL: computed
    b_lut: str = "NULL"
    out_rq: str = "NULL"


# ---- ONNX ------------------------------------------------------------------------------

def _const_or_act(lw, x, name):
    if x in lw.qrepr and lw.graph.tensors[lw.qrepr[x]].is_const:
        return lw.qrepr[x], True
    return lw.act_input(x, name), False


def add_operands(lw, ins, name, shape):
    """-> (activation-or-a, constant-or-b, IR attrs) of an IR `add` node."""
    (a, ca), (b, cb) = (_const_or_act(lw, x, name) for x in ins[:2])
    if not (ca or cb):
        return a, b, {}
    if ca and cb:
        raise Unsupported("Add of two constants")
    act, const = (b, a) if ca else (a, b)
    ct, at = lw.graph.tensors[const], lw.graph.tensors[act]
    if ct.dtype not in ("int8", "uint8") or ct.q.per_channel:
        raise Unsupported(f"constant '{const}' must be int8 / uint8 quantized per tensor")
    if ca and ct.size != 1:
        raise Unsupported("Add with a constant first operand that is not a scalar")
    if tuple(at.shape) != tuple(shape):
        raise Unsupported("Add where the constant broadcasts the activation to a larger shape")
    if ct.size != 1:
        dims = [1] * (len(at.shape) - len(ct.shape)) + list(ct.shape)
        if len(ct.shape) > len(at.shape) or any(d not in (1, x) for d, x in zip(dims, at.shape)):
            raise Unsupported(f"Add of a constant of shape {list(ct.shape)} that does not "
                              f"broadcast onto the activation's {list(at.shape)}")
        if len(at.shape) > 4:
            raise Unsupported("Add of a constant onto a tensor of rank > 4")
    return act, const, {"swapped": bool(ca)}


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    a, b, a_attrs = add_operands(lw, ins, name, shape)
    lw.pending[out] = Pending("add", name, [a, b], a_attrs, shape=shape)


# ---- TFLite -------------------------------------------------------------------------------

def lower_tflite(tl, op):
    """ADD / SUB of two activations of one shape, or of an activation and an int8 constant
    (a scalar, or a row [N] onto [M, N]); SUB is TFLite's ADD with input 2's multiplier
    negated (`subtract`)."""
    a_idx, b_idx, y_idx = tl.inp(op, 0), tl.inp(op, 1), op.outputs[0]
    tl.check_int8(op, a_idx, b_idx, y_idx)
    attrs = tl.act_attrs(op)
    ca, cb = tl.is_const(a_idx), tl.is_const(b_idx)
    if ca and cb:
        raise Unsupported(f"{op.builtin} of two constants")
    if op.builtin == "SUB":
        if ca:
            raise Unsupported("SUB of a constant minus an activation is not supported")
        attrs["subtract"] = True
    if ca or cb:
        act_idx, c_idx = (b_idx, a_idx) if ca else (a_idx, b_idx)
        c, at = tl.tensor(c_idx), tl.tensor(act_idx)
        dims = list(c.shape)
        while dims and dims[0] == 1:
            dims.pop(0)
        if c.data.size != 1 and (ca or len(at.shape) != 2 or dims != [at.shape[1]]):
            raise Unsupported(f"{op.builtin} of a constant: only a scalar, or a row [N] onto "
                              "[M, N]")
        lay = tl.layout_of(act_idx) if c.data.size == 1 else "plain"
        ins = [tl.act(act_idx, lay), tl.int8_const(c_idx)]
        attrs["swapped"] = bool(ca)
    else:
        ins, lay = tl.act_pair(op)
    tl.emit("add", tl.node_name(op), ins, [tl.new_act(y_idx, lay)], attrs)


# ---- numerics --------------------------------------------------------------------------

def _as_mapping(p):
    """The record as the numerics / kernels helpers read it (a dict of its fields, `mode`
    for use_float)."""
    return dict(vars(p), mode=p.use_float)


def add(a, b, p):
    """a + b (b broadcast), as p.use_float says."""
    if p.use_float in (ORT_QLINEAR, ORT_QLINEAR_EACH):  # onnxruntime QLinearAdd (MLAS)
        return qlinear_add(a, b, _as_mapping(p))
    if p.use_float == ORT_FLOAT:
        fa = of.dequantize(a, p.a_scale, p.a_zp)
        fb = of.dequantize(b, p.b_scale, p.b_zp)
        return of.quantize((fa + fb).astype(F32), p.out_scale, p.out_zp, p.act_min, p.act_max)
    return tfp.add_int8(a, b, _as_mapping(p), p.act_min, p.act_max)


class Add(Op):
    name = "add"
    traits = Traits(layout="elementwise", inplace=(0, 1))
    onnx = {"Add": lower_onnx}
    tflite = {"ADD": lower_tflite, "SUB": lower_tflite}

    def select(self, g, n, optimize):
        # the fast kernel's two 1 KB tables (and the output record), read at random by the
        # input bytes: a copy in free arena bytes (planner/staged_weights.py) where each
        # entry is read STAGE_MIN_READS times on average
        n.attrs.pop("stage_candidate", None)
        if optimize == "speed" and g.tensors[n.outputs[0]].size >= STAGE_MIN_READS * 256:
            n.attrs["stage_candidate"] = [2 * 256 * 4 + 24]

    def prepare(self, g, n, numerics):
        a, b = (g.tensors[i] for i in n.inputs)
        y = g.tensors[n.outputs[0]]
        sa, za = a.q.scalar()
        sb, zb = b.q.scalar()
        sy, zy = y.q.scalar()
        lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
        if numerics != "ort":
            f = tfp.add_params(float(sa), za, float(sb), zb, float(sy), zy)
            if n.attrs.get("subtract"):  # TFLite SUB: AddFunc with input 2 scaled negatively
                f["b_mult"] = -f["b_mult"]
            return AddParams(act_min=lo, act_max=hi, use_float=TFLITE, **f)
        if n.attrs.get("subtract"):
            raise TinyAotError("TFLite SUB: only --numerics tflite", model=g.source, node=n.name)
        if not n.attrs.get("ort_fused", False):
            return AddParams(za, zb, zy, lo, hi, a_scale=sa, b_scale=sb, out_scale=sy,
                             use_float=ORT_FLOAT)
        # MLAS QLinearAdd, not the float formula (numerics/ort_qlinear_add.py)
        u8 = n.attrs.get("ort_fused_u8", False) or bool(getattr(y, "zp_shift", 0))
        scalar = int(b.data.reshape(-1)[0]) if b.is_const and b.size == 1 else None
        f = qlinear_add_params((sa, za), (sb, zb), (sy, zy), u8, bool(n.attrs.get("swapped")),
                               scalar)
        mode = f["mode"]
        if scalar is None and b.is_const and _const_runs(g, n)[-1][1] == 0:
            # a per-channel constant whose value a kernel call repeats: MLAS folds only a
            # one-value operand, so the kernel must not fold the repeated one (mode 3)
            mode = ORT_QLINEAR_EACH
        return AddParams(za, zb, zy, lo, hi, a_scale=f["a_scale"], b_scale=f["b_scale"],
                         use_float=mode, qlinear_fixed=f["qlinear_fixed"],
                         u8_shift=f["u8_shift"])

    def reference(self, g, n, ins, p, numerics):
        return add(ins[0], ins[1], p)

    def emit(self, em, lid, n, p, info):
        a, b = (em.g.tensors[i] for i in n.inputs)
        y = em.g.tensors[n.outputs[0]]
        rows = 1  # b a row repeated over the leading dims (add_operands)
        runs = None  # a constant broadcast otherwise: (count, b stride) loops (_const_runs)
        if b.size == 1:
            stride = 0
        elif b.size == y.size and (not b.is_const or len(y.shape) <= 2):
            stride = 1
        elif b.is_const and len(y.shape) <= 2 and y.size % b.size == 0:
            stride, rows = 1, y.size // b.size
        else:
            runs = _const_runs(em.g, n)
            stride = runs[-1][1]
        speed = layer_mode(em, n) == "speed"  # size: tinyaot_add_s8 computes what the tables hold
        st = em.staging(n)  # planner/staged_weights.py: the tables read from the arena

        def table(name, values):
            return st.copy(em.const("int32_t", f"{lid}_{name}", values))
        if speed and p.use_float != TFLITE:
            tables = ort_add_tables(_as_mapping(p), stride == 0 and p.use_float != ORT_QLINEAR_EACH)
            if tables is not None:
                p = replace(p, a_lut=table("alut", tables[0]), b_lut=table("blut", tables[1]))
        elif speed:
            a_lut, b_lut, out_rq = add_tables(_as_mapping(p))
            p = replace(p, a_lut=table("alut", a_lut), b_lut=table("blut", b_lut),
                        out_rq="NULL" if out_rq is None else table("orq", out_rq))
        em.consts.append(c_struct(f"{lid}_p", p))
        kernel = "tinyaot_add_fast_s8" if speed else "tinyaot_add_s8"
        if p.use_float != TFLITE:  # ort: the fast kernel falls back to it without tables
            em.kernels.add("tinyaot_add_s8")
        info["kernel"] = kernel
        if runs is not None:
            return _emit_runs(em, lid, kernel, n, runs)
        pb = (em.const("int8_t", f"{lid}_b", b.data.reshape(-1).astype(np.int8)) if b.is_const
              else em.ptr(b.name))
        if rows == 1:
            em.call(kernel, [str(y.size), f"&{lid}_p", em.ptr(a.name), pb, str(stride),
                             em.ptr(y.name)])
            return
        m = b.size
        em.body.append(f"    for (int32_t r = 0; r < {rows}; ++r) {{")
        em.call(kernel, [str(m), f"&{lid}_p", f"{em.ptr(a.name)} + r * {m}", pb, "1",
                         f"{em.ptr(y.name)} + r * {m}"])
        em.body.append("    }")


def _b_physical(g, n):
    """The constant b broadcast onto the output: (its values in the output's physical order of
    the axes it varies along, its element stride along each physical axis of the output)."""
    b, y = g.tensors[n.inputs[1]], g.tensors[n.outputs[0]]
    r = len(y.shape)
    full = np.asarray(b.data).reshape([1] * (r - len(b.shape)) + list(b.shape))
    _, perm = physical(y)
    full = np.transpose(full, perm)  # physical axis order, b's own sizes
    strides, step = [0] * r, 1
    for k in range(r - 1, -1, -1):
        if full.shape[k] != 1:
            strides[k] = step
            step *= full.shape[k]
    return np.ascontiguousarray(full).reshape(-1), strides


def _const_runs(g, n):
    """The output's physical axes merged where b's stride allows, outermost first:
    [(count, b stride)]; the last one is a kernel call's n and b_stride (0 or 1)."""
    y = g.tensors[n.outputs[0]]
    dims, _ = physical(y)
    _, strides = _b_physical(g, n)
    runs = []
    for d, st in zip(dims, strides):
        if d == 1:
            continue
        if runs and ((runs[-1][1] == 0 and st == 0) or (st and runs[-1][1] == st * d)):
            runs[-1] = (runs[-1][0] * d, st)
        else:
            runs.append((d, st))
    return runs or [(1, 0)]  # b's innermost varying axis has stride 1: the last is 0 or 1


def _emit_runs(em, lid, kernel, n, runs):
    """One kernel call per innermost run of a constant broadcast, in a loop nest over the
    outer runs (indices i0, i1, ...): a and y advance by the run's elements, b by its stride."""
    a, y = em.g.tensors[n.inputs[0]], em.g.tensors[n.outputs[0]]
    values, _ = _b_physical(em.g, n)
    pb = em.const("int8_t", f"{lid}_b", values.astype(np.int8))
    count, stride = runs[-1]
    outer = runs[:-1]
    spans = [int(np.prod([c for c, _ in runs[k + 1:]], dtype=np.int64)) for k in range(len(outer))]
    y_off = " + ".join(f"i{k} * {sp}" for k, sp in enumerate(spans)) or "0"
    b_off = " + ".join(f"i{k} * {st}" for k, (_, st) in enumerate(outer) if st) or "0"
    for k, (c, _) in enumerate(outer):
        em.body.append(f"    for (int32_t i{k} = 0; i{k} < {c}; ++i{k}) {{")
    em.call(kernel, [str(count), f"&{lid}_p", f"{em.ptr(a.name)} + ({y_off})",
                     f"{pb} + ({b_off})", str(stride), f"{em.ptr(y.name)} + ({y_off})"])
    em.body.extend(["    }"] * len(outer))


OP = Add()
