/* tinyaot_intrinsics.h - the Armv7E-M DSP instructions the fast kernels use,
 * named as in CMSIS (core_cmInstr.h / cmsis_gcc.h).
 *
 * With __ARM_FEATURE_DSP (Cortex-M4/M7/M33/M55 built with the DSP extension)
 * and GCC, TINYAOT_HAVE_DSP_ASM is 1 and each one is a single instruction
 * (inline asm). Everywhere else (host, Cortex-M3), or with
 * -DTINYAOT_PORTABLE_INTRINSICS, it is portable C99 that computes the same
 * 32 bits, following the pseudocode of the Armv7-M Architecture Reference
 * Manual (A7.7):
 *
 *   __SXTB16(x)          { sext(x[7:0]), sext(x[23:16]) }            halfwords
 *   __SXTB16_ROR8(x)     __SXTB16(x ror 8) = { sext(x[15:8]), sext(x[31:24]) }
 *   __SXTAB16(a, x)      { a.lo + sext(x[7:0]), a.hi + sext(x[23:16]) } mod 2^16
 *   __SXTAB16_ROR8(a, x) __SXTAB16(a, x ror 8)
 *   __SMLAD(x, y, acc)   acc + x.lo*y.lo + x.hi*y.hi          mod 2^32
 *   __SMLADX(x, y, acc)  acc + x.lo*y.hi + x.hi*y.lo          mod 2^32
 *   __SMLABB/__SMLABT/__SMLATB/__SMLATT(x, y, acc)  acc + x.{lo,hi}*y.{lo,hi}
 *   __SMUAD(x, y)        x.lo*y.lo + x.hi*y.hi                mod 2^32
 *   __SADD16(a, b)       { a.lo + b.lo, a.hi + b.hi }         mod 2^16 each
 *   __SSUB16(a, b)       { a.lo - b.lo, a.hi - b.hi }         mod 2^16 each
 *   __SSAT(x, n)         clamp to [-2^(n-1), 2^(n-1)-1], 1 <= n <= 32
 *   __USAT(x, n)         clamp to [0, 2^n - 1], 0 <= n <= 31
 *   __QADD(a, b)         saturating a + b
 *   __QSUB(a, b)         saturating a - b
 *   __PKHBT(a, b, s)     { a.lo, (b << s).hi }
 *   __PKHTB(a, b, s)     { (b >> s).lo, a.hi }       (arithmetic shift)
 *   __SMMLAR(a, b, c)    ((c << 32) + a*b + 0x80000000) >> 32, bits [63:32] (signed)
 *
 * The Q (sticky saturation) flag that SMLAD/QADD/SSAT may set is never read.
 * n and s must be integer constant expressions (they are instruction fields).
 * Everything is wrap-around on uint32_t in C: no signed overflow, no
 * implementation-defined shifts of negative values.
 */
#ifndef TINYAOT_INTRINSICS_H
#define TINYAOT_INTRINSICS_H

#include <stdint.h>

/* Not at -O0 (no __OPTIMIZE__): the kernels' asm needs the optimizer's register
 * allocation (at -O0 GCC keeps r7 as the frame pointer and finds no registers for
 * the asm that holds every core register), so a Debug build runs the portable C
 * twins throughout: the same bits, the reference code. */
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP && defined(__GNUC__) && \
    defined(__OPTIMIZE__) && !defined(TINYAOT_PORTABLE_INTRINSICS)
#define TINYAOT_HAVE_DSP_ASM 1
#else
#define TINYAOT_HAVE_DSP_ASM 0
#endif

/* ---- portable reference versions (always defined, tested on the host) ---- */

static inline int32_t tinyaot_pi_s32(uint32_t u)
{
    return (u & 0x80000000u) ? (int32_t)(-(int32_t)(~u) - 1) : (int32_t)u;
}

static inline int32_t tinyaot_pi_lo(uint32_t x) { return (int32_t)(int16_t)(uint16_t)(x & 0xffffu); }
static inline int32_t tinyaot_pi_hi(uint32_t x) { return (int32_t)(int16_t)(uint16_t)(x >> 16); }
static inline int32_t tinyaot_pi_b(uint32_t x, unsigned k)
{
    return (int32_t)(int8_t)(uint8_t)((x >> (8u * k)) & 0xffu);
}
static inline uint32_t tinyaot_pi_pack(int32_t lo, int32_t hi)
{
    return ((uint32_t)lo & 0xffffu) | (((uint32_t)hi & 0xffffu) << 16);
}

