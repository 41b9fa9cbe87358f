"""`tinyaot export`: the folder builds without Python/SCons and runs bit-exact.

The "user's firmware" here is a minimal main.c plus the board's startup,
semihosting and linker script from boards/ (the user's platform code); the
model library comes only from the exported folder, built by `make` through
its tinyaot.mk fragment (and on the host through its CMake files).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from codegen.cli import main as cli_main
from codegen.driver.export import header_closure, kernel_closure
from codegen.paths import BOARDS_DIR, RUNTIME_INCLUDE, RUNTIME_SRC
from codegen.targets import qemu
from codegen.driver.verify import load_golden

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, require_arm_toolchain, shared_model

N_INPUTS = 2

MAIN_C = r"""/* A user's application: runs each model on its inputs and prints the outputs. */
#include <stdint.h>
#include <string.h>
#include "user_data.h"
#ifdef USER_HOST
#include <stdio.h>
static void put_line(uint32_t i, int status, const int8_t *out, uint32_t n)
{
    printf("OUT %u %d 0 ", (unsigned)i, status);
    for (uint32_t k = 0; k < n; k++) printf("%02x", (unsigned)(uint8_t)out[k]);
    printf("\n");
}
static void done(uint32_t n) { printf("DONE %u\n", (unsigned)n); }
#else
#include "semihost.h"
static void put_line(uint32_t i, int status, const int8_t *out, uint32_t n)
{
    tinyaot_sh_puts("OUT ");
    tinyaot_sh_put_u32(i);
    tinyaot_sh_putc(' ');
    tinyaot_sh_put_i32(status);
    tinyaot_sh_puts(" 0 ");
    tinyaot_sh_put_hex(out, n);
    tinyaot_sh_putc('\n');
}
static void done(uint32_t n) { tinyaot_sh_puts("DONE "); tinyaot_sh_put_u32(n); tinyaot_sh_putc('\n'); }
#endif

static int8_t out[4096];

int main(void)
{
    uint32_t line = 0;
    for (uint32_t m = 0; m < user_num_models; m++) {
        const user_model_t *u = &user_models[m];
        for (uint32_t i = 0; i < u->num_inputs; i++) {
            memset(out, 0xA5, u->output_size);
            const int status = u->run(&u->inputs[i * u->input_size], out);
            put_line(line++, status, out, u->output_size);
        }
    }
    done(line);
    return 0;
}
"""


def _user_data(app, models):
    """user_data.c/.h: the golden inputs and a table of the models' run functions."""
    h = ["#include <stdint.h>",
         "typedef struct { int (*run)(const int8_t *, int8_t *); const int8_t *inputs;",
         "                 uint32_t num_inputs, input_size, output_size; } user_model_t;",
         "extern const user_model_t user_models[];", "extern const uint32_t user_num_models;"]
    c = ['#include "user_data.h"']
    for name, inputs, _ in models:
        c.append(f'#include "{name}.h"')
    rows = []
    for name, inputs, _ in models:
        flat = inputs.reshape(len(inputs), -1).astype(np.int8)
        vals = ", ".join(str(int(v)) for v in flat.reshape(-1))
        c.append(f"static const int8_t {name}_in[] = {{{vals}}};")
        rows.append(f"    {{{name}_run, {name}_in, {len(flat)}u, {name.upper()}_INPUT_SIZE, "
                    f"{name.upper()}_OUTPUT_SIZE}},")
    c.append("const user_model_t user_models[] = {\n" + "\n".join(rows) + "\n};")
    c.append(f"const uint32_t user_num_models = {len(models)}u;")
    (app / "user_data.h").write_text("\n".join(h) + "\n")
    (app / "user_data.c").write_text("\n".join(c) + "\n")
    (app / "main.c").write_text(MAIN_C)


