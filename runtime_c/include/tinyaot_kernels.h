/* tinyaot kernel library, public API: the int8 NHWC kernels the generated C
 * calls. This header and tinyaot_fast_kernels.h are all that code outside
 * runtime_c includes; the kernels' own helpers live in src/internal/
 * (runtime_c/README.md).
 *
 * One kernel per file, named after it (with its *_get_buffer_size when it
 * needs scratch), in src/<category>/. The language is C99 with GCC
 * extensions (inline asm, __attribute__, __builtin_expect), built with
 * arm-none-eabi-gcc for the boards and gcc on the host. A kernel with an Arm
 * fast path picks it at compile time from the compiler's target macros: the
 * DSP extension (TINYAOT_HAVE_DSP_ASM, from __ARM_FEATURE_DSP), a
 * single-precision FPU (__ARM_FP & 4), Thumb-2 (__thumb2__). Each such path
 * has a C twin with the same results, which every other target compiles (the
 * host, Cortex-M3); -DTINYAOT_PORTABLE_INTRINSICS selects the C of everything
 * TINYAOT_HAVE_DSP_ASM gates, on a DSP core too.
 * All parameters are prepared at compile time by the code generator; kernels
 * allocate nothing.
 * Requantization follows one of two numerics, chosen per layer by the
 * tinyaot_requant_t the generator emits:
 *   scale != NULL : onnxruntime (float32 multiply, round half to even)
 *   scale == NULL : TFLite Micro (int32 multiplier + shift, double rounding)
 */
#ifndef TINYAOT_KERNELS_H
#define TINYAOT_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TINYAOT_OK 0
#define TINYAOT_ERR_ARG (-1)
/* a fast kernel built without the specialization the call needs (a firmware's
 * kernels compile what its model uses: src/internal/tinyaot_specialize.h) */
#define TINYAOT_ERR_NOT_BUILT (-2)

typedef struct {
    int32_t in_zp;
    int32_t out_zp;
    int32_t act_min;      /* output clamp, in output integers */
    int32_t act_max;
    const int32_t *bias;  /* one per output channel (NULL only with scale, mult,
                             shift and rq: tinyaot_fully_connected_fast_s8's
                             fixed-point records, inline in its weights) */
    const float *scale;   /* ort: per-channel float multipliers, else NULL */
    const int32_t *mult;  /* tflite: per-channel multipliers */
    const int32_t *shift; /* tflite: per-channel shifts */
    /* ort, ConvInteger / MatMulInteger: QuantizeLinear(float(acc) * scale + post_bias)
     * with out_scale (onnxruntime's Cast -> Mul -> Add -> QuantizeLinear); else NULL */
    const float *post_bias;
    float out_scale;
    const int32_t *rq;    /* fast kernels, tflite with every shift in [-31, -1] (or
                             mult 0): per channel {mult, -shift - 1, round_lo,
                             round_hi, bias} (one-SMLAL requantization,
                             tinyaot_requant_fast.h), else NULL */
} tinyaot_requant_t;

typedef struct {
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t k_h, k_w;
    int32_t stride_h, stride_w;
    int32_t dil_h, dil_w;
    int32_t pad_top, pad_left;
    int32_t groups;
} tinyaot_conv_dims_t;

/* General 2-D convolution (grouped too). Filter layout [out_c][k_h][k_w][in_c/groups]. */
int tinyaot_convolve_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                        const int8_t *input, const int8_t *filter, int8_t *output);

/* tinyaot_convolve_s8 with int16 weights (same layout): weights minus their zero point
 * that do not fit int8 (uint8 or asymmetric int8 weights), on layers with no fast kernel. */
int tinyaot_convolve_w16_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                            const int8_t *input, const int16_t *filter, int8_t *output);

/* Depthwise convolution, out_c = in_c * multiplier. Filter layout [k_h][k_w][out_c]. */
int tinyaot_depthwise_conv_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                              const int8_t *input, const int8_t *filter, int8_t *output);

/* Depthwise convolution in place (channel multiplier 1, output no larger than
 * the input): `data` holds the input and then the output; `plane` is
 * in_h * in_w bytes of scratch (one input channel). Bit-identical with
 * tinyaot_depthwise_conv_s8. */
