"""The order in which onnxruntime (MLAS, x86-64) sums a float Conv, as data.

MLAS runs a 2-D float Conv per group as im2col + SGEMM with
C[m, n] = sum over k of W[m, k] * X[k, n] (m: output channel of the group,
n: output pixel in raster order, k: (channel, ky, kx)). Which pixels go
together, how K is cut into blocks and which kernel sums a block depend on
the shape and on the intra-op thread count (MlasConvPrepare, MlasConv,
MlasConvTryMultithread, MlasConvOperation in convolve.cpp; MlasGemmBatch,
MlasSgemmThreaded, MlasSgemmOperation in sgemm.cpp). This module repeats
those decisions at compile time and returns a list of segments

    Segment(kind, m0, m1, n0, n1, slices)

each one SGEMM call sequence over output channels [m0, m1) and pixels
[n0, n1); ``slices`` are the K ranges of its calls, in order, the first with
beta 0 (store) and the others with beta 1 (add to C). ``kind``:

* "fma":  the packed GEMM kernels: per slice, one fused multiply-add chain
          from zero, then C = chain + C.
* "m1":   M == 1 (one output channel per group, e.g. depthwise), MLAS's M=1
          kernel: per slice, products rounded, summed in groups of four
          ((p0 + p1) + p2) + p3 (then a group of two, then one), each group
          added to C (C counts as 0 in the first slice).
* "m1tb": a one-pixel output (N == 1), MLAS's M=1 "transpose B" kernel on
          the flipped product: per output channel 8 lanes, lane k % 8 adds
          the rounded product of k; lanes reduced as the kernel does for a
          run of 4, 2 or 1 channels (counted from m0), + C.

The bias (and Relu / Clip) come after, in MlasActivation: y = C + bias.
"""
from __future__ import annotations

from dataclasses import dataclass

STRIDEN = 128           # MLAS_SGEMM_STRIDEN
STRIDEK = 128           # MLAS_SGEMM_STRIDEK
THREAD_ALIGN = 16       # MLAS_SGEMM_STRIDEN_THREAD_ALIGN
THREAD_COMPLEXITY = 64 * 1024   # MLAS_SGEMM_THREAD_COMPLEXITY
MAX_THREADS = 16        # MLAS_MAXIMUM_THREAD_COUNT

KINDS = {"fma": 0, "m1": 1, "m1tb": 2}


@dataclass(frozen=True)
class Segment:
    kind: str
    m0: int
    m1: int
    n0: int
    n1: int
    slices: tuple  # ((k0, k1), ...)


def _partition(index, count, total):
    """MlasPartitionWork: (start, count) of thread `index` of `count`."""
    per, extra = divmod(total, count)
    if index < extra:
        return (per + 1) * index, per + 1
    return per * index + extra, per


def _strides(n, k, trans_a_none=True):
    """MlasSgemmOperation / MlasConvOperation: (StrideN, StrideK) for an N x K problem."""
    sn, sk = STRIDEN, STRIDEK
    if n >= k:
        while sk // 2 >= k:
            sn, sk = sn * 2, sk // 2
    elif trans_a_none:
        while sn > 16 and sn // 2 >= n:
            sn, sk = sn // 2, sk * 2
    return sn, sk


def _cuts(k0, k1, step):
    return tuple((a, min(k1, a + step)) for a in range(k0, k1, step))


def _sgemm(m0, m1, n0, n1, k0, k1, trans_b, ldb_is_1, ldc_is_1):
    """MlasSgemmOperation(M = m1-m0, N = n1-n0, K = k1-k0, alpha 1) as segments
    (beta 0 or 1 does not change how it is split)."""
    m, n, k = m1 - m0, n1 - n0, k1 - k0
    if m == 1:
        return [Segment("m1tb" if trans_b else "m1", m0, m1, n0, n1, ((k0, k1),))]
    if n == 1 and ldb_is_1 and ldc_is_1:
        return [Segment("m1tb", m0, m1, n0, n1, ((k0, k1),))]
    _, sk = _strides(n, k)
    return [Segment("fma", m0, m1, n0, n1, _cuts(k0, k1, sk))]


