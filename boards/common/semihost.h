/* ARM semihosting console and exit, without stdio.
 *
 * Only usable when the debugger/emulator enables semihosting (QEMU:
 * -semihosting-config enable=on,target=native); otherwise the BKPT 0xAB
 * escalates to HardFault.
 */
#ifndef TINYAOT_SEMIHOST_H
#define TINYAOT_SEMIHOST_H

#include <stddef.h>
#include <stdint.h>

/* Write a NUL-terminated string (SYS_WRITE0). Unbuffered. */
void tinyaot_sh_write(const char *s);

/* Buffered output: characters collect in a small buffer that is written
 * with one SYS_WRITE0 on '\n', when full, or on tinyaot_sh_flush(). */
void tinyaot_sh_putc(char c);
void tinyaot_sh_puts(const char *s);
void tinyaot_sh_put_u32(uint32_t v);          /* unsigned decimal */
void tinyaot_sh_put_i32(int32_t v);           /* signed decimal */
void tinyaot_sh_put_hex(const void *p, size_t n); /* 2 lowercase hex digits per byte */
void tinyaot_sh_put_x32(uint32_t v);          /* 8 lowercase hex digits */
void tinyaot_sh_flush(void);

/* Flush, then terminate the program with SYS_EXIT_EXTENDED so that the
 * host-side exit status equals `code` (QEMU exits with code & 0xff as seen
 * by the shell). Never returns. */
void tinyaot_sh_exit(int code) __attribute__((noreturn));

#endif
