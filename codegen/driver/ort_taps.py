"""onnxruntime's own intermediate tensors, without changing what it computes.

Adding an intermediate tensor of the *original* model as a graph output
changes ORT's optimizer decisions (an int8 graph output blocks the uint8
rewrite and the QDQ fusions around it; on ic01 even the final output moves).
So the taps are taken from the graph ORT actually runs: the plain session's
optimized graph (`optimized_model_filepath`) is run again with every graph
optimization off and the wanted tensors added as outputs. Each run checks
that this session's own graph is node for node the plain session's graph
and that its final output equals the plain session's (`TapRun.proof`).

The optimizer renames tensors (uint8 rewrite, NHWC layout), so each IR
tensor is located in the optimized graph by one of these rules, all reading
ORT's quantization parameters and requiring the IR tensor's scale:

  name     the same tensor name survives (with an int8/uint8 type)
  dq       a DequantizeLinear that read the tensor keeps its output name:
           its input is ORT's tensor (DQ is injective)
  q        a QuantizeLinear of the same float tensor (or of the float op
           chain the original QuantizeLinear read) makes it
  weights  a fused QLinearConv / QGemm / QLinearMatMul reading the same
           weight initializer makes it (NHWC when channels_last)

ORT's tensor is converted to the IR's zero point (u8 = s8 + 128 when ORT ran
the layer on uint8) and layout. A tensor found by no rule has no tensor of
its own in ORT (a Relu or Clip folded into the QuantizeLinear before it, a
Q -> DQ pair removed): validate lists it as such.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from ..frontend.ort_facts import optimized_graph
from ..reference.onnxruntime_oracle import with_outputs

# Output quantization (scale, zero point) input positions of ORT's fused ops.
Y_QPARAMS = {"QuantizeLinear": (1, 2), "QLinearConv": (6, 7), "QLinearMatMul": (6, 7),
             "QGemm": (7, 8), "QLinearAdd": (6, 7), "QLinearMul": (6, 7),
             "QLinearAveragePool": (3, 4), "QLinearGlobalAveragePool": (3, 4),
             "QLinearSoftmax": (3, 4), "QLinearSigmoid": (3, 4), "QLinearLeakyRelu": (3, 4),
             "QLinearConcat": (0, 1)}
WEIGHTED = {"QLinearConv", "QGemm", "QLinearMatMul"}
MOVES_DATA = {"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "MaxPool", "Identity"}
FLOAT_CHAIN = {"Relu", "Clip", "Add"}  # between an op and its QuantizeLinear
COMPUTE = {"Conv", "Gemm", "MatMul"}


@dataclass
class Tap:
    ir_name: str
    ort_name: str
    zero_point: int  # ORT's zero point of ort_name
    nhwc: bool
    rule: str


def _consts(m):
    out = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "Constant" and n.attribute:
            out[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    return out


class _Graph:
    def __init__(self, m):
        self.m = m
        self.consts = _consts(m)
        self.producer = {o: n for n in m.graph.node for o in n.output}
        self.consumers = {}
        for n in m.graph.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)

    def qparams(self, n, pos):
        s, z = (n.input[p] if p < len(n.input) else "" for p in pos)
        if s not in self.consts:
            return None
        scale = np.asarray(self.consts[s], np.float32).reshape(-1)
        zp = np.asarray(self.consts[z]).reshape(-1) if z in self.consts else np.zeros(1, np.int64)
        if scale.size != 1 or zp.size != 1:
            return None
        return scale[0], int(zp[0])

    def out_qparams(self, name):
        """(scale, zero point) of an integer tensor, from its producer."""
        n = self.producer.get(name)
        if n is None:
            return None
        if n.op_type in Y_QPARAMS:
            return self.qparams(n, Y_QPARAMS[n.op_type])
        if n.op_type in MOVES_DATA and n.input:
            return self.out_qparams(n.input[0])
        return None

    def weight_of(self, n):
        """Initializer name of a compute node's weight (through its DequantizeLinear)."""
        if len(n.input) < 2:
            return None
        w = n.input[1]
        d = self.producer.get(w)
        if d is not None and d.op_type == "DequantizeLinear":
            return d.input[0]
        return w


def _float_chain(og: _Graph, x):
    """The float tensors from an op's output to x (the input of a
    QuantizeLinear) through Relu / Clip / bias Add, and that op."""
    names, n = [x], og.producer.get(x)
    while n is not None and n.op_type in FLOAT_CHAIN:
        if n.op_type == "Add" and not _is_constant(og, n.input[1]):
            break  # a residual Add is the op itself, not a bias
        names.append(n.input[0])
        n = og.producer.get(n.input[0])
    return names, n


def _is_constant(og: _Graph, name):
    d = og.producer.get(name)
    return name in og.consts or (d is not None and d.op_type == "DequantizeLinear"
                                 and d.input[0] in og.consts)


