/* ARM semihosting (see "Semihosting for AArch32 and AArch64", ARM IHI 0016).
 * On M-profile the trap is BKPT 0xAB with r0 = operation, r1 = argument. */
#include "semihost.h"

#define SYS_WRITE0        0x04u
#define SYS_EXIT          0x18u
#define SYS_EXIT_EXTENDED 0x20u
#define ADP_Stopped_ApplicationExit 0x20026u

static uint32_t sh_call(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    /* "memory": the host reads (SYS_WRITE0) the buffer r1 points to. */
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void tinyaot_sh_write(const char *s)
{
    sh_call(SYS_WRITE0, s);
}

/* One byte is kept for the terminating NUL required by SYS_WRITE0. */
static char sh_buf[128];
static size_t sh_len;

void tinyaot_sh_flush(void)
{
    if (sh_len == 0)
        return;
    sh_buf[sh_len] = '\0';
    sh_call(SYS_WRITE0, sh_buf);
    sh_len = 0;
}

void tinyaot_sh_putc(char c)
{
    sh_buf[sh_len++] = c;
    if (c == '\n' || sh_len == sizeof(sh_buf) - 1)
        tinyaot_sh_flush();
}

void tinyaot_sh_puts(const char *s)
{
    while (*s)
        tinyaot_sh_putc(*s++);
}

void tinyaot_sh_put_u32(uint32_t v)
{
    char tmp[10];               /* 4294967295 has 10 digits */
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v);
    while (n)
        tinyaot_sh_putc(tmp[--n]);
}

void tinyaot_sh_put_i32(int32_t v)
{
    if (v < 0) {
        tinyaot_sh_putc('-');
        /* Negate in unsigned arithmetic so INT32_MIN does not overflow. */
        tinyaot_sh_put_u32(0u - (uint32_t)v);
    } else {
        tinyaot_sh_put_u32((uint32_t)v);
    }
}

static const char digits[] = "0123456789abcdef";

void tinyaot_sh_put_x32(uint32_t v)
{
    for (int shift = 28; shift >= 0; shift -= 4)
        tinyaot_sh_putc(digits[(v >> shift) & 0xfu]);
}

void tinyaot_sh_put_hex(const void *p, size_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    for (size_t i = 0; i < n; i++) {
        tinyaot_sh_putc(digits[b[i] >> 4]);
        tinyaot_sh_putc(digits[b[i] & 0xfu]);
    }
}

void tinyaot_sh_exit(int code)
{
    /* Parameter block for SYS_EXIT_EXTENDED: {reason, exit status}. The
     * plain AArch32 SYS_EXIT only passes a reason, which QEMU maps to
     * status 0 or 1, so it cannot carry an arbitrary code. */
    uint32_t block[2] = {ADP_Stopped_ApplicationExit, (uint32_t)code};
    tinyaot_sh_flush();
    sh_call(SYS_EXIT_EXTENDED, block);
    /* Fallback if the host lacks the extension: plain exit, status 0/1. */
    sh_call(SYS_EXIT, (const void *)(uintptr_t)(code == 0 ? ADP_Stopped_ApplicationExit
                                                         : 0x20023u /* RunTimeErrorUnknown */));
    for (;;)
        ;
}
