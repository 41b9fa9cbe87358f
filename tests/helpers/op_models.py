"""Small QDQ models of one operator that more than one test file uses (the operator's own
tests in tests/ops/, the sanitizer builds in tests/kernels/)."""
from __future__ import annotations

import numpy as np

from tests.helpers.qdq_builder import QdqBuilder

F32 = np.float32

# ---------------------------------------------------------------- Concat (tests/ops/test_concat.py)

OUT_Q = (0.05, 2)


def concat_model(chans, qs, hw=(3, 4), conv=False, seed=0):
    """x [1, C0, H, W]; branch j: (1x1 conv to chans[j] | Relu) quantized with qs[j]."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("concat")
    x = b.dq("x", 0.04, 3)
    parts = []
    for j, (c, q) in enumerate(zip(chans, qs)):
        if conv:
            w, _ = b.weight(rng.normal(size=(c, chans[0], 1, 1)).astype(np.float32) * 0.4)
            f = b.op("Conv", [x, w])
        else:
            f = b.op("Relu", [x]) if j % 2 == 0 else b.op("LeakyRelu", [x], alpha=0.3)
        parts.append(b.dq(b.q(f, *q), *q))
    b.q(b.op("Concat", parts, axis=1), *OUT_Q, out="y")
    shape = (1, chans[0]) + hw
    return b.model("x", shape, "y", (1, sum(chans)) + hw), shape


# ---------------------------------------------------------------- PRelu (tests/ops/test_prelu.py)

X_Q, Y_Q = (0.04, 3), (0.05, -11)


def slope_values(n, seed):
    """n int8 slopes: the extremes and zero first, then random."""
    fixed = np.array([-128, 127, 0, 1, -1], np.int8)
    rng = np.random.default_rng(seed)
    v = rng.integers(-128, 128, size=n).astype(np.int8)
    v[:min(n, 5)] = fixed[:min(n, 5)]
    return v


def prelu_model(shape, s_shape, *, s_scale=0.011, s_zp=2, s_axis=None, after_conv=False,
                act=None, x_q=X_Q, y_q=Y_Q, seed=0):
    """x [shape] -> [Conv 1x1 ->] PRelu(slope [s_shape]) [-> Relu / Clip] -> y."""
    rng = np.random.default_rng(seed)
    b = QdqBuilder("prelu")
    x = b.dq("x", *x_q)
    if after_conv:
        c = shape[1]
        w, _ = b.weight(rng.normal(size=(c, c, 1, 1)).astype(F32) * 0.5)
        x = b.dq(b.q(b.op("Conv", [x, w]), 0.06, -5), 0.06, -5)
    alpha = slope_values(int(np.prod(s_shape, dtype=np.int64)), seed).reshape(s_shape)
    s = b.dq(b.const_int(alpha, np.int8), s_scale, s_zp, axis=s_axis)
    y = b.op("PRelu", [x, s])
    if act == "relu":
        y = b.op("Relu", [y])
    elif act == "clip":
        y = b.op("Clip", [y, b.const_int(F32(-0.3), F32), b.const_int(F32(1.5), F32)])
    b.q(y, *y_q, out="y")
    return b.model("x", shape, "y", shape), alpha
