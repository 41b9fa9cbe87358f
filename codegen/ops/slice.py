"""slice: a strided window of a tensor (ONNX Slice, and each piece of ONNX Split).

Both only move bytes, so the lowering turns each into `slice` IR nodes (one per Split
output) that copy a strided window of their input; everything about the window is shape
arithmetic on constants, done once here, as the ONNX spec defines it. A slice of a slice
(as torch exports x[a:b, ::c]) reads the first one's input directly: one copy, not two
(the unused middle slice is dead code). Slice / Split of a constant is folded; of a float
result still pending (a Conv's), each piece waits for its QuantizeLinear (a copy commutes
with quantization).
tinyaot_slice_s8 walks the window on the physical axes, so the output keeps the input's
perm (traits "same"); the copy is exact in both numerics. TFLite STRIDED_SLICE, SLICE,
SPLIT, SPLIT_V and UNPACK are lowered here too (a window each, reshaped where the builtin
drops an axis); frontend/tflite/fold.py folds STRIDED_SLICE and SLICE of constants with the
same window arithmetic.
"""
from __future__ import annotations

import numpy as np

from ..errors import TinyAotError
from .base import SAME, Deferred, Op, Pending, Traits, Unsupported
from .onnx_move import move_source
from .physical import dims4, int32_array, physical

INT_MAX = 2**63 - 1


class SliceError(ValueError):
    """The Slice/Split is malformed or not static (message names the problem)."""


def _ints(v):
    return [int(x) for x in np.asarray(v).reshape(-1)]


