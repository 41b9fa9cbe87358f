/* Debug hooks for a host build (tinyaot validate): TINYAOT_TRACE calls a
 * function pointer that the Python side sets through cffi. Included by the
 * generated model C only (one translation unit), so it may define things. */
#ifndef TINYAOT_HOOKS_HOST_H
#define TINYAOT_HOOKS_HOST_H

#include <stdint.h>

typedef void (*tinyaot_trace_fn_t)(int32_t layer, const void *ptr, uint32_t bytes);
static tinyaot_trace_fn_t tinyaot_trace_fn;

void tinyaot_set_trace(tinyaot_trace_fn_t fn);
void tinyaot_set_trace(tinyaot_trace_fn_t fn) { tinyaot_trace_fn = fn; }

#define TINYAOT_TRACE(layer, ptr, bytes)                      \
    do {                                                      \
        if (tinyaot_trace_fn) tinyaot_trace_fn((layer), (ptr), (bytes)); \
    } while (0)

#endif
