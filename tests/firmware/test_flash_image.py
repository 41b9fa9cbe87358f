"""One flash figure (codegen/driver/linkmap.py), checked against the ELF.

The oracle is the linked ELF read by binutils, not the map file the code
under test parses: `arm-none-eabi-size -A` gives every section's size,
`objdump -h` which sections are allocated and loaded and where they load
from, `nm` the harness's input array (and the next symbol after it: the
alignment fill the array causes is left out with it) and the weight arrays.
"""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.driver.verify import load_golden, run_model, verify_model
from codegen.targets.boards import board_or_error

from tests.helpers.env import (DEFAULT_GOLDEN, DEFAULT_MODEL, REPO, require_arm_toolchain,
                               shared_model)

pytestmark = pytest.mark.qemu

CONV1D = REPO / "models" / "conv1d_int8.onnx"
# the emitter's weight arrays (wb, wo: a size build's fields and outliers, bits_pack.py)
_WEIGHT_RE = re.compile(r"^l\d+_(w|wp|wu|wb|wo|w_\w+)$")


def _tool(board, name, elf, *flags):
    return subprocess.run([board["toolchain_prefix"] + name, *flags, str(elf)],
                          capture_output=True, text=True, check=True).stdout


def elf_flash(elf, board):
    """(flash bytes less the harness inputs and their fill, weight bytes) from binutils."""
    sizes = {}
    for line in _tool(board, "size", elf, "-A").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    lo, hi = int(board["flash_origin"]), int(board["flash_origin"]) + int(board["flash_size"])
    total = 0
    lines = _tool(board, "objdump", elf, "-h").splitlines()
    for head, flags in zip(lines, lines[1:]):
        parts = head.split()
        if len(parts) == 7 and parts[0].isdigit():
            name, size, lma = parts[1], int(parts[2], 16), int(parts[4], 16)
            if "ALLOC" in flags and "LOAD" in flags and lo <= lma < hi and size:
                assert sizes[name] == size, (name, sizes[name], size)
                total += sizes[name]
    syms = []
    for line in _tool(board, "nm", elf, "-S", "-n").splitlines():
        parts = line.split()
        if len(parts) == 4:
            syms.append((int(parts[0], 16), int(parts[1], 16), parts[2], parts[3]))
    start, size = next((a, s) for a, s, _, n in syms if n == "tinyaot_harness_inputs")
    nxt = min(a for a, s, _, n in syms if a >= start + size)
    weights = sum(s for a, s, t, n in syms if t in "rRdD" and _WEIGHT_RE.match(n))
    return total - (nxt - start), weights


@pytest.fixture(autouse=True)
def _toolchain():
    require_arm_toolchain()


@pytest.mark.parametrize("model,board,optimize", [
    (DEFAULT_MODEL, "qemu-m4", "speed"),
    (DEFAULT_MODEL, "qemu-m4", "size"),
    (DEFAULT_MODEL, "qemu-m3", "speed"),
    (DEFAULT_MODEL, "qemu-m55", "size"),
    (CONV1D, "qemu-m55", "speed"),
    (CONV1D, "qemu-m3", "size"),
    ("ad01 tflite", "qemu-m4", "size"),
])
def test_flash_figure_is_the_elf_image(model, board, optimize, tmp_path):
    b = board_or_error(board)
    numerics = "ort"
    if model == "ad01 tflite":  # weights in fewer bits (l<i>_wb, l<i>_wo)
        model, numerics = shared_model("ad01")[0].with_suffix(".tflite"), "tflite"
    c = compile_model(model, numerics=numerics, optimize=optimize)
    xin = c.graph.tensors[c.graph.inputs[0]]
    x = np.random.default_rng(0).integers(-128, 128, (3, xin.size)).astype(np.int8)
    _, info = run_model(model, x, board=board, compiled=c, build_dir=tmp_path)
    f = info["flash_split"]
    total, weights = elf_flash(info["elf"], b)
    assert f["total"] == total, (f, total)
    assert f["weights"] == weights > 0
    assert f["code"] + f["weights"] + f["tables"] == f["total"]
    assert f["code"] == sum(f["code_split"].values())
    assert min(f["code_split"].values()) > 0 and f["tables"] > 0
    # the model's own code: the functions of its object file that the link kept
    obj = tmp_path / f"obj-{board}" / f"{c.module.name}.o"
    own = {p[-1] for p in (ln.split() for ln in _tool(b, "nm", obj).splitlines())
           if len(p) == 3 and p[1] in "tT"}
    kept = sum(int(p[1], 16) for p in (ln.split() for ln in _tool(b, "nm", info["elf"], "-S")
                                                   .splitlines())
               if len(p) == 4 and p[2] in "tT" and p[3] in own)
    assert f["code_split"]["model"] == kept > 0


@pytest.mark.shared
def test_same_figure_from_verify_report_export_and_any_input_count(tmp_path):
    """kws01's input (490 bytes) is not a multiple of 4: 1 or 7 embedded inputs
    leave different fill after them, and the figure does not move."""
    from codegen.driver.export import export
    from codegen.driver.report import report_model
    model, _ = shared_model("kws01")
    c = compile_model(model, numerics="tflite")
    xin = c.graph.tensors[c.graph.inputs[0]]
    assert xin.size % 4, "pick a model whose input is not a multiple of 4 bytes"
    one = run_model(model, np.zeros((1, xin.size), np.int8), board="qemu-m4", compiled=c,
                    build_dir=tmp_path / "one")[1]["flash_split"]["total"]
    many = run_model(model, np.zeros((7, xin.size), np.int8), board="qemu-m4", compiled=c,
                     build_dir=tmp_path / "many")[1]["flash_split"]["total"]
    rep = report_model(model, board="qemu-m4", compiled=c)["totals"]["flash"]["total"]
    r = export([model], "qemu-m4", tmp_path / "exp", numerics="tflite")
    exported = r["numbers"][c.module.name]["flash"]["total"]
    assert one == many == rep == exported
    assert f"| {exported:,} " in (tmp_path / "exp" / "README.md").read_text()


def test_flash_limit_checks_the_linked_image(tmp_path):
    """--flash-limit below the image (but above the weights and tables): the
    link succeeds, then one line says by how much the image is over."""
    from codegen.errors import TinyAotError
    x, _ = load_golden(DEFAULT_GOLDEN)
    _, info = run_model(DEFAULT_MODEL, x[:1], board="qemu-m4", build_dir=tmp_path / "a")
    image = info["flash_split"]["total"]
    c = compile_model(DEFAULT_MODEL)
    assert c.module.weights_bytes < image - 1
    with pytest.raises(TinyAotError) as e:
        run_model(DEFAULT_MODEL, x[:1], board="qemu-m4", flash_limit=image - 1,
                  build_dir=tmp_path / "b")
    msg = str(e.value)
    assert "flash image" in msg and f"{image} B" in msg and "(1 B over)" in msg, msg
    assert "\n" not in msg
    run_model(DEFAULT_MODEL, x[:1], board="qemu-m4", flash_limit=image, build_dir=tmp_path / "c")


def test_host_has_no_flash_figure():
    r = verify_model(DEFAULT_MODEL, DEFAULT_GOLDEN, board="host", key="outputs")
    assert r["flash"] is None and r["flash_bytes"] is None
    assert "no flash" in r["flash_note"]
