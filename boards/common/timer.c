/* Timer 1 of the ARM CMSDK APB dual timer (SP804-like), present on the
 * QEMU mps2 boards (at 0x40002000 on AN385/386/500). Used as a free-running
 * 32-bit down counter at the peripheral clock with no prescaler and no
 * interrupt, so there is no overflow bookkeeping: elapsed ticks are
 * (start - now) mod 2^32.
 * (SysTick would need an interrupt-driven overflow count: it is 24-bit.)
 *
 * The board passes the peripheral base as TINYAOT_DUALTIMER_BASE. */
#include "timer.h"

#ifndef TINYAOT_DUALTIMER_BASE
#error "define TINYAOT_DUALTIMER_BASE (CMSDK dual timer base, see board.toml)"
#endif

#define REG(off) (*(volatile uint32_t *)((uintptr_t)(TINYAOT_DUALTIMER_BASE) + (off)))
#define TIMER1_LOAD    REG(0x00)
#define TIMER1_VALUE   REG(0x04)
#define TIMER1_CONTROL REG(0x08)
#define TIMER1_INTCLR  REG(0x0C)

/* Control bits. Mode bit 6 = 0 selects free-running (wraps to 0xFFFFFFFF);
 * IntEnable (bit 5) resets to 1 and is cleared here. */
#define CTRL_SIZE_32  (1u << 1)
#define CTRL_ENABLE   (1u << 7)

static uint32_t timer_origin;

void tinyaot_timer_start(void)
{
    TIMER1_CONTROL = 0;
    TIMER1_INTCLR = 1;
    TIMER1_LOAD = 0xFFFFFFFFu;
    TIMER1_CONTROL = CTRL_SIZE_32 | CTRL_ENABLE;
    timer_origin = TIMER1_VALUE;
}

uint32_t tinyaot_timer_read(void)
{
    return timer_origin - TIMER1_VALUE;      /* down counter */
}

void tinyaot_timer_spin(uint32_t iterations)
{
    __asm__ volatile(
        "    cbz  %0, 2f\n"
        "1:  nop\n"
        "    nop\n"
        "    nop\n"
        "    nop\n"
        "    subs %0, %0, #1\n"
        "    bne  1b\n"
        "2:\n"
        : "+l"(iterations)
        :
        : "cc");
}

uint32_t tinyaot_timer_sync(void)
{
    /* Wait for the next tick edge, so a measurement always starts at the same
     * phase of the 40-instruction tick: a data-independent workload then reads
     * the same tick count every time. */
    const uint32_t v = TIMER1_VALUE;
    while (TIMER1_VALUE == v) {
    }
    return timer_origin - TIMER1_VALUE;
}
