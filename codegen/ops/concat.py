"""concat: ONNX Concat between DequantizeLinear and QuantizeLinear, or of integer tensors.

An input with the output's quantization is copied; another is requantized through a
256-entry table. ort: DequantizeLinear -> float Concat -> QuantizeLinear per element (MLAS
formulas; ORT's QLinearConcat builds the same table); tflite: TFLM CONCATENATION copies
bytes, so an input whose quantization differs gets what the converter's int8 QUANTIZE in
front of it would compute (reference Requantize), tabulated. All inputs share the output's
perm (traits "same"); the kernel copies `outer` rows of each input's chunk. An input the
planner placed in its slice of the output (planner/concat_slices.py) is not copied at all.
An input may be a float result still pending (a Conv's, say): it is quantized with the
output's parameters, which is exact (frontend/qdq_lowering.py). A Concat of the integer
tensors themselves (tf2onnx writes Q -> Concat -> DQ) copies them: inputs read with other
parameters become views with the first one's.
TFLite CONCATENATION and PACK are lowered here too; TFLM's CONCATENATION refuses inputs
quantized unlike the output in its Prepare, so their lowering does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TinyAotError
from ..numerics.quant import act_bounds, qrange, requant_values
from .base import ANY, Op, Pending, Traits, Unsupported
from .onnx_move import integer_sources, reinterpret
from .physical import physical


@dataclass
class ConcatParams:
    tables: list  # per input: int8[256] indexed by q + 128, or None (a byte copy)
    axis: int


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    axis = int(attrs.get("axis", 1)) % len(shape)
    ints = integer_sources(lw, [i for i in ins if i], name)
    if ints is not None:  # a Concat of the integers themselves: a copy, no quantization
        q = ints[0].q
        xs = [t.name if t.q.same_as(q) else reinterpret(lw, t, q, name).name for t in ints]
        lw.add_int_tensor(out, shape, ints[0].dtype, q)
        lw.emit("concat", name, xs, [out], {"axis": axis})
        return
    xs = [lw.exact_input(i, name) for i in ins if i]
    lw.pending[out] = Pending("concat", name, xs, {"axis": axis}, shape=shape, commutes=ANY,
                              fuses_clamp=False)


def _tflite_same_q(tl, ins, y_idx, builtin):
    for i in ins:
        if tl.is_const(i):
            raise Unsupported(f"{builtin} of a constant is not supported")
        if not tl.same_q(i, y_idx):  # TFLM copies bytes: its Prepare refuses other scales
            raise Unsupported("every input must be quantized like the output")


def lower_tflite_concatenation(tl, op):
    ins = [i for i in op.inputs if i >= 0]
    y_idx = op.outputs[0]
    tl.check_int8(op, y_idx, *ins)
    if tl.act_attrs(op) != {"act_lo": None, "act_hi": None}:
        raise Unsupported("CONCATENATION with a fused activation is not supported")
    _tflite_same_q(tl, ins, y_idx, op.builtin)
    rank = len(tl.tensor(y_idx).shape)
    lay = "nchw" if rank == 4 and all(tl.layout_of(i) == "nchw" for i in ins) else "plain"
    axis = tl.ir_axis(int(op.options.get("axis", 0)), lay, rank)
    xs = [tl.act(i, lay) for i in ins]
    tl.emit("concat", tl.node_name(op), xs, [tl.new_act(y_idx, lay)],
            {"axis": axis, "act_lo": None, "act_hi": None})


def lower_tflite_pack(tl, op):
    """PACK: each input reshaped with a unit axis (zero copy), then one concat."""
    ins = [i for i in op.inputs if i >= 0]
    y_idx = op.outputs[0]
    tl.check_int8(op, y_idx, *ins)
    _tflite_same_q(tl, ins, y_idx, op.builtin)
    axis = int(op.options.get("axis", 0)) % len(tl.tensor(y_idx).shape)
    xs = []
    for i in ins:
        x = tl.act(i, "plain")
        shape = list(tl.graph.tensors[x].shape)
        shape.insert(axis, 1)
        xs.append(tl.reshape_to(x, shape, f"{x}@pack#{op.index}"))
    tl.emit("concat", tl.node_name(op), xs, [tl.new_act(y_idx)],
            {"axis": axis, "act_lo": None, "act_hi": None})


class Concat(Op):
    name = "concat"
    traits = Traits(layout="same")
    onnx = {"Concat": lower_onnx}
    tflite = {"CONCATENATION": lower_tflite_concatenation, "PACK": lower_tflite_pack}

    def prepare(self, g, n, numerics):
        y = g.tensors[n.outputs[0]]
        lo, hi = act_bounds(numerics, y, n.attrs.get("act_lo"), n.attrs.get("act_hi"))
        if (lo, hi) != qrange(y.dtype) or y.dtype != "int8":
            raise TinyAotError("Concat with a fused activation or a non-int8 output",
                               model=g.source, node=n.name)
        xs = [g.tensors[i] for i in n.inputs]
        tables = [None if x.q.same_as(y.q) and x.dtype == y.dtype
                  else requant_values(x, y, numerics).astype(np.int8) for x in xs]
        return ConcatParams(tables, n.attrs["axis"])

    def reference(self, g, n, ins, p, numerics):
        parts = [np.asarray(x, dtype=np.int32) if t is None else t[np.asarray(x, dtype=np.int32) + 128]
                 for x, t in zip(ins, p.tables)]
        return np.concatenate(parts, axis=p.axis)

    def emit(self, em, lid, n, p, info):
        g = em.g
        y = g.tensors[n.outputs[0]]
        odims, operm = physical(y)
        k = list(operm).index(p.axis)
        outer = int(np.prod(odims[:k], dtype=np.int64))
        inner = int(np.prod(odims[k + 1:], dtype=np.int64))
        chunks, tabs, ptrs = [], [], []
        in_place = _inputs_in_their_slice(em, n, p, outer)
        for j, (i, t) in enumerate(zip(n.inputs, p.tables)):
            x = g.tensors[i]
            chunks.append(int(x.shape[p.axis]) * inner)
            tabs.append("NULL" if t is None else em.const("int8_t", f"{lid}_t{j}", t))
            ptrs.append("NULL" if j in in_place else em.ptr(i))
        m = len(n.inputs)
        info["zero_copy_inputs"] = sorted(in_place)
        if len(in_place) == m:  # every producer wrote its slice: nothing left to do
            info["kernel"] = "none (zero-copy)"
            em.body.append(f"    /* {n.name}: concat in place, every input already in its slice */")
            return
        em.consts.append(f"static const int32_t {lid}_chunks[{m}] = {{ {', '.join(map(str, chunks))} }};\n")
        em.consts.append(f"static const int8_t *const {lid}_tabs[{m}] = {{ {', '.join(tabs)} }};\n")
        em.body.append("    {")
        em.body.append(f"        const int8_t *const {lid}_in[{m}] = {{ {', '.join(ptrs)} }};")
        info["kernel"] = "tinyaot_concat_s8"
        em.call("tinyaot_concat_s8", [str(outer), str(m), f"{lid}_chunks", f"{lid}_in",
                                      f"{lid}_tabs", em.ptr(y.name)])
        em.body.append("    }")


def _inputs_in_their_slice(em, n, p, outer):
    """Inputs the plan placed exactly in their slice of the output (concat_slices.py):
    byte-identical copies (no table) at the output's offset + the bytes before them."""
    bo = em.plan.where[n.outputs[0]]
    if outer != 1 or bo.external is not None:
        return set()
    res, pos = set(), 0
    for j, (i, t) in enumerate(zip(n.inputs, p.tables)):
        b = em.plan.where[i]
        if t is None and b.external is None and b.offset == bo.offset + pos:
            res.add(j)
        pos += em.g.tensors[i].nbytes
    return res


OP = Concat()
