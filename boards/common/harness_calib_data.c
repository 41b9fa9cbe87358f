/* Timer calibration "model": each input is a little-endian uint32
 * iteration count for tinyaot_timer_spin() (6 instructions/iteration);
 * the output echoes it. The measured ticks times the board's
 * instructions_per_tick should equal 6 * count (+ a few instructions of
 * call overhead). Counts can be replaced with -DTINYAOT_CALIB_COUNTS=a,b,..
 */
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "timer.h"

#ifndef TINYAOT_CALIB_COUNTS
#define TINYAOT_CALIB_COUNTS 0, 1000000, 1000000, 100000
#endif

static const uint32_t counts[] = {TINYAOT_CALIB_COUNTS};

#define N_IN (sizeof(counts) / sizeof(counts[0]))

const uint32_t tinyaot_harness_num_inputs = N_IN;
const uint32_t tinyaot_harness_input_size = 4;
const uint32_t tinyaot_harness_output_size = 4;
/* Arm is little-endian, so the count array is its own byte image. The
 * alias (int8_t may alias anything) avoids a second copy of the table. */
extern const int8_t tinyaot_harness_inputs[4 * N_IN] __attribute__((alias("counts")));

int tinyaot_harness_run(const int8_t *input, int8_t *output)
{
    uint32_t n;
    memcpy(&n, input, sizeof(n));
    tinyaot_timer_spin(n);
    memcpy(output, &n, sizeof(n));
    return 0;
}
