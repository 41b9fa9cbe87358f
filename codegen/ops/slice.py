"""slice: a strided window of a tensor (ONNX Slice, and each piece of ONNX Split).

Both only move bytes, so the lowering turns each into `slice` IR nodes (one per Split
output) that copy a strided window of their input; everything about the window is shape
arithmetic on constants, done once here, as the ONNX spec defines it. A slice of a slice
(as torch exports x[a:b, ::c]) reads the first one's input directly: one copy, not two
(the unused middle slice is dead code). Slice / Split of a constant is folded; of a float
result still pending (a Conv's), each piece waits for its QuantizeLinear (a copy commutes
with quantization).
tinyaot_slice_s8 walks the window on the physical axes, so the output keeps the input's
perm (traits "same"); the copy is exact in both numerics.
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


class Slice(Op):
    name = "slice"
    traits = Traits(layout="same")
    onnx = {"Slice": lower_onnx, "Split": lower_onnx}

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
