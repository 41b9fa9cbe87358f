/* tinyaot timer API (boards/common/timer.h) for the SSE-300 on QEMU
 * mps3-an547. The SSE-300 has no CMSDK dual timer (boards/common/timer.c),
 * so this reads the low 32 bits of CNTPCT of system timer 0 (an Armv8-M
 * "system timer" frame), which counts up with the SSE-300 system counter.
 * The system counter (CNTCONTROL frame) is disabled at reset. Its input
 * clock on AN547 is SYSCLK = 32 MHz, i.e. 31.25 instructions per count under
 * -icount shift=0 -- not an integer. So it is enabled here with scaling:
 * CNTSCR = 0.25 (8.24 fixed point, exact) makes it count at 8 MHz, one step
 * every 4 input clocks = exactly 125 instructions per tick. (A scale > 1 or
 * not 1/k steps unevenly, so tinyaot_timer_sync() would not always land on
 * the same phase: measured +-1 tick jitter with 1.25.)
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
#define CNTSCR      REG(TINYAOT_SYSCOUNTER_CTRL_BASE, 0x10)   /* scale, 8.24 fixed point */
#define CNTPCT_LO   REG(TINYAOT_SYSTIMER_BASE, 0x00)

#define CNTCR_EN   (1u << 0)
#define CNTCR_SCEN (1u << 2)
#define SCALE_1_4  0x00400000u                                  /* 0.25 * 2^24 */

static uint32_t timer_origin;

void tinyaot_timer_start(void)
{
    CNTCR = 0;                               /* CNTSCR may only change while disabled */
    CNTSCR = SCALE_1_4;
    CNTCR = CNTCR_EN | CNTCR_SCEN;
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
