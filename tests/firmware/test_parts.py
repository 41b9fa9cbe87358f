"""Real parts: the runnable real-part boards (stm32f405, nrf51822), the build-only
parts (boards/<part>/, kind = "part"), `tinyaot boards`, `report --board PART`,
`export --board PART`, and the Armv6-M build of the kernel library.

Expected memory sizes and clocks are the vendors' published figures (datasheets,
reference manuals), written here, not read back from board.toml; images are
checked against `arm-none-eabi-size -A` and `nm`; bit-exactness against the golden
vectors (onnxruntime / TFLite Micro).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from codegen.driver import fleet
from codegen.compiler import compile_model
from codegen.errors import TinyAotError
from codegen.paths import REPO_ROOT, RUNTIME_INCLUDE, RUNTIME_SRC
from codegen.targets import parts
from codegen.targets.qemu import load_board
from codegen.driver.verify import verify_model

from tests.helpers.env import (DEFAULT_GOLDEN, DEFAULT_MODEL, SHARED, _missing,
                               build_every_kernel, require_arm_toolchain, shared_model)

KiB, MiB = 1024, 1024 * 1024

# Published figures: (flash, RAM, clock Hz, core)
PARTS = {
    "stm32l4r5zi": (2 * MiB, 640 * KiB, 120_000_000, "cortex-m4"),   # DS12023 / RM0432
    "stm32h7a3zi": (2 * MiB, 1 * MiB, 280_000_000, "cortex-m7"),     # DS13195: the AXI SRAM
    "nrf52840": (1 * MiB, 256 * KiB, 64_000_000, "cortex-m4"),       # nRF52840 PS
    "rp2350": (4 * MiB, 520 * KiB, 150_000_000, "cortex-m33"),       # RP2350 datasheet, Pico 2 flash
    "rp2040": (2 * MiB, 264 * KiB, 133_000_000, "cortex-m0plus"),    # RP2040 datasheet, Pico flash
}
# Where the vector table must sit and the first word of RAM past the stack.
VECTORS = {"stm32l4r5zi": 0x08000000, "stm32h7a3zi": 0x08000000, "nrf52840": 0x00000000,
           "rp2350": 0x10000000, "rp2040": 0x10000100}
STACK_TOP = {"stm32l4r5zi": 0x200A0000, "stm32h7a3zi": 0x24100000, "nrf52840": 0x20040000,
             "rp2350": 0x20082000, "rp2040": 0x20042000}
RUNNABLE = {  # board: (QEMU machine, core, flash, RAM, clock)
    "stm32f405": ("netduinoplus2", "cortex-m4", 1 * MiB, 128 * KiB, 168_000_000),
    "nrf51822": ("microbit", "cortex-m0", 256 * KiB, 16 * KiB, 16_000_000),
}


def _cli(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "codegen.cli", *args], cwd=str(REPO_ROOT),
                          capture_output=True, text=True, timeout=timeout)


def _flash_sections(elf, origin, span=64 * MiB):
    """The image's flash from the ELF's section headers (`objdump -h`): every
    allocated section placed in flash (a reserved block such as the RP2040's boot2
    included) plus the load image of those that only load from there (.data)."""
    lines = subprocess.run(["arm-none-eabi-objdump", "-h", str(elf)], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    total = 0
    for head, flags in zip(lines, lines[1:]):
        f = head.split()
        if len(f) == 7 and f[0].isdigit() and "ALLOC" in flags:
            size, vma, lma = int(f[2], 16), int(f[3], 16), int(f[4], 16)
            if origin <= vma < origin + span or ("LOAD" in flags and origin <= lma < origin + span):
                total += size
    return total


# ------------------------------------------------------------------ catalogue

def test_boards_command_lists_every_board_and_part():
    proc = _cli("boards", "--json")
    assert proc.returncode == 0, proc.stderr
    got = {b["name"]: b for b in json.loads(proc.stdout)}
    on_disk = {p.parent.name for p in (REPO_ROOT / "boards").glob("*/board.toml")}
    assert set(got) == on_disk
    for name, (flash, ram, clock, core) in PARTS.items():
        b = got[name]
        assert (b["flash_bytes"], b["ram_bytes"], b["clock_hz"], b["core"]) == (flash, ram, clock, core)
        assert b["runs_in_qemu"] is False and b["kind"] == "part" and b["runs_on"].startswith("qemu-")
    for name, (machine, core, flash, ram, clock) in RUNNABLE.items():
        b = got[name]
        assert b["runs_in_qemu"] is True and b["qemu_machine"] == machine
        assert (b["core"], b["flash_bytes"], b["ram_bytes"], b["clock_hz"]) == (core, flash, ram, clock)
    assert got["qemu-m0"]["qemu_machine"] == "microbit" and got["qemu-m0"]["clock_hz"] is None
    assert got["host"]["runs_in_qemu"] is False and got["host"]["kind"] == "shared-library"
    # the table: a header, one line per board, two lines of notes
    text = _cli("boards").stdout.splitlines()
    assert text[0].split()[:2] == ["board", "runs"]
    rows = {ln.split()[0]: ln for ln in text[1:-2]}
    assert set(rows) == on_disk
    assert "no: timed on qemu-m4" in rows["nrf52840"] and "64 MHz" in rows["nrf52840"]
    assert "1 MiB" in rows["nrf52840"] and "256 KiB" in rows["nrf52840"]
    assert "yes: netduinoplus2" in rows["stm32f405"] and "168 MHz" in rows["stm32f405"]
    assert "yes: microbit" in rows["nrf51822"] and "16 KiB" in rows["nrf51822"]


def test_every_part_has_its_files_and_a_cycle_model_entry():
    from codegen.cycles.tables import load_core, load_parts, parts_for_board
    known = load_parts()
    for name in PARTS:
        b = load_board(name)
        assert b["kind"] == "part" and b["linker_script"].is_file()
        assert all(p.is_file() and p.parent == b["dir"] for p in b["sources"])
        assert b["part"] in known and known[b["part"]].clock_hz == PARTS[name][2]
        t = parts.timing_board(b)
        assert t["cflags"] == b["cflags"] and t["kind"] == "firmware"
        load_core(t["cycle_core"])
        assert b["part"] in [p.name for p in parts_for_board(t)]
        # the linker script's MEMORY matches board.toml
        ld = b["linker_script"].read_text()
        for region, origin, size in (("FLASH", b["flash_origin"], b["flash_size"]),
                                     ("RAM", b["ram_origin"], b["ram_size"])):
            m = re.search(rf"^\s*{region}\s*\([^)]*\)\s*:\s*ORIGIN\s*=\s*(\w+),\s*LENGTH\s*=\s*(\d+)([KM])",
                          ld, re.M)
            assert m, (name, region)
            assert int(m.group(1), 0) == origin
            assert int(m.group(2)) * (KiB if m.group(3) == "K" else MiB) == size


def test_fleet_runs_the_runnable_boards_only():
    boards = fleet.all_boards()
    assert {"stm32f405", "nrf51822", "qemu-m0"} <= set(boards)
    assert not set(PARTS) & set(boards)
    with pytest.raises(TinyAotError, match="build-only part"):
        fleet.parse_boards("qemu-m4,nrf52840")


def test_a_part_refuses_to_run():
    proc = _cli("verify", str(DEFAULT_MODEL), "--golden", str(DEFAULT_GOLDEN), "--board", "rp2040")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "build-only part" in proc.stderr and "qemu-m0" in proc.stderr


def test_fit_verdict():
    b = {"flash_size": 1000, "ram_size": 500, "stack_size": 100}
    assert parts.fit_verdict(b, 1000, 400, 100)["fits"]
    v = parts.fit_verdict(b, 1001, 401, 101)
    assert not v["fits"] and v["problems"] == [
        "flash 1 B over", "RAM 1 B over", "worst-case stack 101 B > the 100 B reserved (stack_size)"]


# ------------------------------------------------------ the build-only parts

def _part_images(tmp_path_factory):
    """The default model linked for every part by report_model (no cycles)."""
    from codegen.driver.report import report_model
    c = compile_model(DEFAULT_MODEL, numerics="tflite")
    out = {}
    for name in PARTS:
        keep = tmp_path_factory.mktemp(name)
        r = report_model(DEFAULT_MODEL, board=name, numerics="tflite", compiled=c, keep_dir=keep)
        out[name] = (r, keep / f"{c.module.name}-{name}-part.elf")
    return out


@pytest.fixture(scope="module")
def part_images(tmp_path_factory):
    require_arm_toolchain()
    return _part_images(tmp_path_factory)


@pytest.mark.qemu
def test_report_on_each_part_fits_against_its_real_memory(part_images):
    for name, (r, elf) in part_images.items():
        b = load_board(name)
        fit = r["totals"]["part_fit"]
        assert fit["fits"] and fit["problems"] == []
        assert fit["flash_size"] == PARTS[name][0] and fit["ram_size"] == PARTS[name][1]
        # the image, from size -A: every flash section up to its end (the default model's
        # kernels, weights and startup: ~30 KB with its specialized fast kernels)
        assert fit["flash_bytes"] == _flash_sections(elf, b["flash_origin"]) > 20_000
        # RAM: .data + .bss (the arena) + the reserved stack
        nm = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True).stdout
        sym = {ln.split()[2]: int(ln.split()[0], 16) for ln in nm.splitlines() if len(ln.split()) == 3}
        assert fit["static_ram_bytes"] == sym["__bss_end__"] - b["ram_origin"]
        assert fit["ram_bytes"] == fit["static_ram_bytes"] + b["stack_size"]
        # the part's own startup and memory map are what got linked
        assert sym["tinyaot_vectors"] == VECTORS[name]
        assert sym["__StackTop"] == STACK_TOP[name]
        assert "tinyaot_harness_inputs" not in sym and "tinyaot_sh_puts" not in sym


@pytest.mark.qemu
def test_part_images_boot_blocks(part_images, tmp_path):
    """RP2350: the IMAGE_DEF block in the first 4 KiB (datasheet: 0xffffded3 ...
    0xab123579); RP2040: 256 bytes reserved for boot2 before the vectors."""
    _, elf = part_images["rp2350"]
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "-j", ".isr_vector", "-j",
                    ".embedded_block", str(elf), str(tmp_path / "head.bin")], check=True)
    raw = (tmp_path / "head.bin").read_bytes()
    words = np.frombuffer(raw[:4096], dtype="<u4")
    start = int(np.flatnonzero(words == 0xFFFFDED3)[0])
    assert list(words[start:start + 5]) == [0xFFFFDED3, 0x10210142, 0x000001FF, 0, 0xAB123579]
    _, elf = part_images["rp2040"]
    h = subprocess.run(["arm-none-eabi-objdump", "-h", str(elf)], capture_output=True,
                       text=True).stdout
    assert re.search(r"\.boot2\s+00000100\s+10000000", h)


@pytest.mark.qemu
def test_report_says_does_not_fit_with_the_overshoot(tmp_path):
    """A model bigger than the part's flash: the measuring link still links, the
    report says by how much (mbnet128 under ort, 1.35 MB with its float convs' float
    weights, on the 1 MiB nRF52840; ad01 served until its first float layer left its
    straight-line code, 1.27 -> 0.89 MB)."""
    require_arm_toolchain()
    model = SHARED / "image_classification_mbnet128" / "mbnet128_0.25_q.onnx"
    if not model.exists():
        _missing(f"shared model {model}")
    from codegen.driver.report import report_model
    r = report_model(model, board="nrf52840", numerics="ort", keep_dir=tmp_path)
    fit = r["totals"]["part_fit"]
    elf = next(tmp_path.glob("*-nrf52840-part.elf"))
    assert fit["flash_bytes"] == _flash_sections(elf, 0) > MiB
    assert not fit["fits"] and fit["problems"][0] == f"flash {fit['flash_bytes'] - MiB:,} B over"
    from codegen.driver.report import report_totals
    assert any("does NOT fit" in ln for ln in report_totals(r))


@pytest.mark.qemu
def test_report_part_time_at_its_clock():
    """`report --board nrf52840`: fits, and the cycle model's time at 64 MHz; the
    cycles are those of the same build priced for the nRF52840 on qemu-m4."""
    require_arm_toolchain()
    proc = _cli("report", str(DEFAULT_MODEL), "--board", "nrf52840", "--numerics", "tflite",
                "--json")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["totals"]["part_fit"]["fits"]
    (p,) = r["totals"]["cycles"]["parts"]
    assert p["name"] == "nrf52840" and p["clock_hz"] == 64_000_000
    assert p["ms"] == pytest.approx(1000 * p["cycles"] / 64e6, abs=1e-3)
    from codegen.driver.profile import profile_model
    same = profile_model(DEFAULT_MODEL, board="qemu-m4", numerics="tflite", cycles=True,
                         parts=["nrf52840"])["cycles"]["parts"][0]
    assert same["cycles"] == p["cycles"] > r["totals"]["cycles"]["instructions"]
    text = _cli("report", str(DEFAULT_MODEL), "--board", "nrf52840", "--numerics", "tflite")
    assert re.search(r"^nrf52840\s+fits: image flash [\d,]+ of 1,048,576 B", text.stdout, re.M)
    assert re.search(r"^cycles\s+[\d,]+ on nrf52840 \([\d.]+ ms at 64 MHz", text.stdout, re.M)


@pytest.mark.qemu
def test_m0plus_part_is_priced_with_its_own_table():
    """rp2040: built -mcpu=cortex-m0plus, run on the Cortex-M0 machine, priced
    with cores/cortex-m0plus.toml (taken branches 2, not the M0's 3)."""
    require_arm_toolchain()
    from codegen.driver.profile import profile_model
    r = profile_model(DEFAULT_MODEL, board="rp2040", numerics="tflite")
    assert r["cycles"]["core"] == "cortex-m0plus" and r["timed_on"] == "qemu-m0"
    (p,) = r["cycles"]["parts"]
    assert p["name"] == "rp2040" and p["clock_hz"] == 133_000_000
    m0 = profile_model(DEFAULT_MODEL, board="qemu-m0", numerics="tflite", cycles=True,
                       parts=["ideal"])["cycles"]
    assert m0["core"] == "cortex-m0"
    assert m0["instructions"] == r["cycles"]["instructions"]   # the same Armv6-M code
    # M0+: cheaper branches, the same data path; the rp2040 adds XIP stalls
    assert p["cycles"] - p["ifetch_stall"] - p["data_stall"] < m0["parts"][0]["cycles"]


@pytest.mark.qemu
def test_export_for_a_part_links_with_its_startup_and_linker_script(tmp_path):
    require_arm_toolchain()
    if not shutil.which("make"):
        pytest.skip("make missing")
    out = tmp_path / "lib"
    proc = _cli("export", str(DEFAULT_MODEL), "--board", "stm32l4r5zi", "--numerics", "tflite",
                "-o", str(out), "--no-measure", "--json")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (out / "board").iterdir()) == ["linker.ld",
                                                                  "startup_stm32l4r5zi.c"]
    readme = (out / "README.md").read_text()
    assert "## The part: stm32l4r5zi" in readme and "-mcpu=cortex-m4" in readme
    (tmp_path / "main.c").write_text(
        '#include "digits_cnn_int8.h"\nint main(void) { return digits_cnn_int8_invoke(); }\n')
    (tmp_path / "Makefile").write_text(
        "CC = arm-none-eabi-gcc\nAR = arm-none-eabi-ar\n"
        "include lib/tinyaot.mk\nCFLAGS = $(TINYAOT_PART_CFLAGS)\n"
        "app.elf: main.o $(TINYAOT_LIB)\n"
        "\t$(CC) main.o $(TINYAOT_PART_SRCS) $(TINYAOT_LIB) $(TINYAOT_PART_LDFLAGS) "
        "-o $@ $(TINYAOT_LDLIBS) -lc -lgcc\n"
        "main.o: CFLAGS += $(TINYAOT_INCLUDES)\n")
    proc = subprocess.run(["make", "-s", "app.elf"], cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    nm = subprocess.run(["arm-none-eabi-nm", str(tmp_path / "app.elf")], capture_output=True,
                        text=True).stdout
    sym = {ln.split()[2]: int(ln.split()[0], 16) for ln in nm.splitlines() if len(ln.split()) == 3}
    assert sym["tinyaot_vectors"] == 0x08000000 and sym["__StackTop"] == 0x200A0000
    assert "digits_cnn_int8_invoke" in sym


# ------------------------------------------------------ runnable real parts

@pytest.mark.qemu
@pytest.mark.shared
@pytest.mark.parametrize("numerics", ["ort", "tflite"])
def test_kws01_bit_exact_on_stm32f405(numerics):
    require_arm_toolchain()
    onnx_path, golden = shared_model("kws01")
    key = "outputs_onnxruntime" if numerics == "ort" else "outputs_tflm"
    r = verify_model(onnx_path, golden, board="stm32f405", numerics=numerics, key=key)
    assert r["mismatches"] == 0 and r["vectors_passed"] == r["vectors"] == 8, r.get(
        "first_mismatches")


# The shared models that fit the nRF51822's 256 KiB / 16 KiB (arena + 2 KiB stack +
# the harness's 1 KiB output buffer in 16 KiB RAM): mnist_dw (arena 2,352 B) and
# sww01 (6,656 B). kws01's arena alone is 16,256 B.
NRF51_FITS = [("digit_classification_mnist_dw/mnist_dw_q", "ort"),
              ("digit_classification_mnist_dw/mnist_dw_q", "tflite"),
              ("streaming_wakeword_sww01/str_ww_ref_model", "tflite"),
              ("streaming_wakeword_sww01/str_ww_ref_model", "ort")]


@pytest.mark.qemu
@pytest.mark.shared
@pytest.mark.parametrize("stem,numerics", NRF51_FITS)
def test_shared_models_that_fit_run_bit_exact_on_nrf51822(stem, numerics):
    require_arm_toolchain()
    onnx_path = SHARED / f"{stem}.onnx"
    golden = SHARED / f"{stem}_golden.npz"
    if not onnx_path.exists():
        pytest.skip(f"{onnx_path} missing")
    key = "outputs_onnxruntime" if numerics == "ort" else "outputs_tflm"
    r = verify_model(onnx_path, golden, board="nrf51822", numerics=numerics, key=key)
    assert r["mismatches"] == 0 and r["vectors_passed"] == r["vectors"] == 8, r.get(
        "first_mismatches")
    assert r["stack"]["ram_needed_bytes"] <= 16 * KiB


@pytest.mark.shared
def test_kws01_does_not_fit_nrf51822():
    onnx_path, _ = shared_model("kws01")
    proc = _cli("compile", str(onnx_path), "--board", "nrf51822", "-o", "/nonexistent/never")
    assert proc.returncode == 2
    assert "does not fit" in proc.stderr and "nrf51822 has 16 KiB" in proc.stderr


@pytest.mark.qemu
def test_unaligned_access_faults_on_the_m0_machine(tmp_path):
    """The nRF51822 board is a real check of "no unaligned loads": QEMU's
    Cortex-M0 faults on them, as the silicon does."""
    require_arm_toolchain()
    from codegen.targets.qemu import QemuError, build_firmware, run_firmware
    src = tmp_path / "unaligned.c"
    src.write_text(
        "#include <stdint.h>\n#include \"harness.h\"\n"
        "const uint32_t tinyaot_harness_num_inputs = 1, tinyaot_harness_input_size = 4,\n"
        "    tinyaot_harness_output_size = 4;\n"
        "const int8_t tinyaot_harness_inputs[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
        "int tinyaot_harness_run(const int8_t *in, int8_t *out)\n"
        "{ const volatile int8_t *p = in + 1;\n"
        "  *(volatile uint32_t *)(void *)out = *(const volatile uint32_t *)(const volatile void *)p;"
        " return 0; }\n")
    b = load_board("nrf51822")
    elf = build_firmware([b["harness_main"], src], [], b, tmp_path / "u.elf")
    with pytest.raises(QemuError, match="HardFault"):
        run_firmware(elf, b, timeout=30)


# ------------------------------------------------------ Armv6-M kernel builds

def test_every_kernel_builds_for_armv6m(tmp_path):
    """Every runtime_c kernel, -Wall -Wextra -Werror, for Armv6-M: the assembler
    rejects any instruction outside it (SDIV, Thumb-2, DSP, VFP). Cortex-M0
    stands for the M0+ too: one instruction set, the same predefined
    architecture macros (__ARM_ARCH_6M__), so the same preprocessed code."""
    if not shutil.which("arm-none-eabi-gcc"):
        pytest.skip("arm-none-eabi-gcc missing")
    bad = build_every_kernel(["-mcpu=cortex-m0", "-mfloat-abi=soft", "-O2"], tmp_path)
    assert not bad, bad
    # and none of the objects holds a Thumb-2 (32-bit) instruction other than BL
    # (Armv6-M's only 32-bit instructions: BL, MRS, MSR, DMB, DSB, ISB)
    dis = subprocess.run(["arm-none-eabi-objdump", "-d", *map(str, sorted(tmp_path.glob("*.o")))],
                         capture_output=True, text=True, check=True).stdout
    wide = {m.group(2) for m in re.finditer(r"^\s+[0-9a-f]+:\s+([0-9a-f]{4} [0-9a-f]{4})\s+(\S+)",
                                             dis, re.M)}
    assert wide <= {"bl"}, wide


def test_armv6m_takes_the_portable_paths(tmp_path):
    """The compile-time selection: on Armv6-M no DSP asm, no FPU asm, no Thumb-2 asm."""
    if not shutil.which("arm-none-eabi-gcc"):
        pytest.skip("arm-none-eabi-gcc missing")
    # The probe lives in tmp_path, never in runtime_c/: the firmware builds of
    # other test workers glob runtime_c/src, and a file there that vanishes
    # mid-build fails them. -I runtime_c/src/conv resolves its "../internal/" includes.
    probe = tmp_path / "_armv6m_probe.c"
    probe.write_text('#include "../internal/tinyaot_intrinsics.h"\n'
                     '#include "../internal/tinyaot_fixedpoint.h"\n'
                     "#if TINYAOT_HAVE_DSP_ASM\n#error DSP asm selected\n#endif\n"
                     "#if defined(__ARM_FP) || defined(__thumb2__)\n#error FPU or Thumb-2\n#endif\n"
                     "int probe;\n")
    proc = subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m0", "-mthumb", "-O2",
                           "-std=c99", "-Wall", "-Wextra", "-Werror", f"-I{RUNTIME_INCLUDE}",
                           f"-I{RUNTIME_SRC / 'conv'}", "-c", str(probe), "-o",
                           str(tmp_path / "p.o")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _fc_disassembly(flags, tmp_path):
    src = RUNTIME_SRC / "fully_connected" / "tinyaot_fully_connected_f32_s8.c"
    obj = tmp_path / "fc.o"
    subprocess.run(["arm-none-eabi-gcc", *flags, "-mthumb", "-O2", "-std=c99", "-ffp-contract=off",
                    "-Wall", "-Wextra", "-Werror", f"-I{RUNTIME_INCLUDE}", "-c", str(src), "-o",
                    str(obj)], check=True, capture_output=True, text=True)
    return subprocess.run(["arm-none-eabi-objdump", "-d", str(obj)], capture_output=True,
                          text=True, check=True).stdout


def test_fc_f32_fpu_asm_needs_the_dsp_extension(tmp_path):
    """tinyaot_fully_connected_f32_s8's FPU asm uses QADD, SSAT, SSUB8, SEL (DSP
    extension): an FPU without DSP (Cortex-M33 built +nodsp) takes the C twin and
    builds; the Cortex-M4F keeps the asm."""
    if not shutil.which("arm-none-eabi-gcc"):
        pytest.skip("arm-none-eabi-gcc missing")
    dsp_insns = re.compile(r"\t(qadd|ssat|ssub8|sel)\t")
    m4 = _fc_disassembly(["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"], tmp_path)
    assert dsp_insns.search(m4) and re.search(r"vldmia\s+\S+!, \{s0-s15\}", m4)  # the asm's
    nodsp = _fc_disassembly(["-mcpu=cortex-m33+nodsp", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"],
                            tmp_path)
    assert not dsp_insns.search(nodsp)
