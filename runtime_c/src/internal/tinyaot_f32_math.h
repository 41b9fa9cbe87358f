/* Float32 building blocks of the float fallback kernels (runtime_c/src/float/), each the
 * same operations, in the same order and with the same roundings, as the reference it
 * reproduces (codegen/numerics/mlas_float.py, tflm_float.py hold the numpy twins):
 *
 *   tinyaot_fmaf          a * b + c rounded once (VFMA on an FPU that has it, else exactly
 *                         in double with a round-to-odd step: no libm, no double rounding)
 *   tinyaot_mlas_exp      MLAS MlasComputeExpF32KernelAvx512F (onnxruntime's Exp)
 *   tinyaot_mlas_expsum   one element of MlasComputeSumExpF32KernelAvx512F (Softmax)
 *   tinyaot_mlas_logistic / _tanh / _erf   MLAS's FMA3 Sigmoid / Tanh / Erf kernels
 *   tinyaot_ort_gelu      onnxruntime's Gelu around them
 *   tinyaot_glibc_logf    glibc's logf (MLAS's LogSoftmax calls std::log)
 *   tinyaot_glibc_expf    glibc's expf (TFLite Micro's float kernels call std::exp)
 *
 * Only IEEE float / double arithmetic, so host, Cortex-M with an FPU and Cortex-M in soft
 * float give the same bits. Built with -ffp-contract=off: nothing fuses but tinyaot_fmaf.
 * Internal to runtime_c. */
#ifndef TINYAOT_F32_MATH_H
#define TINYAOT_F32_MATH_H

#include <stdint.h>

typedef union {
    float f;
    uint32_t u;
} tinyaot_f32_bits;

typedef union {
    double d;
    uint64_t u;
} tinyaot_f64_bits;

static inline uint32_t tinyaot_f32_as_u32(float x)
{
    tinyaot_f32_bits b;
    b.f = x;
    return b.u;
}

static inline float tinyaot_u32_as_f32(uint32_t u)
{
    tinyaot_f32_bits b;
    b.u = u;
    return b.f;
}

/* MAXPS / MINPS a, b: the second operand when either is NaN. */
static inline float tinyaot_x86_max(float a, float b)
{
    return a > b ? a : b;
}

static inline float tinyaot_x86_min(float a, float b)
{
    return a < b ? a : b;
}

static inline float tinyaot_fmaf(float a, float b, float c)
{
#if defined(__ARM_FEATURE_FMA) && defined(__ARM_FP) && (__ARM_FP & 4)
    return __builtin_fmaf(a, b, c); /* VFMA.F32 */
#else
    /* a * b is exact in double; the sum is rounded to nearest, then moved to the odd
     * neighbour when inexact (round to odd), so the conversion rounds as one fma would. */
    const double ab = (double)a * (double)b;
    const double dc = (double)c;
    tinyaot_f64_bits s;
    s.d = ab + dc;
    if ((s.u & 1u) == 0u && (s.u & 0x7ff0000000000000ull) != 0x7ff0000000000000ull) {
        const double bb = s.d - ab;
        const double err = (ab - (s.d - bb)) + (dc - bb);
        if (err != 0.0) {
            /* read before the write: no union member is read and written in one expression */
            const int away = (err > 0.0) == (s.d > 0.0);
            const uint64_t u = s.u;
            s.u = away ? u + 1u : u - 1u;
        }
    }
    return (float)s.d;
#endif
}

/* 2^e for -126 <= e <= 127. */
static inline float tinyaot_pow2f(int32_t e)
{
    return tinyaot_u32_as_f32((uint32_t)(e + 127) << 23);
}

/* VSCALEFPS p, m for integral m: p * 2^m rounded once. Exact for the exp kernels' range
 * (m in [-151, 129], p near 1); m is clamped to [-190, 254] so that a NaN-poisoned Softmax
 * row (where MLAS's max skips a NaN) stays defined behaviour. */
