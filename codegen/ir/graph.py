"""The integer IR: tensors with quantization parameters, nodes, one graph.

Shapes are the ONNX (logical) shapes. `Tensor.perm` says how the bytes are
stored: the buffer holds `logical.transpose(perm)` in C order, so NCHW
tensors that kernels want as NHWC carry perm (0, 2, 3, 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class QParams:
    scale: np.ndarray  # float32, shape (1,) per-tensor or (C,) per-channel
    zero_point: np.ndarray  # int32, same shape as scale
    axis: int | None = None  # None: per-tensor

    @property
    def per_channel(self) -> bool:
        return self.axis is not None

    def scalar(self):
        """(scale, zero_point) of a per-tensor quantization."""
        assert self.axis is None and self.scale.size == 1
        return np.float32(self.scale[0]), int(self.zero_point[0])

    def same_as(self, other: "QParams") -> bool:
        return (
            self.axis == other.axis
            and self.scale.shape == other.scale.shape
            and np.array_equal(self.scale.view(np.uint32), other.scale.view(np.uint32))
            and np.array_equal(self.zero_point, other.zero_point)
        )

    def describe(self) -> str:
        if self.axis is None:
            return f"s={float(self.scale[0]):.6g} zp={int(self.zero_point[0])}"
        return f"per-channel axis={self.axis} ({self.scale.size} scales)"


@dataclass
class Tensor:
    name: str
    shape: tuple
    dtype: str  # "int8", "int32", "float32", "int64"
    q: QParams | None = None
    data: np.ndarray | None = None  # constants only
    perm: tuple | None = None  # physical order; None = row-major
    # a layer's weights stored as w - zp (ops/conv_lowering.py): zp of the weights' int8
    # form (uint8: zp - 128), one or one per output channel (onnxruntime's x86 u8s8
    # kernels pair the int8 weights as stored in the model: x86_saturation.py)
    weight_zp: np.ndarray | None = None

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    @property
    def physical_perm(self) -> tuple:
        return self.perm if self.perm is not None else tuple(range(len(self.shape)))

    @property
    def physical_shape(self) -> tuple:
        return tuple(self.shape[i] for i in self.physical_perm)


@dataclass
class Node:
    op: str
    name: str
    inputs: list
    outputs: list
    attrs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Declared:
    """A graph input or output as the model declares it (Graph.declared_inputs/_outputs,
    parallel to Graph.inputs/outputs): its name in the model and its element type there.

    "float32" is a float end: a QuantizeLinear right after the model's input (a
    DequantizeLinear right before its output) is part of the end, and the IR tensor
    is the integer tensor behind it; the generated API quantizes / dequantizes."""
    name: str
    dtype: str  # "float32", "int8" or "uint8"

    @property
    def is_float(self) -> bool:
        return self.dtype == "float32"


@dataclass
class Graph:
    name: str
    tensors: dict = field(default_factory=dict)
    nodes: list = field(default_factory=list)
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    source: str = ""  # the model path, for messages
    # how the model declares each input / output (same order as inputs / outputs);
    # empty: every end is its IR tensor (declared_ends fills in the default)
    declared_inputs: list = field(default_factory=list)
    declared_outputs: list = field(default_factory=list)
    # (node, scale tensor) of each float16 quantization scale, taken as float32 (exact);
    # onnxruntime then computes in float16 (frontend/ort_facts.check_float16_scales)
    float16_scales: list = field(default_factory=list)

    def declared_ends(self):
        """(inputs, outputs): a Declared per graph input / output, in order. Ends the
        front end recorded nothing for are the IR tensor itself (its name and dtype)."""
        def fill(names, declared):
            return [declared[k] if k < len(declared) else
                    Declared(name, self.tensors[name].dtype) for k, name in enumerate(names)]
        return fill(self.inputs, self.declared_inputs), fill(self.outputs, self.declared_outputs)

    def add_tensor(self, t: Tensor) -> Tensor:
        self.tensors[t.name] = t
        return t

    def producer(self, name: str):
        for n in self.nodes:
            if name in n.outputs:
                return n
        return None

    def consumers(self, name: str):
        return [n for n in self.nodes if name in n.inputs]

    def activations(self):
        """Non-constant tensors used by the nodes or the graph I/O."""
        names = []
        seen = set()
        for n in self.nodes:
            for t in list(n.inputs) + list(n.outputs):
                if t and t not in seen and not self.tensors[t].is_const:
                    seen.add(t)
                    names.append(t)
        for t in self.inputs + self.outputs:
            if t not in seen:
                seen.add(t)
                names.append(t)
        return names

    def dump(self) -> str:
        """A readable listing: op, tensor shapes, dtypes and scales."""
        lines = [f"graph {self.name}: inputs {self.inputs} outputs {self.outputs}"]
        for n in self.nodes:
            ins = ", ".join(_tdesc(self.tensors[i]) for i in n.inputs if i)
            outs = ", ".join(_tdesc(self.tensors[o]) for o in n.outputs)
            attrs = " ".join(f"{k}={_adesc(v)}" for k, v in sorted(n.attrs.items())
                             if k != "onnx_tensors")
            lines.append(f"  {n.op} [{n.name}] ({ins}) -> ({outs}) {attrs}".rstrip())
        return "\n".join(lines)


def _tdesc(t: Tensor) -> str:
    shape = "x".join(str(d) for d in t.shape) or "scalar"
    s = f"{t.name}:{t.dtype}[{shape}]"
    if t.is_const:
        s = "const " + s
    if t.q is not None:
        s += "{" + t.q.describe() + "}"
    if t.perm is not None:
        s += f"perm{tuple(t.perm)}"
    return s


def _adesc(v):
    if isinstance(v, (list, tuple)):
        return "(" + ",".join(_adesc(x) for x in v) + ")"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)
