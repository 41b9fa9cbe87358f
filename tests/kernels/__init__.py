"""runtime_c's kernels alone: property tests, fast / DSP kernels on QEMU, sanitizers, cppcheck."""