static inline float tinyaot_scalef(float p, float m)
{
    if (m != m) {
        return m;
    }
    const int32_t e = m > 254.0f ? 254 : (m < -190.0f ? -190 : (int32_t)m);
    if (e > 127) {
        return (p * tinyaot_pow2f(127)) * tinyaot_pow2f(e - 127);
    }
    if (e < -126) {
        return (p * tinyaot_pow2f(e + 64)) * tinyaot_pow2f(-64);
    }
    return p * tinyaot_pow2f(e);
}

/* MlasExpConstants (onnxruntime compute.cpp). */
#define TINYAOT_MLAS_EXP_LOWER (-103.9720840454f)
#define TINYAOT_MLAS_EXP_UPPER (88.7762626647950f)

/* The range reduction and polynomial of MLAS's AVX-512F exp on clamped, non-NaN x. */
static inline float tinyaot_mlas_exp_core(float x)
{
    const float bias = 12582912.0f; /* 1.5 * 2^23 */
    const float biased = tinyaot_fmaf(x, 1.44269504088896341f, bias);
    const float m = biased - bias;
    float r = tinyaot_fmaf(m, -6.93145752e-1f, x);
    r = tinyaot_fmaf(m, -1.42860677e-6f, r);
    float p = 0x1.694000p-10f;
    p = tinyaot_fmaf(p, r, 0x1.125edcp-7f);
    p = tinyaot_fmaf(p, r, 0x1.555b5ap-5f);
    p = tinyaot_fmaf(p, r, 0x1.555450p-3f);
    p = tinyaot_fmaf(p, r, 0x1.fffff6p-2f);
    p = tinyaot_fmaf(p, r, 1.0f);
    p = tinyaot_fmaf(p, r, 1.0f);
    return tinyaot_scalef(p, m);
}

/* onnxruntime's Exp: x clamped to [lower, upper] (NaN passes), then the core. */
static inline float tinyaot_mlas_exp(float x)
{
    if (x != x) {
        return x;
    }
    x = tinyaot_x86_min(TINYAOT_MLAS_EXP_UPPER, tinyaot_x86_max(TINYAOT_MLAS_EXP_LOWER, x));
    return tinyaot_mlas_exp_core(x);
}

/* One element of the Softmax sum: exp(x + neg_max), x + neg_max clamped below only. */
static inline float tinyaot_mlas_expsum(float x, float neg_max)
{
    float v = x + neg_max;
    if (v != v) {
        return v;
    }
    v = tinyaot_x86_max(TINYAOT_MLAS_EXP_LOWER, v);
    return tinyaot_mlas_exp_core(v);
}

/* MlasComputeLogisticF32KernelFma3 (onnxruntime's Sigmoid). */
static inline float tinyaot_mlas_logistic(float x)
{
    const float v = tinyaot_x86_min(18.0f, tinyaot_x86_max(-18.0f, x));
    const float x2 = v * v;
    float p = tinyaot_fmaf(x2, 4.37031012579801e-11f, 1.15627324459942e-07f);
    p = tinyaot_fmaf(p, x2, 6.08574864600143e-05f);
    p = tinyaot_fmaf(p, x2, 8.51377133304701e-03f);
    p = tinyaot_fmaf(p, x2, 2.48287947061529e-01f);
    float q = tinyaot_fmaf(x2, 6.10247389755681e-13f, 5.76102136993427e-09f);
    q = tinyaot_fmaf(q, x2, 6.29106785017040e-06f);
    q = tinyaot_fmaf(q, x2, 1.70198817374094e-03f);
    q = tinyaot_fmaf(q, x2, 1.16817656904453e-01f);
    q = tinyaot_fmaf(q, x2, 9.93151921023180e-01f);
    p = v * p;
    return tinyaot_x86_max(0.0f, p / q + 0.5f);
}

