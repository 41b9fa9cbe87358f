"""Compile-time data of tinyaot_convolve_f32_s8 (onnxruntime's float Conv).

* the summation order: MLAS's segments (numerics/mlas_conv_order.py) as one
  int32 array of records {kind, m0, m1, n0, n1, nslices, k_end...};
* the weights dequantized as ORT's DequantizeLinear does (float(wq) * scale),
  packed [group][channel / 4][k][channel % 4], k = (c, ky, kx), so the
  kernel's inner loop loads 4 channels x 2 k with one VLDM;
* the input's 256 dequantized values (float(q - zp) * scale);
* each k's input offset from the window origin (im2col without per-tap setup).
"""
from __future__ import annotations

import numpy as np

from ..numerics import ort_float as of
from ..numerics.mlas_conv_order import KINDS, node_segments
from ..numerics.ort_float import float_weights

TILE = 4


PADDED_MAX = 16 * 1024  # bytes of the zero-padded float input copy, at most


def padded_hw(y_shape, w_shape, attrs):
    """Rows and columns of the input the windows reach, padding included."""
    (oh, ow), (kh, kw) = y_shape[2:], w_shape[2:]
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    return (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1


def _all_fma(x_shape, y_shape, attrs):
    words, _ = segment_words(x_shape, y_shape, attrs)
    recs = list(_records(words))
    return all(r[0] == KINDS["fma"] for r in recs), [r[3] for r in recs]


def use_padded(x_shape, y_shape, w_shape, attrs):
    """Dequantize the input once into a zero-padded float copy? Only for layers
    whose segments are all fma (the M=1 kinds gather from the int8 input) and
    whose copy is small (it lives in the arena next to input and output)."""
    if attrs.get("f32_compact_input") or not _all_fma(x_shape, y_shape, attrs)[0]:
        return False  # compact: planner/float_conv_scratch.py found it costs arena
    hp, wp = padded_hw(y_shape, w_shape, attrs)
    return hp * wp * int(x_shape[1]) * 4 <= PADDED_MAX


def use_band(x_shape, y_shape, w_shape, attrs):
    """Too big for the padded copy, stride 1 and dilation 1, 4-pixel groups
    inside one output row: a band of k_h zero-padded input rows, channel
    planar ([row slot][c][w]), one new row dequantized per output row; the 4
    pixels of a tap are then 4 consecutive floats (one VLDM / VSTM)."""
    fma, n0s = _all_fma(x_shape, y_shape, attrs)
    return (fma and not attrs.get("f32_compact_input")
            and not use_padded(x_shape, y_shape, w_shape, attrs)
            and tuple(attrs["strides"]) == (1, 1) and tuple(attrs["dilations"]) == (1, 1)
            and attrs["group"] == 1 and y_shape[3] % TILE == 0
            and all(n % TILE == 0 for n in n0s))


def input_mode(x_shape, y_shape, w_shape, attrs):
    """tinyaot_conv_f32_plan_t.padded: 0 the int8 input, 1 the padded copy, 2 the band."""
    if use_padded(x_shape, y_shape, w_shape, attrs):
        return 1
    return 2 if use_band(x_shape, y_shape, w_shape, attrs) else 0


def scratch_bytes(x_shape, w_shape, y_shape, attrs):
    """tinyaot_convolve_f32_s8_get_buffer_size: 4 pixel columns of K floats, a
    4x4 tile, then the padded float input copy, or the band (k_h rows of the
    padded width, planar), or a row of the input zero point (the padding
    taps' source)."""
    k = int(np.prod(w_shape[1:]))
    cin = int(x_shape[1])
    hp, wp = padded_hw(y_shape, w_shape, attrs)
    mode = input_mode(x_shape, y_shape, w_shape, attrs)
    extra = {0: (int(w_shape[1]) + 3) // 4 * 4, 1: hp * wp * cin * 4,
             2: int(w_shape[2]) * cin * wp * 4}[mode]
    return (k * TILE + TILE * TILE) * 4 + extra


def segment_words(x_shape, y_shape, attrs):
    segs = node_segments(x_shape, y_shape, attrs, attrs.get("ort_threads", 1))
    k = None
    words = []
    for s in segs:
        ends = [b for _, b in s.slices]
        starts = [a for a, _ in s.slices]
        assert starts[0] == 0 and starts[1:] == ends[:-1], s  # contiguous from 0
        k = ends[-1] if k is None else k
        words += [KINDS[s.kind], s.m0, s.m1, s.n0, s.n1, len(ends)] + ends
    return np.asarray(words, dtype=np.int32), len(segs)


def _records(words):
    """The segment records of a word array: (kind, m0, m1, n0, n1, nslices)."""
    i = 0
    while i < len(words):
        yield tuple(int(v) for v in words[i:i + 6])
        i += 6 + int(words[i + 5])


def has_fma(words):
    """Does the segment record array hold an fma segment (the 4x4 tiles)? Then
    every M=1 segment (ORT's threads split M down to one channel) has one
    channel and one K slice: what tinyaot_convolve_f32_s8 runs among tiles."""
    recs = list(_records(words))
    if all(r[0] != KINDS["fma"] for r in recs):
        return False
    assert all(r[0] == KINDS["fma"] or (r[2] - r[1], r[5]) == (1, 1) for r in recs), recs
    return True


def packed_weights(w, group, compact=False, int8=False):
    """float weights [O, cg, kh, kw] -> [group][tile][k][4] (zero rows to a multiple of
    4), or with compact (no fma segment: tinyaot_convolve_f32_m1_s8 reads one channel
    at a time, 8 k per step) [O][k rounded up to 8, zero padded] and tiles 0. With int8,
    the int8 weights themselves in the same layout (tinyaot_convolve_f32_b8_s8's filter,
    dequantized by the kernel)."""
    wf = np.asarray(w.data, dtype=np.int8) if int8 else float_weights(w)
    o = wf.shape[0]
    og = o // group
    k = int(np.prod(wf.shape[1:]))
    if compact:
        out = np.zeros((o, -(-k // 8) * 8), dtype=wf.dtype)
        out[:, :k] = wf.reshape(o, k)
        return out, 0, k
    tiles = -(-og // TILE)
    out = np.zeros((group, tiles * TILE, k), dtype=wf.dtype)
    out[:, :og] = wf.reshape(group, og, k)
    return out.reshape(group, tiles, TILE, k).transpose(0, 1, 3, 2).copy(), tiles, k


def blocks_candidate(x_shape, y_shape, attrs):
    """Can tinyaot_convolve_f32_b8_s8 run the layer (int8 weights dequantized a block of
    tiles at a time)? Groups 1 and an fma segment (the tiles it blocks)."""
    return attrs["group"] == 1 and has_fma(segment_words(x_shape, y_shape, attrs)[0])


def block_scratch_bytes(x_shape, w_shape, y_shape, attrs, block_tiles):
    """tinyaot_convolve_f32_b8_s8_get_buffer_size: a block of dequantized tiles, then
    tinyaot_convolve_f32_s8's scratch."""
    k = int(np.prod(w_shape[1:]))
    return block_tiles * TILE * k * 4 + scratch_bytes(x_shape, w_shape, y_shape, attrs)


def tap_offsets(x_shape, w_shape, attrs, width=None):
    """Per k = (c, ky, kx): the offset of its input (NHWC, rows of `width`
    pixels, default the input's) from the window's origin."""
    _, cin, _, w = x_shape
    w = w if width is None else width
    _, cg, kh, kw = w_shape
    dh, dw = attrs["dilations"]
    c, ky, kx = np.meshgrid(np.arange(cg), np.arange(kh), np.arange(kw), indexing="ij")
    return (c + (ky * dh * w + kx * dw) * cin).reshape(-1).astype(np.int32)


def input_table(in_scale, in_zp):
    return of.dequantize(np.arange(-128, 128), in_scale, in_zp).astype(np.float32)


def band_taps(x_shape, w_shape, width):
    """The band's tap offsets, one row of K per rotation r = output row % k_h:
    padded row oy + ky sits in slot (oy + ky) % k_h, so k = (c, ky, kx) reads
    ((r + ky) % k_h) * (in_c * width) + c * width + kx."""
    cin = int(x_shape[1])
    _, cg, kh, kw = (int(v) for v in w_shape)
    r, c, ky, kx = np.meshgrid(np.arange(kh), np.arange(cg), np.arange(kh), np.arange(kw),
                               indexing="ij")
    return (((r + ky) % kh) * cin * width + c * width + kx).reshape(-1).astype(np.int32)


def plan_fields(x_shape, y_shape, w, attrs, in_scale, in_zp, int8=False):
    """tinyaot_conv_f32_plan_t's fields (arrays for the pointers); with int8, "weights" is
    tinyaot_convolve_f32_b8_s8's int8 filter instead of the packed floats."""
    words, nseg = segment_words(x_shape, y_shape, attrs)
    packed, tiles, k = packed_weights(w, attrs["group"], compact=not has_fma(words), int8=int8)
    mode = input_mode(x_shape, y_shape, w.shape, attrs)
    width = padded_hw(y_shape, w.shape, attrs)[1]
    taps = (band_taps(x_shape, w.shape, width) if mode == 2 else
            tap_offsets(x_shape, w.shape, attrs, width if mode == 1 else None))
    return {"table": input_table(in_scale, in_zp), "weights": packed.reshape(-1), "segments": words,
            "taps": taps, "nseg": nseg, "k": k,
            "tiles": tiles, "padded": mode}