def _gemm_threaded(m, n, k, threads, trans_b, ldb_is_1, ldc_is_1):
    """MlasGemm (MlasGemmBatch with one GEMM): split over M or N across threads."""
    cx = float(m) * float(n) * float(k)
    target = int(cx / THREAD_COMPLEXITY) + 1 if cx < THREAD_COMPLEXITY * MAX_THREADS else MAX_THREADS
    target = min(target, threads)
    segs = []
    if n > m:
        blocked = (n + THREAD_ALIGN - 1) // THREAD_ALIGN
        t = min(target, blocked)
        for i in range(t):
            s, c = _partition(i, t, blocked)
            s, c = s * THREAD_ALIGN, c * THREAD_ALIGN
            c = min(n - s, c)
            if c > 0:
                segs += _sgemm(0, m, s, s + c, 0, k, trans_b, ldb_is_1, ldc_is_1)
    else:
        t = min(target, m)
        for i in range(t):
            s, c = _partition(i, t, m)
            if c > 0:
                segs += _sgemm(s, s + c, 0, n, 0, k, trans_b, ldb_is_1, ldc_is_1)
    return segs


def _conv_operation(m, n_total, k, seg0, seg_n):
    """MlasConvOperation over pixels [seg0, seg0 + seg_n)."""
    sn, sk = _strides(seg_n, k)
    segs = []
    for n0 in range(0, seg_n, sn):
        cn = min(sn, seg_n - n0)
        parts = []
        for k0 in range(0, k, sk):
            ck = min(sk, k - k0)
            parts += _sgemm(0, m, seg0 + n0, seg0 + n0 + cn, k0, k0 + ck, False,
                            cn == 1, n_total == 1)
        # consecutive calls over the same rectangle and kind: one segment
        merged = [parts[0]]
        for p in parts[1:]:
            q = merged[-1]
            if (p.kind, p.m0, p.m1, p.n0, p.n1) == (q.kind, q.m0, q.m1, q.n0, q.n1):
                merged[-1] = Segment(q.kind, q.m0, q.m1, q.n0, q.n1, q.slices + p.slices)
            else:  # cannot happen: every call of one N slice has the same M and N
                raise AssertionError("MLAS conv slices of different kinds")
        segs += merged
    return segs