/* MlasComputeTanhF32KernelFma3 (onnxruntime's Tanh). */
static inline float tinyaot_mlas_tanh(float x)
{
    const float v = tinyaot_x86_min(9.0f, tinyaot_x86_max(-9.0f, x));
    const float x2 = v * v;
    float p = tinyaot_fmaf(x2, -2.76076847742355e-16f, 2.00018790482477e-13f);
    p = tinyaot_fmaf(p, x2, -8.60467152213735e-11f);
    p = tinyaot_fmaf(p, x2, 5.12229709037114e-08f);
    p = tinyaot_fmaf(p, x2, 1.48572235717979e-05f);
    p = tinyaot_fmaf(p, x2, 6.37261928875436e-04f);
    p = tinyaot_fmaf(p, x2, 4.89352455891786e-03f);
    p = p * v;
    float q = tinyaot_fmaf(x2, 1.19825839466702e-06f, 1.18534705686654e-04f);
    q = tinyaot_fmaf(q, x2, 2.26843463243900e-03f);
    q = tinyaot_fmaf(q, x2, 4.89352518554385e-03f);
    return p / q;
}

/* MlasErfKernelFma3 (onnxruntime's Erf): an odd polynomial below 0.921875, else
 * 1 - exp(-q(|x|)) with its own exp; |x| clamped to 3.925 (a NaN passes), the lanes merged
 * with OR as the vector kernel does, the sign put back. */
static inline float tinyaot_mlas_erf(float x)
{
    const uint32_t sign = tinyaot_f32_as_u32(x) & 0x80000000u;
    const float a = tinyaot_x86_min(3.925f, tinyaot_u32_as_f32(tinyaot_f32_as_u32(x) & 0x7fffffffu));
    const float s = a * a;
    float small = tinyaot_fmaf(-5.99104969e-4f, s, 4.99339588e-3f);
    small = tinyaot_fmaf(small, s, -2.67667342e-2f);
    small = tinyaot_fmaf(small, s, 1.12818025e-1f);
    small = tinyaot_fmaf(small, s, -3.76124859e-1f);
    small = tinyaot_fmaf(small, s, 1.28379151e-1f);
    small = tinyaot_fmaf(small, a, a);
    const int big_lane = 0.921875f <= a;
    const float ab = big_lane ? a : 0.0f;
    float big = tinyaot_fmaf(1.72948930e-5f, ab, -3.83208680e-4f);
    big = tinyaot_fmaf(big, ab, 3.88393435e-3f);
    big = tinyaot_fmaf(big, ab, -2.42545605e-2f);
    big = tinyaot_fmaf(big, ab, 1.06777847e-1f);
    big = tinyaot_fmaf(big, ab, 6.34846687e-1f);
    big = tinyaot_fmaf(big, ab, 1.28717512e-1f);
    big = tinyaot_fmaf(big, ab, ab);
    big = tinyaot_u32_as_f32(tinyaot_f32_as_u32(big) ^ 0x80000000u);
    big = tinyaot_x86_max(big, -88.3762626647949f);
    const float r = tinyaot_fmaf(1.44269504088896341f, big, 1.25829120e+7f) - 1.25829120e+7f;
    float f = tinyaot_fmaf(-6.93145752e-1f, r, big);
    f = tinyaot_fmaf(r, -1.42860677e-6f, f);
    float y = tinyaot_fmaf(1.38319808e-3f, f, 8.37550033e-3f);
    y = tinyaot_fmaf(y, f, 4.16689515e-2f);
    y = tinyaot_fmaf(y, f, 1.66664466e-1f);
    y = tinyaot_fmaf(y, f, 4.99999851e-1f);
    y = tinyaot_fmaf(y, f, 1.0f);
    y = tinyaot_fmaf(y, f, 1.0f);
    y = y * tinyaot_u32_as_f32((uint32_t)((int32_t)r + 127) << 23);
    y = 1.0f - y;
    return tinyaot_u32_as_f32(tinyaot_f32_as_u32(y) | (big_lane ? 0u : tinyaot_f32_as_u32(small)) |
                              sign);
}

