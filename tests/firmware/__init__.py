"""Firmware on the boards: QEMU, instruction counts, cycle model, stack, fleet, flash image."""