def conv_segments(cin_g, cout_g, groups, in_hw, out_hw, kernel, strides, pads, dilations,
                  threads=1):
    """Segments of one group (every group of a conv is summed the same way)."""
    h, w = in_hw
    oh, ow = out_hw
    kh, kw = kernel
    n = oh * ow
    k = cin_g * kh * kw
    m = cout_g
    threads = max(1, int(threads))
    strides_one = tuple(strides) == (1, 1)
    pad_zero = all(int(p) == 0 for p in pads)
    dil_one = tuple(dilations) == (1, 1)
    if strides_one and pad_zero:
        direct = None
        if k == cin_g:  # pointwise
            direct = (False, n == 1)
        elif dil_one and cin_g == 1:
            if kw == w:
                direct = (True, w == 1)
            elif kh == h and kw == 1:
                direct = (False, w == 1)
        if direct is not None:
            trans_b, ldb_is_1 = direct
            if groups > 1:  # MlasConvGemmDirectThreaded: one whole SGEMM per group
                return _sgemm(0, m, 0, n, 0, k, trans_b, ldb_is_1, n == 1)
            return _gemm_threaded(m, n, k, threads, trans_b, ldb_is_1, n == 1)
    if m > n:  # ExpandThenGemm: whole im2col, threaded GEMM
        return _gemm_threaded(m, n, k, threads, False, n == 1, n == 1)
    if groups > 1:  # one segment per group, whatever the thread count
        return _conv_operation(m, n, k, 0, n)
    cx = float(m) * float(n) * float(k)
    target = int(cx / THREAD_COMPLEXITY) + 1 if cx < THREAD_COMPLEXITY * MAX_THREADS else MAX_THREADS
    target = min(target, threads)
    stride_n = -(-n // target)
    if target > 1:
        stride_n = (stride_n + THREAD_ALIGN - 1) & ~(THREAD_ALIGN - 1)
    if stride_n >= n:
        return _conv_operation(m, n, k, 0, n)
    segs = []
    for s in range(0, n, stride_n):
        segs += _conv_operation(m, n, k, s, min(stride_n, n - s))
    return segs


def node_segments(x_shape, y_shape, attrs, threads=1):
    """conv_segments for an IR conv2d node (NCHW logical shapes)."""
    _, cin, h, w = x_shape
    _, cout, oh, ow = y_shape
    g = attrs["group"]
    return conv_segments(cin // g, cout // g, g, (h, w), (oh, ow), attrs["kernel"],
                         attrs["strides"], attrs["pads"], attrs["dilations"], threads)


def _f32(v):
    import numpy as np
    return np.asarray(v, dtype=np.float32)


def _m1tb_reduce(lanes, rows):
    """The M=1 transpose-B kernel's lane reduction for `rows` rows (4, 2 or 1)."""
    L = [lanes[:, j] for j in range(8)]
    if rows == 4:
        t = _f32(_f32(_f32(L[0] + L[1]) + L[2]) + L[3])
        u = _f32(_f32(_f32(L[4] + L[5]) + L[6]) + L[7])
        return _f32(t + u)
    if rows == 2:
        a = _f32(_f32(L[0] + L[2]) + _f32(L[4] + L[6]))
        b = _f32(_f32(L[1] + L[3]) + _f32(L[5] + L[7]))
        return _f32(a + b)
    h = [_f32(L[0] + L[1]), _f32(L[2] + L[3]), _f32(L[4] + L[5]), _f32(L[6] + L[7])]
    return _f32(_f32(h[0] + h[1]) + _f32(h[2] + h[3]))


def run_segments(cols, wmat, segments):
    """C = W x cols in MLAS's order. cols [K, N] float32 (im2col of one group,
    padding as zeros), wmat [M, K] float32 -> C [M, N] float32 (bias not added)."""
    import numpy as np
    from .ort_float import fma_f32
    F32 = np.float32
    c = np.zeros((wmat.shape[0], cols.shape[1]), dtype=F32)
    for s in segments:
        x = cols[:, s.n0:s.n1]
        wm = wmat[s.m0:s.m1]
        cur = None
        for k0, k1 in s.slices:
            if s.kind == "fma":
                part = np.zeros((s.m1 - s.m0, s.n1 - s.n0), dtype=F32)
                for k in range(k0, k1):
                    part = fma_f32(part, wm[:, k:k + 1], x[k][None, :])
                cur = part if cur is None else (part + cur).astype(F32)
            elif s.kind == "m1":
                kk = k0
                for size in [4] * ((k1 - k0) // 4) + [2] * ((k1 - k0) % 4 // 2) + [1] * ((k1 - k0) % 2):
                    part = (wm[:, kk:kk + 1] * x[kk][None, :]).astype(F32)
                    for d in range(kk + 1, kk + size):
                        part = (part + (wm[:, d:d + 1] * x[d][None, :]).astype(F32)).astype(F32)
                    cur = (part + (F32(0) if cur is None else cur)).astype(F32)
                    kk += size
            else:  # m1tb: rows are channels (or pixels when the segment has one channel)
                prod = (wm[:, None, k0:k1] * x[k0:k1].T[None, :, :]).astype(F32)  # [M, N, K]
                if s.m1 - s.m0 == 1:
                    prod = prod[0]          # rows = pixels
                else:
                    prod = prod[:, 0]       # rows = channels (N == 1)
                lanes = np.zeros((prod.shape[0], 8), dtype=F32)
                for k in range(prod.shape[1]):
                    lanes[:, k % 8] = (lanes[:, k % 8] + prod[:, k]).astype(F32)
                out = np.zeros(prod.shape[0], dtype=F32)
                r = 0
                while r < prod.shape[0]:
                    rows = 4 if prod.shape[0] - r >= 4 else (2 if prod.shape[0] - r >= 2 else 1)
                    out[r:r + rows] = _m1tb_reduce(lanes[r:r + rows], rows)
                    r += rows
                out = out.reshape(s.m1 - s.m0, s.n1 - s.n0)
                cur = out if cur is None else (out + cur).astype(F32)
        c[s.m0:s.m1, s.n0:s.n1] = cur
    return c