int tinyaot_depthwise_conv_inplace_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                      int8_t *data, const int8_t *filter, int8_t *plane);

/* onnxruntime's float Conv (the layers ORT does not fuse into QLinearConv):
 * x = (q - zp) * s_in, w = wq * s_w, y = fma-accumulated over (c, kh, kw),
 * + bias, clamp, QuantizeLinear. Filter layout [out_c][k_h][k_w][in_c/groups]. */
typedef struct {
    float in_scale;
    int32_t in_zp;
    float out_scale;
    int32_t out_zp;
    int32_t act_min, act_max;
    const int8_t *filter;       /* int8 weights, same layout as the integer kernels' */
    const float *filter_scale;  /* per output channel: w = float(wq) * scale, as
                                   DequantizeLinear computes it (exact, so the
                                   float weights need not be stored in flash) */
    const float *bias_f;        /* dequantized bias */
} tinyaot_float_conv_t;

/* tinyaot_convolve_f32_s8's compile-time data: MLAS's summation order as
 * segments (codegen/numerics/mlas_conv_order.py), each
 * {kind (0 fma, 1 m1, 2 m1tb), m0, m1, n0, n1, nslices, k_end[nslices]}
 * over the group's channels [m0, m1) and output pixels [n0, n1); the float
 * weights float(wq) * scale packed [group][channel / 4][k][channel % 4]
 * (zero rows up to a multiple of 4), or [out_c][k rounded up to 8] (zero
 * padded) when tiles is 0; the 256
 * dequantized input values; each k's input offset in the window. With
 * `padded`, an fma-only layer whose padded input is small dequantizes it once
 * into a zero-padded float copy in the scratch (rows and columns the windows
 * reach: (out_h - 1) * stride_h + (k_h - 1) * dil_h + 1 by the same in w), and
 * the taps are float offsets in that copy: no table lookup and no bounds
 * checks per column. */
typedef struct {
    const float *table;       /* table[q + 128] = float(q - in_zp) * in_scale */
    const float *weights;
    const int32_t *segments;
    const int32_t *taps;      /* per k: offset c + (ky * dil_h * w + kx * dil_w) * in_c of its
                                 input from the window's origin (w: in_w, or the
                                 padded copy's width) */
    int32_t nseg;
    int32_t k;                /* in_c / groups * k_h * k_w */
    int32_t tiles;            /* ceil(out_c / groups / 4); 0: no fma segment, weights
                                 packed [out_c][k] instead */
    int32_t padded;           /* 1: the zero-padded float copy of the input (above);
                                 2: stride 1, groups 1, out_w % 4 == 0: a band of
                                 k_h padded input rows, channel planar, one new row
                                 per output row; taps then [k_h][k]: for output row
                                 oy, row oy % k_h (the band's slot rotation) */
} tinyaot_conv_f32_plan_t;

/* p: output quantization and bias_f (its filter fields are not read).
 * scratch: *_get_buffer_size bytes, planned in the arena for this layer. */
int tinyaot_convolve_f32_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                            const tinyaot_conv_f32_plan_t *pl, const int8_t *input,
                            float *scratch, int8_t *output);
int32_t tinyaot_convolve_f32_s8_get_buffer_size(const tinyaot_conv_dims_t *d,
                                                const tinyaot_conv_f32_plan_t *pl);

/* The fma tiles of tinyaot_convolve_f32_s8, the building block it and
 * tinyaot_convolve_f32_b8_s8 share: tiles [t_lo, t_hi) (4 output channels each; with
 * groups > 1 all of them) in MLAS's order, `weights` starting with tile t_lo's packed
 * weights ([tile][k][4] floats); pl->weights is not read. scratch:
 * tinyaot_convolve_f32_s8_get_buffer_size bytes. */
int tinyaot_convolve_f32_tiles_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                                  const tinyaot_conv_f32_plan_t *pl, const float *weights,
                                  int32_t t_lo, int32_t t_hi, const int8_t *input,
                                  float *scratch, int8_t *output);

