"""The cycle model's Armv6-M tables (Cortex-M0, Cortex-M0+) against hand counts.

Assembly snippets built for qemu-m0 (QEMU microbit, a Cortex-M0) run under the
plugin twice: priced with cores/cortex-m0.toml, then with cores/cortex-m0plus.toml
(the same Armv6-M instructions; the board's `cycle_core` picks the table, as for
an RP2040 part timed on this machine). Every expected count is worked out by hand
from the Technical Reference Manuals' instruction tables, written next to the
snippet: Cortex-M0 TRM r0p0 (DDI 0432C) 3.3 Table 3-1 and Cortex-M0+ TRM r0p1
(DDI 0484C) 3.3. The oracle is the manual, not the plugin.

Each snippet is called from one trampoline between the bracket labels:
    bench_begin: blx r12     M0: 3   M0+: 2
    (snippet ... bx lr)      M0: 3   M0+: 2
so every count carries OVERHEAD = 6 on the M0 and 4 on the M0+.
"""
from __future__ import annotations

import pytest

from codegen.cycles import run_cycles
from codegen.cycles.tables import Cache, Part, load_core
from codegen.targets.qemu import build_firmware, load_board

pytestmark = pytest.mark.qemu

OVERHEAD = {"cortex-m0": 6, "cortex-m0plus": 4}

# name -> (Armv6-M assembly, M0 cycles, M0+ cycles).
# r4 -> 64 words of SRAM, r5 -> 64 more, r6 -> 16 words in flash, r7 = 8, r0..r3 = 1..4.
SNIPPETS = {
    # MOVS/ADDS/LSLS/ANDS ... 1 each (both tables): 8
    "alu": ("adds r0, r0, #1\nlsls r1, r1, #2\nands r2, r3\nmvns r3, r0\n"
            "cmp r0, r1\nsxtb r2, r2\nrev r1, r1\nmov r8, r0\n", 8, 8),
    # MULS 1 (the fast multiplier; the TRMs allow 32): 2
    "multiply": ("muls r0, r1, r0\nmuls r2, r3, r2\n", 2, 2),
    # LDR 2 each, never pipelined on Armv6-M: 3 x 2
    "loads": ("ldr r0, [r4]\nldr r1, [r4, #4]\nldrb r2, [r4, r7]\n", 6, 6),
    # STR, STR (register offset), STRB 2 each: 6
    "stores": ("str r0, [r5]\nstr r1, [r5, r7]\nstrb r0, [r5, #1]\n", 6, 6),
    # LDM 1 + N, STM 1 + N (N = 4): 10
    "multiple": ("ldm r4!, {r0-r3}\nstm r5!, {r0-r3}\n", 10, 10),
    # PUSH 1 + N, POP 1 + N (N = 4): 10
    "push_pop": ("push {r0-r3}\npop {r0-r3}\n", 10, 10),
    # movs 1; 4 x subs 1; bne taken 3 times (M0 3, M0+ 2), not taken once 1
    #   M0: 1 + 4 + 9 + 1 = 15    M0+: 1 + 4 + 6 + 1 = 12
    "loop": ("movs r0, #4\n1: subs r0, #1\nbne 1b\n", 15, 12),
    # movs 1; B taken (3 / 2); cmp 1; BEQ taken (3 / 2)   M0: 8   M0+: 6
    "forward": ("movs r0, #0\nb 1f\nnop\n1: cmp r0, #0\nbeq 2f\nnop\n2:\n", 8, 6),
    # mov 1; BL (M0 4, M0+ 3) to a leaf whose BX LR is (3 / 2); mov 1
    #   M0: 1 + 4 + 3 + 1 = 9    M0+: 1 + 3 + 2 + 1 = 7
    "call": ("mov r6, lr\nbl leaf\nmov lr, r6\n", 9, 7),
    # mov 1; BL (4 / 3) to a function: PUSH {r4, lr} 1 + 2; POP {r4, pc}: M0 4 + N,
    # M0+ 3 + N (N = 1, the registers besides PC); mov 1
    #   M0: 1 + 4 + 3 + 5 + 1 = 14    M0+: 1 + 3 + 3 + 4 + 1 = 12
    "call_pop_pc": ("mov r6, lr\nbl frame\nmov lr, r6\n", 14, 12),
    # DSB, MRS: M0 4 each, M0+ 3 each
    "system": ("dsb\nmrs r0, primask\n", 8, 6),
    # 4 word loads from flash through r6: LDR 2 each = 8 (wait states added below)
    "flash_data": ("ldr r0, [r6]\nldr r1, [r6, #4]\nldr r2, [r6, #8]\nldr r3, [r6, #12]\n", 8, 8),
}
ALIGN = {"flash_data": 64}


