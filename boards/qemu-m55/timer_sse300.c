/* tinyaot timer API (boards/common/timer.h) for the SSE-300 on QEMU
 * mps3-an547. The SSE-300 has no CMSDK dual timer (boards/common/timer.c),
 * so this reads the low 32 bits of CNTPCT of system timer 0 (an Armv8-M
 * "system timer" frame), which counts up with the SSE-300 system counter.
 * The system counter (CNTCONTROL frame) is disabled at reset and is enabled
 * here, without scaling, so it advances 1 per tick of its input clock.
 * Elapsed ticks are (now - start) mod 2^32.
 *
 * The board passes the frame bases as TINYAOT_SYSTIMER_BASE and
 * TINYAOT_SYSCOUNTER_CTRL_BASE (board.toml). */
#include "timer.h"

#if !defined(TINYAOT_SYSTIMER_BASE) || !defined(TINYAOT_SYSCOUNTER_CTRL_BASE)
#error "define TINYAOT_SYSTIMER_BASE and TINYAOT_SYSCOUNTER_CTRL_BASE (see board.toml)"
#endif

#define REG(base, off) (*(volatile uint32_t *)((uintptr_t)(base) + (off)))
#define CNTCR       REG(TINYAOT_SYSCOUNTER_CTRL_BASE, 0x00)   /* bit 0 EN, bit 2 SCEN */
#define CNTPCT_LO   REG(TINYAOT_SYSTIMER_BASE, 0x00)

#define CNTCR_EN (1u << 0)

static uint32_t timer_origin;

void tinyaot_timer_start(void)
{
    CNTCR = CNTCR_EN;                        /* enabled, scaling off */
    timer_origin = CNTPCT_LO;
}

uint32_t tinyaot_timer_read(void)
{
    return CNTPCT_LO - timer_origin;         /* up counter */
}

void tinyaot_timer_spin(uint32_t iterations)
{
    /* Same 6-instruction loop as boards/common/timer.c. */
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
    /* Wait for the next tick edge (see boards/common/timer.c). */
    const uint32_t v = CNTPCT_LO;
    while (CNTPCT_LO == v) {
    }
    return CNTPCT_LO - timer_origin;
}