/* tinyaot_convolve_f32_s8 on int8 weights in flash: p->filter holds them packed as
 * pl->weights would be ([tile][k][channel % 4], zero rows up to a multiple of 4; pl->weights
 * is not read), p->filter_scale one scale per output channel. Per block of `block_tiles`
 * tiles (4 output channels each) the weights are dequantized, float(q) * scale (exactly
 * DequantizeLinear's float32), into the scratch, and the block's channels run as in
 * tinyaot_convolve_f32_s8: the same sums, columns gathered once per block. Groups 1.
 * scratch: *_get_buffer_size bytes, in the arena. */
int tinyaot_convolve_f32_b8_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                               const tinyaot_conv_f32_plan_t *pl, int32_t block_tiles,
                               const int8_t *input, float *scratch, int8_t *output);
int32_t tinyaot_convolve_f32_b8_s8_get_buffer_size(const tinyaot_conv_dims_t *d,
                                                   const tinyaot_conv_f32_plan_t *pl,
                                                   int32_t block_tiles);

/* tinyaot_convolve_f32_s8 for the plans without an fma segment (tiles 0:
 * every MLAS call is an M=1 kernel, e.g. depthwise or one output pixel).
 * scratch: tinyaot_convolve_f32_s8_get_buffer_size bytes. */
int tinyaot_convolve_f32_m1_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                               const tinyaot_conv_f32_plan_t *pl, const int8_t *input,
                               float *scratch, int8_t *output);

/* Transposed convolution (ONNX ConvTranspose), TFLite TRANSPOSE_CONV integer
 * semantics. Output pixel o gets input pixel i through tap t when
 * o = i * stride - pad + t * dil. Filter layout [k_h][k_w][out_c][in_c/groups].
 * scratch: *_get_buffer_size bytes (one pixel's accumulators), planned in the
 * arena by the compiler and live only during the call. */
int tinyaot_transpose_conv_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                              const int8_t *input, const int8_t *filter, int32_t *scratch,
                              int8_t *output);
int32_t tinyaot_transpose_conv_s8_get_buffer_size(const tinyaot_conv_dims_t *d);

/* onnxruntime's float ConvTranspose (MLAS SGEMM + col2im order, then bias and
 * QuantizeLinear). Same filter layout; filter_scale has one entry per out channel. */
int tinyaot_transpose_conv_f32_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                                  const int8_t *input, float *scratch, int8_t *output);
int32_t tinyaot_transpose_conv_f32_s8_get_buffer_size(const tinyaot_conv_dims_t *d);

/* Fully connected: output[r][n] for rows r, weights [out_features][in_features]. */
int tinyaot_fully_connected_s8(int32_t rows, int32_t in_features, int32_t out_features,
                               const tinyaot_requant_t *q, const int8_t *input,
                               const int8_t *weights, int8_t *output);

/* tinyaot_fully_connected_s8 with int16 weights (same layout): weights minus their zero
 * point that do not fit int8, on layers with no fast kernel (MatMulInteger). */
int tinyaot_fully_connected_w16_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                   const tinyaot_requant_t *q, const int8_t *input,
                                   const int16_t *weights, int8_t *output);

/* onnxruntime's float Gemm / MatMul (+ bias Add): y = sum of x * w in the order
 * MLAS sums them (codegen/numerics/mlas_fc_order.py), + bias, QuantizeLinear.
 * Everything float is prepared at compile time: the input's DequantizeLinear
 * as a 256-entry table, the dequantized weights packed in the order the kernel
 * reads them (codegen/kernels/fc_float_pack.py). */
#define TINYAOT_FC_F32_GEMV4 0  /* MLAS M1 kernel: k in groups of 4, 2, 1 onto C = bias */
#define TINYAOT_FC_F32_LANES8 1 /* MLAS M1 TransposeB kernel: 8 lanes, reduction tree */
#define TINYAOT_FC_F32_KBLOCK 2 /* MLAS SGEMM: fma chains over k_block, added onto C */
typedef struct {
    int32_t order;          /* TINYAOT_FC_F32_* */
    int32_t k_block;        /* KBLOCK: MLAS's K stride */
    float out_scale;
    int32_t out_zp;
    int32_t act_min, act_max;
    const float *in_table;  /* DequantizeLinear of q, indexed by (uint8_t)q */
    const float *weights;   /* float weights, packed for `order` */
    const float *bias;      /* per output (zeros without a bias: MLAS beta 0) */
} tinyaot_float_fc_t;

