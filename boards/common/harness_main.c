/* Verification firmware main(): runs every embedded input through the
 * model and prints, per input i,
 *     OUT <i> <status> <ticks> <output bytes as hex>\n
 * then "DONE <n>\n". BOOT is printed first so the host can tell a
 * firmware that never started from one that died in the model.
 * Exit status: 0 = all inputs ran (whatever their status), 2 = the model's
 * output does not fit the output buffer (harness.h), 3 = the weight
 * integrity check (tinyaot_harness_verify, only with --integrity) failed. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "semihost.h"
#include "timer.h"

#ifndef TINYAOT_HARNESS_MAX_OUTPUT
#define TINYAOT_HARNESS_MAX_OUTPUT 4096
#endif

/* harness.h: the output buffer of harness data that defines none (weak: the
 * model's harness_data.c replaces it, and --gc-sections drops this one). */
int8_t tinyaot_harness_output[TINYAOT_HARNESS_MAX_OUTPUT] __attribute__((weak, aligned(8)));
const uint32_t tinyaot_harness_output_capacity __attribute__((weak)) = TINYAOT_HARNESS_MAX_OUTPUT;
/* Read through volatile: GCC folds a weak constant's own initializer. */
#define OUTPUT_CAPACITY (*(const volatile uint32_t *)&tinyaot_harness_output_capacity)

int main(void)
{
    const uint32_t n = tinyaot_harness_num_inputs;
    const uint32_t in_size = tinyaot_harness_input_size;
    const uint32_t out_size = tinyaot_harness_output_size;
    int8_t *const output = tinyaot_harness_output;

    tinyaot_sh_puts("BOOT\n");
    if (out_size > OUTPUT_CAPACITY) {
        tinyaot_sh_puts("ERROR output_size ");
        tinyaot_sh_put_u32(out_size);
        tinyaot_sh_puts(" > TINYAOT_HARNESS_MAX_OUTPUT ");
        tinyaot_sh_put_u32(OUTPUT_CAPACITY);
        tinyaot_sh_putc('\n');
        return 2;
    }

    if (tinyaot_harness_verify) {
        /* Boot-time weight integrity check (--integrity): exit 3 if corrupt. */
        const int v = tinyaot_harness_verify();
        tinyaot_sh_puts("VERIFY ");
        tinyaot_sh_put_i32(v);
        tinyaot_sh_putc('\n');
        if (v != 0) {
            return 3;
        }
    }

    tinyaot_timer_start();
    for (uint32_t i = 0; i < n; i++) {
        const int8_t *in = &tinyaot_harness_inputs[(size_t)i * in_size];
        /* Poison the buffer so bytes the model fails to write show up as
         * a5 instead of the previous input's result. Not timed. */
        memset(output, 0xA5, out_size);
        if (tinyaot_harness_load) {
            tinyaot_harness_load(in); /* arena I/O: not timed, like a sensor's DMA */
        }
        const uint32_t t0 = tinyaot_timer_sync();
        const int status = tinyaot_harness_run(in, output);
        const uint32_t ticks = tinyaot_timer_read() - t0;
        if (tinyaot_harness_store) {
            tinyaot_harness_store(output);
        }

        tinyaot_sh_puts("OUT ");
        tinyaot_sh_put_u32(i);
        tinyaot_sh_putc(' ');
        tinyaot_sh_put_i32(status);
        tinyaot_sh_putc(' ');
        tinyaot_sh_put_u32(ticks);
        tinyaot_sh_putc(' ');
        tinyaot_sh_put_hex(output, out_size);
        tinyaot_sh_putc('\n');
    }
    tinyaot_sh_puts("DONE ");
    tinyaot_sh_put_u32(n);
    tinyaot_sh_putc('\n');
    return 0;
}
