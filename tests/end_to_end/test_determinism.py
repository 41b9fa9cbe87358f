"""Compiling the same model twice gives byte-identical output.

Each compile runs in a fresh `python -m codegen.cli compile` process, with
different PYTHONHASHSEED values (so set/dict-of-str ordering that depends on
string hashing would show up) and one of them from a different working
directory. The qemu-m4 firmware built from two such directories must have
identical loadable contents (objcopy -O binary).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, REPO, shared_model

CASES = [
    pytest.param("default", "ort", id="default-ort"),
    pytest.param("default", "tflite", id="default-tflite"),
    pytest.param("kws01", "ort", id="kws01-ort", marks=pytest.mark.shared),
    pytest.param("vww01", "tflite", id="vww01-tflite", marks=pytest.mark.shared),
]


def _model(key):
    if key == "default":
        return DEFAULT_MODEL, DEFAULT_GOLDEN
    return shared_model(key)


def _cli_compile(model, out_dir, numerics, cwd, hashseed):
    env = dict(os.environ, PYTHONHASHSEED=str(hashseed))
    # from another directory the package must still be importable
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    p = subprocess.run([sys.executable, "-m", "codegen.cli", "compile", str(model),
                        "-o", str(out_dir), "--numerics", numerics],
                       cwd=str(cwd), env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"compile failed (cwd={cwd}):\n{p.stdout}{p.stderr}"
    return Path(out_dir)


def _three_compiles(model, numerics, tmp_path):
    other_cwd = tmp_path / "elsewhere"
    other_cwd.mkdir()
    a = _cli_compile(model, tmp_path / "a", numerics, REPO, 1)
    b = _cli_compile(model, tmp_path / "b", numerics, REPO, 2)
    c = _cli_compile(model, tmp_path / "c", numerics, other_cwd, "random")
    return a, b, c


def _first_diff(x: bytes, y: bytes):
    n = min(len(x), len(y))
    for i in range(n):
        if x[i] != y[i]:
            return i
    return n


def _assert_same_files(dirs, names):
    ref = dirs[0]
    for d in dirs[1:]:
        for fn in names:
            x, y = (ref / fn).read_bytes(), (d / fn).read_bytes()
            if x != y:
                i = _first_diff(x, y)
                pytest.fail(f"{fn} differs between {ref.name} and {d.name} at byte {i} "
                            f"(sizes {len(x)}, {len(y)}):\n{x[max(0, i - 200):i + 200]!r}\nvs\n"
                            f"{y[max(0, i - 200):i + 200]!r}")


@pytest.mark.parametrize("key,numerics", CASES)
def test_compile_is_byte_identical(key, numerics, tmp_path):
    model, _ = _model(key)
    dirs = _three_compiles(model, numerics, tmp_path)
    import json
    name = json.loads((dirs[0] / "report.json").read_text())["name"]
    assert sorted(p.name for p in dirs[0].iterdir()) == sorted(
        [f"{name}.c", f"{name}.h", "report.json", "tinyaot_model_config.h"])
    _assert_same_files(dirs, [f"{name}.c", f"{name}.h", "tinyaot_model_config.h"])
    # report.json holds no absolute paths (only the model's basename), so it
    # must be identical too, whatever the cwd or output directory
    rep = (dirs[0] / "report.json").read_text()
    for d in dirs:
        for s in (str(d), str(tmp_path), str(REPO), str(Path(model).parent)):
            assert s not in rep, f"report.json contains the path {s}"
    _assert_same_files(dirs, ["report.json"])


def _need_arm():
    for tool in ("arm-none-eabi-gcc", "arm-none-eabi-objcopy"):
        if shutil.which(tool) is None:
            if os.environ.get("CI"):
                pytest.fail(f"{tool} is missing (CI is set: this must not be skipped)")
            pytest.skip(f"{tool} is missing")


def _build_firmware(gen_dir, inputs):
    import json

    from codegen.backend import emit_harness_data
    from codegen.driver.firmware import build_generated

    rep = json.loads((gen_dir / "report.json").read_text())
    in_size = int(np.prod(rep["input"]["shape"]))
    out_size = int(np.prod(rep["output"]["shape"]))
    per = np.asarray(inputs, dtype=np.int8).reshape(len(inputs), -1)
    (gen_dir / "harness_data.c").write_text(emit_harness_data(rep["name"], per, in_size, out_size))
    return Path(build_generated(str(gen_dir), "qemu-m4", harness=True))


@pytest.mark.parametrize("key,numerics", [CASES[0], CASES[2]])
def test_qemu_m4_firmware_is_reproducible(key, numerics, tmp_path):
    _need_arm()
    model, golden = _model(key)
    inputs = np.load(golden)["inputs"][:4]
    a = _cli_compile(model, tmp_path / "a", numerics, REPO, 1)
    other_cwd = tmp_path / "elsewhere"
    other_cwd.mkdir()
    b = _cli_compile(model, tmp_path / "b", numerics, other_cwd, 2)
    bins = []
    for d in (a, b):
        elf = _build_firmware(d, inputs)
        out = d / "fw.bin"
        p = subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", str(elf), str(out)],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        bins.append(out.read_bytes())
    assert len(bins[0]) > 0
    if bins[0] != bins[1]:
        i = _first_diff(bins[0], bins[1])
        pytest.fail(f"firmware images differ at offset 0x{i:x} (sizes {len(bins[0])}, {len(bins[1])})")
