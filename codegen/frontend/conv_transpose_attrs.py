"""ConvTranspose attributes -> kernel, strides, dilations, pads, output size.

Pads follow onnxruntime's ConvTranspose (ComputeTransposePadAndOutputShape),
which is what `--numerics ort` must reproduce:
  * output_shape given: total = max(0, (in-1)*s + output_padding + (k-1)*d + 1 - out)
    (and an output_shape onnxruntime rejects is rejected);
  * else auto_pad SAME_UPPER / SAME_LOWER: total = max(0, the same with out = in*s);
  * in both cases SAME_UPPER puts the larger half of an odd total at the tail,
    anything else (NOTSET, SAME_LOWER, VALID) at the head (the ONNX spec's
    rule; checked against onnxruntime's outputs, tests/test_ops_conv_transpose.py);
  * VALID: no padding; NOTSET: the `pads` attribute.
The output size is (in-1)*s + output_padding + (k-1)*d + 1 - head - tail, or
output_shape when given. Only the head pads reach the kernels: output pixel
o gets input pixel i through tap t when o = i*s - head + t*d.
"""
from __future__ import annotations


class AttrError(ValueError):
    pass


def conv_transpose_geometry(attrs, in_hw, w_hw):
    """-> dict(kernel, strides, dilations, pads (heads..., tails...), output_padding, out_hw)."""
    nd = len(in_hw)
    kernel = tuple(int(v) for v in attrs.get("kernel_shape", w_hw))
    if kernel != tuple(w_hw):
        raise AttrError(f"kernel_shape {list(kernel)} does not match the weights {list(w_hw)}")
    strides = _ints(attrs, "strides", nd, 1)
    dil = _ints(attrs, "dilations", nd, 1)
    adj = _ints(attrs, "output_padding", nd, 0)
    if min(strides) < 1 or min(dil) < 1:
        raise AttrError("strides and dilations must be >= 1")
    for i in range(nd):  # onnxruntime's (and the ONNX spec's) bound
        if not 0 <= adj[i] < max(strides[i], dil[i]):
            raise AttrError(f"output_padding {list(adj)} must be >= 0 and less than "
                            "max(stride, dilation) on every axis")
    auto = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    if auto not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise AttrError(f"unknown auto_pad '{auto}'")
    pads = list(_ints(attrs, "pads", 2 * nd, 0)) if auto == "NOTSET" else [0] * (2 * nd)
    if min(pads) < 0:
        raise AttrError("negative pads are not supported")
    out_shape = attrs.get("output_shape")
    if out_shape is not None:
        out_shape = [int(v) for v in out_shape][-nd:]
        if len(out_shape) != nd:
            raise AttrError(f"output_shape needs {nd} spatial sizes")
    out_hw = []
    for i in range(nd):
        natural = (in_hw[i] - 1) * strides[i] + adj[i] + (kernel[i] - 1) * dil[i] + 1
        if out_shape is not None:
            total = max(0, natural - out_shape[i])
            big, small = total - total // 2, total // 2
            pads[i], pads[nd + i] = (small, big) if auto == "SAME_UPPER" else (big, small)
            # onnxruntime refuses an output_shape its forward convolution would not map
            # back onto the input (e.g. more than stride - 1 rows beyond the natural size)
            back = (out_shape[i] + total - adj[i] - (kernel[i] - 1) * dil[i] - 1) // strides[i] + 1
            if back != in_hw[i]:
                raise AttrError(f"output_shape {out_shape} is inconsistent with the input size "
                                f"{list(in_hw)}, kernel, strides and output_padding")
            out_hw.append(out_shape[i])
            continue
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            total = max(0, natural - in_hw[i] * strides[i])
            big, small = total - total // 2, total // 2
            pads[i], pads[nd + i] = (small, big) if auto == "SAME_UPPER" else (big, small)
        out_hw.append(natural - pads[i] - pads[nd + i])
    if min(out_hw) < 1:
        raise AttrError(f"output size {out_hw} is empty")
    return {"kernel": kernel, "strides": strides, "dilations": dil, "pads": tuple(pads),
            "output_padding": adj, "out_hw": tuple(out_hw)}


def _ints(attrs, key, n, default):
    v = attrs.get(key)
    if v is None:
        return (default,) * n
    v = tuple(int(x) for x in v)
    if len(v) != n:
        raise AttrError(f"{key} must have {n} values, has {len(v)}")
    return v
