"""onnxruntime on x86-64 without VNNI: where its uint8 x int8 sums saturate, and what it
computes then.

tinyaot's `ort` numerics is onnxruntime's arithmetic with exact integer sums: what
onnxruntime computes on CPUs with VNNI (AVX-VNNI, AVX512-VNNI) and on Arm. Without VNNI,
MLAS adds each pair of uint8 x int8 products into an int16 with saturation
(numerics/u8s8_pairs.py), so a golden output made there can differ from the exact sums
for some inputs. This module finds, for one input, the layers where that happens
(`saturation_events`: tinyaot's own exact tensors are the layers' inputs, which equal the
reference's up to its first saturating layer), and runs the whole graph as onnxruntime
computes it there (`run_graph_x86`: the saturated sums requantized by the layer's own
parameters, every other layer the numpy oracle), so `verify` and `validate` can tell a
reference that saturates from a layer that is wrong.

The layers concerned are the IR conv2d / fully_connected layers onnxruntime runs as
integer kernels on uint8 activations and int8 weights (`ort_u8s8`, recorded by
frontend/ort_facts.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import ops as ops_registry
from ..ops.conv2d import conv2d_acc, conv2d_u8s8_delta
from ..ops.conv_params import ORT, requantize_sums
from ..ops.fully_connected import fully_connected_u8s8_delta
from .run import run_graph


@dataclass
class Saturation:
    layer: int  # index of the IR node
    node: str
    pairs: int  # saturated int16 pairs in this layer, this input


def pair_layers(g, params):
    """Indices of the IR nodes whose sums onnxruntime forms in int16 pairs without VNNI."""
    return [i for i, n in enumerate(g.nodes)
            if n.attrs.get("ort_u8s8") and n.op in ("conv2d", "fully_connected")
            and getattr(params[n.name], "mode", None) == ORT]


def _raw_weights(g, n, w):
    """The int8 weights as onnxruntime's kernels hold them: tinyaot stores w - zp
    (ops/conv_lowering.py); MLAS pairs the raw w and subtracts zp * sum(x) apart."""
    zp = g.tensors[n.inputs[1]].weight_zp
    if zp is None or not np.any(zp):
        return w
    return np.asarray(w, np.int64) + zp.astype(np.int64).reshape((-1,) + (1,) * (np.ndim(w) - 1))


def _saturated_layer(g, n, ins, p):
    """(output as onnxruntime computes it without VNNI, saturated pairs)."""
    x, w = ins[0], ins[1]
    raw = _raw_weights(g, n, w)
    if n.op == "conv2d":
        delta, count = conv2d_u8s8_delta(x, raw, n.attrs, p.in_zp)
        if not count:
            return None, 0
        acc = conv2d_acc(x, w, p.in_zp, n.attrs["strides"], n.attrs["pads"],
                         n.attrs["dilations"], n.attrs["group"])
        return requantize_sums(acc + delta, p, 1), count
    k = w.shape[1]
    x2 = np.asarray(x, dtype=np.int64).reshape(-1, k)
    delta, count = fully_connected_u8s8_delta(x2, raw)
    if not count:
        return None, 0
    acc = (x2 - p.in_zp) @ np.asarray(w, dtype=np.int64).T
    return requantize_sums(acc + delta, p, 1).reshape(np.shape(x)[:-1] + (w.shape[0],)), count


def saturation_events(g, params, env):
    """[Saturation] of the layers whose int16 pairs saturate on the inputs in env (the
    exact run's tensors: run_graph), in execution order."""
    out = []
    for i in pair_layers(g, params):
        n = g.nodes[i]
        ins = [env[t] if t in env else (g.tensors[t].data if t else None) for t in n.inputs]
        _, count = _saturated_layer(g, n, ins, params[n.name])
        if count:
            out.append(Saturation(i, n.name, count))
    return out


def run_graph_x86(g, inputs, params):
    """(tensors, [Saturation]): the graph run as onnxruntime computes it on x86-64
    without VNNI (saturating layers use their saturated sums, every other layer is the
    `ort` oracle); the events are those of this run."""
    sat = set(pair_layers(g, params))
    env, events = {}, []
    for name in g.inputs:
        env[name] = np.asarray(inputs[name]).reshape(g.tensors[name].shape)
    for i, n in enumerate(g.nodes):
        p = params[n.name]
        ins = [env[t] if t in env else (g.tensors[t].data if t else None) for t in n.inputs]
        y = None
        if i in sat:
            y, count = _saturated_layer(g, n, ins, p)
            if count:
                events.append(Saturation(i, n.name, count))
        if y is None:
            y = ops_registry.get(n.op).reference(g, n, ins, p, "ort")
        out_t = g.tensors[n.outputs[0]]
        env[n.outputs[0]] = np.asarray(y).astype(out_t.dtype).reshape(out_t.shape)
    return env, events


def exact_and_x86(g, inputs, params):
    """(exact tensors, x86 tensors, events of the x86 run) for one input."""
    return run_graph(g, "ort", inputs, params), *run_graph_x86(g, inputs, params)