def locate_taps(model_path, g):
    """{IR tensor name: Tap} for the IR graph g's layer outputs found in the
    graph ORT runs, and {IR tensor name: reason} for the others."""
    orig = _Graph(onnx.load(str(model_path)))
    opt = _Graph(optimized_graph(model_path))
    weighted = {}
    for n in opt.m.graph.node:
        if n.op_type in WEIGHTED and len(n.input) > 3:
            weighted.setdefault(n.input[3], []).append(n)
    taps, missing = {}, {}
    for node in g.nodes:
        t = g.tensors[node.outputs[0]]
        if t.q is None or t.q.per_channel:
            missing[t.name] = "not a quantized tensor"
            continue
        found = _locate(t.name, orig, opt, weighted)
        if found is None:
            missing[t.name] = "no tensor of its own in ORT's optimized graph"
        elif np.float32(found[1]).view(np.uint32) != np.float32(t.q.scale[0]).view(np.uint32):
            missing[t.name] = f"ORT's tensor ({found[0].rule} rule) has another scale"
        else:
            taps[t.name] = found[0]
    return taps, missing


# ORT's integer element-wise kernels keep the layout of their first input
LAYOUT_KEEPING = {"QLinearLeakyRelu", "QLinearSigmoid", "QLinearAdd", "QLinearMul",
                  "QuantizeLinear", "DequantizeLinear", "Relu", "Clip", "LeakyRelu"}


def _nhwc(n, opt=None):
    """Is node n's output channels-last: a layout-changed QLinearConv (channels_last), or
    an element-wise node fed by one (NhwcTransformer leaves a QLinearLeakyRelu between two
    NHWC convs without Transposes around it)."""
    for _ in range(64):
        if any(a.name == "channels_last" and a.i == 1 for a in n.attribute):
            return True
        if opt is None or n.op_type not in LAYOUT_KEEPING:
            return False
        n = opt.producer.get(n.input[0])
        if n is None:
            return False
    return False


def _locate(name, orig, opt, weighted):
    # name: the same tensor survives
    if name in opt.producer or name in {i.name for i in opt.m.graph.input}:
        qp = opt.out_qparams(name)
        if qp is None:
            for c in opt.consumers.get(name, []):
                if c.op_type == "DequantizeLinear":
                    qp = opt.qparams(c, (1, 2))
                    break
        if qp is not None:
            return Tap(name, name, qp[1], False, "name"), qp[0]
    # dq: a DequantizeLinear of the tensor kept its output name
    opt_dq = {n.output[0]: n for n in opt.m.graph.node if n.op_type == "DequantizeLinear"}
    for c in orig.consumers.get(name, []):
        if c.op_type == "DequantizeLinear" and c.output[0] in opt_dq:
            d = opt_dq[c.output[0]]
            qp = opt.qparams(d, (1, 2))
            if qp is not None:
                return Tap(name, d.input[0], qp[1], False, "dq"), qp[0]
    q = orig.producer.get(name)
    if q is not None and q.op_type in WEIGHTED:  # a QOperator model's own QLinearConv / QGemm
        return _by_weights(name, q.input[3], opt, weighted)
    if q is None or q.op_type != "QuantizeLinear":
        return None
    chain, op = _float_chain(orig, q.input[0])
    # q: ORT quantizes one of the same float tensors
    for x in chain:
        for c in opt.consumers.get(x, []):
            if c.op_type == "QuantizeLinear":
                qp = opt.qparams(c, (1, 2))
                if qp is not None:
                    return Tap(name, c.output[0], qp[1], False, "q"), qp[0]
    if op is None:
        return None
    if op.op_type in COMPUTE:
        found = _by_weights(name, orig.weight_of(op), opt, weighted)
        if found is not None:
            return found
    # node: the op kept its node name and now runs on integers (MaxPool
    # without its Q/DQ, GlobalAveragePool as QLinearGlobalAveragePool)
    same = [n for n in opt.m.graph.node if n.name == op.name and op.name
            and n.op_type in (op.op_type, "QLinear" + op.op_type)]
    if len(same) == 1:
        qp = opt.out_qparams(same[0].output[0])
        if qp is not None:
            return Tap(name, same[0].output[0], qp[1], _nhwc(same[0], opt), "node"), qp[0]
    return None


def _by_weights(name, weight, opt, weighted):
    """weights: the one fused integer op of ORT that reads this weight initializer."""
    cands = weighted.get(weight, [])
    if len(cands) != 1:
        return None
    f = cands[0]
    qp = opt.qparams(f, Y_QPARAMS[f.op_type])
    if qp is None:
        return None
    return Tap(name, f.output[0], qp[1], _nhwc(f), "weights"), qp[0]


def _signature(m):
    return [(n.op_type, n.domain, tuple(n.input), tuple(n.output),
             tuple(sorted(a.SerializeToString() for a in n.attribute))) for n in m.graph.node]


def _tapped_session(base, names, tmp, threads=1):
    """A session running `base` unoptimized with `names` as extra outputs, and
    whether the graph it runs is node for node `base`'s."""
    import onnxruntime as ort
    m = with_outputs(base, names)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads  # MLAS's float conv order depends on it
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.optimized_model_filepath = os.path.join(tmp, "tapped.onnx")
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    same = _signature(onnx.load(so.optimized_model_filepath)) == _signature(base)
    return sess, same


