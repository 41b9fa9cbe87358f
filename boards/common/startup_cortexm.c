/* Minimal Cortex-M startup shared by the Cortex-M boards.
 *
 * Vector table with the 16 architectural entries, a Reset_Handler that
 * prepares RAM and the FPU and runs main(), and fault handlers that report
 * over semihosting. The linker script provides the section symbols below
 * and places .isr_vector at the boot address (VTOR reset value).
 */
#include <stdint.h>
#include <string.h>

#include "semihost.h"

extern uint32_t __StackTop;                 /* initial SP: top of RAM */
extern uint32_t __data_load__, __data_start__, __data_end__;
extern uint32_t __bss_start__, __bss_end__;

int main(void);

void Reset_Handler(void) __attribute__((noreturn));
void HardFault_Handler(void);
void Default_Handler(void);
void tinyaot_hardfault_report(const uint32_t *frame);

/* Everything except Reset and HardFault is weak so that a board or a
 * driver can install its own (e.g. a SysTick based timer defines
 * SysTick_Handler). MemManage/BusFault/UsageFault are disabled after reset
 * and escalate to HardFault anyway; aliasing them keeps the report uniform
 * if someone enables them. */
#define WEAK_ALIAS(f, target) void f(void) __attribute__((weak, alias(#target)))
WEAK_ALIAS(NMI_Handler, Default_Handler);
WEAK_ALIAS(MemManage_Handler, HardFault_Handler);
WEAK_ALIAS(BusFault_Handler, HardFault_Handler);
WEAK_ALIAS(UsageFault_Handler, HardFault_Handler);
WEAK_ALIAS(SVC_Handler, Default_Handler);
WEAK_ALIAS(DebugMon_Handler, Default_Handler);
WEAK_ALIAS(PendSV_Handler, Default_Handler);
WEAK_ALIAS(SysTick_Handler, Default_Handler);

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used))
const vector_t tinyaot_vectors[16] = {
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
};

void Reset_Handler(void)
{
#if defined(__ARM_FP)
    /* Grant full access to CP10/CP11 before any code that might touch the
     * FPU (with -mfloat-abi=hard the compiler may use s-registers anywhere,
     * hence first). */
    volatile uint32_t *cpacr = (volatile uint32_t *)0xE000ED88u;
    *cpacr |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
#endif
    /* .data has its load image in flash; .bss must start zeroed. */
    memcpy(&__data_start__, &__data_load__,
           (size_t)((uintptr_t)&__data_end__ - (uintptr_t)&__data_start__));
    memset(&__bss_start__, 0,
           (size_t)((uintptr_t)&__bss_end__ - (uintptr_t)&__bss_start__));

    tinyaot_sh_exit(main());
}

/* Naked so that the exception frame is found before any compiler prologue
 * moves the stack: pass the active stack pointer to the reporter. */
__attribute__((naked)) void HardFault_Handler(void)
{
#if defined(__thumb2__)
    __asm__ volatile(
        "tst lr, #4\n\t"
        "ite eq\n\t"
        "mrseq r0, msp\n\t"
        "mrsne r0, psp\n\t"
        "b tinyaot_hardfault_report\n\t");
#else
    /* Armv6-M (Cortex-M0/M0+): no IT, no TST with an immediate, and B reaches
     * only +-2 KiB, so the reporter is called through a register. */
    __asm__ volatile(
        "movs r0, #4\n\t"
        "mov r1, lr\n\t"
        "tst r0, r1\n\t"
        "mrs r0, msp\n\t"
        "beq 1f\n\t"
        "mrs r0, psp\n"
        "1:\n\t"
        "ldr r1, =tinyaot_hardfault_report\n\t"
        "bx r1\n\t"
        ".ltorg\n\t");
#endif
}

/* Frame: r0 r1 r2 r3 r12 lr pc xpsr. The line starts with "HARDFAULT",
 * which is what the host-side runner looks for. */
__attribute__((used, noreturn)) void tinyaot_hardfault_report(const uint32_t *frame)
{
    tinyaot_sh_flush();                      /* finish any partial line */
    tinyaot_sh_puts("HARDFAULT pc=");
    tinyaot_sh_put_x32(frame[6]);
#if defined(__thumb2__)
    tinyaot_sh_puts(" cfsr=");
    tinyaot_sh_put_x32(*(volatile uint32_t *)0xE000ED28u);
    tinyaot_sh_puts(" hfsr=");
    tinyaot_sh_put_x32(*(volatile uint32_t *)0xE000ED2Cu);
#else
    /* Armv6-M has no fault status registers (CFSR, HFSR): an unaligned
     * access, an undefined instruction and a bus error all land here. */
    tinyaot_sh_puts(" (armv6-m: no fault status registers)");
#endif
    tinyaot_sh_putc('\n');
    tinyaot_sh_exit(3);
}

/* Any exception or interrupt nobody installed a handler for. */
void Default_Handler(void)
{
    tinyaot_sh_flush();
    tinyaot_sh_write("UNHANDLED EXCEPTION\n");
    tinyaot_sh_exit(4);
}
