"""--integrity crc32|sha256: <name>_verify() recomputes the weights' digest.

Host: the shared library's verify() returns 0; a copy of the .so with one
weight byte flipped (found with nm, patched in the file) returns non-zero.
QEMU: the same with the firmware ELF, through harness_main.c's boot check
(VERIFY line, exit status 3 when corrupt).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import zlib

import numpy as np
import pytest

from codegen.driver.firmware import build_generated
from codegen.targets.boards import board_or_error
from codegen.compiler import compile_model, write_outputs
from codegen.integrity import blob_bytes, weights_digest
from tests.helpers.env import DEFAULT_MODEL, require_arm_toolchain, shared_model

STRICT = "-Wall -Wextra -Werror -Wconversion -Wshadow"


def elf_file_offset(data: bytes, vaddr: int) -> int:
    """File offset of a virtual address, from the ELF program headers (32/64-bit LE)."""
    assert data[:4] == b"\x7fELF"
    is64 = data[4] == 2
    if is64:
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    else:
        phoff, = struct.unpack_from("<I", data, 0x1C)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x2A)
    for i in range(phnum):
        off = phoff + i * phentsize
        if is64:
            p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, off)
        else:
            p_type, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIIII", data, off)
        if p_type == 1 and p_vaddr <= vaddr < p_vaddr + p_filesz:
            return p_offset + vaddr - p_vaddr
    raise AssertionError(f"address {vaddr:#x} is in no PT_LOAD segment")


def symbol(nm, path, name):
    out = subprocess.run([nm, "-S", str(path)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == name:
            return int(parts[0], 16), int(parts[1], 16)
    raise AssertionError(f"{name} not in {path}")


def flip_weight_byte(src, dst, nm, sym, index=0):
    data = bytearray(open(src, "rb").read())
    addr, size = symbol(nm, src, sym)
    assert index < size
    off = elf_file_offset(bytes(data), addr + index)
    data[off] ^= 0x01
    open(dst, "wb").write(bytes(data))
    os.chmod(dst, 0o755)


def test_digest_matches_independent_computation():
    c = compile_model(DEFAULT_MODEL, numerics="tflite", integrity="sha256")
    blobs = c.module.blobs
    assert blobs and [b[0] for b in blobs] == [b[0] for b in c.module.blobs]
    raw = b"".join(blob_bytes(t, v) for _, t, v in blobs)
    assert c.report["integrity"]["digest"] == hashlib.sha256(raw).hexdigest()
    assert c.report["integrity"]["bytes"] == len(raw) == c.module.weights_bytes
    crc, _ = weights_digest(blobs, "crc32")
    assert int.from_bytes(crc, "big") == zlib.crc32(raw)
    # the digest follows the emission order: another order is another digest
    other = hashlib.sha256(b"".join(blob_bytes(t, v) for _, t, v in reversed(blobs))).hexdigest()
    assert other != c.report["integrity"]["digest"]
    assert f"int {c.module.name}_verify(void);" in c.module.header


def test_without_integrity_no_verify():
    c = compile_model(DEFAULT_MODEL, numerics="tflite")
    assert "_verify" not in c.module.source and "integrity" not in c.report


def test_unknown_algorithm_is_a_clean_error():
    from codegen.errors import TinyAotError
    with pytest.raises(TinyAotError, match="unknown integrity algorithm 'md5'"):
        compile_model(DEFAULT_MODEL, numerics="tflite", integrity="md5")


def _host_verify(so, name):
    from cffi import FFI
    ffi = FFI()
    ffi.cdef(f"int {name}_verify(void);")
    lib = ffi.dlopen(str(so))
    try:
        return int(getattr(lib, f"{name}_verify")())
    finally:
        ffi.dlclose(lib)


@pytest.mark.parametrize("algorithm", ["crc32", "sha256"])
@pytest.mark.parametrize("model,numerics", [("default", "ort"), ("default", "tflite"),
                                            ("kws01", "tflite"), ("ad01 size", "tflite")])
def test_host_verify_passes_and_detects_a_flipped_weight(algorithm, model, numerics, tmp_path,
                                                        monkeypatch):
    # "ad01 size": its .tflite under --optimize size, weights in fewer bits (uint32 and
    # uint16 arrays: kernels/bits_pack.py)
    path = DEFAULT_MODEL if model == "default" else shared_model(model.split()[0])[0]
    optimize = "speed"
    if model == "ad01 size":
        path, optimize = path.with_suffix(".tflite"), "size"
    monkeypatch.setenv("TINYAOT_HOST_CFLAGS", STRICT)
    c = compile_model(path, numerics=numerics, integrity=algorithm, optimize=optimize)
    if model == "ad01 size":
        assert {t for _, t, _ in c.module.blobs} >= {"uint32_t", "uint16_t"}
    gen = tmp_path / "gen"
    write_outputs(c, gen)
    so = build_generated(gen, "host", harness=False)
    name = c.module.name
    assert _host_verify(so, name) == 0
    # the model still runs and gives the same result as without --integrity
    from codegen.targets.host import run_shared_library
    g = c.graph
    x = np.zeros((1, g.tensors[g.inputs[0]].size), dtype=np.int8)
    outs, status = run_shared_library(so, name, x, x.shape[1], g.tensors[g.outputs[0]].size)
    assert status == [0]
    for k, (sym, _, values) in enumerate([c.module.blobs[0], c.module.blobs[-1]]):
        bad = tmp_path / f"bad{k}.so"
        flip_weight_byte(so, bad, "nm", sym, index=len(blob_bytes(_, values)) - 1)
        assert _host_verify(bad, name) != 0, sym


def _qemu_run(elf, board):
    from codegen.targets.qemu import qemu_command
    proc = subprocess.run(qemu_command(elf, board), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


@pytest.mark.qemu
@pytest.mark.parametrize("algorithm", ["crc32", "sha256"])
def test_qemu_boot_check_detects_a_flipped_weight_in_the_elf(algorithm, tmp_path):
    require_arm_toolchain()
    from codegen.backend import emit_harness_data
    from codegen.integrity import harness_verify_c

    golden = np.load(str(DEFAULT_MODEL).replace(".onnx", "_golden.npz"))
    c = compile_model(DEFAULT_MODEL, numerics="ort", integrity=algorithm)
    gen = tmp_path / "gen"
    write_outputs(c, gen)
    g = c.graph
    xin, xout = g.tensors[g.inputs[0]], g.tensors[g.outputs[0]]
    per = golden["inputs"][:2].reshape(2, -1)
    (gen / "harness_data.c").write_text(emit_harness_data(c.module.name, per, xin.size, xout.size)
                                        + harness_verify_c(c.module.name))
    elf = build_generated(gen, "qemu-m4", harness=True)
    board = board_or_error("qemu-m4")
    code, text = _qemu_run(elf, board)
    assert code == 0, text
    assert "VERIFY 0" in text and "DONE 2" in text
    outs = [line.split()[4] for line in text.splitlines() if line.startswith("OUT ")]
    want = golden["outputs"][:2].reshape(2, -1).astype(np.int8)
    assert [bytes.fromhex(o) for o in outs] == [w.tobytes() for w in want]

    nm = board.get("toolchain_prefix", "arm-none-eabi-") + "nm"
    for sym, ctype, values in (c.module.blobs[0], c.module.blobs[len(c.module.blobs) // 2]):
        bad = tmp_path / f"bad-{sym}.elf"
        flip_weight_byte(elf, bad, nm, sym, index=len(blob_bytes(ctype, values)) // 2)
        code, text = _qemu_run(bad, board)
        assert code == 3, (sym, code, text)
        assert "VERIFY 1" in text and "OUT 0" not in text
    shutil.rmtree(gen, ignore_errors=True)


def test_cli_compile_integrity(tmp_path):
    import json
    import sys
    out = tmp_path / "o"
    p = subprocess.run([sys.executable, "-m", "codegen.cli", "compile", str(DEFAULT_MODEL),
                        "--integrity", "crc32", "-o", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rep = json.loads((out / "report.json").read_text())
    assert rep["integrity"]["algorithm"] == "crc32" and len(rep["integrity"]["digest"]) == 8
    h = (out / "digits_cnn_int8.h").read_text()
    assert f'#define DIGITS_CNN_INT8_WEIGHTS_DIGEST "{rep["integrity"]["digest"]}"' in h
