"""A Debug build of the runtime: every runtime_c kernel compiles at -O0 for the DSP and FPU
cores, warning-free, by taking its portable C twin where the asm needs the optimizer's
register allocation (tinyaot_intrinsics.h: TINYAOT_HAVE_DSP_ASM needs __OPTIMIZE__). The
twins' bits are the asm's (tests/driver/test_export.py runs a -O0 library bit-exact)."""
import shutil
import subprocess

import pytest

from codegen.paths import RUNTIME_INCLUDE, RUNTIME_SRC

CPUS = {"cortex-m4": ["-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
        "cortex-m7": ["-mfloat-abi=hard", "-mfpu=fpv5-d16"],
        "cortex-m33": ["-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"]}


@pytest.mark.parametrize("cpu", sorted(CPUS))
def test_every_kernel_builds_at_O0(cpu, tmp_path):
    if not shutil.which("arm-none-eabi-gcc"):
        pytest.skip("arm-none-eabi-gcc missing")
    srcs = sorted(RUNTIME_SRC.rglob("*.c"))
    assert len(srcs) > 30
    bad = {}
    for src in srcs:
        proc = subprocess.run(["arm-none-eabi-gcc", f"-mcpu={cpu}", "-mthumb", *CPUS[cpu], "-O0",
                               "-std=c99", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror",
                               f"-I{RUNTIME_INCLUDE}", "-c", str(src), "-o",
                               str(tmp_path / (src.stem + ".o"))], capture_output=True, text=True)
        if proc.returncode:
            bad[src.name] = proc.stderr[-300:]
    assert not bad, bad
