"""Random tinyaot_requant_t fields of one integer layer and the numpy oracles' ConvParams:
the kernel tests of the fast and size integer kernels share them."""
from __future__ import annotations

import numpy as np

F32 = np.float32


def requant_fields(rng, cout, in_zp, numerics, records=False):
    """tinyaot_requant_t fields and the reference's p for one layer; `records`:
    with the fast kernels' per-channel records (one-SMLAL for tflite, {bias,
    scale} for ort), as ops/size_kernels.py emits them."""
    from codegen.ops.conv_params import ConvParams
    bias = rng.integers(-5000, 5000, cout).astype(np.int32)
    p = ConvParams(numerics, in_zp, int(rng.integers(-10, 10)), -128, 127, bias=bias)
    q = {"in_zp": in_zp, "out_zp": p.out_zp, "act_min": -128, "act_max": 127, "bias": bias,
         "scale": None, "mult": None, "shift": None, "post_bias": None, "out_scale": 0.0,
         "rq": None}
    if numerics == "ort":  # ConvParams modes ORT / TFLITE are the numerics' names
        p.scale = q["scale"] = rng.uniform(1e-4, 4e-3, cout).astype(F32)
    else:
        p.mult = q["mult"] = rng.integers(1 << 30, (1 << 31) - 1, cout).astype(np.int32)
        p.shift = q["shift"] = rng.integers(-11, -6, cout).astype(np.int32)
    if records:
        from codegen.kernels.fast_pack import float_requant, smlal_requant
        q["rq"] = (float_requant(q["scale"], bias) if numerics == "ort"
                   else smlal_requant(q["mult"], q["shift"], bias, p.out_zp))
        q["bias"] = None  # the records hold it (size_kernels.py emits no bias array then)
    return q, p