/* scratch: *_get_buffer_size bytes (one dequantized input row), planned in
 * the arena, 8-byte aligned. */
int tinyaot_fully_connected_f32_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                   const tinyaot_float_fc_t *p, const int8_t *input,
                                   float *scratch, int8_t *output);
int32_t tinyaot_fully_connected_f32_s8_get_buffer_size(int32_t in_features);

/* DequantizeLinear of k int8 values through a 256-entry float table indexed
 * by (uint8_t)q (tinyaot_float_fc_t.in_table) into s. */
void tinyaot_dequantize_row_f32_s8(const int8_t *q, int32_t k, const float *tab, float *s);

/* --optimize size: the float Conv / Gemm above in the same summation order,
 * on int8 weights kept in flash (tinyaot_float_conv_t.filter, [out][k] with
 * k = (c, ky, kx) or the input feature; one filter_scale per output) and
 * dequantized at run time (float(q) * scale, exactly DequantizeLinear's).
 * Conv: `segments` holds nseg records as tinyaot_conv_f32_plan_t.segments;
 * scratch: *_get_buffer_size bytes (one input column / row), in the arena. */
int tinyaot_convolve_f32_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_float_conv_t *p,
                               const int32_t *segments, int32_t nseg, const int8_t *input,
                               float *scratch, int8_t *output);
int32_t tinyaot_convolve_f32_w8_s8_get_buffer_size(const tinyaot_conv_dims_t *d);
int tinyaot_fully_connected_f32_w8_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                      int32_t order, int32_t k_block,
                                      const tinyaot_float_conv_t *p, const int8_t *input,
                                      float *scratch, int8_t *output);
int32_t tinyaot_fully_connected_f32_w8_s8_get_buffer_size(int32_t in_features);

/* Pointwise (1x1, stride 1, unpadded, groups 1) on sparse weights: per output
 * channel its nonzero count, then a word (w << 16) | k per nonzero weight; the
 * input zero point folded into the bias (the records' bias). No scratch. */
int tinyaot_convolve_sparse_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                               const int8_t *input, const uint32_t *weights, int8_t *output);

/* A narrow input (k_w * in_c <= 16, k_h * k_w * in_c <= 32), groups 1,
 * undilated, out_c % 4 == 0: per channel quad and tap two words, each two
 * output channels w0 + w1 * 2^21 (128 * sum |w| < 2^20 per channel); the input
 * zero point folded into the bias (the records' bias). No scratch. */
int tinyaot_convolve_narrow_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                               const int8_t *input, const uint32_t *weights, int8_t *output);

/* --optimize size, integer layers: tinyaot_convolve_s8 (groups 1) and
 * tinyaot_fully_connected_s8 with the same arguments and integers, plus an
 * int16 scratch of *_get_buffer_size bytes (one column / row, 4-byte
 * aligned): 4 MACs per weight word with the DSP extension, weights int8. */
int tinyaot_convolve_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                           const int8_t *input, const int8_t *filter, int16_t *scratch,
                           int8_t *output);
int32_t tinyaot_convolve_w8_s8_get_buffer_size(const tinyaot_conv_dims_t *d);
int tinyaot_fully_connected_w8_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                  const tinyaot_requant_t *q, const int8_t *input,
                                  const int8_t *weights, int16_t *scratch, int8_t *output);
int32_t tinyaot_fully_connected_w8_s8_get_buffer_size(int32_t in_features);
/* --optimize size, a TFLite full-range FC whose weights fit in fewer bits (bits in
 * [2, 7], codegen/kernels/bits_pack.py: per row ceil(K * bits / 32) words of
 * fields, then per row {count, {k, w} x count} outliers), q with the one-SMLAL
 * records split as tinyaot_fully_connected_fast_w8_s8 reads them; the scratch
 * one int16 input row (*_get_buffer_size bytes, 2-byte aligned). */