static inline uint32_t tinyaot_c_sxtb16(uint32_t x)
{
    return tinyaot_pi_pack(tinyaot_pi_b(x, 0), tinyaot_pi_b(x, 2));
}
static inline uint32_t tinyaot_c_sxtb16_ror8(uint32_t x)
{
    return tinyaot_pi_pack(tinyaot_pi_b(x, 1), tinyaot_pi_b(x, 3));
}
static inline uint32_t tinyaot_c_sxtab16(uint32_t a, uint32_t x)
{
    return tinyaot_pi_pack(tinyaot_pi_lo(a) + tinyaot_pi_b(x, 0), tinyaot_pi_hi(a) + tinyaot_pi_b(x, 2));
}
static inline uint32_t tinyaot_c_sxtab16_ror8(uint32_t a, uint32_t x)
{
    return tinyaot_pi_pack(tinyaot_pi_lo(a) + tinyaot_pi_b(x, 1), tinyaot_pi_hi(a) + tinyaot_pi_b(x, 3));
}
static inline uint32_t tinyaot_c_sadd16(uint32_t a, uint32_t b)
{
    return tinyaot_pi_pack(tinyaot_pi_lo(a) + tinyaot_pi_lo(b), tinyaot_pi_hi(a) + tinyaot_pi_hi(b));
}
static inline uint32_t tinyaot_c_ssub16(uint32_t a, uint32_t b)
{
    return tinyaot_pi_pack(tinyaot_pi_lo(a) - tinyaot_pi_lo(b), tinyaot_pi_hi(a) - tinyaot_pi_hi(b));
}
static inline uint32_t tinyaot_c_smuad(uint32_t x, uint32_t y)
{
    return (uint32_t)(tinyaot_pi_lo(x) * tinyaot_pi_lo(y)) + (uint32_t)(tinyaot_pi_hi(x) * tinyaot_pi_hi(y));
}
static inline uint32_t tinyaot_c_smlad(uint32_t x, uint32_t y, uint32_t acc)
{
    return acc + tinyaot_c_smuad(x, y);
}
static inline uint32_t tinyaot_c_smladx(uint32_t x, uint32_t y, uint32_t acc)
{
    return acc + (uint32_t)(tinyaot_pi_lo(x) * tinyaot_pi_hi(y)) +
           (uint32_t)(tinyaot_pi_hi(x) * tinyaot_pi_lo(y));
}
static inline uint32_t tinyaot_c_smlabb(uint32_t x, uint32_t y, uint32_t acc)
{
    return acc + (uint32_t)(tinyaot_pi_lo(x) * tinyaot_pi_lo(y));
}
static inline uint32_t tinyaot_c_smlabt(uint32_t x, uint32_t y, uint32_t acc)
{
    return acc + (uint32_t)(tinyaot_pi_lo(x) * tinyaot_pi_hi(y));
}
static inline uint32_t tinyaot_c_smlatb(uint32_t x, uint32_t y, uint32_t acc)
{
    return acc + (uint32_t)(tinyaot_pi_hi(x) * tinyaot_pi_lo(y));
}
static inline uint32_t tinyaot_c_smlatt(uint32_t x, uint32_t y, uint32_t acc)
{
    return acc + (uint32_t)(tinyaot_pi_hi(x) * tinyaot_pi_hi(y));
}
static inline int32_t tinyaot_c_ssat(int32_t x, int32_t n)
{
    const int64_t hi = ((int64_t)1 << (n - 1)) - 1;
    const int64_t lo = -((int64_t)1 << (n - 1));
    return (int32_t)(x > hi ? hi : (x < lo ? lo : x));
}
static inline uint32_t tinyaot_c_usat(int32_t x, int32_t n)
{
    const int64_t hi = ((int64_t)1 << n) - 1;
    return (uint32_t)(x > hi ? hi : (x < 0 ? 0 : x));
}
static inline int32_t tinyaot_c_qadd(int32_t a, int32_t b)
{
    const int64_t s = (int64_t)a + (int64_t)b;
    return (int32_t)(s > INT32_MAX ? INT32_MAX : (s < INT32_MIN ? INT32_MIN : s));
}
static inline int32_t tinyaot_c_qsub(int32_t a, int32_t b)
{
    const int64_t s = (int64_t)a - (int64_t)b;
    return (int32_t)(s > INT32_MAX ? INT32_MAX : (s < INT32_MIN ? INT32_MIN : s));
}
static inline uint32_t tinyaot_c_pkhbt(uint32_t a, uint32_t b, unsigned s)
{
    return (a & 0xffffu) | ((b << s) & 0xffff0000u);
}
static inline int32_t tinyaot_c_smmlar(int32_t a, int32_t b, int32_t c)
{
    /* mod 2^64 keeps bits [63:32] of the unbounded sum */
    const uint64_t v = ((uint64_t)(uint32_t)c << 32) + (uint64_t)((int64_t)a * (int64_t)b) +
                       0x80000000u;
    return tinyaot_pi_s32((uint32_t)(v >> 32));
}
static inline uint32_t tinyaot_c_pkhtb(uint32_t a, uint32_t b, unsigned s)
{
    /* ASR by s (1..32; 0 means LSL 0 in the encoding, i.e. no shift) */
    uint32_t sh;
    if (s == 0u) {
        sh = b;
    } else if (s >= 32u) {
        sh = (b & 0x80000000u) ? 0xffffffffu : 0u;
    } else {
        sh = (b >> s) | ((b & 0x80000000u) ? ~(0xffffffffu >> s) : 0u);
    }
    return (a & 0xffff0000u) | (sh & 0xffffu);
}

