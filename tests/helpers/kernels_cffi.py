"""The runtime_c kernel library, built once per process and loaded with cffi.

Shared by the kernel tests: `lib()` returns the loaded library, `ffi` its
cffi.FFI, and the wrappers below take NHWC / row-major numpy int8 arrays and
plain dicts of struct fields, and return numpy int8 arrays.

No hand-written copy of the ABI: the cdef is read from
runtime_c/include/tinyaot_kernels.h at load time (preprocessor lines and the
`extern "C"` guard stripped), so a field added by someone else is picked up.
`new_struct` then insists that the caller sets *every* field of a struct and
nothing else: if the header drifted (a field added, renamed or removed) the
test fails with one line naming the struct and the fields, instead of
silently passing zeros to a kernel.

Build: gcc -O1 -fPIC -std=c99 -ffp-contract=off -c runtime_c/src/*/*.c (two
compilers at a time), linked -shared with -lm, into a private temporary
directory (so parallel sessions never share a .so). By default it is
compiled with -fsanitize=undefined (libubsan loads fine in-process via
dlopen; ASan would not) and every wrapper captures the call's stderr, so a UBSan report in a kernel fails the test that triggered
it (UBSan reports each source location once per process).
TINYAOT_KERNEL_UBSAN=0 builds without it; TINYAOT_CC picks the compiler;
TINYAOT_RUNTIME_C=DIR tests another copy of runtime_c/ (how the tests were
shown to fail: a mutated copy).
"""
from __future__ import annotations

import atexit
import fcntl
import functools
import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cffi
import numpy as np

REPO = Path(__file__).resolve().parents[2]
# TINYAOT_RUNTIME_C: test another copy of runtime_c/ (e.g. a deliberately mutated one)
RUNTIME = Path(os.environ.get("TINYAOT_RUNTIME_C", REPO / "runtime_c"))
INCLUDE = RUNTIME / "include"
HEADER = INCLUDE / "tinyaot_kernels.h"
SRC = RUNTIME / "src"          # kernels in category folders, helpers in src/internal

BASE_FLAGS = ["-O1", "-shared", "-fPIC", "-std=c99", "-ffp-contract=off"]
UBSAN_FLAGS = ["-fsanitize=undefined", "-fno-omit-frame-pointer", "-g"]
GUARD = 16  # canary bytes on each side of every output buffer


class KernelABIDrift(AssertionError):
    """The header no longer matches what the tests fill in."""


class KernelUB(AssertionError):
    """UBSan reported undefined behaviour inside a kernel."""


# ---------------------------------------------------------------- header

def _strip_cplusplus(text):
    return re.sub(r"#\s*ifdef\s+__cplusplus.*?#\s*endif", "", text, flags=re.S)


def header_cdef(text=None):
    """(cdef source, {macro: int}) from tinyaot_kernels.h."""
    text = HEADER.read_text() if text is None else text
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = _strip_cplusplus(text)
    consts = {}
    body = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            m = re.match(r"#\s*define\s+(\w+)\s+\(?\s*(-?\s*(?:0x[0-9a-fA-F]+|\d+))[uUlL]*\s*\)?\s*$", s)
            if m:
                consts[m.group(1)] = int(m.group(2).replace(" ", ""), 0)
            continue
        body.append(line)
    return "\n".join(body), consts


def _regex_cdef(src):
    """Fallback: only the typedef'd structs and the tinyaot_* prototypes."""
    parts = re.findall(r"typedef\s+struct\s*\w*\s*\{[^{}]*\}\s*\w+\s*;", src)
    parts += re.findall(r"^\s*(?:int|void|int32_t)\s+tinyaot_\w+\s*\([^;{]*\)\s*;", src, flags=re.M)
    return "\n".join(parts)


FAST_HEADER = INCLUDE / "tinyaot_fast_kernels.h"


def _make_ffi():
    src, consts = header_cdef()
    if FAST_HEADER.exists():  # the fast kernels' prototypes (their types are the header's)
        fast, _ = header_cdef(FAST_HEADER.read_text())
        src += "\n" + "\n".join(re.findall(r"^\s*(?:int|int32_t)\s+tinyaot_\w+\s*\([^;{]*\)\s*;",
                                           fast, flags=re.M))
    ffi = cffi.FFI()
    try:
        ffi.cdef(src)
    except cffi.CDefError as e:  # something cffi cannot parse: keep what we need
        ffi = cffi.FFI()
        try:
            ffi.cdef(_regex_cdef(src))
        except cffi.CDefError as e2:
            raise KernelABIDrift(f"cannot parse {HEADER} with cffi: {e}; fallback: {e2}") from e2
    return ffi, consts


ffi, CONSTS = _make_ffi()
TINYAOT_OK = CONSTS.get("TINYAOT_OK", 0)