int tinyaot_fully_connected_bits_s8(int32_t rows, int32_t in_features, int32_t out_features,
                                    int32_t bits, const tinyaot_requant_t *q,
                                    const int8_t *input, const uint32_t *weights,
                                    const uint16_t *outliers, int16_t *scratch, int8_t *output);
int32_t tinyaot_fully_connected_bits_s8_get_buffer_size(int32_t in_features);
/* --optimize size: tinyaot_depthwise_conv_s8's integers (same arguments), the
 * window's inside rows / columns found once per output pixel. */
int tinyaot_depthwise_conv_w8_s8(const tinyaot_conv_dims_t *d, const tinyaot_requant_t *q,
                                 const int8_t *input, const int8_t *filter, int8_t *output);

typedef struct {
    int32_t a_zp, b_zp, out_zp;
    int32_t act_min, act_max;
    /* ort */
    float a_scale, b_scale, out_scale;
    int32_t use_float; /* 1: DQ -> float add -> Q; 2: MLAS QLinearAdd (a one-value b
                          * folded first); 3: 2 with a per-channel b repeated by b_stride 0 */
    /* tflite */
    int32_t left_shift;
    int32_t a_mult, a_shift, b_mult, b_shift, out_mult, out_shift;
    /* use_float 2: a_scale, b_scale are s_a / s_y, s_b / s_y; zero points folded in */
    float qlinear_fixed;
    int32_t u8_shift; /* 128 when onnxruntime ran the add on uint8 */
    /* tflite, tinyaot_add_fast_s8 only (NULL: computed): the rescaled
     * inputs MBQM((x - zp) << left_shift) for x = -128..127, and the one-SMLAL
     * record of the output rescale (codegen/kernels/fast_pack.py) */
    const int32_t *a_lut, *b_lut;
    const int32_t *out_rq;
} tinyaot_add_params_t;

/* Elementwise a + b; b_stride 0 broadcasts a scalar b. */
int tinyaot_add_s8(int32_t n, const tinyaot_add_params_t *p, const int8_t *a,
                   const int8_t *b, int32_t b_stride, int8_t *output);

typedef struct {
    int32_t in_h, in_w, c;
    int32_t out_h, out_w;
    int32_t k_h, k_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;
    int32_t count_include_pad;
    int32_t act_min, act_max;
    /* 0: TFLite rounded integer mean; 1: onnxruntime float mean;
     * 2: TFLite MEAN ((sum - in_zp * count) * multiplier >> shift + bias);
     * 3: onnxruntime QLinearAveragePool */
    int32_t use_float;
    float in_scale, out_scale;
    int32_t in_zp, out_zp;
    int32_t mean_mult, mean_shift, mean_bias;
    /* ort average (use_float 1, 3), or NULL: dq_lut[x + 128] = float(x - in_zp) * in_scale,
     * the dequantized value of every int8 (compile time, the same float) */
    const float *dq_lut;
} tinyaot_pool_params_t;

int tinyaot_avgpool_s8(const tinyaot_pool_params_t *p, const int8_t *input, int8_t *output);
int tinyaot_maxpool_s8(const tinyaot_pool_params_t *p, const int8_t *input, int8_t *output);

typedef struct {
    int32_t use_float;
    /* ort */
    float in_scale, out_scale;
    int32_t in_zp, out_zp;
    /* tflite */
    int32_t input_multiplier, input_left_shift, diff_min;
} tinyaot_softmax_params_t;

/* Softmax over the last axis: rows x n. */
int tinyaot_softmax_s8(int32_t rows, int32_t n, const tinyaot_softmax_params_t *p,
                       const int8_t *input, int8_t *output);
/* onnxruntime QLinearSoftmax (float table of 256 entries; tinyaot_softmax_qlinear_s8.c). */
int tinyaot_softmax_qlinear_s8(int32_t rows, int32_t n, const float *table, float y_mult,
                               int32_t out_zp, int32_t u8, const int8_t *input, int8_t *output);