/* onnxruntime's Gelu (opset 20): 0.5f * x * (erf(x * float(1 / sqrt 2)) + 1), or with
 * approximate "tanh" 0.5f * x * (tanh(x * (C x x + B)) + 1), one rounding per operation. */
static inline float tinyaot_ort_gelu(float x, int tanh_form)
{
    float e;
    if (tanh_form) {
        e = tinyaot_mlas_tanh(x * ((0.035677408136300125f * x) * x + 0.7978845608028654f));
    } else {
        e = tinyaot_mlas_erf(x * 0.70710678118654752440f);
    }
    return (0.5f * x) * (e + 1.0f);
}

/* glibc's logf (e_logf.c, table e_logf_data.c): x = 2^k z, z in 16 subintervals around
 * 1 with centres c; log(x) = k ln2 + log(c) + log1p(z / c - 1), the last a cubic in double. */
static inline float tinyaot_glibc_logf(float x)
{
    static const double invc[16] = {
        0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010bp+0,
        0x1.3c995b0b80385p+0, 0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0,
        0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0, 0x1.0953f419900a7p+0,
        0x1p+0,               0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
        0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1,
        0x1.767dcf5534862p-1};
    static const double logc[16] = {
        -0x1.57bf7808caadep-2, -0x1.2bef0a7c06ddbp-2, -0x1.01eae7f513a67p-2,
        -0x1.b31d8a68224e9p-3, -0x1.6574f0ac07758p-3, -0x1.1aa2bc79c81p-3,
        -0x1.a4e76ce8c0e5ep-4, -0x1.1973c5a611cccp-4, -0x1.252f438e10c1ep-5,
        0x0p+0,                0x1.aa5aa5df25984p-5,  0x1.c5e53aa362eb4p-4,
        0x1.526e57720db08p-3,  0x1.bc2860d22477p-3,   0x1.1058bc8a07ee1p-2,
        0x1.4043057b6ee09p-2};
    uint32_t ix = tinyaot_f32_as_u32(x);
    if (ix == 0x3f800000u) {
        return 0.0f;
    }
    if (ix - 0x00800000u >= 0x7f800000u - 0x00800000u) {
        if ((ix & 0x7fffffffu) == 0u) {
            return tinyaot_u32_as_f32(0xff800000u); /* -inf */
        }
        if (ix == 0x7f800000u) {
            return x;
        }
        if ((ix & 0x80000000u) || (ix & 0x7fffffffu) > 0x7f800000u) {
            return tinyaot_u32_as_f32(0x7fc00000u); /* NaN */
        }
        ix = tinyaot_f32_as_u32(x * 0x1p23f) - (23u << 23); /* subnormal */
    }
    const uint32_t tmp = ix - 0x3f330000u;
    const int32_t i = (int32_t)((tmp >> 19) & 15u);
    const int32_t k = (int32_t)tmp >> 23;
    const double z = (double)tinyaot_u32_as_f32(ix - (tmp & 0xff800000u));
    const double r = z * invc[i] - 1.0;
    const double y0 = logc[i] + (double)k * 0x1.62e42fefa39efp-1;
    const double r2 = r * r;
    double y = 0x1.5575b0be00b6ap-2 * r + -0x1.ffffef20a4123p-2;
    y = -0x1.00ea348b88334p-2 * r2 + y;
    y = y * r2 + (y0 + r);
    return (float)y;
}

/* glibc's expf (e_expf.c, table e_exp2f_data.c) as x86-64 glibc runs it on an FMA machine:
 * x * 32 / ln2 = k + r, k rounded to nearest by adding 1.5 * 2^52, r = x * 32/ln2 - k rounded
 * once (the FMA build fuses it; here 32/ln2 = hi + lo, both products exact);
 * exp(x) = 2^(k/32) * (cubic in r), in double, rounded once to float. TFLite Micro's float
 * kernels call std::exp. */
