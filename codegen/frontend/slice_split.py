"""ONNX Slice and Split -> per-axis (start, step, length), as the spec defines them.

Both only move bytes, so the lowering turns each into `slice` IR nodes (one
per Split output) that copy a strided window of their input. Everything here
is pure shape arithmetic on constants, done once at compile time.
"""
from __future__ import annotations

import numpy as np

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
    """numpy: the elements of x the window selects (reference and const folding)."""
    idx = tuple(slice(s, s + st * n if s + st * n >= 0 else None, st) if n else slice(0, 0)
                for s, st, n in zip(starts, steps, out_shape))
    y = np.asarray(x)[idx]
    assert y.shape == tuple(out_shape), (y.shape, out_shape)
    return y