typedef struct {
    int32_t mode; /* 0: clamp only, 1: float requantize (ort), 2: fixed-point (tflite) */
    int32_t in_zp, out_zp, act_min, act_max;
    float in_scale, out_scale;
    int32_t mult, shift;
} tinyaot_requantize_params_t;

int tinyaot_requantize_s8(int32_t n, const tinyaot_requantize_params_t *p,
                          const int8_t *input, int8_t *output);

/* A model's float ends (the generated <name>_run): float <-> int8 or uint8
 * bytes with one scale and zero point. qmin, qmax: -128, 127 (int8) or 0, 255
 * (uint8: the bytes are read and written as uint8). Quantize: x / scale
 * (float32), rounded half to even (rounding 0: onnxruntime's QuantizeLinear)
 * or half away from zero (1: TFLite's QUANTIZE), + zero_point, saturated.
 * Dequantize: float(q - zero_point) * scale, which is also TFLite's DEQUANTIZE
 * bit for bit. */
typedef struct {
    float scale;
    int32_t zero_point;
    int32_t qmin, qmax;
    int32_t rounding;
} tinyaot_quantize_params_t;

int tinyaot_quantize_s8(int32_t n, const tinyaot_quantize_params_t *p, const float *input,
                        int8_t *output);
int tinyaot_dequantize_s8(int32_t n, const tinyaot_quantize_params_t *p, const int8_t *input,
                          float *output);

/* Permute a 4-D int8 tensor: out dims are in dims permuted by perm. */
int tinyaot_transpose_s8(const int32_t in_dims[4], const int32_t perm[4],
                         const int8_t *input, int8_t *output);

/* Elementwise int8 -> int8 through a 256-entry table: output[i] = table[input[i] + 128].
 * Sigmoid, Tanh, HardSwish, HardSigmoid, LeakyRelu (tables made at compile time). */
int tinyaot_lut_s8(int32_t n, const int8_t table[256], const int8_t *input, int8_t *output);

typedef struct {
    int32_t mode; /* 0: TFLite MUL, 1: ORT QLinearMul, 2: ORT float Mul (DQ, *, Q) */
    int32_t a_zp, b_zp, out_zp, act_min, act_max;
    float a_scale, b_scale, out_scale;
    float ratio;  /* mode 1: float32(a_scale * b_scale / out_scale) */
    int32_t out_mult, out_shift; /* mode 0 */
} tinyaot_mul_params_t;

/* Broadcasting int8 Mul. output is dims[0..3], contiguous; a and b are read at
 * sum(index[k] * stride[k]) (stride 0 on broadcast axes). */
int tinyaot_mul_s8(const int32_t dims[4], const int32_t a_strides[4], const int32_t b_strides[4],
                   const tinyaot_mul_params_t *p, const int8_t *a, const int8_t *b,
                   int8_t *output);

typedef struct {
    int32_t mode; /* 0: TFLite PRELU, 1: ORT float PRelu (DQ, PRelu, Q) */
    int32_t in_zp, alpha_zp, out_zp, act_min, act_max;
    float in_scale, out_scale;     /* mode 1 */
    int32_t pos_mult, pos_shift;   /* mode 0: s_in / s_out */
    int32_t neg_mult, neg_shift;   /* mode 0: s_in * s_alpha / s_out */
} tinyaot_prelu_params_t;

/* PRelu: y = x >= 0 ? x : slope * x. The input is walked as [outer][channels][inner]
 * (its physical order); element (o, c, i) uses channel c's slope: alpha[c] (mode 0,
 * int8, quantized per tensor) or slope[c] (mode 1, the dequantized float). The
 * other pointer may be NULL. output may be input. */
int tinyaot_prelu_s8(int32_t outer, int32_t channels, int32_t inner,
                     const tinyaot_prelu_params_t *p, const int8_t *alpha, const float *slope,
                     const int8_t *input, int8_t *output);

/* Elementwise int8 maximum (is_max 1) or minimum (0) with broadcasting, TFLite's
 * MAXIMUM / MINIMUM: the raw integers are compared (inputs and output share one
 * quantization). d = { dims[6], a_stride[6], b_stride[6] } as tinyaot_binary_f32 takes it.
 * output may be a or b when it has their shape. */
