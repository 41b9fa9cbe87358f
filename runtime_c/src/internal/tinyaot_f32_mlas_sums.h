/* MLAS's float sums shared by the speed float conv / FC kernels (float
 * weights) and the --optimize size ones (int8 weights dequantized as they are
 * read): the M=1 sum, with the weight read passed in (mlas_weight_f32 or
 * mlas_weight_w8), and the M=1 transpose-B reduction of 8 lanes. Internal to
 * runtime_c; built with -ffp-contract=off (a product is rounded before it is
 * added, as in MLAS). */
#ifndef TINYAOT_F32_MLAS_SUMS_H
#define TINYAOT_F32_MLAS_SUMS_H

#include <stdint.h>

/* Inlined before GCC's early passes, so the passed-in weight read is a plain
 * load there and a speed kernel compiles byte for byte as with its own copy. */
#if defined(__GNUC__)
#define MLAS_INLINE __attribute__((always_inline)) static inline
#define MLAS_MAYBE_UNUSED __attribute__((unused))
#else
#define MLAS_INLINE static inline
#define MLAS_MAYBE_UNUSED
#endif

/* Weight k of w, as a float; scale: the int8 weights' DequantizeLinear scale. */
typedef float (*mlas_weight_fn)(const void *w, int32_t k, float scale);

MLAS_INLINE float mlas_weight_f32(const void *w, int32_t k, float scale)
{
    (void)scale;
    return ((const float *)w)[k];
}

/* DequantizeLinear of an int8 weight, float(q) * scale: one exact conversion
 * and one rounded multiply, the same float32 the speed kernels store. */
MLAS_INLINE float mlas_weight_w8(const void *w, int32_t k, float scale)
{
    return (float)((const int8_t *)w)[k] * scale;
}

/* MLAS's M=1 kernel over k0 .. k1: groups of 4, then 2, then 1 rounded
 * products, each group's sum added to c. */
MLAS_INLINE float mlas_m1_sum(const float *x, const void *w, float ws, int32_t k0, int32_t k1,
                              float c, mlas_weight_fn wt)
{
    int32_t k = k0;
    for (; k1 - k >= 4; k += 4) {
        c = (((x[k] * wt(w, k, ws) + x[k + 1] * wt(w, k + 1, ws)) + x[k + 2] * wt(w, k + 2, ws)) +
             x[k + 3] * wt(w, k + 3, ws)) +
            c;
    }
    if (k1 - k >= 2) {
        c = (x[k] * wt(w, k, ws) + x[k + 1] * wt(w, k + 1, ws)) + c;
        k += 2;
    }
    if (k1 > k) {
        c = x[k] * wt(w, k, ws) + c;
    }
    return c;
}

/* The 8 lanes reduced as MLAS's M=1 transpose-B kernel does for row `pos` of
 * `count`: the tree depends on whether it falls in a block of 4, the pair or
 * the single remainder (numerics/mlas_fc_order.py reduce_lanes). A plain
 * static function, as the speed FC kernel had it (called from two places,
 * GCC keeps it out of line); unused where a kernel does not call it. */
MLAS_MAYBE_UNUSED static float mlas_m1tb_reduce8(const float *l, int32_t pos, int32_t count)
{
    if (pos < count - (count & 3)) {
        return (((l[0] + l[1]) + l[2]) + l[3]) + (((l[4] + l[5]) + l[6]) + l[7]);
    }
    if ((count & 2) && pos < count - (count & 1)) {
        return ((l[0] + l[2]) + (l[4] + l[6])) + ((l[1] + l[3]) + (l[5] + l[7]));
    }
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

#endif
