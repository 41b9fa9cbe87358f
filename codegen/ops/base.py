"""What an operator module provides, and the records the front end builds with it.

Every IR operator is one module under codegen/ops/ holding one `Op` subclass instance `OP`:
how the front ends recognise it (`onnx`: ONNX op type -> lowering function; `tflite`: TFLite
builtin name -> lowering function), its traits (layout,
in-place, alias, alignment), its kernel choice and scratch (`select`), its compile-time parameters
per numerics (`prepare`), its numpy oracle (`reference`) and its C emission (`emit`).
codegen/ops/__init__.py registers them; nothing else dispatches on an operator's name.

This module imports nothing from the compiler's stages: the front end, passes, planner and
backend call into operators, never the reverse (an operator talks to the front ends through the
`lw` / `tl` lowering contexts and to the backend through the `em` emitter it is handed).
"""
from __future__ import annotations

from dataclasses import dataclass, field


class Unsupported(Exception):
    """A node the front end cannot lower: collected and reported together with the others."""


@dataclass(frozen=True)
class Deferred:
    """An input of an op that commutes with quantization (data movement, maximum, clamp) which
    is itself a float result still pending: it is quantized with the parameters the op's own
    result gets (frontend/qdq_lowering.py), so `Q(concat(conv(x), y))` is
    `concat(Q(conv(x)), Q(y))`, exactly."""
    name: str  # the ONNX float tensor


# Pending.commutes: how an op that commutes with quantization takes its output's parameters
SAME = "same"  # its kernel copies integers: the output keeps its input's quantization
ANY = "any"  # its kernel requantizes: the output may have any quantization


@dataclass
class Pending:
    """A float op waiting for the QuantizeLinear that gives its output (frontend/qdq_lowering.py)."""
    op: str
    node: str  # ONNX node name, for messages and the IR node's name
    inputs: list  # integer IR tensor names, None (absent), or Deferred float results
    attrs: dict = field(default_factory=dict)
    act_lo: float | None = None  # fused Relu/Clip bounds, in real units
    act_hi: float | None = None
    shape: tuple = ()
    tensors: list = field(default_factory=list)  # ONNX float tensors it computes
    # None: a computing op (its result exists only in float until quantized); SAME / ANY:
    # an op that commutes with quantization (Q(op(x)) == op(Q(x))), whose inputs may be
    # Deferred and which can be settled on its inputs' quantization when a float op reads it
    commutes: str | None = None
    fuses_clamp: bool = True  # a following Relu / Clip becomes its act_lo / act_hi


def layer_mode(em, n):
    """The --optimize mode a layer's emit follows: its per-layer variant's (attr "variant",
    passes/kernel_select.py: size -> size, speed / loop -> speed), else the build's."""
    v = n.attrs.get("variant")
    return em.optimize if v is None else ("size" if v == "size" else "speed")


@dataclass(frozen=True)
class Traits:
    """Facts the passes and the planner read instead of operator names.

    layout:  "spatial"     its first input and output are NHWC (passes/layout.py)
             "elementwise" every input in the output's layout
             "same"        every input and the output in the first input's layout
             "row_major"   every activation input row-major
             "alias"       zero-copy: the output is a view of the input's bytes
             "any"         row-major in, row-major out (the default)
    inplace: input positions whose block the output may take over (planner/inplace.py)
    align:   at least this alignment for its input and output blocks (planner/align.py)
    """
    layout: str = "any"
    inplace: tuple = ()
    align: int = 4

    @property
    def alias(self) -> bool:
        return self.layout == "alias"


class Op:
    """One IR operator. Subclasses override what applies to them."""
    name = ""
    traits = Traits()
    # ONNX op type -> lowering function f(lw, node, name, attrs, ins, out, shape), which records
    # a Pending (or emits IR nodes) through the lowering context `lw` (frontend/qdq_lowering.py)
    onnx: dict = {}
    # ONNX op type -> float lowering, same signature: the node run in float32 when no integer
    # lowering takes it (frontend/float_fallback.py; ops/*_f32.py)
    onnx_float: dict = {}
    # TFLite builtin name -> lowering function f(tl, op) over the TFLite lowering context `tl`
    # (frontend/tflite/lower.py) and one operator (frontend/tflite/reader.TflOperator); it
    # emits IR nodes with the attributes the ONNX lowering gives the same layer
    tflite: dict = {}
    # TFLite builtin name -> float lowering f(tl, op): the operator on float32 tensors of a
    # .tflite's float region, after a DEQUANTIZE (frontend/tflite/lower.py; ops/*_f32.py)
    tflite_float: dict = {}

    def select(self, g, n, optimize) -> None:
        """Choose the layer's kernel variant and scratch (passes/kernel_select.py): set
        n.attrs["fast_kernel"] / ["scratch_bytes"] as the kernel needs."""

    def alias_perm(self, g, n, in_perm):
        """An alias op's (traits.layout "alias") output perm given its input's, for
        passes/layout.py: the order its output's bytes have when it keeps the input's
        bytes in order `in_perm`, or None when it needs row-major input (and then gives
        row-major output)."""
        return None

    def prepare(self, g, n, numerics):
        """Every compile-time parameter of the layer for `numerics` (a typed record or None)."""
        return None

    def reference(self, g, n, ins, p, numerics):
        """The numpy oracle: the layer's output from its inputs and prepared parameters."""
        raise NotImplementedError(f"reference has no kernel for {self.name}")

    def emit(self, em, lid, n, p, info) -> None:
        """Append the layer's constants and kernel call to the emitter `em` (backend/c_emitter.py)."""
        raise NotImplementedError(f"no C emitter for op {self.name}")