static inline float tinyaot_glibc_expf(float x)
{
    static const uint64_t tab[32] = {
        0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
        0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
        0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
        0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
        0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
        0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
        0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
        0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540};
    const uint32_t ix = tinyaot_f32_as_u32(x);
    if (((ix >> 20) & 0x7ffu) >= 0x42bu) { /* |x| >= 88, inf or NaN */
        if (ix == 0xff800000u) {
            return 0.0f;
        }
        if (((ix >> 20) & 0x7ffu) >= 0x7f8u) {
            return x + x;
        }
        if (x > 0x1.62e42ep6f) {
            return tinyaot_u32_as_f32(0x7f800000u); /* overflow: +inf */
        }
        if (x < -0x1.9fe368p6f) {
            return 0.0f; /* underflow */
        }
    }
    const double xd = (double)x;
    tinyaot_f64_bits kb;
    kb.d = 0x1.71547652b82fep+5 * xd + 0x1.8p+52;
    const uint64_t ki = kb.u;
    const double r = (0x1.715476p+5 * xd - (kb.d - 0x1.8p+52)) + 0x1.4ae0bf8p-21 * xd;
    tinyaot_f64_bits sb;
    sb.u = tab[ki % 32u] + (ki << 47);
    const double c0 = 0x1.c6af84b912394p-20; /* the cubic's coefficients over 32^3, 32^2, 32 */
    const double c1 = 0x1.ebfce50fac4f3p-13;
    const double c2 = 0x1.62e42ff0c52d6p-6;
    const double p = c0 * r + c1;
    const double r2 = r * r;
    double y = c2 * r + 1.0;
    y = p * r2 + y;
    y = y * sb.d;
    return (float)y;
}

/* TFLite Micro's float LOGISTIC (reference_ops::Logistic): 1 above 16.619047..., exp(x)
 * below -9, else 1 / (1 + exp(-x)), std::exp being glibc's expf. */
static inline float tinyaot_tflm_logistic(float x)
{
    if (x > 16.619047164916992188f) {
        return 1.0f;
    }
    if (x < -9.0f) {
        return tinyaot_glibc_expf(x);
    }
    return 1.0f / (1.0f + tinyaot_glibc_expf(-x));
}

/* Add k to the exponent field of y (its bits plus k * 2^23, modulo 2^32). */
static inline float tinyaot_f32_add_exponent(float y, int32_t k)
{
    return tinyaot_u32_as_f32(tinyaot_f32_as_u32(y) + ((uint32_t)k << 23));
}

/* expm1f as glibc up to 2.40 computes it (sysdeps/ieee754/flt-32/s_expm1f.c, the fdlibm
 * float port): x = k ln2 + r, |r| <= ln2 / 2, r split into hi - lo with a correction c,
 * a rational approximation of expm1(r), then 2^k (1 + expm1(r)) - 1 rearranged per k so
 * that nothing cancels. Every step is one float operation. */
