/* Interface between the model-independent verification firmware
 * (harness_main.c) and the per-model harness_data.c that the compiler
 * generates next to the model (or harness_selftest_data.c for the board
 * self-test). */
#ifndef TINYAOT_HARNESS_H
#define TINYAOT_HARNESS_H

#include <stdint.h>

extern const uint32_t tinyaot_harness_num_inputs;
extern const uint32_t tinyaot_harness_input_size;   /* bytes per input */
extern const uint32_t tinyaot_harness_output_size;  /* bytes per output */
extern const int8_t tinyaot_harness_inputs[];        /* num_inputs * input_size */
int tinyaot_harness_run(const int8_t *input, int8_t *output); /* calls <name>_run */
/* Optional (weak): defined by harness_data.c when the model was compiled with
 * --integrity; calls <name>_verify(). Non-zero: the weights are corrupt. */
int tinyaot_harness_verify(void) __attribute__((weak));

#endif
