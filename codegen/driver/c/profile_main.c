/* Profiling firmware main(): runs the first embedded input once and prints
 *     PROF <layers> <t0> <t_end>
 *     STAMP <i> <ticks after layer i>     (one line per layer)
 *     OUT 0 <status> <ticks> <output hex>
 *     DONE 1
 * The stamps are raw timer reads (tinyaot_timer_read) taken by the model's
 * TINYAOT_PROFILE(i) hook right after layer i; t0 is read just before the
 * call, t_end just after it, exactly like boards/common/harness_main.c. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "semihost.h"
#include "timer.h"

#ifndef TINYAOT_PROFILE_MAX_LAYERS
#define TINYAOT_PROFILE_MAX_LAYERS 1024
#endif
#ifndef TINYAOT_PROFILE_LAYERS
#error "TINYAOT_PROFILE_LAYERS (number of layers) must be defined"
#endif
#ifndef TINYAOT_HARNESS_MAX_OUTPUT
#define TINYAOT_HARNESS_MAX_OUTPUT 4096
#endif

uint32_t tinyaot_profile_stamps[TINYAOT_PROFILE_MAX_LAYERS];
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
    if (out_size > cap || TINYAOT_PROFILE_LAYERS > TINYAOT_PROFILE_MAX_LAYERS) {
        tinyaot_sh_puts("ERROR buffers too small\n");
        return 2;
    }
    if (tinyaot_harness_load) {
        tinyaot_harness_load(tinyaot_harness_inputs); /* arena I/O: not timed */
    }
    tinyaot_timer_start();
    const uint32_t t0 = tinyaot_timer_sync();
    const int status = tinyaot_harness_run(tinyaot_harness_inputs, output);
    const uint32_t t1 = tinyaot_timer_read();
    if (tinyaot_harness_store) {
        tinyaot_harness_store(output);
    }
    tinyaot_sh_puts("PROF ");
    tinyaot_sh_put_u32(TINYAOT_PROFILE_LAYERS);
    tinyaot_sh_putc(' ');
    tinyaot_sh_put_u32(t0);
    tinyaot_sh_putc(' ');
    tinyaot_sh_put_u32(t1);
    tinyaot_sh_putc('\n');
    for (uint32_t i = 0; i < TINYAOT_PROFILE_LAYERS; i++) {
        tinyaot_sh_puts("STAMP ");
        tinyaot_sh_put_u32(i);
        tinyaot_sh_putc(' ');
        tinyaot_sh_put_u32(tinyaot_profile_stamps[i]);
        tinyaot_sh_putc('\n');
    }
    tinyaot_sh_puts("OUT 0 ");
    tinyaot_sh_put_i32(status);
    tinyaot_sh_putc(' ');
    tinyaot_sh_put_u32(t1 - t0);
    tinyaot_sh_putc(' ');
    tinyaot_sh_put_hex(output, out_size);
    tinyaot_sh_putc('\n');
    tinyaot_sh_puts("DONE 1\n");
    return 0;
}
