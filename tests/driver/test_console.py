"""Colour, rich tables and progress bars only on a terminal (codegen/driver/console.py).

Commands run under a pseudo-terminal (python pty) print ANSI escape codes;
piped, or with NO_COLOR / TERM=dumb, they print the plain tables the other
tests parse, without a single escape byte.
"""
import os
import pty
import re
import select
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, REPO

ESC = "\x1b["
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "CI", "TERM")}
    env.update(TERM="xterm-256color", COLUMNS="160", LINES="50")
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def run_in_pty(args, env, stderr_tty=True, timeout=300, argv=None):
    """Run tinyaot (or argv) with stdout (and stderr) on a pseudo-terminal;
    returns (exit code, terminal text, stderr text when stderr was a pipe)."""
    master, slave = pty.openpty()
    argv = argv or [sys.executable, "-m", "codegen.cli", *map(str, args)]
    p = subprocess.Popen(argv, cwd=REPO,
                         stdin=subprocess.DEVNULL, stdout=slave,
                         stderr=slave if stderr_tty else subprocess.PIPE, env=env)
    os.close(slave)
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], timeout)
        if not r:
            p.kill()
            raise TimeoutError(args)
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    err = p.stderr.read().decode() if p.stderr else ""
    p.wait()
    os.close(master)
    return p.returncode, out.decode(errors="replace"), err


def run_piped(args, env):
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)


VALIDATE = ["validate", DEFAULT_MODEL, "--inputs", DEFAULT_GOLDEN, "--limit", 2]


def test_validate_on_a_terminal_is_a_coloured_table_with_progress():
    rc, out, _ = run_in_pty(VALIDATE, _env())
    assert rc == 0, out
    assert ESC in out
    assert "\x1b[?25l" in out  # the progress bar hides the cursor while it runs
    assert "│" in out and "/fc/Gemm" in out  # a rich table with every layer
    assert "all 14 compared layers bit-exact" in out


def test_validate_piped_is_plain_text_without_escapes():
    p = run_piped(VALIDATE, _env())
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout + p.stderr
    assert p.stderr == ""  # no progress off a terminal
    lines = p.stdout.splitlines()
    assert lines[1].split()[:4] == ["#", "op", "layer", "shape"]
    assert lines[-1] == "all 14 compared layers bit-exact"


@pytest.mark.parametrize("extra", [{"NO_COLOR": "1"}, {"TERM": "dumb"}, {"CI": "true"}])
def test_no_color_dumb_terminal_and_ci_give_plain_text(extra):
    rc, out, err = run_in_pty(VALIDATE, _env(**extra), stderr_tty=False)
    assert rc == 0, out + err
    assert "\x1b" not in out
    plain = run_piped(VALIDATE, _env(**extra)).stdout
    assert out.replace("\r\n", "\n") == plain


# validate on the default model with one weight bit flipped after compiling
# (as tests/driver/test_validate_ort.py does), printed the way `tinyaot validate` does
_CORRUPT_AND_PRINT = """
import sys
import numpy as np
from codegen.compiler import compile_model
from codegen.driver.validate import print_validate, validate_model
model, golden, layer = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = compile_model(model, numerics="ort")
w = c.graph.tensors[c.graph.nodes[layer].inputs[1]]
w.data = w.data.copy()
w.data.flat[3] = np.int8(int(w.data.flat[3]) ^ 0x40)
r = validate_model(model, np.load(golden)["inputs"][:1], board="host", numerics="ort", compiled=c)
print_validate(r)
sys.exit(1 if r["first_divergent_layer"] is not None else 0)
"""


def test_divergent_layer_is_red_on_a_terminal():
    """The first divergent row is printed in red (a weight of layer 8 corrupted
    on purpose, as in tests/driver/test_validate_ort.py)."""
    argv = [sys.executable, "-c", _CORRUPT_AND_PRINT, str(DEFAULT_MODEL), str(DEFAULT_GOLDEN), "8"]
    rc, out, _ = run_in_pty(None, _env(PYTHONPATH=str(REPO)), argv=argv)
    assert rc == 1
    red_rows = [ln for ln in out.splitlines() if "\x1b[1;31m" in ln]
    assert any("first divergent layer" in ln for ln in red_rows)
    assert any("FIRST DIVERGENCE: layer 8" in ln for ln in red_rows)


def _float_model(path):
    w = np.random.default_rng(0).standard_normal((4, 1, 3, 3)).astype(np.float32)
    g = h.make_graph([h.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
                      h.make_node("Relu", ["y"], ["z"])], "f32",
                     [h.make_tensor_value_info("x", TP.FLOAT, [1, 1, 8, 8])],
                     [h.make_tensor_value_info("z", TP.FLOAT, [1, 4, 8, 8])],
                     [onnx.numpy_helper.from_array(w, "w")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), str(path))


def test_quantize_progress_only_on_a_terminal(tmp_path):
    f32 = tmp_path / "f32.onnx"
    _float_model(f32)
    calib = tmp_path / "calib.npz"
    np.savez(calib, inputs=np.random.default_rng(1).standard_normal((40, 1, 8, 8)).astype(np.float32))
    rc, out, _ = run_in_pty(["quantize", f32, "--calib", calib, "-o", tmp_path / "a.onnx"], _env())
    assert rc == 0, out
    assert "calibrating (minmax)" in out and ESC in out and "/40" in out
    p = run_piped(["quantize", f32, "--calib", calib, "-o", tmp_path / "b.onnx"], _env())
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout + p.stderr and "calibrating" not in p.stderr
    # The progress bar does not change the model.
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()


# tinyaot bench on the default model only (the full bench runs every shared model).
BENCH_ONE = """import sys
import codegen.driver.bench as b
b.MODELS = [m for m in b.MODELS if m[0] == "digits"]
from codegen.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.qemu
def test_bench_table_on_a_terminal_json_and_plain(tmp_path):
    from tests.helpers.env import require_arm_toolchain
    require_arm_toolchain()
    import json
    argv = [sys.executable, "-c", BENCH_ONE, "bench", "-o", tmp_path / "t"]
    rc, out, _ = run_in_pty(None, _env(), argv=[str(a) for a in argv])
    assert rc == 0, out
    assert ESC in out
    text = ANSI.sub("", out)
    assert "┃ model" in text and "│ digits" in text and "64/64" in text
    p = subprocess.run([str(a) for a in [sys.executable, "-c", BENCH_ONE, "bench", "-o",
                                         tmp_path / "j", "--json"]],
                       cwd=REPO, capture_output=True, text=True, env=_env())
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [(r["model"], r["numerics"], r["mismatches"]) for r in rows] == [("digits", "ort", 0)]
    assert "\x1b" not in p.stdout + p.stderr and "digits" in p.stderr  # per-run line on stderr
    md = (tmp_path / "j" / "results.md").read_text().splitlines()
    assert md[0].startswith("| model | numerics | vectors exact |") and "| digits | ort | 64/64 |" in md[2]
