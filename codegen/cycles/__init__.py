"""Cortex-M cycle model: an estimate from documented timings, not a measurement.

A QEMU TCG plugin (plugin/cyclemodel.c) charges every executed instruction from
the core's cost table (cores/<core>.toml, each number with its manual section)
and adds the flash wait states of a part's memory system (parts.toml).
See docs/cycle-model.md.

    from codegen.cycles import run_cycles, select_parts
    run = run_cycles(elf, board, call="tinyaot_harness_run")
    run.mean("stm32l4r5")  # (instructions, cycles) per inference
"""
from .run import CycleRun, Inference, run_cycles, symbol_address
from .tables import (CLASSES, CoreTable, Part, load_core, load_parts, parts_for_board,
                     select_parts)

__all__ = ["CycleRun", "Inference", "run_cycles", "symbol_address", "CLASSES", "CoreTable",
           "Part", "load_core", "load_parts", "parts_for_board", "select_parts"]