def _asm():
    out = [".syntax unified", ".thumb",
           ".section .rodata.flash_tab,\"a\"", ".balign 16", "flash_tab: .word " +
           ", ".join(str(i) for i in range(16)),
           ".bss", ".balign 16", "ram_buf: .space 512",
           ".text",
           ".type leaf, %function", ".thumb_func", "leaf: bx lr",
           ".balign 4", ".type frame, %function", ".thumb_func", "frame: push {r4, lr}",
           "pop {r4, pc}"]
    for n, (body, _, _) in SNIPPETS.items():
        out += [f".balign {ALIGN.get(n, 4)}", f".type snip_{n}, %function", ".thumb_func",
                f"snip_{n}:", body.rstrip("\n"), "bx lr"]
    out += [".section .rodata.snippets,\"a\"", ".balign 4", ".global snippet_table",
            "snippet_table:"] + [f".word snip_{n} + 1" for n in SNIPPETS]
    out += [".global snippet_count", f"snippet_count: .word {len(SNIPPETS)}"]
    # Armv6-M has no ADD with a 12-bit immediate: r5 = r4 + 256 in two steps.
    out += [".text", ".balign 64", ".space 64", ".global run_snippet",
            ".type run_snippet, %function", ".thumb_func", "run_snippet:",
            "push {r4-r7, lr}", "mov r12, r0", "ldr r4, =ram_buf", "movs r5, #255",
            "adds r5, r5, #1", "adds r5, r5, r4", "ldr r6, =flash_tab", "movs r7, #8",
            "movs r0, #1", "movs r1, #2", "movs r2, #3", "movs r3, #4",
            ".global bench_begin", ".thumb_func", "bench_begin: blx r12",
            ".global bench_end", ".thumb_func", "bench_end: pop {r4-r7, pc}", ".ltorg"]
    return "\n".join(out) + "\n"


MAIN_C = """#include <stdint.h>
extern const uint32_t snippet_table[];
extern const uint32_t snippet_count;
void run_snippet(uint32_t fn);
int main(void)
{
    for (uint32_t i = 0; i < snippet_count; i++) {
        run_snippet(snippet_table[i]);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def firmware(tmp_path_factory):
    from tests.helpers.env import require_arm_toolchain
    require_arm_toolchain()
    d = tmp_path_factory.mktemp("armv6m")
    (d / "snippets.S").write_text(_asm())
    (d / "main.c").write_text(MAIN_C)
    b = load_board("qemu-m0")
    return build_firmware([d / "snippets.S", d / "main.c"], [], b, d / "bench.elf"), b


def _part(name, ws=0, dcache=(0, 16, 1)):
    return Part(name=name, title=name, boards=("qemu-m0",), core=None, clock_hz=100_000_000,
                flash_wait_states=ws, flash_read_bytes=16, prefetch=False,
                icache=Cache(1, 16, 1), dcache=Cache(*dcache), ref="test", verified=True)


def _run(firmware, core, parts):
    elf, b = firmware
    board = dict(b, cycle_core=core)
    r = run_cycles(elf, board, parts, begin="bench_begin", end="bench_end")
    assert r.core == core and len(r.inferences) == len(SNIPPETS)
    return dict(zip(SNIPPETS, r.inferences))


@pytest.mark.parametrize("core", ["cortex-m0", "cortex-m0plus"])
def test_instruction_classes_match_the_manual(firmware, core):
    got = _run(firmware, core, [_part("zero")])
    col = 1 if core == "cortex-m0" else 2
    want = {n: SNIPPETS[n][col] + OVERHEAD[core] for n in SNIPPETS}
    assert {n: got[n].cycles["zero"] for n in SNIPPETS} == want


def test_flash_wait_states(firmware):
    # 3 wait states per 16-byte flash read, a one-line instruction buffer: the snippet's
    # code is one line (+3), each of the 4 data reads waits (4 x 3); with a one-line
    # data cache only the first read of the line misses.
    ws = 3
    got = _run(firmware, "cortex-m0", [_part("buf", ws), _part("dline", ws, dcache=(1, 16, 1))])
    base = SNIPPETS["flash_data"][1] + OVERHEAD["cortex-m0"]
    assert got["flash_data"].cycles["buf"] == base + ws + 4 * ws
    assert got["flash_data"].data_stall["buf"] == 4 * ws
    assert got["flash_data"].cycles["dline"] == base + ws + ws


def test_armv6m_tables_differ_where_the_manuals_do():
    m0, m0p = load_core("cortex-m0"), load_core("cortex-m0plus")
    assert (m0.rules["p_direct"], m0p.rules["p_direct"]) == (2, 1)
    assert m0.cycles["BL"] == m0p.cycles["BL"] == (2, 0)
    assert m0.rules["ldr_pipeline"] == m0p.rules["ldr_pipeline"] == 0
    assert m0.cycles["LDR"] == m0.cycles["STR"] == (2, 0)
