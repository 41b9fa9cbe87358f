"""Poisoned host builds: every arena block is overwritten once it is dead.

TINYAOT_POISON_BYTE makes the generated TINYAOT_POISON(ptr, bytes) calls
memset the arena before the first layer and every block after its last
reader. Bit-exact outputs under two different patterns show that no kernel
reads a dead (or never written) buffer; a deliberately wrong plan must
give different outputs under poison.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

from codegen.backend import emit_c
from codegen.compiler import Compiled, compile_model
from codegen.planner.poison import dead_after
from codegen.driver.verify import run_model

from tests.helpers.env import DEFAULT_MODEL, SHARED_MODELS, shared_model

GOLDEN_KEY = {"ort": "outputs_onnxruntime", "tflite": "outputs_tflm"}


def _run(c, inputs, tmp_path, monkeypatch, byte):
    flags = f"-DTINYAOT_POISON_BYTE={byte}" if byte is not None else ""
    monkeypatch.setenv("TINYAOT_HOST_CFLAGS", flags)
    outs, info = run_model(None, inputs, board="host", numerics=c.numerics,
                           build_dir=tmp_path / f"gen-{byte}", compiled=c)
    assert info["status"] == [0] * len(inputs)
    return outs


def test_generated_c_has_poison_calls_for_every_dead_block():
    c = compile_model(DEFAULT_MODEL, numerics="ort")
    src = c.module.source
    assert "#define TINYAOT_POISON(ptr, bytes) ((void)0)" in src  # empty by default
    n_dead = sum(len(dead_after(c.plan, i)) for i in range(len(c.graph.nodes)))
    assert n_dead > 3
    assert src.count("TINYAOT_POISON(ARENA + ") >= n_dead + 1  # + the prologue


CASES = [pytest.param("default", "ort", id="default-ort"),
         pytest.param("default", "tflite", id="default-tflite")] + [
    pytest.param(k, n, id=f"{k}-{n}", marks=pytest.mark.shared)
    for k in sorted(SHARED_MODELS) for n in ("ort", "tflite")]


@pytest.mark.parametrize("key,numerics", CASES)
@pytest.mark.parametrize("io_buffers", ["user", "arena"])
def test_poisoned_build_is_bit_exact(key, numerics, io_buffers, tmp_path, monkeypatch):
    if key == "default":
        gold = np.load(str(DEFAULT_MODEL).replace(".onnx", "_golden.npz"))
        model, inputs = DEFAULT_MODEL, gold["inputs"][:16]
        expected = gold["outputs"][:16] if numerics == "ort" else None
    else:
        model, golden = shared_model(key)
        gold = np.load(golden)
        inputs, expected = gold["inputs"], gold[GOLDEN_KEY[numerics]]
    c = compile_model(model, numerics=numerics, io_buffers=io_buffers)
    for byte in ("0xA5", "0x5A"):
        outs = _run(c, inputs, tmp_path, monkeypatch, byte)
        if expected is not None:
            np.testing.assert_array_equal(outs.reshape(expected.shape), expected)
        else:
            np.testing.assert_array_equal(outs, _run(c, inputs, tmp_path, monkeypatch, None))


def _with_plan(c, plan):
    module = emit_c(c.graph, plan, c.params, c.numerics, c.module.name)
    return Compiled(c.graph, plan, c.params, module, c.numerics, c.report)


def _default():
    gold = np.load(str(DEFAULT_MODEL).replace(".onnx", "_golden.npz"))
    return compile_model(DEFAULT_MODEL, numerics="ort"), gold["inputs"][:16], gold["outputs"][:16]


def test_poison_catches_a_lifetime_that_ends_too_early(tmp_path, monkeypatch):
    """A plan that believes a block dies before its last read: without poison the
    bytes are still there (the outputs happen to be right), with poison they are not."""
    c, inputs, expected = _default()
    plan = copy.deepcopy(c.plan)
    # the block read longest after it is written (the residual branch of the model)
    victim = max((b for b in plan.blocks if b.external is None), key=lambda b: b.last - b.first)
    assert victim.last - victim.first >= 3
    victim.last = victim.first
    bad = _with_plan(c, plan)
    plain = _run(bad, inputs, tmp_path, monkeypatch, None)
    np.testing.assert_array_equal(plain.reshape(expected.shape), expected)
    poisoned = _run(bad, inputs, tmp_path, monkeypatch, "0xA5")
    assert not np.array_equal(poisoned.reshape(expected.shape), expected)


def test_poison_catches_a_forced_overlap(tmp_path, monkeypatch):
    """Two blocks that are live together forced onto the same bytes."""
    from codegen.planner import PlanError, check_plan

    c, inputs, expected = _default()
    plan = copy.deepcopy(c.plan)
    blocks = [b for b in plan.blocks if b.external is None]
    a, b = next((x, y) for x in blocks for y in blocks
                if x is not y and x.overlaps_in_time(y) and x.offset != y.offset and x.first < y.first
                and x.offset + y.size <= plan.size)  # moved, y stays inside the arena
    b.offset = a.offset
    plan.where = {t: blk for blk in plan.blocks for t in blk.tensors}
    with pytest.raises(PlanError, match="overlap"):
        check_plan(c.graph, plan)
    poisoned = _run(_with_plan(c, plan), inputs, tmp_path, monkeypatch, "0xA5")
    assert not np.array_equal(poisoned.reshape(expected.shape), expected)
