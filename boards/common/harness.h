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
/* Optional (weak): defined by harness_data.c when the model keeps its input
 * and output in the arena (--io-buffers arena, the default). load copies an
 * input into <name>_input() and store copies <name>_output() out; the mains
 * call them outside the timed region, so the count is the inference alone
 * (then tinyaot_harness_run ignores its arguments and calls <name>_invoke). */
void tinyaot_harness_load(const int8_t *input) __attribute__((weak));
void tinyaot_harness_store(int8_t *output) __attribute__((weak));
/* The output buffer, tinyaot_harness_output_capacity bytes, 8-byte aligned.
 * The harness_data.c tinyaot writes defines both at the model's output size,
 * so an output of any size that fits the board's RAM is verified. Each main
 * also defines them, weak, at TINYAOT_HARNESS_MAX_OUTPUT bytes (4096 unless
 * defined), for harness data without them (the board self-tests); beside the
 * model's definition the weak buffer is unreferenced and --gc-sections drops
 * it, so a model's firmware carries one output buffer, of its own size. */
extern int8_t tinyaot_harness_output[];
extern const uint32_t tinyaot_harness_output_capacity;
/* Optional (weak): defined by harness_data.c when the model was compiled with
 * --integrity; calls <name>_verify(). Non-zero: the weights are corrupt. */
int tinyaot_harness_verify(void) __attribute__((weak));

#endif