static inline float tinyaot_glibc_expm1f(float x)
{
    const float ln2_hi = 0x1.62e3p-1f;   /* 0x3f317180 */
    const float ln2_lo = 0x1.2fefa2p-17f; /* 0x3717f7d1 */
    const float invln2 = 0x1.715476p+0f;  /* 0x3fb8aa3b */
    const float q1 = -0x1.111112p-5f, q2 = 0x1.a01a02p-10f, q3 = -0x1.4ce19ap-14f;
    const float q4 = 0x1.0cfca8p-18f, q5 = -0x1.afdb76p-23f;
    const uint32_t bits = tinyaot_f32_as_u32(x);
    const int neg = (int)(bits >> 31);
    const uint32_t ax = bits & 0x7fffffffu;
    if (ax >= 0x4195b844u) { /* |x| >= 27 ln2 */
        if (ax > 0x7f800000u) {
            return x + x; /* NaN */
        }
        if (ax == 0x7f800000u) {
            return neg ? -1.0f : x;
        }
        if (!neg && ax >= 0x42b17218u) {
            return tinyaot_u32_as_f32(0x7f800000u); /* overflow */
        }
        if (neg) {
            return -1.0f;
        }
    }
    int32_t k = 0;
    float c = 0.0f;
    if (ax > 0x3eb17218u) { /* |x| > ln2 / 2: reduce */
        float hi, lo;
        if (ax < 0x3f851592u) { /* |x| < 1.5 ln2 */
            hi = neg ? x + ln2_hi : x - ln2_hi;
            lo = neg ? -ln2_lo : ln2_lo;
            k = neg ? -1 : 1;
        } else {
            k = (int32_t)(invln2 * x + (neg ? -0.5f : 0.5f));
            const float t = (float)k;
            hi = x - t * ln2_hi; /* exact */
            lo = t * ln2_lo;
        }
        x = hi - lo;
        c = (hi - x) - lo;
    } else if (ax < 0x33000000u) { /* |x| < 2^-25 */
        return x;
    }
    const float hfx = 0.5f * x;
    const float hxs = x * hfx;
    const float r1 = 1.0f + hxs * (q1 + hxs * (q2 + hxs * (q3 + hxs * (q4 + hxs * q5))));
    float t = 3.0f - r1 * hfx;
    float e = hxs * ((r1 - t) / (6.0f - x * t));
    if (k == 0) {
        return x - (x * e - hxs);
    }
    e = x * (e - c) - c;
    e -= hxs;
    if (k == -1) {
        return 0.5f * (x - e) - 0.5f;
    }
    if (k == 1) {
        return x < -0.25f ? -2.0f * (e - (x + 0.5f)) : 1.0f + 2.0f * (x - e);
    }
    if (k <= -2 || k > 56) { /* exp(x) - 1 is exp(x) to float precision */
        return tinyaot_f32_add_exponent(1.0f - (e - x), k) - 1.0f;
    }
    float y;
    if (k < 23) {
        t = tinyaot_u32_as_f32(0x3f800000u - (0x1000000u >> k)); /* 1 - 2^-k */
        y = t - (e - x);
    } else {
        t = tinyaot_u32_as_f32((uint32_t)(0x7f - k) << 23); /* 2^-k */
        y = x - (e + t);
        y += 1.0f;
    }
    return tinyaot_f32_add_exponent(y, k);
}

/* tanhf as glibc up to 2.40 computes it (s_tanhf.c, fdlibm): x itself near 0, +-1 from
 * |x| = 22 on, else from expm1f(+-2|x|); TFLite Micro's float TANH calls it (std::tanh). */
static inline float tinyaot_glibc_tanhf(float x)
{
    const uint32_t bits = tinyaot_f32_as_u32(x);
    const int neg = (int)(bits >> 31);
    const uint32_t ax = bits & 0x7fffffffu;
    if (ax >= 0x7f800000u) { /* inf: +-1; NaN: NaN */
        return neg ? 1.0f / x - 1.0f : 1.0f / x + 1.0f;
    }
    float z;
    if (ax < 0x41b00000u) { /* |x| < 22 */
        if (ax == 0u) {
            return x;
        }
        if (ax < 0x24000000u) { /* |x| < 2^-55 */
            return x * (1.0f + x);
        }
        const float a = tinyaot_u32_as_f32(ax);
        if (ax >= 0x3f800000u) { /* |x| >= 1 */
            const float t = tinyaot_glibc_expm1f(2.0f * a);
            z = 1.0f - 2.0f / (t + 2.0f);
        } else {
            const float t = tinyaot_glibc_expm1f(-2.0f * a);
            z = -t / (t + 2.0f);
        }
    } else {
        z = 1.0f;
    }
    return neg ? -z : z;
}

#endif
