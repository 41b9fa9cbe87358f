"""The cycle model against hand counts from Arm's manuals.

Microbenchmark firmware (assembly snippets, built for qemu-m4 and qemu-m3) runs
under the QEMU plugin; every expected count below is worked out by hand from the
Technical Reference Manual's tables (Cortex-M4 TRM r0p1 Table 3-1, its
load/store timing rules and Table 7-1; Cortex-M3 TRM r2p1 Table 3-1), written
next to the snippet. The oracle is the manual, not the plugin: a cost-table edit
or a decoder bug shows up as a mismatch here.

Each snippet is called from one trampoline, between the bracket labels:
    bench_begin: blx r12      1 + P(indirect = 2)   = 3
    (snippet ... bx lr)       bx lr: 1 + P(indirect) = 3
so every expected count carries OVERHEAD = 6.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codegen.cycles import CLASSES, run_cycles
from codegen.cycles.tables import Cache, Part, load_core, load_parts, parts_for_board
from codegen.targets.qemu import build_firmware, load_board

pytestmark = pytest.mark.qemu

REPO = Path(__file__).resolve().parents[2]
PLUGIN_DIR = REPO / "codegen" / "cycles" / "plugin"
OVERHEAD = 6

# name -> (assembly, M4 cycles, M3 cycles or None when the M3 lacks the instructions)
# r4 -> 64 words of SRAM, r5 -> 64 more words of SRAM, r6 -> 16 words of flash (.rodata),
# r7 = 8, r0..r3 = 1..4 on entry.
SNIPPETS = {
    # Table 3-1: MOV, ADD, shifts 1 each: 8 x 1
    "alu16": ("adds r0, r0, #1\n" * 8, 8, 8),
    # Table 3-1: ADD (shifted register), MOVW, MOVT, BFI, UBFX: 1 each: 6 x 1
    "alu32": ("add.w r0, r0, r1, lsl #2\nmovw r1, #1000\nmovt r1, #1\n"
              "bfi r0, r1, #4, #8\nubfx r2, r0, #3, #5\neor.w r3, r3, r2, ror #3\n", 6, 6),
    # M4 Table 3-1: MUL, MLA, SMULL, SMLAL 1 each = 4.
    # M3 Table 3-1: MUL 1, MLA 2, SMULL 3-5, SMLAL 4-7 (upper bounds: 5, 7) = 15
    "multiply": ("mul r0, r1, r2\nmla r0, r1, r2, r3\nsmull r0, r1, r2, r3\n"
                 "smlal r0, r1, r2, r3\n", 4, 15),
    # Table 3-1: SDIV, UDIV 2 to 12 -> the model's upper bound 12 each (both cores)
    "divide": ("sdiv r0, r3, r1\nudiv r0, r3, r1\n", 24, 24),
    # load/store timings: LDR 2, then LDRs pipelined 1 each (the TRM's own example
    # "LDR R0,[R1,R5]; LDR R1,[R2]; LDR R2,[R3,#4] - normally four cycles"),
    # an ALU instruction breaks the chain (1), the next LDR is 2 again: 4 + 1 + 2
    "ldr_pipeline": ("ldr r0, [r4]\nldr r1, [r4, #4]\nldr r2, [r4, #8]\n"
                     "adds r3, r3, #1\nldr r3, [r4, #12]\n", 7, 7),
    # STR Rx,[Ry,#imm] is always one cycle (x2); LDR 2; a register-offset STR right
    # after an LDR pipelines: 1; a register-offset STR after a store does not: 2
    "stores": ("str r0, [r5]\nstr r1, [r5, #4]\nldr r2, [r4]\nstr r2, [r5, r7]\n"
               "strb r0, [r5, r7]\n", 7, 7),
    # LDM/STM 1 + N (N = 4): 5 + 5; LDRD/STRD 1 + N (N = 2): 3 + 3
    "multiple": ("ldmia r4, {r0-r3}\nstmia r5, {r0-r3}\nldrd r0, r1, [r4]\n"
                 "strd r0, r1, [r5, #16]\n", 16, 16),
    # PUSH/POP 1 + N (N = 4): 5 + 5
    "push_pop": ("push {r0-r3}\npop {r0-r3}\n", 10, 10),
    # movs 1; loop of 4: subs 1 each; bne taken 3 x (1 + P), P = 1 for a direct branch
    # to a 16-bit target; not taken once: 1  ->  1 + 4 + 6 + 1 = 12
    "loop": ("movs r0, #4\n1: subs r0, r0, #1\nbne 1b\n", 12, 12),
    # B taken 1 + P = 2 (skips the nop); CBZ taken (r0 = 0): 1 + P = 2; movs 1 -> 5
    "forward": ("movs r0, #0\nb 1f\nnop\n1: cbz r0, 2f\nnop\n2:\n", 5, 5),
    # B.W to a 32-bit instruction at a halfword (not word) address: 1 + P + 1 = 3,
    # the target ADD.W 1 -> 4  (P: 1 to 3 "depending on the alignment and width of the
    # target instruction")
    "unaligned_target": ("b.w 1f\nnop\n1: add.w r0, r0, #1\n", 4, 4),
    # PUSH {lr} (16-bit) 1 + N = 2 at +0; BL (32-bit, +2) 1 + P = 2 to a leaf whose
    # BX LR is 1 + P(indirect) = 3, plus 1 because it returns to a 32-bit instruction at a
    # halfword address (+6): POP {lr} is assembled as LDR.W lr, [sp], #4: 2  ->  10
    "call": ("push {lr}\nbl leaf\npop {lr}\n", 10, 10),
    # cmp 1, it 1, a load whose condition fails (no access): 1; it 1, a load that
    # executes: 2  -> 6 (movs 1 first) = 7
    "it_skip": ("movs r0, #0\ncmp r0, #1\nit eq\nldreq r1, [r4]\nit ne\nldrne r1, [r4]\n", 7, 7),
    # unaligned accesses (load/store timings): byte-aligned word +2: 2 + 2; adds 1;
    # byte-aligned halfword +1: 2 + 1; adds 1; halfword-aligned word +1: 2 + 1 -> 12
    "unaligned": ("ldr r0, [r4, #1]\nadds r3, r3, #1\nldrh r1, [r4, #1]\nadds r3, r3, #1\n"
                  "ldr r2, [r4, #2]\n", 12, 12),
    # M4 DSP (Table 3-1): SMLAD, SMULBB, SMMLAR 1; SXTB16, SADD16 1 -> 5
    "dsp": ("smlad r0, r1, r2, r3\nsmulbb r0, r1, r2\nsmmlar r0, r1, r2, r3\n"
            "sxtb16 r1, r2\nsadd16 r0, r1, r2\n", 5, None),
    # FPU (Table 7-1): VADD 1, VMUL 1, VMLA 3 x 2, VFMA 3, VDIV 14, VSQRT 14, VLDR 2,
    # VLDM {s0-s3} 1 + 4, VMOV core<->single 1 x 2, VMOV two registers 2
    # -> 1 + 1 + 6 + 3 + 14 + 14 + 2 + 5 + 2 + 2 = 50
    "fpu": ("vmov s0, r0\nvmov s1, r1\nvadd.f32 s2, s0, s1\nvmul.f32 s3, s0, s1\n"
            "vmla.f32 s4, s0, s1\nvmla.f32 s4, s2, s3\nvfma.f32 s5, s0, s1\n"
            "vdiv.f32 s6, s1, s2\nvsqrt.f32 s7, s1\nvldr s8, [r4]\nvldmia r4, {s0-s3}\n"
            "vmov r0, r1, d0\n", 50, None),
    # --- flash: code in the flash region, data from flash through r6 ------------
    # 4 loads from flash: LDR 2 + 1 + 1 + 1 = 5 (wait states added per part below)
    "flash_data": ("ldr r0, [r6]\nldr r1, [r6, #4]\nldr r2, [r6, #8]\n"
                   "ldr r3, [r6, #12]\n", 5, 5),
    # 32 NOPs (1 each) on 4 lines of 16 bytes, bx lr on a fifth line
    "flash_fetch": ("nop\n" * 32, 32, 32),
    # movs 1 + 7 NOPs (line 0); loop body = 8 NOPs (line 1) + 6 NOPs, subs, bne
    # (line 2), 3 iterations: 3 x 15 + bne taken 2 x 2 + not taken 1; bx lr on line 3
    # -> 1 + 7 + 45 + 4 + 1 = 58
    "flash_loop": ("movs r0, #3\n" + "nop\n" * 7 + "1:\n" + "nop\n" * 14
                   + "subs r0, r0, #1\nbne 1b\n", 58, 58),
    # multi-word loads from flash (a second table, flash_tab2: one 32-byte line of 8 words,
    # which no other snippet reads): MOVW + MOVT 2, then LDM 1 + 4 = 5 -> 7; and
    # MOVW + MOVT 2, LDRD 1 + 2 = 3 (words 5 and 6: two flash words of 8 bytes) -> 5
    "flash_ldm": ("movw r6, #:lower16:flash_tab2\nmovt r6, #:upper16:flash_tab2\n"
                  "ldmia.w r6, {r0-r3}\n", 7, 7),
    "flash_ldrd": ("movw r6, #:lower16:flash_tab2\nmovt r6, #:upper16:flash_tab2\n"
                   "ldrd r0, r1, [r6, #20]\n", 5, 5),
}
M3_ONLY_SKIP = {"dsp", "fpu"}
# Snippets that start at a flash line (64 bytes apart, so that no prefetch of one
# snippet's next line reaches another's); the others are word-aligned.
ALIGN = {"flash_data": 64, "flash_fetch": 64, "flash_loop": 64}


def _asm(names):
    out = [".syntax unified", ".thumb",
           ".section .rodata.flash_tab,\"a\"", ".balign 16", "flash_tab: .word " +
           ", ".join(str(i) for i in range(16)),
           ".balign 32", "flash_tab2: .word " + ", ".join(str(i) for i in range(8)),
           ".bss", ".balign 16", "ram_buf: .space 512",
           ".text",
           ".type leaf, %function", ".thumb_func", "leaf: bx lr"]
    for n in names:
        body, _, _ = SNIPPETS[n]
        out += [f".balign {ALIGN.get(n, 4)}", f".type snip_{n}, %function", ".thumb_func", f"snip_{n}:",
                body.rstrip("\n"), "bx lr"]
    out += [".section .rodata.snippets,\"a\"", ".balign 4", ".global snippet_table",
            "snippet_table:"] + [f".word snip_{n} + 1" for n in names]
    out += [".global snippet_count", f"snippet_count: .word {len(names)}"]
    # The trampoline: the bracket holds only `blx r12` and what it calls. The three
    # NOPs share bench_begin's 16-byte line, so its fetch hits the line buffer.
    out += [".text", ".balign 64", ".space 64", ".global run_snippet", ".type run_snippet, %function",
            ".thumb_func", "run_snippet:",
            "push {r4-r7, lr}", "mov r12, r0", "ldr r4, =ram_buf", "add r5, r4, #256",
            "ldr r6, =flash_tab", "movs r7, #8", "movs r0, #1", "movs r1, #2", "movs r2, #3",
            "movs r3, #4", ".balign 16", "nop", "nop", "nop",
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


# The Cortex-M7 table (LLVM's CortexM7Model as issue cycles, cores/cortex-m7.toml):
# two single-cycle instructions whose classes pair issue in one cycle; taken branches
# never pair; LDM/STM/LDRD/STRD and divides are single-issue.
M7_EXPECTED = {
    "alu16": 4,          # 8 ALU: (1 + 0) x 4
    "alu32": 3,          # 6 ALU: (1 + 0) x 3
    "multiply": 4,       # MUL, MLA, SMULL, SMLAL use the one MAC unit: no pairs, 1 each
    "divide": 14,        # 7 + 7 (WriteDIV latency 7, single issue)
    "ldr_pipeline": 3,   # LDR+LDR 1, LDR+ALU 1, LDR 1 (two load units)
    "multiple": 16,      # LDM 1+4, STM 1+4, LDRD 1+2, STRD 1+2 (single issue)
    # movs+subs 1; bne taken 1+P(1); 2 x (subs 1, bne taken 2); subs+bne not taken 1
    "loop": 10,
}
# The M33 table is the M4's (cores/cortex-m33.toml); the M55's scalar rows too, but
# it has no unaligned-access rule: "unaligned" is 2 + 1 + 2 + 1 + 2 = 8 there.
BOARDS = ("qemu-m4", "qemu-m3", "qemu-m33", "qemu-m55", "qemu-m7")


def _expected(board_name, n):
    if board_name == "qemu-m7":
        return M7_EXPECTED.get(n)
    if board_name == "qemu-m3":
        return SNIPPETS[n][2]
    if board_name == "qemu-m55" and n == "unaligned":
        return 8
    return SNIPPETS[n][1]


def _names(board_name):
    return [n for n in SNIPPETS if board_name != "qemu-m3" or n not in M3_ONLY_SKIP]


@pytest.fixture(scope="module")
def firmware(tmp_path_factory):
    from tests.helpers.env import require_arm_toolchain
    require_arm_toolchain()
    elves = {}
    for board_name in BOARDS:
        d = tmp_path_factory.mktemp(board_name)
        (d / "snippets.S").write_text(_asm(_names(board_name)))
        (d / "main.c").write_text(MAIN_C)
        b = load_board(board_name)
        elves[board_name] = (build_firmware([d / "snippets.S", d / "main.c"], [], b, d / "bench.elf"), b)
    return elves


def _part(name, ws, icache=(1, 16, 1), dcache=(0, 16, 1), prefetch=False, read=16):
    return Part(name=name, title=name, boards=BOARDS, core=None, clock_hz=100_000_000,
                flash_wait_states=ws, flash_read_bytes=read, prefetch=prefetch,
                icache=Cache(*icache), dcache=Cache(*dcache), ref="test", verified=True)


IDEAL = _part("zero", 0)


def _run(firmware, board_name, parts=(IDEAL,)):
    elf, b = firmware[board_name]
    r = run_cycles(elf, b, parts, begin="bench_begin", end="bench_end")
    names = _names(board_name)
    assert len(r.inferences) == len(names)
    return {n: inf for n, inf in zip(names, r.inferences)}, r


@pytest.mark.parametrize("board_name", BOARDS)
def test_instruction_classes_match_the_manual(firmware, board_name):
    got, _ = _run(firmware, board_name)
    want = {n: _expected(board_name, n) + OVERHEAD for n in got
            if _expected(board_name, n) is not None}
    have = {n: got[n].cycles["zero"] for n in want}
    assert have == want


def test_deterministic(firmware):
    a, ra = _run(firmware, "qemu-m4")
    b, rb = _run(firmware, "qemu-m4")
    assert [(i.instructions, i.cycles) for i in ra.inferences] == \
        [(i.instructions, i.cycles) for i in rb.inferences]
    assert ra.classes == rb.classes


def test_flash_wait_states_without_accelerator(firmware):
    # 3 wait states per flash read of 16 bytes; a one-line buffer, no prefetch, no data cache.
    ws = 3
    got, _ = _run(firmware, "qemu-m4", [_part("buf", ws)])
    # flash_data: one instruction line (4 LDRs and bx lr fit in 10 bytes): +3; every data
    # read waits: 4 x 3
    assert got["flash_data"].cycles["buf"] == 5 + OVERHEAD + ws + 4 * ws
    assert got["flash_data"].data_stall["buf"] == 4 * ws
    # flash_fetch: 4 lines of NOPs + the bx lr line, each a miss: 5 x 3
    assert got["flash_fetch"].cycles["buf"] == 32 + OVERHEAD + 5 * ws
    # flash_loop: line 0 once, lines 1 and 2 in each of the 3 iterations, line 3: 8 misses
    assert got["flash_loop"].cycles["buf"] == 58 + OVERHEAD + 8 * ws
    # SRAM data costs nothing extra: ldr_pipeline reads r4 (SRAM); its code is one line
    assert got["ldr_pipeline"].data_stall["buf"] == 0


def test_flash_with_prefetch_and_caches(firmware):
    ws = 3
    parts = [_part("pf", ws, prefetch=True),
             _part("icache", ws, icache=(4, 16, 4)),
             _part("dcache", ws, dcache=(1, 16, 1))]
    got, _ = _run(firmware, "qemu-m4", parts)
    # Prefetch: the first line misses (3); line L+1 is read from the flash right after
    # line L (ready 2 x (3 + 1) = 8 cycles after the miss), while the 8 NOPs of line L
    # take 3 + 8 cycles: no further stall.
    assert got["flash_fetch"].cycles["pf"] == 32 + OVERHEAD + ws
    # A 4-line instruction cache keeps the loop's two lines: misses on lines 0, 1, 2, 3
    assert got["flash_loop"].cycles["icache"] == 58 + OVERHEAD + 4 * ws
    # A one-line data cache of 16 bytes: the first of 4 word loads of one line misses
    assert got["flash_data"].cycles["dcache"] == 5 + OVERHEAD + ws + ws
    # More wait states than a line's execution time: prefetch hides only part of it.
    ws = 12
    got, _ = _run(firmware, "qemu-m4", [_part("slow", ws, prefetch=True)])
    # miss at t: stall 12, line ready at t+13; next line ready at t+26 but wanted at
    # t+12+8 = t+20: stall 26 - 21 = 5 per following line (4 of them incl. bx lr's)
    assert got["flash_fetch"].cycles["slow"] == 32 + OVERHEAD + ws + 4 * 5


def test_multi_word_flash_loads_wait_one_after_another(firmware):
    """An LDM's (LDRD's) word accesses go out one after another, each once the one before
    has its data (Cortex-M4 TRM, load/store timings: LDM costs 1 + N, one access per
    cycle; a wait state holds the bus). A miss fills the 32-byte line from its first
    flash word of 8 bytes, each flash word ws + 1 cycles after the one before."""
    ws = 5
    got, _ = _run(firmware, "qemu-m4", [_part("line", ws, dcache=(1, 32, 1), read=8)])
    # LDM of words 0-3 at t: word 0 misses: ws (flash word 0 at t + ws + 1); word 1 is in
    # it: 0; word 2 starts at t + ws + 2, flash word 1 arrives at t + 2(ws + 1): ws - 1;
    # word 3 is in it: 0. Counting each access from t would give ws + ws + 2(ws + 1) x 2.
    assert got["flash_ldm"].data_stall["line"] == 2 * ws - 1
    # LDRD of words 5 and 6: word 5 misses: ws (its flash word 2 first, at t + ws + 1);
    # word 6 starts at t + ws + 2, flash word 3 arrives at t + 2(ws + 1): ws.
    assert got["flash_ldrd"].data_stall["line"] == 2 * ws


@pytest.mark.shared
def test_decoder_classes_every_instruction_like_the_disassembler(tmp_path):
    """Every instruction of a real firmware (TFLite Micro's, else our snippets) is
    classed from its encoding; the disassembler's mnemonic, read independently,
    must agree with the class."""
    elf = REPO / ".." / "shared" / "anchors" / "tflm_cmsisnn_m4" / "kws01.elf"
    if not elf.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{elf} missing (CI must have ../shared)")
        pytest.skip("../shared anchors not present")
    drv = tmp_path / "drv.c"
    drv.write_text('#include <stdio.h>\n#include "thumb_decode.h"\nint main(void){char l[64];'
                   'while(fgets(l,sizeof l,stdin)){unsigned a=0,b=0;int n=sscanf(l,"%x %x",&a,&b);'
                   'unsigned char x[4]={a&255,a>>8,b&255,b>>8};decoded_t d=thumb_decode(x,n==2?4:2);'
                   'printf("%s\\n",class_name(d.cls));}return 0;}\n')
    exe = tmp_path / "drv"
    subprocess.run(["gcc", "-O1", f"-I{PLUGIN_DIR}", str(drv), str(PLUGIN_DIR / "thumb_decode.c"),
                    "-o", str(exe)], check=True)
    import re
    rx = re.compile(r"^\s*[0-9a-f]+:\s+([0-9a-f]{4})(?: ([0-9a-f]{4}))?\s+(\S+)")
    words, mnems = [], []
    for line in subprocess.run(["arm-none-eabi-objdump", "-d", str(elf)], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        m = rx.match(line)
        if m and not m.group(3).startswith("."):
            words.append(m.group(1) + (" " + m.group(2) if m.group(2) else ""))
            mnems.append(m.group(3).split(".")[0])
    got = subprocess.run([str(exe)], input="\n".join(words) + "\n", capture_output=True,
                         text=True, check=True).stdout.split()
    assert len(got) == len(mnems) > 10000
    # mnemonic (condition suffix stripped) -> allowed classes, from the ARM ARM's groups
    cond = r"(eq|ne|cs|cc|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|hs|lo)?"
    rules = [
        (r"(ldm|ldmia|ldmdb|pop)" + cond, {"LDM"}), (r"(stm|stmia|stmdb|push)" + cond, {"STM"}),
        (r"ldrd" + cond, {"LDRD"}), (r"strd" + cond, {"STRD"}),
        (r"ldr(b|h|sb|sh|ex)?" + cond, {"LDR"}), (r"str(b|h|ex)?" + cond, {"STR", "STR_REG"}),
        (r"(tbb|tbh)", {"TB"}), (r"(cbz|cbnz)", {"BCOND"}),
        (r"b" + cond, {"B", "BCOND"}), (r"bl" + cond, {"BL"}), (r"(bx|blx)" + cond, {"BX"}),
        (r"it[te]*", {"IT"}), (r"mul" + cond, {"MUL"}), (r"(mla|mls)" + cond, {"MLA"}),
        (r"(smull|umull)" + cond, {"MULL"}), (r"(smlal|umlal|smlalbb|smlald|umaal)" + cond, {"MLAL"}),
        (r"(smla[bt][bt]|smlad|smuad|smul[bt][bt]|smmul|smmla|smmlar|smlaw[bt]|smulw[bt]|smlsd)" + cond,
         {"DSPMUL"}),
        (r"(sdiv|udiv)" + cond, {"DIV"}), (r"(vmla|vmls|vfma|vfms|vnmla|vnmls)" + cond, {"VMLA"}),
        (r"(vmul|vnmul)" + cond, {"VMUL"}), (r"vdiv" + cond, {"VDIV"}), (r"vsqrt" + cond, {"VSQRT"}),
        (r"vldr" + cond, {"VLDR"}), (r"vstr" + cond, {"VSTR"}), (r"(vldmia|vldmdb|vpop)" + cond, {"VLDM"}),
        (r"(vstmia|vstmdb|vpush)" + cond, {"VSTM"}), (r"(vmrs|vmsr)" + cond, {"VMOV"}),
        (r"vmov" + cond, {"VMOV", "VMOV2", "VALU"}),
        (r"(vadd|vsub|vabs|vneg|vcmp|vcmpe|vcvt)" + cond, {"VALU"}),
        (r"(nop|pld|pli)", {"NOP", "SYS"}), (r"(bkpt|udf|svc|dsb|dmb|isb|mrs|msr|cpsie|cpsid)", {"SYS"}),
    ]
    compiled = [(re.compile(p + "$"), c) for p, c in rules]
    bad = {}
    for mn, cls in zip(mnems, got):
        allowed = next((c for rx_, c in compiled if rx_.match(mn)), {"ALU"})
        if cls not in allowed:
            bad.setdefault((mn, cls), 0)
            bad[(mn, cls)] += 1
    assert not bad, bad


def test_tables_cover_the_decoder_and_cite_the_manual():
    header = (PLUGIN_DIR / "thumb_decode.h").read_text()
    import re
    listed = re.findall(r"X\((\w+)\)", header.split("#define CLASS_LIST(X)")[1].split("enum")[0])
    assert tuple(listed) == CLASSES
    for core in ("cortex-m3", "cortex-m4", "cortex-m33", "cortex-m7", "cortex-m55"):
        t = load_core(core)
        assert set(t.cycles) == set(CLASSES) and all(t.refs[c] for c in CLASSES)
    m4 = load_core("cortex-m4")
    # the M4 facts
    assert m4.cycles["LDM"] == (1, 1) and m4.cycles["LDR"] == (2, 0)
    assert m4.cycles["DSPMUL"] == (1, 0) and m4.cycles["VMLA"] == (3, 0)
    assert m4.cycles["VDIV"] == (14, 0) and m4.cycles["VLDM"] == (1, 1)


def test_every_board_has_parts():
    for board_name in ("qemu-m3", "qemu-m4", "qemu-m7", "qemu-m33", "qemu-m55"):
        names = [p.name for p in parts_for_board(load_board(board_name))]
        assert names[0] == "ideal"
    assert {"stm32l4r5", "nrf52840"} <= {p.name for p in parts_for_board(load_board("qemu-m4"))}
    assert {"stm32f746", "stm32h7a3"} <= {p.name for p in parts_for_board(load_board("qemu-m7"))}
    parts = load_parts()
    assert parts["stm32l4r5"].clock_hz == 120_000_000 and parts["stm32l4r5"].flash_wait_states == 5


# --------------------------------------------------------------- integration

def _anchor(name):
    from codegen.cycles.compare import tflm_elf
    elf = tflm_elf(name)
    if elf is None:
        if os.environ.get("CI"):
            pytest.fail(f"../shared/anchors/tflm_cmsisnn_m4/{name}.elf missing (CI must have ../shared)")
        pytest.skip("../shared anchors not present")
    return elf


@pytest.mark.shared
def test_tflm_anchor_priced_and_sized_like_its_readme():
    """The anchors' README (measured outside this project with the board timer) gives
    sww01: 2,227,725 instructions per inference (mean of 8, 40-instruction resolution)
    and a 189,016-byte flash image without the golden inputs."""
    from codegen.cycles.compare import price_tflm
    _anchor("sww01")
    t = price_tflm("sww01", load_board("qemu-m4"))
    assert t["inferences"] == 8 and t["outputs"] == 8
    assert abs(t["instructions"] - 2_227_725) <= 40
    assert t["flash"] == 189_016
    assert t["arena_bytes"] == 16_596
    # cycles: at least one per instruction on the M4, and the part's wait states only add
    assert t["cycles"]["ideal"] > t["instructions"]
    assert t["cycles"]["stm32l4r5"] > t["cycles"]["ideal"]
    assert t["ms"]["stm32l4r5"] == round(1000 * t["cycles"]["stm32l4r5"] / 120e6, 3)


def test_profile_cycles_per_layer_agree_with_the_timer():
    """profile --cycles: the plugin's own instruction counts per layer agree with the
    board timer's (-icount shift=0: one tick = 40 instructions) to its resolution."""
    from codegen.driver.profile import format_profile, profile_model
    r = profile_model(REPO / "models" / "digits_cnn_int8.onnx", board="qemu-m4", numerics="tflite",
                      cycles=True, parts=["ideal", "stm32l4r5"])
    cyc = r["cycles"]
    assert [p["name"] for p in cyc["parts"]] == ["ideal", "stm32l4r5"]
    assert abs(cyc["instructions"] - r["total_instructions"]) <= 40
    for row in r["layers"]:
        assert abs(row["instructions_exact"] - row["instructions"]) <= 40 + 40
        assert row["cycles"]["stm32l4r5"] >= row["cycles"]["ideal"] >= row["instructions_exact"] > 0 \
            or row["instructions_exact"] < 20  # zero-copy aliases: only the hook
    total = {p["name"]: p["cycles"] for p in cyc["parts"]}
    assert sum(row["cycles"]["ideal"] for row in r["layers"]) <= total["ideal"]
    text = format_profile(r)
    assert "cycles stm32l4r5" in text and "ms at 120 MHz" in text


def test_cli_unknown_part_is_one_line(capsys):
    from codegen.cli import main
    code = main(["profile", str(REPO / "models" / "digits_cnn_int8.onnx"), "--board", "qemu-m4",
                 "--part", "stm32f746"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "stm32f746" in err[0] and "qemu-m4" in err[0]