def struct_fields(ctype):
    return [name for name, _ in ffi.typeof(ctype).fields]


def new_struct(ctype, fields, keep):
    """ffi.new(ctype *) with every field set from `fields` (exactly)."""
    want = struct_fields(ctype)
    missing = [f for f in want if f not in fields]
    extra = [f for f in fields if f not in want]
    if missing or extra:
        raise KernelABIDrift(
            f"{ctype} in {HEADER.name} drifted from the tests: header fields not set by the "
            f"tests {missing}, fields the tests set that the header lacks {extra}; "
            f"header order {want}")
    s = ffi.new(f"{ctype} *")
    for k, v in fields.items():
        setattr(s, k, _cval(v, keep))
    keep.append(s)
    return s


def _cval(v, keep):
    if isinstance(v, np.ndarray):
        ctype = {np.dtype(np.int8): "int8_t[]", np.dtype(np.int32): "int32_t[]",
                 np.dtype(np.float32): "float[]"}[v.dtype]
        v = np.ascontiguousarray(v)
        keep.append(v)
        p = ffi.from_buffer(ctype, v)
        keep.append(p)
        return p
    if v is None:
        return ffi.NULL
    if isinstance(v, (np.floating, float)):
        return float(v)
    return int(v)


def cbuf(arr, dtype, keep):
    """Read-only pointer to a contiguous copy of arr as dtype."""
    a = np.ascontiguousarray(np.asarray(arr).astype(dtype, copy=False))
    if a.size == 0:
        a = np.zeros(1, dtype=dtype)
    keep.append(a)
    p = ffi.from_buffer({np.dtype(np.int8): "int8_t[]", np.dtype(np.int32): "int32_t[]",
                         np.dtype(np.float32): "float[]"}[a.dtype], a)
    keep.append(p)
    return p


class OutBuf:
    """An int8 output buffer with random canaries on both sides."""

    def __init__(self, n, rng=None):
        rng = rng or np.random.default_rng(n)
        self.n = n
        self.raw = rng.integers(-128, 128, size=n + 2 * GUARD, dtype=np.int64).astype(np.int8)
        self.canary = self.raw.copy()
        self.ptr = ffi.from_buffer("int8_t[]", self.raw[GUARD:GUARD + max(n, 0)] if n else
                                   self.raw[GUARD:GUARD + 1], require_writable=True)

    def result(self, what):
        lo, hi = self.raw[:GUARD], self.raw[GUARD + self.n:]
        if not (np.array_equal(lo, self.canary[:GUARD]) and
                np.array_equal(hi, self.canary[GUARD + self.n:])):
            raise AssertionError(f"{what} wrote outside its output buffer of {self.n} bytes")
        return self.raw[GUARD:GUARD + self.n].copy()


# ---------------------------------------------------------------- build

