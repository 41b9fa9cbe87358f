/*
 * Test shim for runtime_c/src/internal/tinyaot_fixedpoint.h.
 *
 * The header only has static inline functions, so this file re-exports them
 * (vectorised over arrays, to keep the cffi call overhead out of the tests).
 * Built by tests/test_tflite_fixedpoint.py as a shared library (cffi ABI
 * mode), and with -DSHIM_MAIN as a standalone softmax filter used under
 * -fsanitize=address,undefined.
 */
#include <stdint.h>

#include "tinyaot_fixedpoint.h"

void shim_srdhm(const int32_t *a, const int32_t *b, int32_t *o, int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i) o[i] = tinyaot_srdhm(a[i], b[i]);
}

void shim_rdbpot(const int32_t *x, const int32_t *e, int32_t *o, int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i) o[i] = tinyaot_rdbpot(x[i], e[i]);
}

void shim_mbqm(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *o, int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i) o[i] = tinyaot_mbqm(x[i], m[i], s[i]);
}

void shim_mbqm_stoe(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *o,
                    int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i) o[i] = tinyaot_mbqm_smaller_than_one_exp(x[i], m[i], s[i]);
}

void shim_mbqm_gto(const int32_t *x, const int32_t *m, const int32_t *s, int32_t *o,
                   int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i) o[i] = tinyaot_mbqm_greater_than_one(x[i], m[i], s[i]);
}

void shim_requant(const int32_t *acc, const int32_t *m, const int32_t *s, int32_t zp,
                  int32_t lo, int32_t hi, int8_t *o, int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i) o[i] = tinyaot_requant_tflite(acc[i], m[i], s[i], zp, lo, hi);
}

void shim_avgpool_round(const int32_t *sum, const int32_t *count, int32_t *o, int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i) o[i] = tinyaot_avgpool_round_tflite(sum[i], count[i]);
}

void shim_exp_on_negative_values(const int32_t *a, int32_t integer_bits, int32_t *o,
                                 int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i) o[i] = tinyaot_fp_exp_on_negative_values(a[i], integer_bits);
}

void shim_one_over_one_plus_x(const int32_t *a, int32_t *o, int32_t n) {
  int32_t i;
  for (i = 0; i < n; ++i) o[i] = tinyaot_fp_one_over_one_plus_x_for_x_in_0_1(a[i]);
}

/* p: a_zp, b_zp, out_zp, left_shift, a_mult, a_shift, b_mult, b_shift,
 *    out_mult, out_shift */
void shim_add(const int8_t *a, const int8_t *b, int8_t *o, int32_t n, const int32_t *p,
              int32_t lo, int32_t hi) {
  int32_t i;
  for (i = 0; i < n; ++i) {
    o[i] = tinyaot_add_tflite_s8(a[i], b[i], p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7],
                                 p[8], p[9], lo, hi);
  }
}

/* p: a_zp, b_zp, out_zp, out_mult, out_shift */
void shim_mul(const int8_t *a, const int8_t *b, int8_t *o, int32_t n, const int32_t *p,
              int32_t lo, int32_t hi) {
  int32_t i;
  for (i = 0; i < n; ++i) {
    o[i] = tinyaot_mul_tflite_s8(a[i], b[i], p[0], p[1], p[2], p[3], p[4], lo, hi);
  }
}

void shim_softmax_rows(const int8_t *in, int8_t *out, int32_t rows, int32_t depth,
                       int32_t input_multiplier, int32_t input_left_shift, int32_t diff_min) {
  int32_t r;
  for (r = 0; r < rows; ++r) {
    tinyaot_softmax_tflite_row_s8(in + r * depth, out + r * depth, depth, input_multiplier,
                                  input_left_shift, diff_min);
  }
}

#ifdef SHIM_MAIN
#include <stdio.h>
#include <stdlib.h>

/* stdin: int32 rows, depth, multiplier, left_shift, diff_min, then rows*depth
 * int8; stdout: rows*depth int8.  Each row gets its own exact-size heap
 * buffer so AddressSanitizer sees any out-of-bounds access. */
int main(void) {
  int32_t hdr[5];
  int32_t r;
  if (fread(hdr, sizeof(int32_t), 5, stdin) != 5) return 2;
  for (r = 0; r < hdr[0]; ++r) {
    const size_t depth = (size_t)hdr[1];
    int8_t *in = (int8_t *)malloc(depth ? depth : 1u);
    int8_t *out = (int8_t *)malloc(depth ? depth : 1u);
    if (!in || !out) return 3;
    if (fread(in, 1, depth, stdin) != depth) return 4;
    tinyaot_softmax_tflite_row_s8(in, out, hdr[1], hdr[2], hdr[3], hdr[4]);
    if (fwrite(out, 1, depth, stdout) != depth) return 5;
    free(in);
    free(out);
  }
  return 0;
}
#endif
