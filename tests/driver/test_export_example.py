"""`tinyaot export` for a newcomer (issue 22 items 2, 3 and 12): the folder
runs on its own (`make -C DIR/example run`), says what the firmware must do
for it (FPU, alignment), has the float API on request, and exporting again
keeps the user's files.

Expected outputs: the repository's golden file (onnxruntime's outputs, made
by models/make_digits_cnn.py).
"""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from codegen.cli import main as cli_main
from codegen.driver.export_example import parse_example_output

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, require_arm_toolchain

N = 6  # golden inputs the example embeds


def _inputs(tmp_path):
    g = np.load(DEFAULT_GOLDEN)
    path = tmp_path / "in.npz"
    np.savez(path, inputs=g["inputs"][:N])
    return path, g["outputs_onnxruntime"][:N]


def _export(lib, board, *extra):
    assert cli_main(["export", str(DEFAULT_MODEL), "--board", board, "-o", str(lib),
                     "--no-measure", *map(str, extra)]) == 0


def _make_run(example, timeout=300):
    build = subprocess.run(["make", "-C", str(example)], capture_output=True, text=True,
                           timeout=timeout)
    assert build.returncode == 0, build.stdout + build.stderr
    assert "warning" not in (build.stdout + build.stderr).lower(), build.stdout + build.stderr
    return subprocess.run(["make", "-s", "-C", str(example), "run"], capture_output=True,
                          text=True, timeout=timeout)


def _check_outputs(text, expected):
    rows = parse_example_output(text)
    assert [(m, i, s) for m, i, s, _ in rows] == [("digits_cnn_int8", i, 0) for i in range(N)], text
    got = np.array([v for *_, v in rows], dtype=np.int64)
    np.testing.assert_array_equal(got, expected.reshape(N, -1).astype(np.int64))
    assert text.rstrip().endswith("done")


@pytest.mark.qemu
def test_export_example_runs_in_qemu_and_says_the_fpu_must_be_on(tmp_path):
    require_arm_toolchain()
    inp, expected = _inputs(tmp_path)
    lib = tmp_path / "digits_lib"
    _export(lib, "qemu-m4", "--inputs", inp)
    ex = lib / "example"
    assert {"Makefile", "main.c", "example_data.c", "example_data.h", "linker.ld",
            "semihost.c", "semihost.h"} <= {p.name for p in ex.iterdir()}
    assert any(p.name.startswith("startup") for p in ex.iterdir())
    # The example needs nothing outside the folder (no path into the repository).
    for p in list(ex.iterdir()) + [lib / "tinyaot.mk"]:
        assert "runtime_c" not in p.read_text() and "boards/" not in p.read_text(), p
    run = _make_run(ex)
    assert run.returncode == 0, run.stdout + run.stderr
    _check_outputs(run.stdout + run.stderr, expected)   # semihosting: QEMU's stderr
    # The header and README state the FPU and alignment requirements.
    header = (lib / "include" / "digits_cnn_int8.h").read_text()
    readme = (lib / "README.md").read_text()
    for text in (header, readme):
        assert "-mfloat-abi=hard" in text and "FPU must" in text and "CPACR" in text
        assert "4-byte aligned" in text and "16 bytes" in text
    assert "make -C example run" in readme
    # ... and the FPU requirement is real: the same firmware with the startup's
    # FPU enable taken out faults on the first FPU instruction (UsageFault NOCP).
    off = tmp_path / "no_fpu"
    shutil.copytree(lib, off)
    shutil.rmtree(off / "example" / "build")
    start = next(p for p in (off / "example").iterdir() if p.name.startswith("startup"))
    src = start.read_text()
    i = src.index("#if defined(__ARM_FP)")
    start.write_text(src[:i] + src[src.index("#endif", i) + len("#endif"):])
    run = _make_run(off / "example")
    assert run.returncode != 0 and "HARDFAULT" in run.stdout + run.stderr
    cfsr = int((run.stdout + run.stderr).split("cfsr=")[1].split()[0], 16)
    assert cfsr & (1 << 19), hex(cfsr)  # UFSR.NOCP: coprocessor (FPU) access while disabled


@pytest.mark.qemu
def test_export_example_soft_float_board_needs_no_fpu(tmp_path):
    require_arm_toolchain()
    inp, expected = _inputs(tmp_path)
    lib = tmp_path / "m3"
    _export(lib, "qemu-m3", "--inputs", inp)
    readme = (lib / "README.md").read_text()
    assert "FPU: none needed" in readme and "-mfloat-abi=soft" in readme
    run = _make_run(lib / "example")
    assert run.returncode == 0, run.stdout + run.stderr
    _check_outputs(run.stdout + run.stderr, expected)


def test_export_example_on_the_host(tmp_path):
    if shutil.which("make") is None or shutil.which("cc") is None:
        pytest.skip("make / cc missing")
    inp, expected = _inputs(tmp_path)
    lib = tmp_path / "host_lib"
    _export(lib, "host", "--inputs", inp)
    run = _make_run(lib / "example")
    assert run.returncode == 0, run.stdout + run.stderr
    _check_outputs(run.stdout, expected)