int tinyaot_minmax_s8(int32_t is_max, const int32_t d[18], const int8_t *a, const int8_t *b,
                      int8_t *output);

typedef struct {
    int32_t in_zp, out_zp;
    int32_t mult, shift; /* QuantizeMultiplier(s_in / s_out) */
    int32_t act_min, act_max;
} tinyaot_reduce_sum_params_t;

/* TFLite's int8 SUM (reference_ops::QuantizedMeanOrSum, compute_sum): input viewed as
 * [outer][count][inner] row-major, output [outer][inner]:
 * out = clamp(MBQM(sum - in_zp * count, mult, shift) + out_zp). */
int tinyaot_reduce_sum_s8(int32_t outer, int32_t count, int32_t inner,
                          const tinyaot_reduce_sum_params_t *p, const int8_t *input,
                          int8_t *output);

/* Concatenation: for each of `outer` rows, input j contributes chunks[j] bytes,
 * copied (tables[j] == NULL) or requantized through the 256-entry tables[j];
 * inputs[j] == NULL: already in place (its producer wrote the slice). */
int tinyaot_concat_s8(int32_t outer, int32_t n_inputs, const int32_t *chunks,
                      const int8_t *const *inputs, const int8_t *const *tables, int8_t *output);

/* 4-D Pad. d = { in_dims[4], out_dims[4], pad_before[4] }; mode 0: constant
 * (pad_value), 1: reflect, 2: edge. table != NULL requantizes copied elements. */
int tinyaot_pad_s8(const int32_t d[12], int32_t mode, int32_t pad_value, const int8_t *table,
                   const int8_t *input, int8_t *output);

/* onnxruntime's float ReduceMean over H, W (NHWC input, [N][C] output): per
 * channel, DequantizeLinear, Eigen's 4-lane float sum order, / (h*w), QuantizeLinear. */
int tinyaot_reduce_mean_hw_f32_s8(int32_t batches, int32_t hw, int32_t c,
                                  const tinyaot_requantize_params_t *p, const int8_t *input,
                                  int8_t *output);

typedef struct {
    int32_t mode; /* 0: TFLite BATCH_MATMUL, 1: ORT QLinearMatMul, 2: ORT float MatMul */
    int32_t a_zp, b_zp, out_zp, act_min, act_max;
    float a_scale, b_scale, out_scale;
    float scale;             /* mode 1: float32(a_scale * b_scale / out_scale) */
    int32_t mult, shift;     /* mode 0 */
} tinyaot_matmul_params_t;

/* MatMul of two int8 activations, row-major: a [batches][m][k] x b [batches][k][n]. */
int tinyaot_matmul_s8(int32_t batches, int32_t m, int32_t k, int32_t n,
                      const tinyaot_matmul_params_t *p, const int8_t *a, const int8_t *b,
                      int8_t *output);

/* Strided window of a 4-D tensor (Slice, Split). d = { in_dims[4], out_dims[4],
 * start[4], step[4] } on the physical axes; steps may be negative. */
int tinyaot_slice_s8(const int32_t d[16], const int8_t *input, int8_t *output);

/* Nearest resize, NHWC. dims = { batches, in_h, in_w, c, out_h, out_w }; output
 * row y / column x copies input row y_idx[y] / column x_idx[x]; table != NULL
 * requantizes (and clamps) every copied element. */
int tinyaot_resize_nearest_s8(const int32_t dims[6], const int32_t *y_idx, const int32_t *x_idx,
                              const int8_t *table, const int8_t *input, int8_t *output);

typedef struct {
    int32_t batches, in_h, in_w, c, out_h, out_w;
    int32_t mode;                      /* 0: onnxruntime float, 1: TFLite integer */
    const int32_t *y0, *y1, *x0, *x1;  /* the two source rows / columns per output one */
    const float *fy0, *fy1, *fx0, *fx1;/* mode 0: weights of y0, y1, x0, x1 */
    const int32_t *wy, *wx;            /* mode 1: weight of y1 / x1, in 1/1024 */
    float in_scale, out_scale;         /* mode 0 */
    int32_t in_zp, out_zp, act_min, act_max;
    const int8_t *table;               /* mode 1: requantization after, or NULL */
} tinyaot_resize_bilinear_params_t;