def slice_window(shape, starts, ends, axes=None, steps=None):
    """ONNX Slice (opset 10+) on a tensor of `shape` -> (starts, steps, out_shape).

    Negative starts/ends count from the end; they are clamped to [0, dim] for
    a positive step and [-1, dim - 1] for a negative one (so ends=-INT_MAX
    reaches index 0). Axes not named keep start 0, step 1, the full length.
    """
    rank = len(shape)
    starts, ends = _ints(starts), _ints(ends)
    axes = _ints(axes) if axes is not None else list(range(len(starts)))
    steps = _ints(steps) if steps is not None else [1] * len(starts)
    if not (len(starts) == len(ends) == len(axes) == len(steps)):
        raise SliceError("starts, ends, axes and steps must have the same length")
    out_start = [0] * rank
    out_step = [1] * rank
    out_shape = list(shape)
    seen = set()
    for s, e, a, st in zip(starts, ends, axes, steps):
        if a < -rank or a >= rank:
            raise SliceError(f"axis {a} out of range for rank {rank}")
        a %= rank
        if a in seen:
            raise SliceError(f"axis {a} repeated")
        seen.add(a)
        if st == 0:
            raise SliceError("step 0")
        dim = int(shape[a])
        s = s + dim if s < 0 else s
        e = e + dim if e < 0 else e
        if st > 0:
            s = min(max(s, 0), dim)
            e = min(max(e, 0), dim)
            n = max(0, (e - s + st - 1) // st)
        else:
            s = min(max(s, -1), dim - 1)
            e = min(max(e, -1), dim - 1)
            n = max(0, (s - e + (-st) - 1) // (-st))
        out_start[a] = s if n else 0
        out_step[a] = st
        out_shape[a] = n
    return tuple(out_start), tuple(out_step), tuple(out_shape)


def split_sizes(dim, n_outputs, split=None, num_outputs=None):
    """ONNX Split: the lengths of the pieces along the axis.

    `split` given: those lengths (must add up to dim). Otherwise equal pieces;
    with opset 18 `num_outputs`, the last piece is smaller when dim does not
    divide (ceil(dim / n) each).
    """
    if split is not None:
        sizes = _ints(split)
        if len(sizes) != n_outputs:
            raise SliceError(f"split has {len(sizes)} values for {n_outputs} outputs")
        if sum(sizes) != dim or min(sizes) < 0:
            raise SliceError(f"split {sizes} does not add up to the axis length {dim}")
        return sizes
    n = int(num_outputs) if num_outputs is not None else n_outputs
    if n != n_outputs or n <= 0:
        raise SliceError(f"num_outputs={n} but the node has {n_outputs} outputs")
    if num_outputs is None:
        if dim % n:
            raise SliceError(f"axis length {dim} does not split into {n} equal parts")
        return [dim // n] * n
    chunk = -(-dim // n)
    sizes = [min(chunk, max(0, dim - i * chunk)) for i in range(n)]
    return sizes


def split_windows(shape, axis, sizes):
    """One (starts, steps, out_shape) slice window per Split output."""
    out = []
    off = 0
    for sz in sizes:
        starts = [0] * len(shape)
        starts[axis] = off
        oshape = list(shape)
        oshape[axis] = sz
        out.append((tuple(starts), (1,) * len(shape), tuple(oshape)))
        off += sz
    return out


def apply_window(x, starts, steps, out_shape):
    """numpy: the elements of x the window selects (the oracle and constant folding)."""
    idx = tuple(slice(s, s + st * n if s + st * n >= 0 else None, st) if n else slice(0, 0)
                for s, st, n in zip(starts, steps, out_shape))
    y = np.asarray(x)[idx]
    assert y.shape == tuple(out_shape), (y.shape, out_shape)
    return y


def onnx_windows(lw, node, name, attrs, shape):
    """Slice / Split on a tensor of `shape` -> one (starts, steps, out_shape) per output."""
    ins = list(node.input) + [""] * 5
    try:
        if node.op_type == "Slice":
            def opt(i, what):  # opset 10+ (the oldest tinyaot reads): constant inputs
                return lw.const(ins[i], name, f"Slice {what}") if ins[i] else None
            if not ins[1] or not ins[2]:
                raise SliceError("starts and ends are required")
            windows = [slice_window(shape, opt(1, "starts"), opt(2, "ends"), opt(3, "axes"),
                                    opt(4, "steps"))]
        else:
            axis = int(attrs.get("axis", 0))
            if axis < -len(shape) or axis >= len(shape):
                raise SliceError(f"axis {axis} out of range for rank {len(shape)}")
            axis %= len(shape)
            split = attrs.get("split")
            if lw.opset >= 13 and ins[1]:
                split = lw.const(ins[1], name, "Split split")
            sizes = split_sizes(int(shape[axis]), len(node.output), split,
                                attrs.get("num_outputs"))
            windows = split_windows(shape, axis, sizes)
    except (SliceError, KeyError) as e:
        raise lw.err(f"invalid {node.op_type}: {e}", node=name) from None
    for o, (_, _, oshape) in zip(node.output, windows):
        if o and o in lw.shapes and tuple(lw.shapes[o][0]) != tuple(oshape):
            raise lw.err(f"{node.op_type} output shape {list(oshape)} differs from the "
                         f"model's {list(lw.shapes[o][0])}", node=name, tensor=o)
        if o and 0 in oshape:
            raise Unsupported(f"{node.op_type} output '{o}' is empty")
    if len(shape) > 4:
        raise Unsupported(f"{node.op_type} of a rank-{len(shape)} tensor (at most 4)")
    return windows


def lower_onnx(lw, node, name, attrs, ins, out, shape):
    if ins[0] in lw.pending or ins[0] in lw.materialized:  # a float result still pending
        windows = onnx_windows(lw, node, name, attrs, lw.shape_of(ins[0], name))
        for j, (o, (starts, steps, oshape)) in enumerate(zip(node.output, windows)):
            if o:
                lw.pending[o] = Pending("slice", name if len(node.output) == 1 else f"{name}:{j}",
                                        [Deferred(ins[0])], {"starts": starts, "steps": steps},
                                        shape=oshape, commutes=SAME, fuses_clamp=False)
        return
    src = move_source(lw, ins[0])
    if src is None:  # a constant: folded
        x = np.asarray(lw.consts[ins[0]])
        for o, w in zip(node.output, onnx_windows(lw, node, name, attrs, x.shape)):
            if o:
                lw.consts[o] = apply_window(x, *w)
        return
    src, float_out = src
    windows = onnx_windows(lw, node, name, attrs, src.shape)
    for j, (o, (starts, steps, oshape)) in enumerate(zip(node.output, windows)):
        if not o:
            continue
        t = lw.add_int_tensor(o if not float_out else f"{o}@q", oshape, src.dtype, src.q)
        root = src.name
        # lw.windows: slice output -> (its input, starts, steps), kept through Q(DQ(x))
        if root in lw.windows:  # compose: index i of this window is
            root, s1, t1 = lw.windows[root]  # s1 + t1 * (start + step * i)
            starts = tuple(a + b * c for a, b, c in zip(s1, t1, starts))
            steps = tuple(b * c for b, c in zip(t1, steps))
        lw.windows[t.name] = (root, starts, steps)
        lw.emit("slice", name if len(node.output) == 1 else f"{name}:{j}", [root],
                [t.name], {"starts": starts, "steps": steps})
        if float_out:
            lw.qrepr[o] = t.name


# ---- TFLite ---------------------------------------------------------------------------

def _bit(mask, i):
    return bool((int(mask) >> i) & 1)


def _tflite_ints(tl, op, k, what):
    return np.asarray(tl.const(op.inputs[k], what)).reshape(-1)


def tflite_strided_slices(tl, op, shape):
    """STRIDED_SLICE (begin / end / strides constants and masks) on a tensor of `shape` ->
    one python slice per axis; a shrunk axis becomes a slice of length 1."""
    o = op.options
    if int(o.get("ellipsis_mask", 0)) or int(o.get("new_axis_mask", 0)):
        raise Unsupported("STRIDED_SLICE with an ellipsis or new-axis mask is not supported")
    begin = _tflite_ints(tl, op, 1, "begin")
    end = _tflite_ints(tl, op, 2, "end")
    strides = (_tflite_ints(tl, op, 3, "strides") if len(op.inputs) > 3 and op.inputs[3] >= 0
               else np.ones_like(begin))
    if not (len(begin) == len(end) == len(strides)) or len(begin) > len(shape):
        raise Unsupported("STRIDED_SLICE begin/end/strides do not match the input rank")
    if bool(o.get("offset", False)):
        end = begin + end
    out = []
    for i, dim in enumerate(shape):
        if i >= len(begin):
            out.append(slice(None))
            continue
        b, e, st = int(begin[i]), int(end[i]), int(strides[i])
        if st == 0:
            raise Unsupported("STRIDED_SLICE stride 0")
        if _bit(o.get("shrink_axis_mask", 0), i):
            b = b + dim if b < 0 else b
            if not 0 <= b < dim:
                raise Unsupported(f"STRIDED_SLICE index {begin[i]} out of range for axis {i}")
            out.append(slice(b, b + 1, 1))
            continue
        out.append(slice(None if _bit(o.get("begin_mask", 0), i) else b,
                         None if _bit(o.get("end_mask", 0), i) else e, st))
    return out


def tflite_slice_slices(tl, op, shape):
    """SLICE (begin, size constants; size -1: to the end) -> one python slice per axis."""
    begin = _tflite_ints(tl, op, 1, "begin")
    size = _tflite_ints(tl, op, 2, "size")
    if len(begin) != len(shape) or len(size) != len(shape):
        raise Unsupported("SLICE begin/size do not match the input rank")
    out = []
    for dim, b, n in zip(shape, begin, size):
        b, n = int(b), int(n)
        e = dim if n == -1 else b + n
        if b < 0 or e > dim or e < b:
            raise Unsupported(f"SLICE window [{b}, {e}) outside an axis of {dim}")
        out.append(slice(b, e, 1))
    return out


def _python_window(shape, slices):
    """Python slices -> (starts, steps, out_shape) of a slice node."""
    starts, steps, out = [], [], []
    for dim, sl in zip(shape, slices):
        pos = np.arange(dim)[sl]
        starts.append(int(pos[0]) if pos.size else 0)
        steps.append(int(sl.step or 1))
        out.append(int(pos.size))
    return starts, steps, out


def _tflite_slice_out(tl, x, window, y_idx, name):
    """The window (starts, steps, full-rank shape) of IR tensor x into output y_idx,
    reshaped when the builtin drops axes."""
    starts, steps, wshape = window
    if 0 in wshape:
        raise Unsupported(f"output '{tl.tensor(y_idx).name}' is empty")
    y = tl.new_act(y_idx)
    a = {"starts": tuple(starts), "steps": tuple(steps)}
    if tuple(wshape) == tuple(tl.graph.tensors[y].shape):
        tl.emit("slice", name, [x], [y], a)
        return
    w = tl.like(y, wshape, f"{y}@window")
    tl.emit("slice", name, [x], [w], a)
    tl.emit("reshape", f"{name}@shape", [w], [y])


def _tflite_input(tl, op, x_idx, outs):
    tl.check_int8(op, x_idx, *outs)
    shape = tl.tensor(x_idx).shape
    if len(shape) > 4:
        raise Unsupported(f"{op.builtin} of a rank-{len(shape)} tensor (at most 4)")
    return shape, tl.act(x_idx, "plain")


def lower_tflite_slice(tl, op):
    """STRIDED_SLICE / SLICE: one window."""
    x_idx, y_idx = tl.inp(op, 0), op.outputs[0]
    shape, x = _tflite_input(tl, op, x_idx, [y_idx])
    slices = (tflite_strided_slices if op.builtin == "STRIDED_SLICE" else tflite_slice_slices)(
        tl, op, shape)
    _tflite_slice_out(tl, x, _python_window(shape, slices), y_idx, tl.node_name(op))


def lower_tflite_split(tl, op):
    """SPLIT(axis, input) / SPLIT_V(input, size_splits, axis): one window per output."""
    if op.builtin == "SPLIT":
        ax_idx, x_idx, sizes = tl.inp(op, 0), tl.inp(op, 1), None
    else:
        x_idx, sz_idx, ax_idx = tl.inp(op, 0), tl.inp(op, 1), tl.inp(op, 2)
        sizes = [int(v) for v in np.asarray(tl.const(sz_idx, "the sizes")).reshape(-1)]
    outs = list(op.outputs)
    shape, x = _tflite_input(tl, op, x_idx, outs)
    axis = int(np.asarray(tl.const(ax_idx, "the axis")).reshape(-1)[0]) % len(shape)
    dim = shape[axis]
    if sizes is None:
        if dim % len(outs):
            raise Unsupported(f"axis length {dim} does not split into {len(outs)} parts")
        sizes = [dim // len(outs)] * len(outs)
    if -1 in sizes:
        sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
    if sum(sizes) != dim or len(sizes) != len(outs):
        raise Unsupported(f"split sizes {sizes} do not add up to {dim}")
    for k, (o, w) in enumerate(zip(outs, split_windows(shape, axis, sizes))):
        _tflite_slice_out(tl, x, w, o, f"{tl.node_name(op)}:{k}")


def lower_tflite_unpack(tl, op):
    """UNPACK along an axis: one window of length 1 per output, the axis dropped."""
    x_idx, outs = tl.inp(op, 0), list(op.outputs)
    shape, x = _tflite_input(tl, op, x_idx, outs)
    axis = int(op.options.get("axis", 0)) % len(shape)
    if len(outs) != shape[axis]:
        raise Unsupported(f"{len(outs)} outputs for an axis of length {shape[axis]}")
    for k, (o, w) in enumerate(zip(outs, split_windows(shape, axis, [1] * shape[axis]))):
        _tflite_slice_out(tl, x, w, o, f"{tl.node_name(op)}:{k}")


class Slice(Op):
    name = "slice"
    traits = Traits(layout="same")
    onnx = {"Slice": lower_onnx, "Split": lower_onnx}
    tflite = {"STRIDED_SLICE": lower_tflite_slice, "SLICE": lower_tflite_slice,
              "SPLIT": lower_tflite_split, "SPLIT_V": lower_tflite_split,
              "UNPACK": lower_tflite_unpack}

    def prepare(self, g, n, numerics):
        x = g.tensors[n.inputs[0]]
        y = g.tensors[n.outputs[0]]
        if x.dtype != y.dtype or (x.q is not None and y.q is not None and not x.q.same_as(y.q)):
            raise TinyAotError("Slice output must keep the input's type and quantization",
                               model=g.source, node=n.name)
        return None  # nothing to prepare: the window is in the node's attrs

    def reference(self, g, n, ins, p, numerics):
        return apply_window(ins[0], n.attrs["starts"], n.attrs["steps"],
                            g.tensors[n.outputs[0]].shape)

    def emit(self, em, lid, n, p, info):
        """The window on the physical axes (the output keeps the input's perm)."""
        x = em.g.tensors[n.inputs[0]]
        y = em.g.tensors[n.outputs[0]]
        idims, perm = physical(x)
        odims, _ = physical(y)
        starts = [n.attrs["starts"][a] for a in perm]
        steps = [n.attrs["steps"][a] for a in perm]
        vals = dims4(idims, 1) + dims4(odims, 1) + dims4(starts, 0) + dims4(steps, 1)
        info["kernel"] = "tinyaot_slice_s8"
        em.call("tinyaot_slice_s8", [int32_array(em, f"{lid}_d", vals), em.ptr(x.name),
                                     em.ptr(y.name)])


OP = Slice()
