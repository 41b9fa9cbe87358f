/* tinyaot timer API (boards/common/timer.h) on the nRF51 TIMER peripheral
 * (QEMU microbit, nRF51822; nRF51 Series Reference Manual, "Timer/counter").
 *
 * TIMER0 in timer mode, 32-bit, PRESCALER 1: it counts the 16 MHz HFCLK
 * divided by 2^1 = 8 MHz, so under -icount shift=0 one tick is exactly 125
 * instructions (16 MHz would be 62.5). The counter itself is not readable:
 * TASKS_CAPTURE[0] copies it into CC[0]. Elapsed ticks are (now - start)
 * mod 2^32. No interrupt is enabled.
 *
 * The board passes the peripheral base as TINYAOT_NRF51_TIMER_BASE. */
#include "timer.h"

#ifndef TINYAOT_NRF51_TIMER_BASE
#error "define TINYAOT_NRF51_TIMER_BASE (nRF51 TIMER base, see board.toml)"
#endif

#define REG(off) (*(volatile uint32_t *)((uintptr_t)(TINYAOT_NRF51_TIMER_BASE) + (off)))
#define TASKS_START    REG(0x000)
#define TASKS_STOP     REG(0x004)
#define TASKS_CLEAR    REG(0x00C)
#define TASKS_CAPTURE0 REG(0x040)
#define MODE           REG(0x504)
#define BITMODE        REG(0x508)
#define PRESCALER      REG(0x510)
#define CC0            REG(0x540)

#define MODE_TIMER      0u
#define BITMODE_32BIT   3u

static uint32_t timer_origin;

static uint32_t now(void)
{
    TASKS_CAPTURE0 = 1;
    return CC0;
}

void tinyaot_timer_start(void)
{
    TASKS_STOP = 1;                          /* PRESCALER, BITMODE: only while stopped */
    MODE = MODE_TIMER;
    BITMODE = BITMODE_32BIT;
    PRESCALER = 1;
    TASKS_CLEAR = 1;
    TASKS_START = 1;
    timer_origin = now();
}

uint32_t tinyaot_timer_read(void)
{
    return now() - timer_origin;
}

void tinyaot_timer_spin(uint32_t iterations)
{
    /* The 6-instruction loop of boards/common/timer.c in Armv6-M Thumb (no
     * CBZ): the CMP and BEQ before it are part of the constant overhead.
     * GCC reads Thumb-1 inline asm in divided syntax: "sub %0, #1" is the
     * 16-bit SUBS. */
    __asm__ volatile(
        "    cmp  %0, #0\n"
        "    beq  2f\n"
        "1:  nop\n"
        "    nop\n"
        "    nop\n"
        "    nop\n"
        "    sub  %0, #1\n"
        "    bne  1b\n"
        "2:\n"
        : "+l"(iterations)
        :
        : "cc");
}

uint32_t tinyaot_timer_sync(void)
{
    /* Wait for the next tick edge, so a measurement starts at the same phase
     * of the 125-instruction tick (see boards/common/timer.c). */
    const uint32_t v = now();
    while (now() == v) {
    }
    return now() - timer_origin;
}
