/* Debug hooks for a firmware build (tinyaot validate / profile on QEMU).
 * TINYAOT_TRACE prints "TRACE <layer> <hex bytes>" over semihosting;
 * TINYAOT_PROFILE stores the timer after each layer for the profiling main
 * (codegen/driver/c/profile_main.c), which prints them after the run. */
#ifndef TINYAOT_HOOKS_FW_H
#define TINYAOT_HOOKS_FW_H

#include <stddef.h>
#include <stdint.h>

#include "semihost.h"
#include "timer.h"

#ifdef TINYAOT_WANT_TRACE
#define TINYAOT_TRACE(layer, ptr, bytes)              \
    do {                                              \
        tinyaot_sh_puts("TRACE ");                    \
        tinyaot_sh_put_u32((uint32_t)(layer));        \
        tinyaot_sh_putc(' ');                         \
        tinyaot_sh_put_hex((ptr), (size_t)(bytes));   \
        tinyaot_sh_putc('\n');                        \
    } while (0)
#endif

#ifdef TINYAOT_WANT_PROFILE
#ifndef TINYAOT_PROFILE_MAX_LAYERS
#define TINYAOT_PROFILE_MAX_LAYERS 1024
#endif
extern uint32_t tinyaot_profile_stamps[TINYAOT_PROFILE_MAX_LAYERS];
#define TINYAOT_PROFILE(layer)                                        \
    do {                                                              \
        if ((uint32_t)(layer) < TINYAOT_PROFILE_MAX_LAYERS)           \
            tinyaot_profile_stamps[(layer)] = tinyaot_timer_read();   \
    } while (0)
#endif

#endif
