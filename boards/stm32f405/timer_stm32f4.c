/* tinyaot timer API (boards/common/timer.h) on STM32F4 TIM2 (RM0090,
 * "General-purpose timers (TIM2 to TIM5)"): TIM2 and TIM5 are 32-bit.
 *
 * Free-running up counter, no interrupt: ARR = 0xFFFFFFFF, prescaler PSC,
 * counter enabled (CR1.CEN). The prescaler is loaded at the next update
 * event, so EGR.UG forces one first. Elapsed ticks are (now - start) mod 2^32.
 *
 * QEMU 7.2's STM32F405 clocks its timers at 1 GHz whatever the RCC says
 * (measured: 6 instructions per count with PSC = 5); with PSC = 124 the
 * counter runs at 8 MHz, one tick every 125 instructions under -icount
 * shift=0 (tests/firmware/test_qemu_boards.py calibrates it). On silicon TIM2 runs
 * from APB1's timer clock (84 MHz at 168 MHz HCLK), so this PSC gives
 * 672 kHz there: the tick rate is a property of the QEMU board.
 *
 * The board passes TINYAOT_STM32_TIM_BASE and TINYAOT_STM32_TIM_PSC. */
#include "timer.h"

#if !defined(TINYAOT_STM32_TIM_BASE) || !defined(TINYAOT_STM32_TIM_PSC)
#error "define TINYAOT_STM32_TIM_BASE and TINYAOT_STM32_TIM_PSC (see board.toml)"
#endif

#define REG(off) (*(volatile uint32_t *)((uintptr_t)(TINYAOT_STM32_TIM_BASE) + (off)))
#define TIM_CR1 REG(0x00)
#define TIM_EGR REG(0x14)
#define TIM_CNT REG(0x24)
#define TIM_PSC REG(0x28)
#define TIM_ARR REG(0x2C)

#define CR1_CEN (1u << 0)
#define EGR_UG  (1u << 0)

static uint32_t timer_origin;

void tinyaot_timer_start(void)
{
    TIM_CR1 = 0;
    TIM_PSC = TINYAOT_STM32_TIM_PSC;
    TIM_ARR = 0xFFFFFFFFu;
    TIM_EGR = EGR_UG;                        /* load PSC and ARR now */
    TIM_CNT = 0;
    TIM_CR1 = CR1_CEN;
    timer_origin = TIM_CNT;
}

uint32_t tinyaot_timer_read(void)
{
    return TIM_CNT - timer_origin;           /* up counter */
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
    const uint32_t v = TIM_CNT;
    while (TIM_CNT == v) {
    }
    return TIM_CNT - timer_origin;
}