/* ---- the names the kernels use ---- */

#if TINYAOT_HAVE_DSP_ASM

static inline __attribute__((always_inline)) uint32_t __SXTB16(uint32_t x)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1" : "=r"(r) : "r"(x));
    return r;
}
static inline __attribute__((always_inline)) uint32_t __SXTB16_ROR8(uint32_t x)
{
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
static inline __attribute__((always_inline)) uint32_t __SXTAB16(uint32_t a, uint32_t x)
{
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(x));
    return r;
}
static inline __attribute__((always_inline)) uint32_t __SXTAB16_ROR8(uint32_t a, uint32_t x)
{
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
    return r;
}
static inline __attribute__((always_inline)) uint32_t __SMLAD(uint32_t x, uint32_t y, uint32_t acc)
{
    uint32_t r;
    __asm__("smlad %0, %1, %2, %3" : "=r"(r) : "r"(x), "r"(y), "r"(acc));
    return r;
}
static inline __attribute__((always_inline)) uint32_t __SMLADX(uint32_t x, uint32_t y, uint32_t acc)
{
    uint32_t r;
    __asm__("smladx %0, %1, %2, %3" : "=r"(r) : "r"(x), "r"(y), "r"(acc));
    return r;
}
static inline __attribute__((always_inline)) uint32_t __SMUAD(uint32_t x, uint32_t y)
{
    uint32_t r;
    __asm__("smuad %0, %1, %2" : "=r"(r) : "r"(x), "r"(y));
    return r;
}
#define TINYAOT_SMLAXY_(NAME, INSN)                                                        \
    static inline __attribute__((always_inline)) uint32_t NAME(uint32_t x, uint32_t y,    \
                                                               uint32_t acc)              \
    {                                                                                      \
        uint32_t r;                                                                        \
        __asm__(INSN " %0, %1, %2, %3" : "=r"(r) : "r"(x), "r"(y), "r"(acc));             \
        return r;                                                                          \
    }
