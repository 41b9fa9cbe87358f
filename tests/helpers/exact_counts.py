"""Instructions of one inference, exact to one instruction, on a QEMU board: each input runs
REPEAT times between two reads of the timer (whose tick is REPEAT instructions)."""
from __future__ import annotations

import shutil

import numpy as np

from codegen.compiler import compile_model
from codegen.driver.firmware import Variant, build_compiled, private_dir
from codegen.targets.boards import board_or_error
from codegen.targets.qemu import run_firmware

from tests.helpers import run_cache
from tests.helpers.env import C_DIR

REPEAT = 40  # = instructions_per_tick: one instruction per inference = one tick
# every input (+ adversarial) exact to one instruction: firmware/test_models_on_qemu_m4.py
EXACT_SHARED = ["kws01", "sww01", "ad01"]


def exact_counts(model, inputs, numerics, board="qemu-m4"):
    """Instructions of one inference per input, exact to one instruction:
    each input runs REPEAT times between two timer reads (tests/helpers/c/harness_repeat_main.c).
    Once per session (the shared models' runs also give the numbers of
    firmware/test_instruction_counts.py)."""
    inputs = np.asarray(inputs)
    return run_cache.once("exact", model, inputs, (numerics, board, REPEAT),
                          lambda: _exact_counts_run(model, inputs, numerics, board))


def _exact_counts_run(model, inputs, numerics, board):
    b = board_or_error(board)
    assert b["instructions_per_tick"] == REPEAT
    c = compile_model(model, numerics=numerics)
    per = np.asarray(inputs).reshape(len(inputs), -1).view(np.int8)
    out_dir = private_dir(c, f"exact-{board}")
    try:
        elf = build_compiled(c, b, out_dir, per, Variant(
            "repeat", main=str(C_DIR / "harness_repeat_main.c"),
            defines=(f"TINYAOT_REPEAT={REPEAT}u",))).elf
        res = run_firmware(elf, b, timeout=600)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    assert [r.status for r in res.outputs] == [0] * len(per)
    outs = np.stack([np.frombuffer(r.data, dtype=np.int8) for r in res.outputs])
    return [r.ticks for r in res.outputs], outs  # ticks == instructions per inference


def with_adversarial(inputs):
    """The golden set plus adversarial inputs: saturated, constant (ties
    everywhere: max, softmax, clamps), alternating extremes, random."""
    shape = (1,) + inputs.shape[1:]
    rng = np.random.default_rng(5)
    extra = [np.full(shape, v, inputs.dtype) for v in (-128, 127, 0, -1)]
    extra.append(np.resize(np.array([-128, 127], inputs.dtype), shape))
    extra.append(rng.integers(-128, 128, shape).astype(inputs.dtype))
    return np.concatenate([inputs] + extra)
