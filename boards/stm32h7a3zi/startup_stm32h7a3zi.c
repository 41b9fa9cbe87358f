/* Startup for the STM32H7A3ZI (Cortex-M7 with FPv5 double precision).
 *
 * The vector table (the 16 core exceptions and the part's 155 device
 * interrupts) and Reset_Handler, which enables the FPU, calls SystemInit(), copies
 * .data, zeroes .bss and calls main(). Nothing else: no console, no clock
 * set-up.
 *
 * Device interrupt n calls IRQ<n>_Handler, weak and bound to Default_Handler
 * until the application defines it; n is the IRQn of the part's CMSIS device
 * header (RM0455 "Nested vectored interrupt controller (NVIC)": positions 0 to 154;
 * CMSIS stm32h7a3xx.h: WWDG_IRQn = 0 ... BDMA1_IRQn = 154).
 * A vendor name for one:
 *     void IRQ<n>_Handler(void) __attribute__((alias("<vendor>_IRQHandler")));
 *
 * SystemInit (or STM32Cube's) should enable the L1 caches (CMSIS SCB_EnableICache,
 * SCB_EnableDCache) and set the clocks: the cycle model's stm32h7a3 part assumes
 * 280 MHz with both caches on.
 *
 * tinyaot links it with linker.ld beside it to measure a model on this part
 * (`tinyaot report --board stm32h7a3zi`); `tinyaot export --board stm32h7a3zi` copies
 * both. C99 with GCC attributes. */
#include <stdint.h>
#include <string.h>

extern uint32_t __StackTop;                 /* linker.ld: the initial SP */
extern uint32_t __data_load__, __data_start__, __data_end__;
extern uint32_t __bss_start__, __bss_end__;

int main(void);

void Reset_Handler(void) __attribute__((noreturn));
void Default_Handler(void);

/* The vendor's clocks, caches and errata: runs before .data and .bss exist. */
void SystemInit(void) __attribute__((weak));
void SystemInit(void)
{
}

#define WEAK(f) void f(void) __attribute__((weak, alias("Default_Handler")))
WEAK(NMI_Handler);
WEAK(HardFault_Handler);
WEAK(MemManage_Handler);
WEAK(BusFault_Handler);
WEAK(UsageFault_Handler);
WEAK(SVC_Handler);
WEAK(DebugMon_Handler);
WEAK(PendSV_Handler);
WEAK(SysTick_Handler);

#define DEVICE_IRQS(X) \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) \
    X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) \
    X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31) X(32) X(33) X(34) X(35) \
    X(36) X(37) X(38) X(39) X(40) X(41) X(42) X(43) X(44) X(45) X(46) X(47) \
    X(48) X(49) X(50) X(51) X(52) X(53) X(54) X(55) X(56) X(57) X(58) X(59) \
    X(60) X(61) X(62) X(63) X(64) X(65) X(66) X(67) X(68) X(69) X(70) X(71) \
    X(72) X(73) X(74) X(75) X(76) X(77) X(78) X(79) X(80) X(81) X(82) X(83) \
    X(84) X(85) X(86) X(87) X(88) X(89) X(90) X(91) X(92) X(93) X(94) X(95) \
    X(96) X(97) X(98) X(99) X(100) X(101) X(102) X(103) X(104) X(105) X(106) X(107) \
    X(108) X(109) X(110) X(111) X(112) X(113) X(114) X(115) X(116) X(117) X(118) X(119) \
    X(120) X(121) X(122) X(123) X(124) X(125) X(126) X(127) X(128) X(129) X(130) X(131) \
    X(132) X(133) X(134) X(135) X(136) X(137) X(138) X(139) X(140) X(141) X(142) X(143) \
    X(144) X(145) X(146) X(147) X(148) X(149) X(150) X(151) X(152) X(153) X(154)
#define DECLARE(n) WEAK(IRQ##n##_Handler);
DEVICE_IRQS(DECLARE)

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used))
const vector_t tinyaot_vectors[16 + 155] = {
    (vector_t)(uintptr_t)&__StackTop,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    0, 0, 0, 0,                              /* reserved */
    SVC_Handler,
    DebugMon_Handler,
    0,                                       /* reserved */
    PendSV_Handler,
    SysTick_Handler,
#define ENTRY(n) IRQ##n##_Handler,
    DEVICE_IRQS(ENTRY)
};

void Reset_Handler(void)
{
    /* CP10/CP11 full access before any floating-point instruction (SystemInit
     * included, if it is hard-float code). */
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    SystemInit();
    memcpy(&__data_start__, &__data_load__,
           (size_t)((uintptr_t)&__data_end__ - (uintptr_t)&__data_start__));
    memset(&__bss_start__, 0,
           (size_t)((uintptr_t)&__bss_end__ - (uintptr_t)&__bss_start__));
    (void)main();
    for (;;) {
    }
}

/* Any exception or interrupt the application installed no handler for. */
void Default_Handler(void)
{
    for (;;) {
    }
}
