"""onnxruntime's decisions (frontend/ort_facts.py) are found in the graph onnxruntime
optimizes and saves by structure (frontend/ort_match.py), never by tensor names.

Checked here on the shared models whose layers onnxruntime runs in several ways (float
Conv / Gemm, QLinearConv / QGemm on uint8 x int8, QLinearAdd, QLinearAveragePool, ...):

- every tensor and node of onnxruntime's optimized graph renamed (names that sort in
  another order) and its nodes listed in reverse: every IR node gets the same facts, so
  nothing is found by a name or by position;
- every tensor and node of the model renamed likewise: the same facts again;
- the facts agree with onnxruntime's optimized graph counted independently: as many IR
  layers are marked float as onnxruntime's graph has float Conv / Gemm / MatMul nodes
  with constant weights, and as many integer ones as it has QLinearConv / QGemm /
  QLinearMatMul nodes.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest

from tests.helpers.env import SHARED, _missing

from codegen.frontend import load_model
from codegen.frontend.ort_facts import gather_ort_facts, optimized_graph
from codegen.frontend.ort_match import OrtMatch

MODELS = {
    "kws_mobilenetv2": "keyword_spotting_mobilenetv2/keyword_spotting_mobilenetv2",
    "mbnet128": "image_classification_mbnet128/mbnet128_0.25_q",
    "ic01": "image_classification_ic01/pretrainedResnet_quant",
    "kws01": "keyword_spotting_kws01/kws_ref_model",
}
WEIGHTED = ("conv2d", "fully_connected", "conv_transpose")


def _path(key):
    p = SHARED / f"{MODELS[key]}.onnx"
    if not p.exists():
        _missing(f"shared model {p}")
    return p


def _facts(g):
    return [(n.op, {k: v for k, v in n.attrs.items() if k.startswith("ort_")}) for n in g.nodes]


def _renamed(model):
    """The model with every tensor and node renamed (t<reversed index>, n<...>)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    names = []
    for v in list(g.input) + list(g.initializer) + list(g.output):
        names.append(v.name)
    for n in g.node:
        names += [t for t in list(n.input) + list(n.output) if t]
    order = list(dict.fromkeys(names))
    new = {t: f"t{len(order) - i:05d}" for i, t in enumerate(order)}
    for v in list(g.input) + list(g.initializer) + list(g.output) + list(g.value_info):
        v.name = new.get(v.name, v.name)
    for i, n in enumerate(g.node):
        n.name = f"n{len(g.node) - i:05d}"
        for k, t in enumerate(n.input):
            if t:
                n.input[k] = new[t]
        for k, t in enumerate(n.output):
            if t:
                n.output[k] = new[t]
    return m


@pytest.mark.shared
@pytest.mark.parametrize("key", sorted(MODELS))
def test_facts_survive_renaming_and_reordering_onnxruntimes_graph(key):
    path = _path(key)
    g = gather_ort_facts(load_model(path), path)
    opt = _renamed(optimized_graph(path))
    nodes = list(opt.graph.node)[::-1]
    del opt.graph.node[:]
    opt.graph.node.extend(nodes)
    model = onnx.load(str(path))
    assert not ({t.name for t in model.graph.initializer}
                & {t.name for t in opt.graph.initializer})
    h = gather_ort_facts(load_model(path), path, match=OrtMatch(model, opt))
    assert _facts(g) == _facts(h)


@pytest.mark.shared
@pytest.mark.parametrize("key", sorted(MODELS))
def test_facts_do_not_depend_on_names(key, tmp_path):
    path = _path(key)
    g = gather_ort_facts(load_model(path), path)
    renamed = tmp_path / "renamed.onnx"
    model = onnx.load(str(path))
    onnx.save(_renamed(model), str(renamed))
    assert not ({t.name for t in model.graph.initializer}
                & {t.name for t in onnx.load(str(renamed)).graph.initializer})
    h = gather_ort_facts(load_model(renamed), renamed)
    assert _facts(g) == _facts(h)
    assert any(f for _, f in _facts(g)), "onnxruntime's decisions were recorded"


def _ort_counts(path):
    """onnxruntime's optimized graph alone: its float and its integer weighted layers."""
    m = optimized_graph(path)
    consts = {i.name for i in m.graph.initializer}
    consts |= {o for n in m.graph.node if n.op_type in ("Constant", "DequantizeLinear")
               and (n.op_type == "Constant" or n.input[0] in consts) for o in n.output}
    floats = sum(1 for n in m.graph.node
                 if n.op_type in ("Conv", "FusedConv", "Gemm", "FusedGemm", "MatMul",
                                  "FusedMatMul", "ConvTranspose") and n.input[1] in consts)
    ints = sum(1 for n in m.graph.node if n.op_type in ("QLinearConv", "QGemm", "QLinearMatMul"))
    return floats, ints


@pytest.mark.shared
@pytest.mark.parametrize("key", sorted(MODELS))
def test_facts_agree_with_onnxruntimes_graph(key):
    path = _path(key)
    g = gather_ort_facts(load_model(path), path)
    layers = [n for n in g.nodes if n.op in WEIGHTED]
    floats, ints = _ort_counts(path)
    assert floats + ints == len(layers)
    assert sum(bool(n.attrs.get("ort_float")) for n in layers) == floats
    assert sum(not n.attrs.get("ort_float") for n in layers) == ints
    # on x86 onnxruntime runs its integer layers on uint8 x int8; elsewhere on int8
    u8s8 = sum(bool(n.attrs.get("ort_u8s8")) for n in layers)
    assert u8s8 in (0, ints)
    assert np.all([not (n.attrs.get("ort_float") and n.attrs.get("ort_u8s8")) for n in layers])
