/* Stack-measuring firmware main() (tinyaot report --measure-stack): paints
 * TINYAOT_STACK_PAINT bytes below the current stack pointer with a pattern,
 * runs the first embedded input once and prints
 *     STACK <bytes used below main's stack pointer by tinyaot_harness_run>
 *     OUT 0 <status> 0 <output hex>
 *     DONE 1
 * No interrupts are enabled, so nothing else writes below the stack pointer. */
#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "semihost.h"

#ifndef TINYAOT_STACK_PAINT
#define TINYAOT_STACK_PAINT 16384u
#endif
#ifndef TINYAOT_HARNESS_MAX_OUTPUT
#define TINYAOT_HARNESS_MAX_OUTPUT 4096
#endif
#define PATTERN 0x5AC3A55Cu

/* harness.h: the output buffer of harness data that defines none (weak: the
 * model's harness_data.c replaces it, and --gc-sections drops this one). */
int8_t tinyaot_harness_output[TINYAOT_HARNESS_MAX_OUTPUT] __attribute__((weak, aligned(8)));
const uint32_t tinyaot_harness_output_capacity __attribute__((weak)) = TINYAOT_HARNESS_MAX_OUTPUT;
/* Read through volatile: GCC folds a weak constant's own initializer. */
#define OUTPUT_CAPACITY (*(const volatile uint32_t *)&tinyaot_harness_output_capacity)

int main(void)
{
    const uint32_t out_size = tinyaot_harness_output_size;
    int8_t *const output = tinyaot_harness_output;
    const uint32_t cap = OUTPUT_CAPACITY;
    tinyaot_sh_puts("BOOT\n");
    if (out_size > cap) {
        tinyaot_sh_puts("ERROR output buffer too small\n");
        return 2;
    }
    uintptr_t sp;
    __asm volatile("mov %0, sp" : "=r"(sp));
    sp &= ~(uintptr_t)3u;
    volatile uint32_t *lo = (volatile uint32_t *)(sp - TINYAOT_STACK_PAINT);
    for (volatile uint32_t *p = lo; p < (volatile uint32_t *)sp; p++) *p = PATTERN;
    if (tinyaot_harness_load) {
        tinyaot_harness_load(tinyaot_harness_inputs);
    }
    const int status = tinyaot_harness_run(tinyaot_harness_inputs, output);
    if (tinyaot_harness_store) {
        tinyaot_harness_store(output);
    }
    volatile uint32_t *p = lo;
    while (p < (volatile uint32_t *)sp && *p == PATTERN) p++;
    tinyaot_sh_puts("STACK ");
    tinyaot_sh_put_u32((uint32_t)(sp - (uintptr_t)p));
    tinyaot_sh_puts("\nOUT 0 ");
    tinyaot_sh_put_i32(status);
    tinyaot_sh_puts(" 0 ");
    tinyaot_sh_put_hex(output, out_size);
    tinyaot_sh_puts("\nDONE 1\n");
    return 0;
}
