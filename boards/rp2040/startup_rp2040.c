/* Startup for the RP2040 (Cortex-M0+).
 *
 * The vector table (the 16 core exceptions and the part's 32 device
 * interrupts) and Reset_Handler, which calls SystemInit(), copies
 * .data, zeroes .bss and calls main(). Nothing else: no console, no clock
 * set-up.
 *
 * Device interrupt n calls IRQ<n>_Handler, weak and bound to Default_Handler
 * until the application defines it; n is the IRQn of the part's CMSIS device
 * header (RP2040 datasheet, "Interrupts": IRQ 0 to 25 used, the NVIC has 32).
 * A vendor name for one:
 *     void IRQ<n>_Handler(void) __attribute__((alias("<vendor>_IRQHandler")));
 *
 * The boot ROM does not enter this table directly: it copies the 256-byte
 * second-stage boot loader (boot2) from the start of flash to SRAM, checks its
 * CRC, and boot2 sets up XIP and jumps here through the table at 0x10000100.
 * boot2 depends on the flash chip and is not part of tinyaot: link the Pico
 * SDK's boot_stage2 (or any 256-byte boot2 with its CRC) into the .boot2
 * section that linker.ld reserves.
 *
 * tinyaot links it with linker.ld beside it to measure a model on this part
 * (`tinyaot report --board rp2040`); `tinyaot export --board rp2040` copies
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
WEAK(SVC_Handler);
WEAK(PendSV_Handler);
WEAK(SysTick_Handler);

#define DEVICE_IRQS(X) \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) \
    X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) \
    X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31)
#define DECLARE(n) WEAK(IRQ##n##_Handler);
DEVICE_IRQS(DECLARE)

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used))
const vector_t tinyaot_vectors[16 + 32] = {
    (vector_t)(uintptr_t)&__StackTop,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    0, 0, 0, 0, 0, 0, 0,                     /* reserved */
    SVC_Handler,
    0,                                       /* reserved */
    0,                                       /* reserved */
    PendSV_Handler,
    SysTick_Handler,
#define ENTRY(n) IRQ##n##_Handler,
    DEVICE_IRQS(ENTRY)
};

void Reset_Handler(void)
{
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
