"""A Debug build of the runtime: every runtime_c kernel compiles at -O0 for the DSP and FPU
cores, warning-free, by taking its portable C twin where the asm needs the optimizer's
register allocation (tinyaot_intrinsics.h: TINYAOT_HAVE_DSP_ASM needs __OPTIMIZE__). The
twins' bits are the asm's (tests/driver/test_export.py runs a -O0 library bit-exact)."""
import shutil

import pytest

from tests.helpers.env import build_every_kernel

CPUS = {"cortex-m4": ["-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"],
        "cortex-m7": ["-mfloat-abi=hard", "-mfpu=fpv5-d16"],
        "cortex-m33": ["-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"]}


@pytest.mark.parametrize("cpu", sorted(CPUS))
def test_every_kernel_builds_at_O0(cpu, tmp_path):
    if not shutil.which("arm-none-eabi-gcc"):
        pytest.skip("arm-none-eabi-gcc missing")
    bad = build_every_kernel([f"-mcpu={cpu}", *CPUS[cpu], "-O0"], tmp_path)
    assert not bad, bad
