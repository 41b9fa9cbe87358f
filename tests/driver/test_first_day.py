"""A newcomer's first day (issue 22): the command line says what went wrong
and what to do, in one line, exit 2.

* item 3: no argparse abbreviations anywhere (`--io` is not `--io-buffers`);
* item 4: an unknown scons variable is an error with the closest one;
* item 5: `quantize --json` prints pure JSON for every --method;
* item 6: a missing toolchain is one line naming the program and ./bootstrap.sh;
* item 7: a float model is one line saying so and how to quantize it;
* item 9: a mistyped option or command gets the closest one;
* item 10: `tinyaot bench MODEL.onnx` benches that model.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, REPO

F32_MODEL = REPO / "models" / "digits_cnn_f32.onnx"


def cli(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or REPO, env=env)


def scons(*args, env=None):
    return subprocess.run([sys.executable, "-m", "SCons", "-Q", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, env=env)


def one_line(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, (n, err)
    return err


# ------------------------------------------------------------------ item 3

def _parsers():
    from codegen.cli import build_parser
    ap = build_parser()
    return [ap] + list(ap.subcommands.values())


def test_no_parser_accepts_abbreviations():
    parsers = _parsers()
    assert len(parsers) > 10
    assert all(p.allow_abbrev is False for p in parsers)
    # every ArgumentParser of the repository's scripts too
    for path in sorted(REPO.rglob("*.py")):
        if "build" in path.relative_to(REPO).parts or path.parts[-2] == "tests":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "ArgumentParser":
                kw = {k.arg: k.value for k in node.keywords}
                assert "allow_abbrev" in kw and kw["allow_abbrev"].value is False, path


def test_an_abbreviation_is_an_unknown_option(tmp_path):
    err = one_line(cli("compile", DEFAULT_MODEL, "-o", tmp_path / "x", "--io-buf", "user"),
                   "unknown option --io-buf", "did you mean --io-buffers?")
    assert not (tmp_path / "x").exists()
    assert err.startswith("tinyaot compile: error:")


# ------------------------------------------------------------------ item 9

@pytest.mark.parametrize("args,needles", [
    (["verify", "M.onnx", "--borad", "qemu-m4"], ["unknown option --borad", "--board?"]),
    (["verify", "M.onnx", "--golden", "g.npz", "--borad=qemu-m4"], ["--board?"]),
    (["run", "M.onnx", "--inputs", "x", "-o", "y", "--numeric", "tflite"], ["--numerics?"]),
    (["verfy", "M.onnx"], ["unknown command 'verfy'", "did you mean verify?"]),
    (["--versoin"], ["did you mean --version?"]),
    (["compile", "M.onnx", "--optimize", "sped"], ["invalid choice: 'sped'", "speed?"]),
])
def test_mistyped_option_names_the_closest(args, needles):
    err = one_line(cli(*args), *needles)
    assert "usage:" not in err


# ------------------------------------------------------------------ item 4

def test_unknown_scons_variable_is_an_error():
    p = scons("board=host", f"modle={F32_MODEL}")
    one_line(p, "unknown scons variable modle=", "did you mean model=?")
    assert "PASS" not in p.stdout and "golden" not in p.stdout
    p = scons("board=host", "gen=/nonexistent", "stackcheck=0")
    one_line(p, "stackcheck=0", "stack_check=?")


# ------------------------------------------------------------------ item 5

@pytest.mark.parametrize("method", ["minmax", "entropy", "percentile"])
def test_quantize_json_is_pure_json(tmp_path, method):
    calib = tmp_path / "calib.npz"
    np.savez(calib, inputs=np.random.default_rng(0).random((6, 1, 8, 8)).astype(np.float32))
    out = tmp_path / "q.onnx"
    p = cli("quantize", F32_MODEL, "--calib", calib, "-o", out, "--method", method, "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)          # nothing but the JSON document on stdout
    assert r["method"] == method and r["calibration_samples"] == 6 and out.exists()


# ------------------------------------------------------------------ item 7

def test_float_model_is_one_short_line():
    err = one_line(cli("compile", F32_MODEL, "-o", "/nonexistent/x"),
                   str(F32_MODEL), "float model", "tinyaot quantize")
    assert len(err) < 300, len(err)


# ------------------------------------------------------------------ item 6

def _path_without(tmp_path, prefixes):
    """A PATH with every program of the current one except those named prefix*."""
    shadow = tmp_path / "bin"
    shadow.mkdir()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            src = os.path.join(d, name)
            if name.startswith(prefixes) or (shadow / name).exists() or \
                    not (os.path.isfile(src) and os.access(src, os.X_OK)):
                continue
            (shadow / name).symlink_to(src)
    return str(shadow)


def test_missing_toolchain_is_one_line_for_every_command(tmp_path):
    env = dict(os.environ, PATH=_path_without(tmp_path, ("arm-none-eabi-", "qemu-system-")),
               TINYAOT_BUILD_DIR=str(tmp_path / "build"))
    inp = tmp_path / "in.npz"
    np.savez(inp, inputs=np.load(DEFAULT_GOLDEN)["inputs"][:2])
    m, g = DEFAULT_MODEL, DEFAULT_GOLDEN
    runs = {
        "verify": cli("verify", m, "--golden", g, "--board", "qemu-m4", env=env),
        "run": cli("run", m, "--inputs", inp, "-o", tmp_path / "o.npz", "--board", "qemu-m4",
                   env=env),
        "report": cli("report", m, "--board", "qemu-m4", env=env),
        "profile": cli("profile", m, "--board", "qemu-m4", env=env),
        "validate": cli("validate", m, "--inputs", inp, "--board", "qemu-m4", env=env),
        "export": cli("export", m, "--board", "qemu-m4", "-o", tmp_path / "lib", env=env),
        "bench": cli("bench", m, "--board", "qemu-m4", env=env),
        "scons": scons("board=qemu-m4", env=env),
        "fleet": scons("board=host,qemu-m3", env=env),
    }
    for what, p in runs.items():
        err = one_line(p, "arm-none-eabi-gcc", "./bootstrap.sh")
        assert "not found on PATH" in err, (what, err)
    assert "qemu-system-arm" in one_line(runs["verify"])
    assert "--no-measure" in one_line(runs["export"])
    assert not (tmp_path / "lib").exists() and not (tmp_path / "o.npz").exists()
    # what needs no toolchain still works
    p = cli("compile", m, "-o", tmp_path / "gen", env=env)
    assert p.returncode == 0, p.stderr
    p = cli("export", m, "--board", "qemu-m4", "-o", tmp_path / "lib", "--no-measure", env=env)
    assert p.returncode == 0, p.stderr


# ------------------------------------------------------------------ item 10

def test_bench_a_model_of_ones_own(tmp_path):
    """`tinyaot bench MODEL.onnx` (the form a newcomer tries): one row, verified
    against the golden file beside the model; the bench's own results untouched."""
    results = REPO / "bench" / "results.json"
    before = results.read_bytes() if results.exists() else None
    p = cli("bench", DEFAULT_MODEL, "--board", "host", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert len(rows) == 1
    r = rows[0]
    assert r["model"] == "digits_cnn_int8" and r["numerics"] == "ort" and r["board"] == "host"
    assert r["vectors"] == 64 and r["mismatches"] == 0 and r["arena_bytes"] > 0
    assert (results.read_bytes() if results.exists() else None) == before
    # a model without a golden file beside it: one line saying how to make one
    lone = tmp_path / "lone.onnx"
    lone.write_bytes(DEFAULT_MODEL.read_bytes())
    one_line(cli("bench", lone, "--board", "host"), "lone_golden.npz", "tinyaot golden")
    # -o writes the files
    p = cli("bench", lone, "--golden", DEFAULT_GOLDEN, "--board", "host", "-o", tmp_path / "b")
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "b" / "results.json").read_text())[0]["mismatches"] == 0


def test_bench_help_shows_the_model_form():
    out = cli("bench", "--help").stdout
    assert "tinyaot bench my.onnx" in out and "[model ...]" in out