def test_export_example_default_input_is_the_zero_point(tmp_path):
    lib = tmp_path / "lib"
    _export(lib, "host")
    data = (lib / "example" / "example_data.c").read_text()
    assert "digits_cnn_int8_example_inputs[1][64]" in data
    assert data.count("-128") == 64  # the input zero point, DIGITS_CNN_INT8_INPUT_ZERO_POINT


def test_export_float_api_with_io(tmp_path):
    """`--io float` is export's own option (not an abbreviation of --io-buffers)."""
    lib = tmp_path / "f"
    _export(lib, "host", "--io", "float")
    h = (lib / "include" / "digits_cnn_int8.h").read_text()
    assert "int digits_cnn_int8_run_f32(const float *input, float *output);" in h
    assert "digits_cnn_int8_run_f32(const float *input, float *output)" in \
        (lib / "src" / "digits_cnn_int8.c").read_text()
    assert "_run_f32" in (lib / "README.md").read_text()
    rep = json.loads((lib / "report.json").read_text())
    assert rep["digits_cnn_int8"]["io"]["api"] == "float"


def test_reexport_keeps_user_files_and_refuses_to_overwrite_edits(tmp_path, capsys):
    lib = tmp_path / "lib"
    _export(lib, "host")
    (lib / "notes.txt").write_text("mine")
    (lib / "src" / "glue").mkdir()
    (lib / "src" / "glue" / "board_glue.c").write_text("int glue;\n")
    (lib / "example" / "build").mkdir()
    (lib / "example" / "build" / "app").write_text("stale build output")
    capsys.readouterr()
    assert cli_main(["export", str(DEFAULT_MODEL), "--board", "host", "-o", str(lib),
                     "--no-measure", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["kept"] == ["notes.txt", "src/glue/board_glue.c"]
    assert (lib / "notes.txt").read_text() == "mine"
    assert (lib / "src" / "glue" / "board_glue.c").read_text() == "int glue;\n"
    assert not (lib / "example" / "build").exists()  # make's output: rebuilt, not kept
    assert (lib / "tinyaot.mk").exists()
    # the text output says so too
    _export(lib, "host")
    assert "kept 2 file(s) you added there: notes.txt, src/glue/board_glue.c" in \
        capsys.readouterr().out
    # An exported file the user edited is never overwritten: refused, nothing touched.
    main_c = lib / "example" / "main.c"
    main_c.write_text(main_c.read_text() + "/* my change */\n")
    before = {p: p.read_bytes() for p in lib.rglob("*") if p.is_file()}
    assert cli_main(["export", str(DEFAULT_MODEL), "--board", "host", "-o", str(lib),
                     "--no-measure"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "example/main.c" in err and "changed" in err, err
    assert {p: p.read_bytes() for p in lib.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lib"]  # no temporary folder left


def test_export_without_manifest_is_refused(tmp_path, capsys):
    lib = tmp_path / "lib"
    _export(lib, "host")
    (lib / "tinyaot-files.json").unlink()   # as an export from before the manifest
    (lib / "mine.c").write_text("int mine;\n")
    assert cli_main(["export", str(DEFAULT_MODEL), "--board", "host", "-o", str(lib),
                     "--no-measure"]) == 2
    assert "tinyaot-files.json" in capsys.readouterr().err
    assert (lib / "mine.c").read_text() == "int mine;\n"


def test_export_example_of_a_model_with_several_ends(tmp_path):
    """Two inputs (one float, quantized in the exported int8 API) and four outputs: the
    example runs each input at its zero point and prints every output after the other;
    expected values: onnxruntime on the model (float outputs quantized back, exact since
    they are DequantizeLinear of int8)."""
    if shutil.which("make") is None or shutil.which("cc") is None:
        pytest.skip("make / cc missing")
    import onnx
    import onnxruntime as ort
    from tests.helpers import ends_builders as E
    path = tmp_path / "several_ends.onnx"
    onnx.save(E.several_ends(), str(path))
    lib = tmp_path / "several_lib"
    assert cli_main(["export", str(path), "--board", "host", "-o", str(lib), "--no-measure"]) == 0
    run = _make_run(lib / "example")
    assert run.returncode == 0, run.stdout + run.stderr
    rows = parse_example_output(run.stdout)
    assert [(m, i, s) for m, i, s, _ in rows] == [("several_ends", 0, 0)], run.stdout
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    x0 = np.full((1, 16), np.float32(0.0), np.float32)  # zero point -> 0.0 exactly
    z0 = np.full((1, 8), E.Z_Q[1], np.int8)
    outs = sess.run(None, {"serving_default_x:0": x0, "serving_default_z:0": z0})
    quants = {"StatefulPartitionedCall:2": E.O2_Q, "StatefulPartitionedCall:0": E.A_Q}
    expected = []
    for o, y in zip(sess.get_outputs(), outs):
        if y.dtype == np.float32:
            s, zp = quants[o.name]
            y = np.rint(y / s) + zp
        expected += [int(v) for v in np.asarray(y).reshape(-1)]
    assert rows[0][3] == expected