@dataclass
class TapRun:
    values: list  # per input: {IR tensor name: array in the IR's logical shape and zero point}
    finals: list  # per input vector: the plain session's outputs (g's order, g's integers)
    missing: dict  # IR tensor name: why ORT has no tensor for it
    proof: dict


def run_taps(model_path, g, inputs, tick=lambda n=1: None):
    """ORT's tensors for g's layer outputs, one dict per input vector (see module doc).
    inputs: per vector, one integer array per graph input of g, as the generated C
    takes them. TapRun.finals: per vector, the plain session's outputs in g's order,
    as g's integers."""
    import onnxruntime as ort
    taps, missing = locate_taps(model_path, g)
    base = optimized_graph(model_path)
    # the intra-op thread count g was compiled for (--ort-threads, default 1)
    threads = max([n.attrs.get("ort_threads", 1) for n in g.nodes] + [1])
    with tempfile.TemporaryDirectory() as tmp:
        sess, same = _tapped_session(base, {t.ort_name for t in taps.values()}, tmp, threads)
        if not same:  # fall back per tensor: keep those that leave ORT's graph alone
            for name, tap in list(taps.items()):
                if not _tapped_session(base, [tap.ort_name], tmp, threads)[1]:
                    missing[name] = "exposing it changes ORT's graph"
                    del taps[name]
            sess, same = _tapped_session(base, {t.ort_name for t in taps.values()}, tmp, threads)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads
    plain = ort.InferenceSession(str(model_path), so, providers=["CPUExecutionProvider"])
    din, dout = g.declared_ends()
    ort_in = {i.name: i.type for i in plain.get_inputs()}
    out_names = [d.name for d in dout]  # the model's outputs, in g's order
    values, finals, final_diff = [], [], 0
    for xs in inputs:
        if isinstance(xs, np.ndarray):  # a one-input graph's vector on its own
            xs = (xs,)
        feeds = {d.name: ort_input(g.tensors[t], x, ort_in[d.name])
                 for t, d, x in zip(g.inputs, din, xs)}
        final = plain.run(out_names, feeds)
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        final_diff += sum(int(np.count_nonzero(got[n] != f)) for n, f in zip(out_names, final))
        finals.append([ir_output(g.tensors[t], f) for t, f in zip(g.outputs, final)])
        values.append({name: _to_ir(g.tensors[name], tap, got[tap.ort_name])
                       for name, tap in taps.items()})
        tick()
    if final_diff or not same:
        why = ("the tapped session's final output differs from the plain session's"
               if final_diff else "exposing the tensors changes ORT's graph")
        missing.update({name: why for name in taps})
        values = [{} for _ in values]
        taps = {}
    for name in [n for n in taps if any(v[n] is None for v in values)]:
        missing[name] = "ORT's tensor has another shape"
        del taps[name]
        for v in values:
            v.pop(name)
    proof = {"graph_unchanged": same, "final_mismatches_vs_plain_session": final_diff,
             "exposed": {n: {"ort_tensor": t.ort_name, "rule": t.rule} for n, t in taps.items()}}
    return TapRun(values, finals, missing, proof)


def ort_input(t, x, ort_type):
    """The IR's integer input as the ONNX model takes it: float models get
    the dequantized value (their QuantizeLinear gives x back exactly), uint8
    ones x + 128 (the IR computes uint8 tensors as int8, passes/uint8.py)."""
    x = np.asarray(x).reshape(t.shape)
    if ort_type == "tensor(float)":
        s, zp = t.q.scalar()
        return ((x.astype(np.int32) - zp).astype(np.float32) * s).astype(np.float32)
    if ort_type == "tensor(uint8)" and t.dtype == "int8":
        return (x.astype(np.int16) + 128).astype(np.uint8)
    return x


def ir_output(t, y):
    """ORT's final output as the IR's integer output (inverse of ort_input)."""
    y = np.asarray(y)
    if t.dtype == "float32":  # a float fallback output: ORT's float32 as it is
        return y.astype(np.float32)
    if y.dtype == np.float32:
        s, zp = t.q.scalar()
        return (np.rint(y / s) + zp).astype(np.int64)
    if y.dtype == np.uint8 and t.dtype == "int8":
        return y.astype(np.int64) - 128
    return y


def _to_ir(t, tap, arr):
    """ORT's tensor in the IR tensor's logical layout and zero point (None if
    the shapes do not agree)."""
    a = np.asarray(arr).astype(np.int64)
    if tap.nhwc:
        if a.ndim != 4:
            return None
        a = a.transpose(0, 3, 1, 2)
    if a.size != t.size or (tap.nhwc and tuple(a.shape) != tuple(t.shape)):
        return None
    return (a - tap.zero_point + int(t.q.zero_point[0])).reshape(t.shape)