/* Bilinear resize over H, W, NHWC. */
int tinyaot_resize_bilinear_s8(const tinyaot_resize_bilinear_params_t *p, const int8_t *input,
                               int8_t *output);

/* ---- Float fallback (runtime_c/src/float/): float32 operators between a DequantizeLinear
 * and a QuantizeLinear that no integer kernel covers, each repeating the float kernel of the
 * numerics it follows operation by operation (mode 0: onnxruntime's MLAS on x86-64 with
 * AVX-512F; mode 1: TFLite Micro's reference kernels). Built with -ffp-contract=off. */

/* QuantizeLinear of float32 into int8: mode 0 onnxruntime (x / scale clamped to
 * [-128 - zp, 127 - zp], a NaN to the low end, rounded half to even, + zp); mode 1 TFLite
 * Micro (round half away from zero of x / scale, + zp, clamped). */
int tinyaot_quantize_s8_f32(int32_t n, float scale, int32_t zp, int32_t mode,
                            const float *input, int8_t *output);

typedef struct {
    int32_t outer, n, inner; /* over n elements at stride inner, for outer * inner rows */
    int32_t log;             /* 1: LogSoftmax */
    int32_t mode;            /* 0: onnxruntime, 1: TFLite Micro */
} tinyaot_softmax_f32_params_t;

/* Softmax / LogSoftmax of float32 (input may be output). */
int tinyaot_softmax_f32(const tinyaot_softmax_f32_params_t *p, const float *input, float *output);

/* Elementwise float32 functions of tinyaot_unary_f32 (input may be output). */
#define TINYAOT_F32_EXP 0        /* onnxruntime: MLAS's exp */
#define TINYAOT_F32_SIGMOID 1    /* onnxruntime: MLAS's logistic */
#define TINYAOT_F32_TANH 2       /* onnxruntime: MLAS's tanh */
#define TINYAOT_F32_SQRT 3       /* IEEE square root */
#define TINYAOT_F32_NEG 4
#define TINYAOT_F32_ABS 5
#define TINYAOT_F32_RELU 6
#define TINYAOT_F32_RECIPROCAL 7 /* 1 / x */
#define TINYAOT_F32_ERF 8        /* onnxruntime: MLAS's erf */
#define TINYAOT_F32_GELU 9       /* onnxruntime's Gelu (erf form) */
#define TINYAOT_F32_GELU_TANH 10 /* onnxruntime's Gelu, approximate "tanh" */
#define TINYAOT_F32_EXP_GLIBC 11 /* TFLite Micro: std::exp, glibc's expf */
#define TINYAOT_F32_LOGISTIC_TFLM 12 /* TFLite Micro's float LOGISTIC */
#define TINYAOT_F32_TANH_GLIBC 13 /* TFLite Micro: std::tanh, glibc's tanhf (fdlibm) */

int tinyaot_unary_f32(int32_t fn, int32_t n, const float *input, float *output);

/* Elementwise float32 operations of tinyaot_binary_f32. */
#define TINYAOT_F32_ADD 0
#define TINYAOT_F32_SUB 1
#define TINYAOT_F32_MUL 2
#define TINYAOT_F32_DIV 3
#define TINYAOT_F32_MAX 4 /* (a < b) ? b : a, as std::max */
#define TINYAOT_F32_MIN 5 /* (b < a) ? b : a, as std::min */

/* out = a op b with broadcasting, op TINYAOT_F32_ADD ...; mode 1 (TFLite Micro) clamps the
 * result to [-FLT_MAX, FLT_MAX] as its float kernels' activation does; d = { dims[6], a_stride[6],
 * b_stride[6] }: the output's dims (row-major, leading 1s) and the element strides of a and
 * b per output axis (0 where broadcast). The output may be a or b when it has their shape. */
int tinyaot_binary_f32(int32_t op, int32_t mode, const int32_t d[18], const float *a,
                       const float *b, float *output);

#ifdef __cplusplus
}
#endif

#endif