class _Lib:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="tinyaot_kffi_"))
        atexit.register(shutil.rmtree, self.dir, True)
        cc = os.environ.get("TINYAOT_CC", "gcc")
        if shutil.which(cc) is None:
            raise RuntimeError(f"{cc} not found: cannot build runtime_c for the kernel tests")
        srcs = sorted(glob.glob(str(SRC / "**" / "*.c"), recursive=True))
        want_ubsan = os.environ.get("TINYAOT_KERNEL_UBSAN", "1") != "0"
        self.ubsan = False
        self.build_log = ""
        so = None
        if want_ubsan:
            so = self._build(cc, srcs, UBSAN_FLAGS, "libtinyaot_kernels_ubsan.so")
            if so is not None:
                try:
                    self.lib = ffi.dlopen(str(so))
                    self.ubsan = True
                    # UBSan reads UBSAN_OPTIONS from /proc/self/environ (too late to set
                    # here) and reports on stderr: each call's fd 2 goes to this file.
                    self.ubsan_log = open(self.dir / "ubsan.log", "w+b")
                    atexit.register(self.ubsan_log.close)
                except OSError as e:
                    self.build_log += f"UBSan library did not load ({e}); plain build\n"
                    so = None
        if so is None:
            so = self._build(cc, srcs, [], "libtinyaot_kernels.so", required=True)
            self.lib = ffi.dlopen(str(so))
        self.so = so

    def _build(self, cc, srcs, extra, name, required=False):
        """The library of runtime_c built with `extra` flags. Built once per source tree and
        flags: a copy is kept under build/kernels_cffi/<hash of the sources, flags and
        compiler> (under a file lock, so the xdist workers build it once between them) and
        loaded from this process's own directory."""
        cmd = [cc, *BASE_FLAGS, *extra, *srcs, f"-I{INCLUDE}", "-lm", "-o"]
        key = hashlib.sha256("\0".join(cmd + [_cc_version(cc)]).encode())
        for f in sorted(glob.glob(str(RUNTIME / "**" / "*.[ch]"), recursive=True)):
            key.update(f.encode() + b"\0" + Path(f).read_bytes())
        cache = REPO / "build" / "kernels_cffi" / key.hexdigest()[:20]
        cache.mkdir(parents=True, exist_ok=True)
        out = self.dir / name
        with open(cache / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (cache / name).is_file():
                tmp = cache / f"{name}.{os.getpid()}.tmp"
                err = _compile_and_link(cc, srcs, extra, tmp)
                if err is not None:
                    if required:
                        raise RuntimeError("building runtime_c failed:\n" + " ".join(cmd) +
                                           "\n" + err)
                    self.build_log += err
                    return None
                os.replace(tmp, cache / name)
            shutil.copyfile(cache / name, out)
        return out

    def call(self, name, *args):
        """lib.name(*args); under UBSan, with stderr captured and checked. (UBSan
        reports each source location once per process: the first case that hits
        it fails.)"""
        fn = getattr(self.lib, name)
        if not self.ubsan:
            return fn(*args)
        log = self.ubsan_log
        log.seek(0)
        log.truncate()
        saved = os.dup(2)
        try:
            os.dup2(log.fileno(), 2)
            rc = fn(*args)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        log.seek(0)
        text = log.read().decode(errors="replace")
        if "runtime error" in text:
            raise KernelUB(f"UBSan in {name}:\n{text}")
        return rc


def _compile_and_link(cc, srcs, extra, out):
    """The sources compiled to objects on up to two cores, then linked into `out`; the
    compiler's messages if a step fails, else None. The xdist workers wait on this
    build at the start of a cold session (one builds under the lock, the other waits):
    the waiting worker's core compiles too."""
    compile_flags = [f for f in BASE_FLAGS if f != "-shared"] + list(extra) + [f"-I{INCLUDE}"]
    objs = Path(tempfile.mkdtemp(prefix="objs-", dir=out.parent))
    try:
        def one(i_src):
            obj = objs / f"{i_src[0]:03d}.o"
            p = subprocess.run([cc, *compile_flags, "-c", i_src[1], "-o", str(obj)],
                               capture_output=True, text=True)
            return obj, p
        with ThreadPoolExecutor(max(1, min(2, os.cpu_count() or 1))) as ex:
            done = list(ex.map(one, enumerate(srcs)))
        bad = [p.stdout + p.stderr for _, p in done if p.returncode != 0]
        if bad:
            return "".join(bad)
        p = subprocess.run([cc, *BASE_FLAGS, *extra, *(str(o) for o, _ in done), "-lm", "-o",
                            str(out)], capture_output=True, text=True)
        return None if p.returncode == 0 else p.stdout + p.stderr
    finally:
        shutil.rmtree(objs, ignore_errors=True)


@functools.lru_cache(maxsize=None)
def _cc_version(cc):
    return subprocess.run([cc, "--version"], capture_output=True, text=True).stdout


@functools.lru_cache(maxsize=None)
def kernels() -> _Lib:
    return _Lib()


def lib():
    return kernels().lib


# C prologue of a capture source: tinyaot_quantize_f32 replaced by a recorder of
# the float it is given (a kernel's output before QuantizeLinear), into cap_.
CAPTURE_QUANTIZE_C = r"""
#include "internal/tinyaot_requant.h"
static float *cap_;
static int8_t capture_f32(float x, float s, int32_t zp, int32_t lo, int32_t hi)
{
    (void)s; (void)zp; (void)lo; (void)hi;
    *cap_++ = x;
    return 0;
}
#define tinyaot_quantize_f32 capture_f32
"""


# cdef of the two structs the float conv kernels take (capture sources' cffi)
CONV_F32_STRUCTS_CDEF = """
typedef struct { int32_t in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h, stride_w,
                 dil_h, dil_w, pad_top, pad_left, groups; } tinyaot_conv_dims_t;
typedef struct { float in_scale; int32_t in_zp; float out_scale; int32_t out_zp;
                 int32_t act_min, act_max; const int8_t *filter; const float *filter_scale;
                 const float *bias_f; } tinyaot_float_conv_t;
"""


def conv_dims_fields(x_shape, out_shape, attrs):
    """tinyaot_conv_dims_t's fields, in order, of an NCHW conv (attrs as the IR's)."""
    _, cin, h, w = x_shape
    _, cout, oh, ow = out_shape
    return [h, w, cin, oh, ow, cout, *attrs["kernel"], *attrs["strides"], *attrs["dilations"],
            attrs["pads"][0], attrs["pads"][1], attrs["group"]]


def capture_library(out_dir, source, cdef, opt="-O1"):
    """Compile a C source that #includes one kernel's .c (e.g. with its
    QuantizeLinear redefined to record the floats) into a shared library;
    returns (ffi, lib) for the functions in `cdef`."""
    out_dir = Path(out_dir)
    (out_dir / "capture.c").write_text(source)
    so = out_dir / "capture.so"
    subprocess.run(["gcc", opt, "-shared", "-fPIC", "-std=c99", "-ffp-contract=off",
                    "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE}", f"-I{SRC}",
                    str(out_dir / "capture.c"), "-o", str(so), "-lm"], check=True)
    cap_ffi = cffi.FFI()
    cap_ffi.cdef(cdef)
    return cap_ffi, cap_ffi.dlopen(str(so))


def _call(name, *args):
    rc = kernels().call(name, *args)
    if rc != TINYAOT_OK:
        raise AssertionError(f"{name} returned {rc}")


# ---------------------------------------------------------------- wrappers
# Activations are NHWC (conv, pool) or row-major; results are flat int8
# arrays reshaped by the caller.

def _requant(q, keep):
    return new_struct("tinyaot_requant_t", q, keep)


def convolve_s8(dims, q, x, filt, rng=None):
    """dims: tinyaot_conv_dims_t fields; q: tinyaot_requant_t fields (arrays for
    bias / scale / mult / shift, None for NULL); filt [out_c][k_h][k_w][in_c/groups]."""
    keep = []
    d = new_struct("tinyaot_conv_dims_t", dims, keep)
    out = OutBuf(dims["out_h"] * dims["out_w"] * dims["out_c"], rng)
    _call("tinyaot_convolve_s8", d, _requant(q, keep), cbuf(x, np.int8, keep),
          cbuf(filt, np.int8, keep), out.ptr)
    return out.result("tinyaot_convolve_s8")


def depthwise_conv_s8(dims, q, x, filt, rng=None):
    """filt [k_h][k_w][out_c]."""
    keep = []
    d = new_struct("tinyaot_conv_dims_t", dims, keep)
    out = OutBuf(dims["out_h"] * dims["out_w"] * dims["out_c"], rng)
    _call("tinyaot_depthwise_conv_s8", d, _requant(q, keep), cbuf(x, np.int8, keep),
          cbuf(filt, np.int8, keep), out.ptr)
    return out.result("tinyaot_depthwise_conv_s8")


def convolve_f32_s8(dims, fp, plan, x, rng=None):
    """fp: tinyaot_float_conv_t fields (output quantization, bias_f); plan:
    tinyaot_conv_f32_plan_t fields (kernels/conv_f32_pack.py). The scratch is
    NaN-filled: the kernel must write before it reads."""
    keep = []
    d = new_struct("tinyaot_conv_dims_t", dims, keep)
    p = new_struct("tinyaot_float_conv_t", fp, keep)
    pl = new_struct("tinyaot_conv_f32_plan_t", plan, keep)
    nbytes = lib().tinyaot_convolve_f32_s8_get_buffer_size(d, pl)
    scratch = np.full(-(-nbytes // 4), np.nan, np.float32)
    out = OutBuf(dims["out_h"] * dims["out_w"] * dims["out_c"], rng)
    name = "tinyaot_convolve_f32_s8" if plan["tiles"] else "tinyaot_convolve_f32_m1_s8"
    _call(name, d, p, pl, cbuf(x, np.int8, keep), ffi.from_buffer("float[]", scratch), out.ptr)
    return out.result(name)


def fully_connected_s8(rows, k, n, q, x, w, rng=None):
    keep = []
    out = OutBuf(rows * n, rng)
    _call("tinyaot_fully_connected_s8", rows, k, n, _requant(q, keep), cbuf(x, np.int8, keep),
          cbuf(w, np.int8, keep), out.ptr)
    return out.result("tinyaot_fully_connected_s8")


def fully_connected_f32_s8(rows, k, n, fp, x, rng=None):
    """fp: tinyaot_float_fc_t fields (weights packed by kernels/fc_float_pack.py)."""
    keep = []
    p = new_struct("tinyaot_float_fc_t", fp, keep)
    out = OutBuf(rows * n, rng)
    nbytes = lib().tinyaot_fully_connected_f32_s8_get_buffer_size(k)
    scratch = np.full(nbytes // 4, np.nan, np.float32)  # written before it is read
    _call("tinyaot_fully_connected_f32_s8", rows, k, n, p, cbuf(x, np.int8, keep),
          ffi.from_buffer("float[]", scratch), out.ptr)
    return out.result("tinyaot_fully_connected_f32_s8")


def add_s8(n, params, a, b, b_stride, rng=None):
    keep = []
    p = new_struct("tinyaot_add_params_t", params, keep)
    out = OutBuf(n, rng)
    _call("tinyaot_add_s8", n, p, cbuf(a, np.int8, keep), cbuf(b, np.int8, keep), b_stride,
          out.ptr)
    return out.result("tinyaot_add_s8")


def _conv_with_scratch(name, dims, q, x, weights, wtype, extra, scratch_bytes, rng):
    """name(dims, q, x, weights, *extra, scratch, out) with the scratch poisoned and
    guarded (OutBuf), as the fast convs are called."""
    keep = []
    d = new_struct("tinyaot_conv_dims_t", dims, keep)
    out = OutBuf(dims["out_h"] * dims["out_w"] * dims["out_c"], rng)
    scratch = OutBuf(scratch_bytes, rng)
    _call(name, d, _requant(q, keep), cbuf(x, np.int8, keep), cbuf(weights, wtype, keep), *extra,
          ffi.cast("uint32_t *", scratch.ptr), out.ptr)
    scratch.result(f"{name} scratch")
    return out.result(name)


def convolve_fast_s8(dims, q, x, packed, scratch_bytes, rng=None):
    """tinyaot_convolve_fast_s8: packed = fast_pack.pack_conv_gemm(conv_gemm_weights(w))."""
    return _conv_with_scratch("tinyaot_convolve_fast_s8", dims, q, x, packed, np.int32, (),
                              scratch_bytes, rng)


def convolve_fast_w8_s8(dims, q, x, filt, block_pairs, scratch_bytes, rng=None):
    """tinyaot_convolve_fast_w8_s8: filt int8 [oc][kq] (fast_pack.conv_gemm_weights), the
    scratch of block_pairs pixel pairs."""
    return _conv_with_scratch("tinyaot_convolve_fast_w8_s8", dims, q, x, filt, np.int8,
                              (block_pairs,), scratch_bytes, rng)


def convolve_1x1_w8_s8(dims, q, x, packed, scratch_bytes, rng=None):
    """tinyaot_convolve_1x1_w8_s8: packed = fast_pack.pack_conv_pairs(w, in_zp, bias), q's
    records from fast_pack.pair_records."""
    return _conv_with_scratch("tinyaot_convolve_1x1_w8_s8", dims, q, x, packed, np.int32, (),
                              scratch_bytes, rng)


def convolve_winograd_s8(dims, q, x, packed, scratch_bytes, rng=None):
    """tinyaot_convolve_winograd_s8: packed = winograd_pack.pack_winograd(w), the scratch
    scratch_bytes long."""
    return _conv_with_scratch("tinyaot_convolve_winograd_s8", dims, q, x, packed, np.int32, (),
                              scratch_bytes, rng)


def _conv_words(name, dims, q, x, words, rng):
    """A conv kernel `name`(dims, q, x, (const uint32_t *) words, output)."""
    keep = []
    d = new_struct("tinyaot_conv_dims_t", dims, keep)
    out = OutBuf(dims["out_h"] * dims["out_w"] * dims["out_c"], rng)
    _call(name, d, _requant(q, keep), cbuf(x, np.int8, keep),
          ffi.cast("const uint32_t *", cbuf(words, np.int32, keep)), out.ptr)
    return out.result(name)


def convolve_sparse_s8(dims, q, x, words, rng=None):
    """tinyaot_convolve_sparse_s8: words = fast_pack.pack_sparse(w)."""
    return _conv_words("tinyaot_convolve_sparse_s8", dims, q, x, words, rng)


def convolve_narrow_s8(dims, q, x, words, rng=None):
    """tinyaot_convolve_narrow_s8: words = fast_pack.pack_narrow(w)."""
    return _conv_words("tinyaot_convolve_narrow_s8", dims, q, x, words, rng)


def check_conv_cases(kernel, cases, seed):
    """Each case (dims fields, q, x, weights, want, label) through the host wrapper
    `kernel` (e.g. convolve_sparse_s8) equals its want."""
    rng = np.random.default_rng(seed)
    names = struct_fields("tinyaot_conv_dims_t")
    for i, (dims, q, x, words, want, info) in enumerate(cases):
        got = kernel(dict(zip(names, dims)), q, x, words, rng).reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"case {i}: {info}")


def buffer_size(name, dims, *args):
    """<name>_get_buffer_size(dims, *args) of a conv kernel."""
    keep = []
    return getattr(lib(), f"{name}_get_buffer_size")(new_struct("tinyaot_conv_dims_t", dims,
                                                                keep), *args)


def depthwise_conv_fast_s8(dims, q, x, packed, rng=None):
    keep = []
    d = new_struct("tinyaot_conv_dims_t", dims, keep)
    out = OutBuf(dims["out_h"] * dims["out_w"] * dims["out_c"], rng)
    _call("tinyaot_depthwise_conv_fast_s8", d, _requant(q, keep), cbuf(x, np.int8, keep),
          cbuf(packed, np.int32, keep), out.ptr)
    return out.result("tinyaot_depthwise_conv_fast_s8")


def _fc_packed(name, rows, k, n, q, x, packed, scratch_bytes, rng):
    """A fast FC kernel `name`(rows, k, n, q, x, (const int32_t *) packed, scratch, output),
    its scratch and output checked for writes outside them."""
    keep = []
    out = OutBuf(rows * n, rng)
    scratch = OutBuf(scratch_bytes, rng)
    _call(name, rows, k, n, _requant(q, keep), cbuf(x, np.int8, keep),
          cbuf(packed, np.int32, keep), ffi.cast("uint32_t *", scratch.ptr), out.ptr)
    scratch.result(f"{name} scratch")
    return out.result(name)


def fully_connected_fast_s8(rows, k, n, q, x, packed, scratch_bytes, rng=None):
    return _fc_packed("tinyaot_fully_connected_fast_s8", rows, k, n, q, x, packed,
                      scratch_bytes, rng)


def fully_connected_fast_w8_s8(rows, k, n, q, x, packed, scratch_bytes, rng=None):
    """packed: fast_pack.pack_fc_pairs's int32 words."""
    return _fc_packed("tinyaot_fully_connected_fast_w8_s8", rows, k, n, q, x, packed,
                      scratch_bytes, rng)


def fully_connected_bits_s8(rows, k, n, q, x, packed, rng=None):
    """packed: bits_pack.BitsWeights; the scratch (one int16 row) checked for writes
    outside it."""
    keep = []
    out = OutBuf(rows * n, rng)
    scratch = OutBuf(kernels().call("tinyaot_fully_connected_bits_s8_get_buffer_size", k), rng)
    ol = np.ascontiguousarray(np.asarray(packed.outliers, dtype=np.uint16))
    if ol.size == 0:
        ol = np.zeros(1, np.uint16)
    keep.append(ol)
    _call("tinyaot_fully_connected_bits_s8", rows, k, n, packed.bits, _requant(q, keep),
          cbuf(x, np.int8, keep), ffi.cast("const uint32_t *", cbuf(packed.stream, np.int32, keep)),
          ffi.from_buffer("uint16_t[]", ol), ffi.cast("int16_t *", scratch.ptr), out.ptr)
    scratch.result("tinyaot_fully_connected_bits_s8 scratch")
    return out.result("tinyaot_fully_connected_bits_s8")


def add_fast_s8(n, params, a, b, b_stride, rng=None):
    keep = []
    p = new_struct("tinyaot_add_params_t", params, keep)
    out = OutBuf(n, rng)
    _call("tinyaot_add_fast_s8", n, p, cbuf(a, np.int8, keep), cbuf(b, np.int8, keep), b_stride,
          out.ptr)
    return out.result("tinyaot_add_fast_s8")


def _pool(name, params, x, rng):
    keep = []
    p = new_struct("tinyaot_pool_params_t", params, keep)
    out = OutBuf(params["out_h"] * params["out_w"] * params["c"], rng)
    _call(name, p, cbuf(x, np.int8, keep), out.ptr)
    return out.result(name)


def avgpool_s8(params, x, rng=None):
    return _pool("tinyaot_avgpool_s8", params, x, rng)


def maxpool_s8(params, x, rng=None):
    return _pool("tinyaot_maxpool_s8", params, x, rng)


def softmax_s8(rows, n, params, x, rng=None):
    keep = []
    p = new_struct("tinyaot_softmax_params_t", params, keep)
    out = OutBuf(rows * n, rng)
    _call("tinyaot_softmax_s8", rows, n, p, cbuf(x, np.int8, keep), out.ptr)
    return out.result("tinyaot_softmax_s8")


def requantize_s8(n, params, x, rng=None):
    keep = []
    p = new_struct("tinyaot_requantize_params_t", params, keep)
    out = OutBuf(n, rng)
    _call("tinyaot_requantize_s8", n, p, cbuf(x, np.int8, keep), out.ptr)
    return out.result("tinyaot_requantize_s8")


def quantize_s8(params, x, rng=None):
    """Float values -> their int8 / uint8 bytes (as int8); params: tinyaot_quantize_params_t."""
    keep = []
    p = new_struct("tinyaot_quantize_params_t", params, keep)
    n = int(np.asarray(x).size)
    out = OutBuf(n, rng)
    _call("tinyaot_quantize_s8", n, p, cbuf(x, np.float32, keep), out.ptr)
    return out.result("tinyaot_quantize_s8")


def dequantize_s8(params, q, rng=None):
    """int8 / uint8 bytes (given as int8) -> float32 values."""
    keep = []
    p = new_struct("tinyaot_quantize_params_t", params, keep)
    n = int(np.asarray(q).size)
    out = OutBuf(4 * n, rng)
    _call("tinyaot_dequantize_s8", n, p, cbuf(np.asarray(q).view(np.int8), np.int8, keep),
          ffi.cast("float *", out.ptr))
    return out.result("tinyaot_dequantize_s8").view(np.float32)


def prelu_s8(outer, channels, inner, params, alpha, slope, x, inplace=False, rng=None):
    """alpha (int8) or slope (float32): one per channel, the other None (NULL). inplace:
    the output buffer holds x and is passed as the input too."""
    keep = []
    p = new_struct("tinyaot_prelu_params_t", params, keep)
    n = outer * channels * inner
    out = OutBuf(n, rng)
    if inplace:
        out.raw[GUARD:GUARD + n] = np.asarray(x, np.int8).reshape(-1)
    _call("tinyaot_prelu_s8", outer, channels, inner, p,
          ffi.NULL if alpha is None else cbuf(alpha, np.int8, keep),
          ffi.NULL if slope is None else cbuf(slope, np.float32, keep),
          out.ptr if inplace else cbuf(x, np.int8, keep), out.ptr)
    return out.result("tinyaot_prelu_s8")


def minmax_s8(is_max, d, a, b, n_out, inplace=False, rng=None):
    """d: dims[6] + a_strides[6] + b_strides[6]; inplace: the output buffer holds a (of the
    output's shape) and is passed as a too."""
    keep = []
    out = OutBuf(n_out, rng)
    if inplace:
        out.raw[GUARD:GUARD + n_out] = np.asarray(a, np.int8).reshape(-1)
    _call("tinyaot_minmax_s8", is_max, cbuf(np.asarray(d), np.int32, keep),
          out.ptr if inplace else cbuf(a, np.int8, keep), cbuf(b, np.int8, keep), out.ptr)
    return out.result("tinyaot_minmax_s8")


def reduce_sum_s8(outer, count, inner, params, x, rng=None):
    keep = []
    p = new_struct("tinyaot_reduce_sum_params_t", params, keep)
    out = OutBuf(outer * inner, rng)
    _call("tinyaot_reduce_sum_s8", outer, count, inner, p, cbuf(x, np.int8, keep), out.ptr)
    return out.result("tinyaot_reduce_sum_s8")


def transpose_s8(in_dims, perm, x, rng=None):
    keep = []
    out = OutBuf(int(np.prod(in_dims)), rng)
    _call("tinyaot_transpose_s8", cbuf(np.asarray(in_dims), np.int32, keep),
          cbuf(np.asarray(perm), np.int32, keep), cbuf(x, np.int8, keep), out.ptr)
    return out.result("tinyaot_transpose_s8")


def slice_s8(d, x, n_out, rng=None):
    keep = []
    out = OutBuf(n_out, rng)
    _call("tinyaot_slice_s8", cbuf(np.asarray(d), np.int32, keep), cbuf(x, np.int8, keep), out.ptr)
    return out.result("tinyaot_slice_s8")


def resize_nearest_s8(dims, y_idx, x_idx, table, x, rng=None):
    keep = []
    nb, _, _, c, oh, ow = dims
    out = OutBuf(nb * c * oh * ow, rng)
    _call("tinyaot_resize_nearest_s8", cbuf(np.asarray(dims), np.int32, keep),
          cbuf(y_idx, np.int32, keep), cbuf(x_idx, np.int32, keep),
          ffi.NULL if table is None else cbuf(table, np.int8, keep), cbuf(x, np.int8, keep),
          out.ptr)
    return out.result("tinyaot_resize_nearest_s8")


def resize_bilinear_s8(params, x, rng=None):
    keep = []
    p = new_struct("tinyaot_resize_bilinear_params_t", params, keep)
    out = OutBuf(params["batches"] * params["c"] * params["out_h"] * params["out_w"], rng)
    _call("tinyaot_resize_bilinear_s8", p, cbuf(x, np.int8, keep), out.ptr)
    return out.result("tinyaot_resize_bilinear_s8")


# Prototypes the wrappers above call, as (return type, parameter types). A
# test compares them with the header's so a changed signature is one clear
# failure.
class FloatOutBuf:
    """A float32 output buffer with random canaries on both sides (the float fallback's
    kernels)."""

    def __init__(self, n, rng=None):
        rng = rng or np.random.default_rng(n)
        self.n = n
        self.raw = rng.normal(size=n + 2 * GUARD).astype(np.float32)
        self.canary = self.raw.copy()
        self.ptr = ffi.from_buffer("float[]", self.raw[GUARD:GUARD + max(n, 1)],
                                   require_writable=True)

    def result(self, what):
        u, c = self.raw.view(np.uint32), self.canary.view(np.uint32)
        if not (np.array_equal(u[:GUARD], c[:GUARD]) and
                np.array_equal(u[GUARD + self.n:], c[GUARD + self.n:])):
            raise AssertionError(f"{what} wrote outside its output buffer of {self.n} floats")
        return self.raw[GUARD:GUARD + self.n].copy()


def softmax_f32(params, x, rng=None):
    keep = []
    p = new_struct("tinyaot_softmax_f32_params_t", params, keep)
    out = FloatOutBuf(x.size, rng)
    _call("tinyaot_softmax_f32", p, cbuf(x, np.float32, keep), out.ptr)
    return out.result("tinyaot_softmax_f32")


def unary_f32(fn, x, rng=None):
    keep = []
    out = FloatOutBuf(x.size, rng)
    _call("tinyaot_unary_f32", fn, x.size, cbuf(x, np.float32, keep), out.ptr)
    return out.result("tinyaot_unary_f32")


EXPECTED_FUNCTIONS = {
    "tinyaot_softmax_f32": ("int", ("tinyaot_softmax_f32_params_t *", "float *", "float *")),
    "tinyaot_unary_f32": ("int", ("int32_t", "int32_t", "float *", "float *")),
    "tinyaot_convolve_s8": ("int", ("tinyaot_conv_dims_t *", "tinyaot_requant_t *",
                                    "int8_t *", "int8_t *", "int8_t *")),
    "tinyaot_depthwise_conv_s8": ("int", ("tinyaot_conv_dims_t *", "tinyaot_requant_t *",
                                          "int8_t *", "int8_t *", "int8_t *")),
    "tinyaot_convolve_f32_s8": ("int", ("tinyaot_conv_dims_t *", "tinyaot_float_conv_t *",
                                        "tinyaot_conv_f32_plan_t *", "int8_t *", "float *",
                                        "int8_t *")),
    "tinyaot_convolve_f32_m1_s8": ("int", ("tinyaot_conv_dims_t *", "tinyaot_float_conv_t *",
                                           "tinyaot_conv_f32_plan_t *", "int8_t *", "float *",
                                           "int8_t *")),
    "tinyaot_fully_connected_s8": ("int", ("int32_t", "int32_t", "int32_t", "tinyaot_requant_t *",
                                           "int8_t *", "int8_t *", "int8_t *")),
    "tinyaot_fully_connected_f32_s8": ("int", ("int32_t", "int32_t", "int32_t",
                                               "tinyaot_float_fc_t *", "int8_t *", "float *",
                                               "int8_t *")),
    "tinyaot_add_s8": ("int", ("int32_t", "tinyaot_add_params_t *", "int8_t *", "int8_t *",
                               "int32_t", "int8_t *")),
    "tinyaot_avgpool_s8": ("int", ("tinyaot_pool_params_t *", "int8_t *", "int8_t *")),
    "tinyaot_maxpool_s8": ("int", ("tinyaot_pool_params_t *", "int8_t *", "int8_t *")),
    "tinyaot_softmax_s8": ("int", ("int32_t", "int32_t", "tinyaot_softmax_params_t *",
                                   "int8_t *", "int8_t *")),
    "tinyaot_requantize_s8": ("int", ("int32_t", "tinyaot_requantize_params_t *", "int8_t *",
                                      "int8_t *")),
    "tinyaot_quantize_s8": ("int", ("int32_t", "tinyaot_quantize_params_t *", "float *",
                                    "int8_t *")),
    "tinyaot_dequantize_s8": ("int", ("int32_t", "tinyaot_quantize_params_t *", "int8_t *",
                                      "float *")),
    "tinyaot_prelu_s8": ("int", ("int32_t", "int32_t", "int32_t", "tinyaot_prelu_params_t *",
                                 "int8_t *", "float *", "int8_t *", "int8_t *")),
    "tinyaot_minmax_s8": ("int", ("int32_t", "int32_t *", "int8_t *", "int8_t *", "int8_t *")),
    "tinyaot_reduce_sum_s8": ("int", ("int32_t", "int32_t", "int32_t",
                                      "tinyaot_reduce_sum_params_t *", "int8_t *", "int8_t *")),
    "tinyaot_transpose_s8": ("int", ("int32_t *", "int32_t *", "int8_t *", "int8_t *")),
    "tinyaot_slice_s8": ("int", ("int32_t *", "int8_t *", "int8_t *")),
    "tinyaot_resize_nearest_s8": ("int", ("int32_t *", "int32_t *", "int32_t *", "int8_t *",
                                          "int8_t *", "int8_t *")),
    "tinyaot_resize_bilinear_s8": ("int", ("tinyaot_resize_bilinear_params_t *", "int8_t *",
                                           "int8_t *")),
}


def _ctype_name(t):
    # cffi spells "const int8_t *" as "int8_t *" in cname for parameters (const is dropped)
    return t.cname.replace("const ", "").replace(" const", "").strip()


def function_signature(name):
    """(return type, parameter types) of a header prototype, or None if absent."""
    try:
        fn = getattr(lib(), name)
    except AttributeError:
        return None
    t = ffi.typeof(fn)
    return _ctype_name(t.result), tuple(_ctype_name(a) for a in t.args)
