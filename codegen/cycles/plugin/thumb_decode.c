/* Thumb / Thumb-2 encoding -> cycle-model class (see thumb_decode.h).
 * Section names refer to the Armv7-M Architecture Reference Manual (DDI 0403),
 * chapter A5 "The Thumb Instruction Set Encoding" and A6/A7 for the FP
 * extension; Armv8.1-M (MVE, low-overhead loops) only as far as classing the
 * coprocessor and branch spaces needs. */
#include "thumb_decode.h"

#include <string.h>

static const char *const names[N_CLASSES] = {
#define X(n) #n,
    CLASS_LIST(X)
#undef X
};

const char *class_name(unsigned cls) { return cls < N_CLASSES ? names[cls] : "?"; }

int class_by_name(const char *name)
{
    for (int i = 0; i < N_CLASSES; i++) {
        if (strcmp(names[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

static decoded_t mk(unsigned cls, unsigned flags, unsigned nregs)
{
    decoded_t d = {(uint8_t)cls, (uint8_t)flags, (uint8_t)nregs};
    return d;
}

static unsigned popcount16(unsigned v)
{
    unsigned n = 0;
    for (v &= 0xFFFFu; v; v &= v - 1) {
        n++;
    }
    return n;
}

/* A5.2: 16-bit encodings */
static decoded_t decode16(unsigned h)
{
    const unsigned op = h >> 10; /* bits 15:10 */
    if ((op & 0x30) == 0x00) {   /* 00xxxx shift, add, subtract, move, compare */
        return mk(C_ALU, 0, 0);
    }
    if (op == 0x10) { /* 010000 data processing */
        return mk(((h >> 6) & 0xF) == 0xD ? C_MUL : C_ALU, 0, 0);
    }
    if (op == 0x11) { /* 010001 special data instructions and branch and exchange */
        const unsigned o = (h >> 6) & 0xF;
        if ((o & 0xC) == 0xC) { /* BX, BLX (register) */
            return mk(C_BX, F_PC, 0);
        }
        const unsigned rd = ((h >> 4) & 0x8) | (h & 0x7);
        if (((o & 0xC) == 0x0 || (o & 0xC) == 0x8) && rd == 15) { /* ADD / MOV to PC */
            return mk(C_BX, F_PC, 0);
        }
        return mk(C_ALU, 0, 0);
    }
    if ((op & 0x3E) == 0x12) { /* 01001x LDR (literal) */
        return mk(C_LDR, F_MEM, 0);
    }
    if ((op & 0x3C) == 0x14) { /* 0101xx load/store register offset */
        const unsigned opb = (h >> 9) & 0x7;
        return opb <= 2 ? mk(C_STR_REG, F_MEM, 0) : mk(C_LDR, F_MEM, 0);
    }
    if ((op & 0x38) == 0x18 || (op & 0x3C) == 0x20 || (op & 0x3C) == 0x24) {
        /* 011xxx word/byte immediate, 1000xx halfword immediate, 1001xx SP-relative */
        return (h & 0x0800) ? mk(C_LDR, F_MEM, 0) : mk(C_STR, F_MEM, 0);
    }
    if ((op & 0x3C) == 0x28) { /* 1010xx ADR, ADD (SP plus immediate) */
        return mk(C_ALU, 0, 0);
    }
    if ((op & 0x3C) == 0x2C) { /* 1011xx miscellaneous 16-bit instructions (A5.2.5) */
        const unsigned m = (h >> 5) & 0x7F; /* bits 11:5 */
        if ((m & 0x28) == 0x08) {           /* 1011 x0x1: CBZ, CBNZ */
            return mk(C_BCOND, F_PC | F_DIRECT, 0);
        }
        if ((m & 0x70) == 0x20) { /* 010xxxx PUSH */
            return mk(C_STM, F_MEM, popcount16(h & 0xFF) + ((h >> 8) & 1));
        }
        if ((m & 0x70) == 0x60) { /* 110xxxx POP */
            const unsigned pc = (h >> 8) & 1;
            return mk(C_LDM, F_MEM | (pc ? F_PC : 0), popcount16(h & 0xFF) + pc);
        }
        if ((m & 0x78) == 0x70) { /* 1110xxx BKPT */
            return mk(C_SYS, 0, 0);
        }
        if ((m & 0x78) == 0x78) { /* 1111xxx IT and hints */
            return (h & 0xF) ? mk(C_IT, 0, 0) : mk(C_NOP, 0, 0);
        }
        if (m == 0x33) { /* CPS */
            return mk(C_SYS, 0, 0);
        }
        return mk(C_ALU, 0, 0); /* ADD/SUB SP, SXT*, UXT*, REV* */
    }
    if ((op & 0x3C) == 0x30) { /* 1100xx STM / LDM */
        return (h & 0x0800) ? mk(C_LDM, F_MEM, popcount16(h & 0xFF))
                            : mk(C_STM, F_MEM, popcount16(h & 0xFF));
    }
    if ((op & 0x3C) == 0x34) { /* 1101xx conditional branch, UDF, SVC */
        const unsigned cond = (h >> 8) & 0xF;
        if (cond >= 0xE) {
            return mk(C_SYS, 0, 0);
        }
        return mk(C_BCOND, F_PC | F_DIRECT, 0);
    }
    if ((op & 0x3E) == 0x38) { /* 11100x unconditional branch */
        return mk(C_B, F_PC | F_DIRECT, 0);
    }
    return mk(C_UNKNOWN, 0, 0);
}

/* A6/A7: floating-point (coprocessor 10/11) and, on Armv8.1-M, MVE. */
static decoded_t decode_coproc(uint32_t t)
{
    const unsigned coproc = (t >> 8) & 0xF;
    const int fp = (coproc & 0xE) == 0xA;
    if (!fp) {
        /* Armv8.1-M MVE lives in this space (and in 111x 1111 below). */
        const int ldst = ((t >> 25) & 0x7) == 0x6;
        return ldst ? mk(C_MVE_LDST, F_MEM, 0) : mk(C_MVE, 0, 0);
    }
    if (((t >> 24) & 0xF) == 0xE && !(t & 0x10)) { /* VFP data processing */
        const unsigned opc1 = (t >> 20) & 0xB; /* bits 23, 21:20 (D is bit 22) */
        const unsigned opc2 = (t >> 16) & 0xF;
        const unsigned opc3 = (t >> 6) & 0x3;
        switch (opc1) {
        case 0x0: /* VMLA, VMLS */
        case 0x1: /* VNMLA, VNMLS */
        case 0x9: /* VFNMA, VFNMS */
        case 0xA: /* VFMA, VFMS */
            return mk(C_VMLA, 0, 0);
        case 0x2: /* VMUL, VNMUL */
            return mk(C_VMUL, 0, 0);
        case 0x3: /* VADD, VSUB */
            return mk(C_VALU, 0, 0);
        case 0x8: /* VDIV */
            return mk(C_VDIV, 0, 0);
        case 0xB:
            if (opc2 == 0x1 && opc3 == 0x3) {
                return mk(C_VSQRT, 0, 0);
            }
            return mk(C_VALU, 0, 0); /* VMOV imm/reg, VABS, VNEG, VCMP, VCVT */
        default:
            return mk(C_VALU, 0, 0);
        }
    }
    if (((t >> 24) & 0xF) == 0xE && (t & 0x10)) { /* 8/16/32-bit transfers: VMOV, VMRS, VMSR */
        return mk(C_VMOV, 0, 0);
    }
    if (((t >> 21) & 0x7F) == 0x62) { /* 1100010: 64-bit transfers (VMOV two core registers) */
        return mk(C_VMOV2, 0, 0);
    }
    if (((t >> 25) & 0x7) == 0x6) { /* extension register load/store */
        const unsigned opc = (t >> 20) & 0x1F;
        if ((opc & 0x13) == 0x10) {
            return mk(C_VSTR, F_MEM, 0);
        }
        if ((opc & 0x13) == 0x11) {
            return mk(C_VLDR, F_MEM, 0);
        }
        /* VSTM/VPUSH, VLDM/VPOP: imm8 counts 32-bit words */
        return (opc & 1) ? mk(C_VLDM, F_MEM, t & 0xFF) : mk(C_VSTM, F_MEM, t & 0xFF);
    }
    return mk(C_UNKNOWN, 0, 0);
}

/* A5.3: 32-bit encodings */
static decoded_t decode32(unsigned h1, unsigned h2)
{
    const uint32_t t = ((uint32_t)h1 << 16) | h2;
    const unsigned op1 = (h1 >> 11) & 0x3;
    const unsigned op2 = (h1 >> 4) & 0x7F;
    if (op1 == 1) {
        if ((op2 & 0x64) == 0x00) { /* 00xx0xx load/store multiple */
            const unsigned l = (h1 >> 4) & 1;
            const unsigned n = popcount16(h2);
            if (l) {
                const unsigned pc = (h2 >> 15) & 1;
                return mk(C_LDM, F_MEM | (pc ? F_PC : 0), n);
            }
            return mk(C_STM, F_MEM, n);
        }
        if ((op2 & 0x64) == 0x04) { /* 00xx1xx load/store dual, exclusive, table branch */
            const unsigned o1 = (h1 >> 7) & 0x3, o2 = (h1 >> 4) & 0x3, o3 = (h2 >> 4) & 0xF;
            if (o1 == 1 && o2 == 1 && (o3 == 0 || o3 == 1)) { /* TBB, TBH */
                return mk(C_TB, F_PC | F_MEM, 0);
            }
            if (o1 == 0 && o2 == 0) { /* STREX */
                return mk(C_STR_REG, F_MEM, 0);
            }
            if (o1 == 0 && o2 == 1) { /* LDREX */
                return mk(C_LDR, F_MEM, 0);
            }
            if (o1 == 1 && (o2 & 2) == 0) { /* STREXB/H/D, LDREXB/H/D, (v8-M) LDA/STL */
                return (h1 >> 4) & 1 ? mk(C_LDR, F_MEM, 0) : mk(C_STR_REG, F_MEM, 0);
            }
            return (h1 >> 4) & 1 ? mk(C_LDRD, F_MEM, 2) : mk(C_STRD, F_MEM, 2);
        }
        if ((op2 & 0x60) == 0x20) { /* 01xxxxx data processing (shifted register) */
            return mk(C_ALU, 0, 0);
        }
        return decode_coproc(t); /* 1xxxxxx coprocessor */
    }
    if (op1 == 2) {
        if (!(h2 & 0x8000)) { /* data processing (modified / plain binary immediate) */
            return mk(C_ALU, 0, 0);
        }
        /* A5.3.4 branches and miscellaneous control */
        const unsigned o = (h2 >> 12) & 0x7;
        if ((o & 0x5) == 0x0) { /* 0x0 */
            if (((h1 >> 7) & 0x7) != 0x7) {
                return mk(C_BCOND, F_PC | F_DIRECT, 0); /* B<cond> (T3) */
            }
            return mk(C_SYS, 0, 0); /* MSR, MRS, hints, barriers */
        }
        if ((o & 0x5) == 0x1) { /* 0x1: B (T4) */
            return mk(C_B, F_PC | F_DIRECT, 0);
        }
        if ((o & 0x5) == 0x5) { /* 1x1: BL (its own class: Armv6-M cores charge it apart from B) */
            return mk(C_BL, F_PC | F_DIRECT, 0);
        }
        /* 1x0: Armv8.1-M low-overhead loops and branch future (LE, WLS, DLS, BF) */
        return mk(C_BCOND, F_PC | F_DIRECT, 0);
    }
    /* op1 == 3 */
    if ((op2 & 0x71) == 0x00) { /* 000xxx0 store single data item */
        const int regoff = !((h1 >> 7) & 1) && !((h2 >> 11) & 1);
        return mk(regoff ? C_STR_REG : C_STR, F_MEM, 0);
    }
    if ((op2 & 0x67) == 0x01 || (op2 & 0x67) == 0x03 || (op2 & 0x67) == 0x05) {
        /* 00xx001 byte, 00xx011 halfword, 00xx101 word loads (and PLD/PLI hints) */
        const unsigned rt = (h2 >> 12) & 0xF;
        if (rt == 15) {
            if ((op2 & 0x67) == 0x05) { /* LDR PC */
                return mk(C_LDR, F_MEM | F_PC, 0);
            }
            return mk(C_NOP, 0, 0); /* PLD, PLI: a hint, no load */
        }
        return mk(C_LDR, F_MEM, 0);
    }
    if ((op2 & 0x70) == 0x20) { /* 010xxxx data processing (register) */
        return mk(C_ALU, 0, 0);
    }
    if ((op2 & 0x78) == 0x30) { /* 0110xxx multiply, multiply accumulate, absolute difference */
        const unsigned o1 = (h1 >> 4) & 0x7, o2 = (h2 >> 4) & 0x3, ra = (h2 >> 12) & 0xF;
        if (o1 == 0) {
            if (o2 == 0) {
                return mk(ra == 15 ? C_MUL : C_MLA, 0, 0);
            }
            return mk(C_MLA, 0, 0); /* MLS */
        }
        return mk(C_DSPMUL, 0, 0); /* SMUL/SMLA<xy>, SMLAD, SMUAD, SMLAW, SMLSD, SMMUL/SMMLA(R), SMMLS, USAD(A)8 */
    }
    if ((op2 & 0x78) == 0x38) { /* 0111xxx long multiply, long multiply accumulate, divide */
        const unsigned o1 = (h1 >> 4) & 0x7;
        if (o1 == 1 || o1 == 3) {
            return mk(C_DIV, 0, 0);
        }
        if (o1 == 0 || o1 == 2) {
            return mk(C_MULL, 0, 0);
        }
        return mk(C_MLAL, 0, 0); /* SMLAL, SMLALxy, SMLALD, SMLSLD, UMLAL, UMAAL */
    }
    return decode_coproc(t); /* 1xxxxxx coprocessor (FP, MVE) */
}

decoded_t thumb_decode(const uint8_t *b, unsigned size)
{
    const unsigned h1 = (unsigned)b[0] | ((unsigned)b[1] << 8);
    if (size == 2) {
        return decode16(h1);
    }
    const unsigned h2 = (unsigned)b[2] | ((unsigned)b[3] << 8);
    return decode32(h1, h2);
}
