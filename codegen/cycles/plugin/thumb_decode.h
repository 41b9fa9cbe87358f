/* Instruction classes of the cycle model, decided from the Thumb / Thumb-2
 * encoding bits (Armv7-M / Armv8-M Architecture Reference Manual, "Thumb
 * instruction set encoding"), never from disassembler text. The cost of each
 * class comes from the core's table (codegen/cycles/cores/<core>.toml). */
#ifndef CYCLEMODEL_THUMB_DECODE_H
#define CYCLEMODEL_THUMB_DECODE_H

#include <stdint.h>

#define CLASS_LIST(X)                                                             \
    X(ALU) X(MUL) X(MLA) X(MULL) X(MLAL) X(DSPMUL) X(DIV)                          \
    X(LDR) X(STR) X(STR_REG) X(LDRD) X(STRD) X(LDM) X(STM)                         \
    X(B) X(BL) X(BCOND) X(BX) X(TB) X(IT) X(NOP) X(SYS)                                  \
    X(VALU) X(VMUL) X(VMLA) X(VDIV) X(VSQRT) X(VLDR) X(VSTR) X(VLDM) X(VSTM)       \
    X(VMOV) X(VMOV2) X(MVE) X(MVE_LDST) X(UNKNOWN)

enum insn_class {
#define X(n) C_##n,
    CLASS_LIST(X)
#undef X
    N_CLASSES
};

/* flags */
#define F_PC 1u       /* may write the PC: a branch when the next pc is not the fall-through */
#define F_DIRECT 2u   /* target known at decode (B, BL, CBZ): the shorter refill */
#define F_MEM 4u      /* a load/store class: no access seen means its condition failed */

typedef struct {
    uint8_t cls;
    uint8_t flags;
    uint8_t nregs; /* registers / words transferred (LDM, STM, PUSH, POP, VLDM, VSTM) */
} decoded_t;

decoded_t thumb_decode(const uint8_t *bytes, unsigned size);
const char *class_name(unsigned cls);
int class_by_name(const char *name);

#endif
