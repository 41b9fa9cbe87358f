"""Tiny QOperator / integer-op ONNX models built with onnx.helper (tests' helper).

One integer graph input `x` and one integer graph output `y` (int8 or uint8),
so the generated C and onnxruntime see the same integers.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
ONNX_TYPE = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8}


class QopBuilder:
    def __init__(self, dtype=np.int8, name="qop_test"):
        self.dtype = dtype
        self.name = name
        self.nodes = []
        self.inits = []
        self.count = 0

    def uid(self, stem):
        self.count += 1
        return f"{stem}_{self.count}"

    def const(self, arr, dtype=None, stem="c"):
        n = self.uid(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(arr, dtype=dtype or self.dtype), n))
        return n

    def qp(self, scale, zp):
        """(scale, zero point) initializers; zp in the model's integer type."""
        return self.const(np.float32(scale), np.float32, "s"), self.const(zp, stem="zp")

    def node(self, op, inputs, domain="", n_out=1, **attrs):
        outs = [self.uid(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=outs[0], domain=domain,
                                           **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, in_shape, out_shape, opset=13, out_dtype=None):
        # the last node's output is renamed `y`
        last = self.nodes[-1]
        old = last.output[0]
        last.output[0] = "y"
        for n in self.nodes:
            for k, i in enumerate(n.input):
                if i == old:
                    n.input[k] = "y"
        t = ONNX_TYPE[self.dtype]
        g = helper.make_graph(self.nodes, self.name, [helper.make_tensor_value_info("x", t, list(in_shape))],
                              [helper.make_tensor_value_info("y", ONNX_TYPE[out_dtype or self.dtype],
                                                             list(out_shape))], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                                helper.make_opsetid(MS, 1)])
        m.ir_version = 8
        return m


def all_inputs(shape, count, dtype, seed=0):
    """`count` tensors of `shape`; the first holds every value of the type (tiled)."""
    size = int(np.prod(shape))
    rng = np.random.default_rng(seed)
    out = rng.integers(0, 256, size=(count, size)).astype(np.uint8)
    out[0] = np.resize(np.arange(256, dtype=np.uint8), size)
    return out.view(dtype).reshape((count,) + tuple(shape))
