/* Elapsed-time counter for benchmarking, in board timer ticks.
 *
 * Convert ticks with the board's `instructions_per_tick` (board.toml):
 * under QEMU -icount shift=0 one tick of the 25 MHz mps2 timer clock is
 * 40 guest instructions.
 */
#ifndef TINYAOT_TIMER_H
#define TINYAOT_TIMER_H

#include <stdint.h>

/* (Re)start the counter; tinyaot_timer_read() then counts from 0. */
void tinyaot_timer_start(void);

/* Ticks since tinyaot_timer_start(), modulo 2^32. The difference of two
 * reads is exact as long as less than 2^32 ticks (171 s at 25 MHz) pass
 * between them. */
uint32_t tinyaot_timer_read(void);

/* Spin until the counter next changes, then return the elapsed ticks. */
uint32_t tinyaot_timer_sync(void);

/* Calibration aid: a busy loop of exactly 6 instructions per iteration
 * (plus a constant few for call and return), independent of compiler
 * flags. 1,000,000 iterations = 6,000,000 instructions. */
void tinyaot_timer_spin(uint32_t iterations);

#endif
