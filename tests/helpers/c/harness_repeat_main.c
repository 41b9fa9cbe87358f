/* Firmware main() for an instruction-exact cost check (tests/test_qemu_m4.py):
 * like boards/common/harness_main.c, but every input runs TINYAOT_REPEAT times
 * between two timer reads. With -icount shift=0 one timer tick is
 * instructions_per_tick (40) instructions, so with TINYAOT_REPEAT = 40 inputs
 * whose inferences differ by even one instruction differ by a whole tick:
 *     OUT <i> <status> <ticks> <output bytes as hex>\n   ... DONE <n>\n */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "semihost.h"
#include "timer.h"

#ifndef TINYAOT_REPEAT
#define TINYAOT_REPEAT 40u
#endif
#ifndef TINYAOT_HARNESS_MAX_OUTPUT
#define TINYAOT_HARNESS_MAX_OUTPUT 4096
#endif

#ifndef TINYAOT_HARNESS_MAX_INPUT
#define TINYAOT_HARNESS_MAX_INPUT 32768
#endif

static int8_t output[TINYAOT_HARNESS_MAX_OUTPUT] __attribute__((aligned(8)));
/* Arena I/O: every inference overwrites its input, so it is copied in again
 * before each repetition (timed). Copying from this one aligned buffer keeps
 * the copy's cost the same for every input (the embedded inputs sit at
 * differently aligned addresses, and memcpy's path depends on alignment). */
static int8_t staged[TINYAOT_HARNESS_MAX_INPUT] __attribute__((aligned(8)));

int main(void)
{
    const uint32_t n = tinyaot_harness_num_inputs;
    const uint32_t in_size = tinyaot_harness_input_size;
    const uint32_t out_size = tinyaot_harness_output_size;

    tinyaot_sh_puts("BOOT\n");
    if (out_size > sizeof(output) || (tinyaot_harness_load && in_size > sizeof(staged))) {
        return 2;
    }
    tinyaot_timer_start();
    for (uint32_t i = 0; i < n; i++) {
        const int8_t *in = &tinyaot_harness_inputs[(size_t)i * in_size];
        int status = 0;
        memset(output, 0xA5, out_size);
        if (tinyaot_harness_load) {
            memcpy(staged, in, in_size);
        }
        const uint32_t t0 = tinyaot_timer_sync();
        for (uint32_t r = 0; r < TINYAOT_REPEAT; r++) {
            if (tinyaot_harness_load) {
                tinyaot_harness_load(staged);
            }
            status |= tinyaot_harness_run(in, output);
        }
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
