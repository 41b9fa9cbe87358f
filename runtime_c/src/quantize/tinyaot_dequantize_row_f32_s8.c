/* DequantizeLinear of one int8 row through its 256-entry float table, indexed
 * by the byte ((uint8_t)q): the input row of the float FC kernels
 * (tinyaot_fully_connected_f32_s8 and the generated unrolled FC layers). */
#include "tinyaot_kernels.h"

#if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__thumb2__)
#define TINYAOT_DQ_ROW_ASM 1
#endif

void tinyaot_dequantize_row_f32_s8(const int8_t *q, int32_t k, const float *tab, float *s)
{
#ifdef TINYAOT_DQ_ROW_ASM
    /* 32 values per loop pass, each an LDRB and a table LDR, four per STM:
     * 74 instructions per 32 values; then one pass of 16 for k % 32 >= 16. */
#define DQ_ROW4                                                                              \
    "ldrb r8, [%[q]], #1\n\t" "ldrb r9, [%[q]], #1\n\t"                                    \
    "ldrb r10, [%[q]], #1\n\t" "ldrb r11, [%[q]], #1\n\t"                                  \
    "ldr r8, [%[tab], r8, lsl #2]\n\t" "ldr r9, [%[tab], r9, lsl #2]\n\t"                  \
    "ldr r10, [%[tab], r10, lsl #2]\n\t" "ldr r11, [%[tab], r11, lsl #2]\n\t"              \
    "stmia %[s]!, {r8, r9, r10, r11}\n\t"
    if (k >= 32) {
        const int8_t *qe = q + (k & ~31);
        __asm__ volatile("1:\n\t" DQ_ROW4 DQ_ROW4 DQ_ROW4 DQ_ROW4 DQ_ROW4 DQ_ROW4 DQ_ROW4 DQ_ROW4
                         "cmp %[q], %[qe]\n\t"
                         "bne 1b"
                         : [q] "+r"(q), [s] "+r"(s)
                         : [tab] "r"(tab), [qe] "r"(qe)
                         : "r8", "r9", "r10", "r11", "memory", "cc");
        k &= 31; /* q and s advanced past the loop's values */
    }
    if (k >= 16) {
        __asm__ volatile(DQ_ROW4 DQ_ROW4 DQ_ROW4 DQ_ROW4
                         : [q] "+r"(q), [s] "+r"(s)
                         : [tab] "r"(tab)
                         : "r8", "r9", "r10", "r11", "memory");
        k -= 16;
    }
#undef DQ_ROW4
#endif
    for (int32_t i = 0; i < k; ++i) {
        s[i] = tab[(uint8_t)q[i]];
    }
}
