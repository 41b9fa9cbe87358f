"""The firmware kernel cache (driver/firmware.py:firmware_kernel_cache): the runtime
kernels no model specializes are compiled once per board into build/fw-kernels/;
a firmware built from them is the same image, bit for bit, as one whose build
compiles every kernel itself (TINYAOT_FW_KERNEL_CACHE=0), and its stack bound is
the same (the cached objects' .su files reach the stack check)."""
from __future__ import annotations

import hashlib
import re
import subprocess

import numpy as np
import pytest

from codegen.driver import firmware
from codegen.driver.verify import load_golden, run_model
from codegen.paths import RUNTIME_INCLUDE, runtime_sources

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, require_arm_toolchain


def test_specialized_kernels_are_the_ones_that_read_the_model_config():
    """The nine kernels with per-model copies (the seven with specializations of their
    loops, and the 1x1 pair and sparse convs, which compile the requantization's sign fix
    only where a model needs it: TINYAOT_SPEC_RQ_FIX) include tinyaot_specialize.h
    themselves; no other source reaches it (so their objects are the same for every
    model)."""
    src = RUNTIME_INCLUDE.parent / "src"
    inc = re.compile(r'^\s*#\s*include\s+"(?:\.\./internal/)?([^"]+)"', re.M)
    direct = {str(p) for p in runtime_sources() if "tinyaot_specialize.h" in inc.findall(p.read_text())}
    assert len(direct) == 9
    assert firmware.specialized_kernels() == direct
    # a header that includes it is included by those nine alone
    headers = {h.name for h in (src / "internal").glob("*.h")
               if "tinyaot_specialize.h" in inc.findall(h.read_text())}
    for p in runtime_sources():
        if headers & set(inc.findall(p.read_text())):
            assert str(p) in direct, p.name


def _image(build_dir):
    elf = next(p for p in build_dir.rglob("*-qemu-m4.elf"))
    out = build_dir / "image.bin"
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", str(elf), str(out)], check=True)
    return hashlib.sha256(out.read_bytes()).hexdigest(), elf


@pytest.mark.qemu
def test_cached_kernels_give_the_same_image_and_stack_bound(tmp_path, monkeypatch):
    require_arm_toolchain()
    x, want = load_golden(DEFAULT_GOLDEN)
    got = {}
    for mode in ("1", "0"):
        monkeypatch.setenv("TINYAOT_FW_KERNEL_CACHE", mode)
        d = tmp_path / f"cache{mode}"
        out, _ = run_model(DEFAULT_MODEL, x[:2], board="qemu-m4", numerics="ort", build_dir=d)
        np.testing.assert_array_equal(out.reshape(want[:2].shape), want[:2])
        digest, elf = _image(d)
        su = sorted(p.name for p in elf.parent.rglob("*.su"))
        got[mode] = (digest, su)
    assert got["1"] == got["0"]
    assert len(got["1"][1]) >= 49  # every kernel's .su beside the model's objects
    cache = [p for p in (firmware.build_root() / "fw-kernels").glob("qemu-m4-*") if p.is_dir()]
    assert cache and all((c / "tinyaot_add_s8.su").is_file() for c in cache)
