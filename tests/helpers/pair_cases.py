"""Cases of tinyaot_convolve_1x1_w8_s8 (the 1x1 pair conv) for its tests: a layer's
fields, packed weights and records, and the numpy oracle's outputs
(codegen/ops/conv2d.py: conv2d_int)."""
from __future__ import annotations

import numpy as np

from codegen.kernels.fast_pack import pack_conv_pairs, pair_records, smlal_requant
from tests.helpers.kernels_cffi import conv_dims_fields
from tests.helpers.requant_cases import requant_fields

ATTRS = {"kernel": (1, 1), "strides": (1, 1), "pads": (0, 0, 0, 0), "dilations": (1, 1),
         "group": 1}


def pair_layer(rng, cin, cout, hw, x=None, w=None, in_zp=None, bias=None, zero_mult=(),
               out_zp=None):
    """(dims fields, q fields, x NHWC, w [oc][ic], want NHWC): records with the pairs'
    starts (pair_records), shifts spreading the outputs over int8; channels zero_mult
    with multiplier 0 (their outputs do not depend on their sums); out_zp: the output
    zero point (default: random)."""
    from codegen.ops.conv2d import conv2d_int
    if in_zp is None:
        in_zp = int(rng.integers(-128, 128))
    if x is None:
        x = rng.integers(-128, 128, (1, cin) + hw).astype(np.int8)
    if w is None:
        w = rng.integers(-127, 128, (cout, cin)).astype(np.int8)
    q, p = requant_fields(rng, cout, in_zp, "tflite")
    if out_zp is not None:
        q["out_zp"] = p.out_zp = out_zp
    if bias is not None:
        q["bias"] = p.bias = np.asarray(bias, np.int32)
    for c in zero_mult:
        q["mult"][c] = 0
    acc = np.einsum("chw,oc->ohw", x[0].astype(np.int64) - in_zp, w.astype(np.int64))
    acc = acc + q["bias"].reshape(-1, 1, 1)
    e = int(np.ceil(np.log2(max(float(np.abs(acc).max()), 1.0) / 90.0))) + 1
    # (at most 15: the hi channels' records, scaled by 256, keep their high word in 32
    # bits for any output zero point: fast_pack.pair_records; the bound cases saturate)
    p.shift = q["shift"] = np.full(cout, -min(max(e, 1), 15), np.int32)
    rec = smlal_requant(q["mult"], q["shift"], q["bias"], p.out_zp)
    assert rec is not None
    q["rq"] = pair_records(rec, q["bias"])
    assert q["rq"] is not None
    want = conv2d_int(x, w.reshape(cout, cin, 1, 1), ATTRS, p)[0]
    q["bias"] = None  # the records hold it
    dims = conv_dims_fields(x.shape, (1, cout) + want.shape[1:], ATTRS)
    words = pack_conv_pairs(w, in_zp, p.bias, rec.reshape(-1, 5)[:, 0] == 0)
    assert words is not None
    return dims, q, x[0].transpose(1, 2, 0), words, want.transpose(1, 2, 0)