def _user_makefile(app, lib, board, opt=None):
    """opt: the user's -O flag instead of the board's."""
    common = BOARDS_DIR / "common"
    opt_cflags = board["opt_cflags"] if opt is None else \
        [f for f in board["opt_cflags"] if not f.startswith("-O")] + [opt]
    cflags = board["cflags"] + opt_cflags + board["warn_cflags"] + \
        [f"-D{d}" for d in board.get("defines", [])]
    ldflags = board["ldflags"] + [f"-T{board['linker_script']}",
                                  f"-Wl,--defsym=__stack_size={board['stack_size']}"]
    (app / "Makefile").write_text(f"""# The user's own Makefile: their platform code + the tinyaot library folder.
CC := arm-none-eabi-gcc
AR := arm-none-eabi-ar
CFLAGS := {' '.join(cflags)}
LDFLAGS := {' '.join(ldflags)}
PLATFORM := {common}/startup_cortexm.c {common}/semihost.c
include {lib}/tinyaot.mk

app.elf: main.c user_data.c $(PLATFORM) $(TINYAOT_LIB)
\t$(CC) $(CFLAGS) $(TINYAOT_INCLUDES) -I{common} $(LDFLAGS) -o $@ $(filter %.c,$^) \\
\t    $(TINYAOT_LIB) $(TINYAOT_LDLIBS) {' '.join(board['libs'])}

clean:
\trm -rf app.elf build
""")


def _expected(records, models):
    i = 0
    for name, inputs, expected in models:
        for k in range(len(inputs)):
            r = records[i]
            assert r.status == 0, (name, k)
            got = np.frombuffer(r.data, dtype=np.int8)
            assert np.array_equal(got, expected[k].reshape(-1)), (name, k, got)
            i += 1
    assert i == len(records)


def _export(models, board, lib, numerics="ort", measure=False):
    args = ["export", *map(str, models), "--board", board, "-o", str(lib), "--numerics", numerics]
    if not measure:
        args.append("--no-measure")
    assert cli_main(args) == 0


