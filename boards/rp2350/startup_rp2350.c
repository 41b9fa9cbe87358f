/* Startup for the RP2350 (Cortex-M33 with DSP and FPv5-SP, Arm side).
 *
 * The vector table (the 16 core exceptions and the part's 52 device
 * interrupts) and Reset_Handler, which enables the FPU, calls SystemInit(), copies
 * .data, zeroes .bss and calls main(). Nothing else: no console, no clock
 * set-up.
 *
 * Device interrupt n calls IRQ<n>_Handler, weak and bound to Default_Handler
 * until the application defines it; n is the IRQn of the part's CMSIS device
 * header (RP2350 datasheet, "Interrupts": IRQ 0 to 51, 46 to 51 spare).
 * A vendor name for one:
 *     void IRQ<n>_Handler(void) __attribute__((alias("<vendor>_IRQHandler")));
 *
 * The boot ROM enters this image through its vector table at the start of flash,
 * found through the IMAGE_DEF block below; the clocks stay at the boot ROM's until
 * SystemInit sets them (the Pico SDK's runtime does this and brings its own
 * startup: keep linker.ld's memory map).
 *
 * tinyaot links it with linker.ld beside it to measure a model on this part
 * (`tinyaot report --board rp2350`); `tinyaot export --board rp2350` copies
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
WEAK(SecureFault_Handler);
WEAK(SVC_Handler);
WEAK(DebugMon_Handler);
WEAK(PendSV_Handler);
WEAK(SysTick_Handler);

#define DEVICE_IRQS(X) \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) \
    X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) \
    X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31) X(32) X(33) X(34) X(35) \
    X(36) X(37) X(38) X(39) X(40) X(41) X(42) X(43) X(44) X(45) X(46) X(47) \
    X(48) X(49) X(50) X(51)
#define DECLARE(n) WEAK(IRQ##n##_Handler);
DEVICE_IRQS(DECLARE)

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used))
const vector_t tinyaot_vectors[16 + 52] = {
    (vector_t)(uintptr_t)&__StackTop,
    Reset_Handler,
    NMI_Handler,
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    SecureFault_Handler,
    0, 0, 0,                                 /* reserved */
    SVC_Handler,
    DebugMon_Handler,
    0,                                       /* reserved */
    PendSV_Handler,
    SysTick_Handler,
#define ENTRY(n) IRQ##n##_Handler,
    DEVICE_IRQS(ENTRY)
};

/* The boot ROM looks for a block of image metadata in the first 4 KiB of
 * flash and runs nothing without one. The minimum for Arm code (RP2350
 * datasheet, "Minimum Arm IMAGE_DEF"): an IMAGE_DEF item "executable, Secure,
 * Arm, RP2350" and no entry point, so the boot ROM uses the vector table at
 * the start of the image. linker.ld puts it right after the vector table. */
__attribute__((section(".embedded_block"), used))
const uint32_t tinyaot_image_def[5] = {
    0xFFFFDED3u, /* PICOBIN_BLOCK_MARKER_START */
    0x10210142u, /* IMAGE_TYPE item, 1 word: EXE, Secure, Arm, RP2350 */
    0x000001FFu, /* LAST item: the block's items take 1 word */
    0x00000000u, /* relative link to the next block: 0, this block alone */
    0xAB123579u, /* PICOBIN_BLOCK_MARKER_END */
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