TINYAOT_SMLAXY_(__SMLABB, "smlabb")
TINYAOT_SMLAXY_(__SMLABT, "smlabt")
TINYAOT_SMLAXY_(__SMLATB, "smlatb")
TINYAOT_SMLAXY_(__SMLATT, "smlatt")
#undef TINYAOT_SMLAXY_
static inline __attribute__((always_inline)) uint32_t __SADD16(uint32_t a, uint32_t b)
{
    uint32_t r;
    __asm__("sadd16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
static inline __attribute__((always_inline)) uint32_t __SSUB16(uint32_t a, uint32_t b)
{
    uint32_t r;
    __asm__("ssub16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
static inline __attribute__((always_inline)) int32_t __QADD(int32_t a, int32_t b)
{
    int32_t r;
    __asm__("qadd %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
static inline __attribute__((always_inline)) int32_t __QSUB(int32_t a, int32_t b)
{
    int32_t r;
    __asm__("qsub %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
static inline __attribute__((always_inline)) int32_t __SMMLAR(int32_t a, int32_t b, int32_t c)
{
    int32_t r;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}
#define __SSAT(x, n)                                                  \
    __extension__({                                                   \
        int32_t r_;                                                   \
        __asm__("ssat %0, %1, %2" : "=r"(r_) : "I"(n), "r"((int32_t)(x))); \
        r_;                                                           \
    })
#define __USAT(x, n)                                                   \
    __extension__({                                                    \
        uint32_t r_;                                                   \
        __asm__("usat %0, %1, %2" : "=r"(r_) : "I"(n), "r"((int32_t)(x))); \
        r_;                                                            \
    })
#define __PKHBT(a, b, s)                                                                 \
    __extension__({                                                                      \
        uint32_t r_;                                                                     \
        __asm__("pkhbt %0, %1, %2, lsl %3" : "=r"(r_) : "r"((uint32_t)(a)), "r"((uint32_t)(b)), "I"(s)); \
        r_;                                                                              \
    })
/* shift 0: top half of a, bottom half of b (CMSIS; = pkhbt with the operands swapped) */
#define __PKHTB(a, b, s)                                                                 \
    __extension__({                                                                      \
        uint32_t r_;                                                                     \
        if ((s) == 0) {                                                                  \
            __asm__("pkhbt %0, %2, %1" : "=r"(r_) : "r"((uint32_t)(a)), "r"((uint32_t)(b))); \
        } else {                                                                         \
            __asm__("pkhtb %0, %1, %2, asr %3" : "=r"(r_) : "r"((uint32_t)(a)), "r"((uint32_t)(b)), \
                    "I"((s) == 0 ? 1 : (s)));                                           \
        }                                                                                \
        r_;                                                                              \
    })

#else

#define __SXTB16(x) tinyaot_c_sxtb16(x)
#define __SXTB16_ROR8(x) tinyaot_c_sxtb16_ror8(x)
#define __SXTAB16(a, x) tinyaot_c_sxtab16((a), (x))
#define __SXTAB16_ROR8(a, x) tinyaot_c_sxtab16_ror8((a), (x))
#define __SMLAD(x, y, acc) tinyaot_c_smlad((x), (y), (acc))
#define __SMLADX(x, y, acc) tinyaot_c_smladx((x), (y), (acc))
#define __SMUAD(x, y) tinyaot_c_smuad((x), (y))
#define __SADD16(a, b) tinyaot_c_sadd16((a), (b))
#define __SSUB16(a, b) tinyaot_c_ssub16((a), (b))
#define __SMLABB(x, y, acc) tinyaot_c_smlabb((x), (y), (acc))
#define __SMLABT(x, y, acc) tinyaot_c_smlabt((x), (y), (acc))
#define __SMLATB(x, y, acc) tinyaot_c_smlatb((x), (y), (acc))
#define __SMLATT(x, y, acc) tinyaot_c_smlatt((x), (y), (acc))
#define __QADD(a, b) tinyaot_c_qadd((a), (b))
#define __QSUB(a, b) tinyaot_c_qsub((a), (b))
#define __SMMLAR(a, b, c) tinyaot_c_smmlar((a), (b), (c))
#define __SSAT(x, n) tinyaot_c_ssat((x), (n))
#define __USAT(x, n) tinyaot_c_usat((x), (n))
#define __PKHBT(a, b, s) tinyaot_c_pkhbt((a), (b), (unsigned)(s))
#define __PKHTB(a, b, s) tinyaot_c_pkhtb((a), (b), (unsigned)(s))

#endif

#endif