def _check_files(lib):
    """Exactly the kernels and headers the models use (and the kernels those call: the
    float convs' tiles), byte-identical to runtime_c, in runtime_c's folders; include/
    holds the public API only (no internal helper)."""
    import json
    rep = json.loads((lib / "report.json").read_text())
    names = set(rep)
    kernels = set().union(*(set(r["kernels"]) for r in rep.values()))
    src = lib / "src"
    files = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    cs = {f for f in files if f.endswith(".c")}
    assert ({Path(f).name for f in cs}
            == {n + ".c" for n in names} | {p.name for p in kernel_closure(kernels)})
    assert all(n + ".c" in cs for n in names)          # the models' C at the top of src/
    for f in files - {n + ".c" for n in names}:
        assert (src / f).read_bytes() == (RUNTIME_SRC / f).read_bytes(), f
    # every helper copied is #included by some copied file, and by its path
    texts = [(src / f).read_text() for f in files]
    incs = {(src / f).parent.joinpath(i).resolve()
            for f in files for i in _INCLUDE.findall((src / f).read_text())}
    for f in files - cs:
        assert (src / f).resolve() in incs, f
    heads = set(header_closure(texts))
    # + the fast kernels' specializations the models use (kernels/specialize.py)
    assert ({p.name for p in (lib / "include").iterdir()}
            == {n + ".h" for n in names} | heads | {"tinyaot_model_config.h"})
    assert "tinyaot_kernels.h" in heads and heads <= {p.name for p in RUNTIME_INCLUDE.iterdir()}
    for h in heads:
        assert (lib / "include" / h).read_bytes() == (RUNTIME_INCLUDE / h).read_bytes()
    top = {p.name for p in lib.iterdir()}
    assert top == {"src", "include", "README.md", "tinyaot.mk", "CMakeLists.txt", "tinyaot.cmake",
                   "report.json", "tinyaot-files.json", "example"}
    return rep


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def _make_and_run(tmp_path, lib, models, board_name="qemu-m4", opt=None, make_args=()):
    board = qemu.load_board(board_name)
    app = tmp_path / "app"
    app.mkdir()
    _user_data(app, models)
    _user_makefile(app, lib, board, opt)
    # Plain make: no Python, no SCons on the command line or in the Makefiles.
    proc = subprocess.run(["make", "-C", str(app), *make_args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "python" not in proc.stdout.lower() and "scons" not in proc.stdout.lower()
    # The library objects came from the exported folder only.
    assert f"{lib}/src/" in proc.stdout and str(RUNTIME_SRC) not in proc.stdout
    elf = app / "app.elf"
    res = qemu.run_firmware(elf, board, timeout=120)
    _expected(res.outputs, models)
    return elf, app


def _golden(model, golden, key):
    inputs, expected = load_golden(golden, key)
    return inputs[:N_INPUTS], expected[:N_INPUTS]


@pytest.mark.qemu
def test_export_make_qemu_m4(tmp_path):
    require_arm_toolchain()
    lib = tmp_path / "digits_lib"
    _export([DEFAULT_MODEL], "qemu-m4", lib, measure=True)
    rep = _check_files(lib)
    readme = (lib / "README.md").read_text()
    r = rep["digits_cnn_int8"]
    assert f"{r['arena_bytes']:,}" in readme
    assert r["measured"]["instructions"] > 0
    assert f"{r['measured']['instructions']:,}" in readme
    assert f"{r['measured']['flash']['total']:,}" in readme
    for word in ("digits_cnn_int8_run", "DIGITS_CNN_INT8_INPUT_SCALE", "tinyaot.mk", "add_subdirectory"):
        assert word in readme
    inputs, expected = _golden(DEFAULT_MODEL, DEFAULT_GOLDEN, "outputs")
    _make_and_run(tmp_path, lib, [("digits_cnn_int8", inputs, expected)])


@pytest.mark.qemu
@pytest.mark.parametrize("opt", ["-O0", "-O3"])
def test_export_builds_at_any_user_optimization_level(tmp_path, opt):
    """A user's -O0 (a debug build) or -O3 in CFLAGS: the library compiles at its own
    TINYAOT_OPT after them (the fast kernels' inline asm needs the registers GCC frees at
    -O2; at -O1 and -O3 some kernels fail) and runs bit-exact on qemu-m4. With
    TINYAOT_OPT=-O0 too, the library builds its portable C twins instead of the asm
    (no SMLAD in the image) and gives the same bits."""
    require_arm_toolchain()
    lib = tmp_path / "lib"
    _export([DEFAULT_MODEL], "qemu-m4", lib)
    inputs, expected = _golden(DEFAULT_MODEL, DEFAULT_GOLDEN, "outputs")
    models = [("digits_cnn_int8", inputs, expected)]
    elf, _ = _make_and_run(tmp_path, lib, models, opt=opt)
    if opt == "-O0":
        asm = subprocess.run(["arm-none-eabi-objdump", "-d", str(elf)], capture_output=True,
                             text=True, check=True).stdout
        assert re.search(r"\tsmlad\s", asm)  # the library's -O2: the DSP asm
        debug = tmp_path / "debug"
        debug.mkdir()
        elf, _ = _make_and_run(debug, lib, models, opt=opt, make_args=[f"TINYAOT_OPT={opt}"])
        asm = subprocess.run(["arm-none-eabi-objdump", "-d", str(elf)], capture_output=True,
                             text=True, check=True).stdout
        assert not re.search(r"\tsmlad\s", asm)  # -O0: the C twins


@pytest.mark.qemu
@pytest.mark.shared
def test_export_debug_build_of_a_float_model(tmp_path):
    """TINYAOT_OPT=-O0 on ic01 under ort: its float convs and float FC (whose asm
    faulted at -O0, an unaligned VLDM), Winograd and the int8-weight conv all on their C
    twins, bit-exact on qemu-m4."""
    require_arm_toolchain()
    model, golden = shared_model("ic01")
    lib = tmp_path / "lib"
    _export([model], "qemu-m4", lib)
    inputs, expected = load_golden(golden, "outputs_onnxruntime")
    models = [(model.stem.lower(), inputs[:1], expected[:1])]
    _make_and_run(tmp_path, lib, models, opt="-O0", make_args=["TINYAOT_OPT=-O0"])


@pytest.mark.parametrize("build_type", ["Debug", "Release"])
def test_export_cmake_arm_build_types(tmp_path, build_type):
    """The CMake snippet with arm-none-eabi-gcc: the library target builds in a Debug
    (-O0) and a Release (-O3) configuration (TINYAOT_OPT after CMAKE_C_FLAGS_<CONFIG>)."""
    require_arm_toolchain()
    if shutil.which("cmake") is None:
        pytest.skip("cmake missing")
    lib = tmp_path / "lib"
    _export([DEFAULT_MODEL], "qemu-m4", lib)
    board = qemu.load_board("qemu-m4")
    app = tmp_path / "app"
    app.mkdir()
    (app / "CMakeLists.txt").write_text(f"""cmake_minimum_required(VERSION 3.13)
project(user_app C)
add_subdirectory({lib} tinyaot)
""")
    b = tmp_path / "b"
    cmds = (["cmake", "-S", str(app), "-B", str(b), "-DCMAKE_SYSTEM_NAME=Generic",
             "-DCMAKE_C_COMPILER=arm-none-eabi-gcc", "-DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY",
             f"-DCMAKE_BUILD_TYPE={build_type}",
             f"-DCMAKE_C_FLAGS={' '.join(board['cflags'] + board['warn_cflags'])}"],
            ["cmake", "--build", str(b), "--target", "tinyaot", "--verbose"])
    for cmd in cmds:
        p = subprocess.run(cmd, capture_output=True, text=True)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    line = next(ln for ln in p.stdout.splitlines()
                if "tinyaot_convolve_fast_s8.c" in ln and "arm-none-eabi-gcc" in ln)
    assert line.index(" -O2") > (line.index(" -O3") if build_type == "Release" else 0), line


def test_export_cmake_host(tmp_path):
    """The CMake snippet, on the host compiler: add_subdirectory + target_link_libraries."""
    if shutil.which("cmake") is None or shutil.which("gcc") is None:
        pytest.skip("cmake/gcc missing")
    lib = tmp_path / "lib"
    _export([DEFAULT_MODEL], "host", lib)
    _check_files(lib)
    inputs, expected = _golden(DEFAULT_MODEL, DEFAULT_GOLDEN, "outputs")
    app = tmp_path / "app"
    app.mkdir()
    models = [("digits_cnn_int8", inputs, expected)]
    _user_data(app, models)
    (app / "CMakeLists.txt").write_text(f"""cmake_minimum_required(VERSION 3.13)
project(user_app C)
set(CMAKE_C_FLAGS "${{CMAKE_C_FLAGS}} -O2 -Wall -Wextra -Werror")
add_subdirectory({lib} tinyaot)
add_executable(app main.c user_data.c)
target_compile_definitions(app PRIVATE USER_HOST)
target_link_libraries(app PRIVATE tinyaot)
""")
    b = tmp_path / "b"
    for cmd in (["cmake", "-S", str(app), "-B", str(b)], ["cmake", "--build", str(b)]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
    out = subprocess.run([str(b / "app")], capture_output=True, text=True, check=True).stdout
    recs, done = qemu.parse_harness_output(out)
    assert done == len(recs) == N_INPUTS
    _expected(recs, models)


_TOP_LEVEL = re.compile(r"^(?!static\b|#|/\*| \*|\s|}|{|$)(.+)$", re.M)


@pytest.mark.qemu
@pytest.mark.shared
def test_two_models_one_firmware(tmp_path):
    """Default model + kws01 in one firmware: shared kernels, separate arenas, both exact."""
    require_arm_toolchain()
    kws, kws_golden = shared_model("kws01")
    lib = tmp_path / "two"
    _export([DEFAULT_MODEL, kws], "qemu-m4", lib)
    rep = _check_files(lib)
    assert set(rep) == {"digits_cnn_int8", "kws_ref_model"}
    # Nothing non-static in the generated C but the arena-I/O API (the default).
    api = {n: {f"{n}_run", f"{n}_invoke", f"{n}_input", f"{n}_output"} for n in rep}
    for name in rep:
        tops = _TOP_LEVEL.findall((lib / "src" / f"{name}.c").read_text())
        assert tops == [f"int8_t *{name}_input(void)", f"const int8_t *{name}_output(void)",
                        f"int {name}_invoke(void)",
                        f"int {name}_run(const int8_t *input, int8_t *output)"], tops
    d_in, d_exp = _golden(DEFAULT_MODEL, DEFAULT_GOLDEN, "outputs")
    k_in, k_exp = _golden(kws, kws_golden, "outputs_onnxruntime")
    elf, app = _make_and_run(tmp_path, lib, [("digits_cnn_int8", d_in, d_exp),
                                              ("kws_ref_model", k_in, k_exp)])
    # Every global symbol of the library objects carries a model or tinyaot_ prefix.
    objs = sorted((app / "build" / "tinyaot").rglob("*.o"))
    assert {o.stem for o in objs} == {p.stem for p in (lib / "src").rglob("*.c")}
    glob = subprocess.run(["arm-none-eabi-nm", "-g", "--defined-only", *map(str, objs)],
                          capture_output=True, text=True, check=True).stdout
    syms = [ln.split()[-1] for ln in glob.splitlines() if len(ln.split()) == 3]
    assert syms and all(s.startswith("tinyaot_") or s in set().union(*api.values())
                        for s in syms), syms
    assert len(syms) == len(set(syms))
    # In the firmware: each kernel once (shared), two distinct, disjoint arenas.
    nm = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], capture_output=True, text=True,
                        check=True).stdout
    table = {}
    for ln in nm.splitlines():
        p = ln.split()
        if len(p) == 4:
            table.setdefault(p[3], []).append((int(p[0], 16), int(p[1], 16), p[2]))
    for k in set(rep["digits_cnn_int8"]["kernels"]) & set(rep["kws_ref_model"]["kernels"]):
        assert len(table[k]) == 1 and table[k][0][2] == "T", k
    a = table["digits_cnn_int8_arena"][0]
    b = table["kws_ref_model_arena"][0]
    assert a[1] >= rep["digits_cnn_int8"]["arena_bytes"] and b[1] >= rep["kws_ref_model"]["arena_bytes"]
    assert a[0] + a[1] <= b[0] or b[0] + b[1] <= a[0]


def test_export_user_errors(tmp_path, capsys):
    existing = tmp_path / "mine"
    existing.mkdir()
    (existing / "keep.txt").write_text("user data")
    assert cli_main(["export", str(DEFAULT_MODEL), "--board", "host", "-o", str(existing),
                     "--no-measure"]) == 2
    assert (existing / "keep.txt").read_text() == "user data"
    assert cli_main(["export", str(tmp_path / "nope.onnx"), "--board", "qemu-m4", "-o",
                     str(tmp_path / "x"), "--no-measure"]) == 2
    assert cli_main(["export", str(DEFAULT_MODEL), "--board", "nosuch", "-o",
                     str(tmp_path / "y"), "--no-measure"]) == 2
    assert cli_main(["export", str(DEFAULT_MODEL), str(DEFAULT_MODEL), "--board", "host", "-o",
                     str(tmp_path / "z"), "--no-measure"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(e.startswith("tinyaot: error: ") for e in err), err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
    assert not (tmp_path / "z").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


@pytest.mark.parametrize("opt", ["-O2", "-O0"])
def test_every_kernels_export_closure_links(tmp_path, opt):
    """For every runtime_c kernel, the sources export copies for it (kernel_closure) define
    every tinyaot_ symbol their objects call: a model that uses only that kernel links.
    (tinyaot_convolve_f32_m1_s8 calls tinyaot_convolve_f32_s8_get_buffer_size from one of
    its .inc parts: sww01 under ort, which has no other float conv, did not link.)"""
    require_arm_toolchain()
    from codegen.driver.export import kernel_closure
    from tests.helpers.env import build_every_kernel
    assert not build_every_kernel(["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16",
                                   opt], tmp_path)
    undefined, defined = {}, {}
    for obj in tmp_path.glob("*.o"):
        syms = subprocess.run(["arm-none-eabi-nm", str(obj)], capture_output=True, text=True,
                              check=True).stdout.split("\n")
        undefined[obj.stem] = {ln.split()[-1] for ln in syms if ln.strip().startswith("U ")
                               and ln.split()[-1].startswith("tinyaot_")}
        defined[obj.stem] = {ln.split()[-1] for ln in syms if len(ln.split()) == 3
                             and ln.split()[1] in "TDRB"}
    missing = {}
    for k in undefined:
        files = [p.stem for p in kernel_closure([k])]
        need = set().union(*(undefined[f] for f in files))
        have = set().union(*(defined[f] for f in files))
        if need - have:
            missing[k] = sorted(need - have)
    assert not missing, missing
