/* Stand-in for a compiler-generated harness_data.c, to test a board
 * without a model: 3 inputs of 16 bytes, output[j] = input[j] ^ 0x55, plus
 * a busy loop so there is something to time. Status is -1 when input[0]
 * is -128, else 0 (to exercise negative statuses).
 *
 *   -DTINYAOT_SELFTEST_SPIN=n  busy-loop iterations per run (default 1000)
 *   -DTINYAOT_SELFTEST_FAULT   the second run executes UDF -> HardFault
 *
 * tests/firmware/test_board_qemu_m4.py mirrors these inputs and rules. */
#include <stdint.h>

#include "harness.h"
#include "timer.h"

#ifndef TINYAOT_SELFTEST_SPIN
#define TINYAOT_SELFTEST_SPIN 1000
#endif

#define N_IN 3
#define SIZE 16

const uint32_t tinyaot_harness_num_inputs = N_IN;
const uint32_t tinyaot_harness_input_size = SIZE;
const uint32_t tinyaot_harness_output_size = SIZE;
const int8_t tinyaot_harness_inputs[N_IN * SIZE] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    -1, -2, -3, -4, -5, -6, -7, -8, 127, 126, 85, 84, -86, -85, 0, 0x55,
    -128, 127, -128, 127, 1, -1, 1, -1, 16, 32, 48, 64, 80, 96, 112, -16,
};

int tinyaot_harness_run(const int8_t *input, int8_t *output)
{
#ifdef TINYAOT_SELFTEST_FAULT
    if (input == &tinyaot_harness_inputs[SIZE])
        __asm__ volatile("udf #0");
#endif
    for (int j = 0; j < SIZE; j++)
        output[j] = (int8_t)(input[j] ^ 0x55);
    tinyaot_timer_spin(TINYAOT_SELFTEST_SPIN);
    return input[0] == -128 ? -1 : 0;
}
