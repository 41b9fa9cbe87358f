"""Boot-time integrity check of the weights: `tinyaot compile --integrity crc32|sha256`.

At compile time a digest is computed over the bytes of every constant array
the emitter writes (weights, biases, multipliers, shifts, float scales), in
emission order, exactly as they sit in flash (little-endian, Cortex-M and
the host alike). The generated C gets

    int <name>_verify(void);   /* 0: weights intact, non-zero: mismatch */

which recomputes the digest on the device with portable C (bitwise CRC-32,
or SHA-256; no library) and compares it with the one stored next to the
weights. The arrays are read through a volatile pointer, so the C compiler
cannot fold the check away at build time.

The small parameter structs (`l<i>_q`, `l<i>_p`, ...) hold pointers whose
values are only known after linking, so they are not part of the digest.
"""
from __future__ import annotations

import hashlib
import zlib

import numpy as np

from .errors import TinyAotError

ALGORITHMS = ("crc32", "sha256")

_NP = {"int8_t": "<i1", "int16_t": "<i2", "uint16_t": "<u2", "int32_t": "<i4", "uint32_t": "<u4",
       "float": "<f4"}


def blob_bytes(ctype: str, values) -> bytes:
    """The bytes of one emitted `static const <ctype> name[]` array, as in flash."""
    arr = np.asarray(values).reshape(-1)
    if arr.size == 0:  # c_array emits one 0 element for an empty array
        arr = np.zeros(1, dtype=_NP[ctype])
    if ctype == "float":
        return arr.astype(np.float32).astype("<f4").tobytes()
    return arr.astype(np.int64).astype(_NP[ctype]).tobytes()


def weights_digest(blobs, algorithm: str):
    """(digest bytes, total bytes) over [(cname, ctype, values), ...] in order."""
    if algorithm == "crc32":
        crc = 0
        total = 0
        for _, ctype, values in blobs:
            b = blob_bytes(ctype, values)
            crc = zlib.crc32(b, crc)
            total += len(b)
        return crc.to_bytes(4, "big"), total
    if algorithm == "sha256":
        h = hashlib.sha256()
        total = 0
        for _, ctype, values in blobs:
            b = blob_bytes(ctype, values)
            h.update(b)
            total += len(b)
        return h.digest(), total
    raise TinyAotError(f"unknown integrity algorithm '{algorithm}' "
                       f"(choose from {', '.join(ALGORITHMS)})")


_CRC32_C = """
static uint32_t {name}_crc32_update(uint32_t crc, const volatile uint8_t *p, uint32_t n)
{{
    for (uint32_t i = 0; i < n; i++) {{
        crc ^= (uint32_t)p[i];
        for (uint32_t b = 0; b < 8u; b++) {{
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }}
    }}
    return crc;
}}

int {name}_verify(void)
{{
    uint32_t crc = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < {name}_blob_count; i++) {{
        crc = {name}_crc32_update(crc, {name}_blobs[i].p, {name}_blobs[i].n);
    }}
    crc ^= 0xFFFFFFFFu;
    return crc == {name}_expected_crc32 ? 0 : 1;
}}
"""

_SHA256_C = """
static const uint32_t {name}_sha256_k[64] = {{
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
}};

typedef struct {{
    uint32_t h[8];
    uint8_t buf[64];
    uint32_t used;
    uint32_t total_lo, total_hi; /* message length in bytes */
}} {name}_sha256_t;

static uint32_t {name}_ror(uint32_t x, uint32_t r)
{{
    return (x >> r) | (x << (32u - r));
}}

static void {name}_sha256_block({name}_sha256_t *s)
{{
    uint32_t w[64];
    for (uint32_t i = 0; i < 16u; i++) {{
        w[i] = ((uint32_t)s->buf[4u * i] << 24) | ((uint32_t)s->buf[4u * i + 1u] << 16) |
               ((uint32_t)s->buf[4u * i + 2u] << 8) | (uint32_t)s->buf[4u * i + 3u];
    }}
    for (uint32_t i = 16; i < 64u; i++) {{
        const uint32_t s0 = {name}_ror(w[i - 15u], 7) ^ {name}_ror(w[i - 15u], 18) ^ (w[i - 15u] >> 3);
        const uint32_t s1 = {name}_ror(w[i - 2u], 17) ^ {name}_ror(w[i - 2u], 19) ^ (w[i - 2u] >> 10);
        w[i] = w[i - 16u] + s0 + w[i - 7u] + s1;
    }}
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
    uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (uint32_t i = 0; i < 64u; i++) {{
        const uint32_t t1 = h + ({name}_ror(e, 6) ^ {name}_ror(e, 11) ^ {name}_ror(e, 25)) +
                            ((e & f) ^ (~e & g)) + {name}_sha256_k[i] + w[i];
        const uint32_t t2 = ({name}_ror(a, 2) ^ {name}_ror(a, 13) ^ {name}_ror(a, 22)) +
                            ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }}
    s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
    s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}}

static void {name}_sha256_byte({name}_sha256_t *s, uint8_t x)
{{
    s->buf[s->used++] = x;
    if (s->used == 64u) {{
        {name}_sha256_block(s);
        s->used = 0;
    }}
}}

int {name}_verify(void)
{{
    {name}_sha256_t s = {{ {{ 0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                         0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u }}, {{ 0 }}, 0, 0, 0 }};
    for (uint32_t i = 0; i < {name}_blob_count; i++) {{
        const volatile uint8_t *p = {name}_blobs[i].p;
        const uint32_t n = {name}_blobs[i].n;
        for (uint32_t j = 0; j < n; j++) {{
            {name}_sha256_byte(&s, p[j]);
        }}
        s.total_lo += n;
        if (s.total_lo < n) {{
            s.total_hi++;
        }}
    }}
    const uint32_t bits_hi = (s.total_hi << 3) | (s.total_lo >> 29);
    const uint32_t bits_lo = s.total_lo << 3;
    {name}_sha256_byte(&s, 0x80u);
    while (s.used != 56u) {{
        {name}_sha256_byte(&s, 0u);
    }}
    for (uint32_t i = 0; i < 4u; i++) {{
        {name}_sha256_byte(&s, (uint8_t)(bits_hi >> (24u - 8u * i)));
    }}
    for (uint32_t i = 0; i < 4u; i++) {{
        {name}_sha256_byte(&s, (uint8_t)(bits_lo >> (24u - 8u * i)));
    }}
    uint32_t diff = 0;
    for (uint32_t i = 0; i < 32u; i++) {{
        const uint8_t byte = (uint8_t)(s.h[i / 4u] >> (24u - 8u * (i % 4u)));
        diff |= (uint32_t)(byte ^ {name}_expected_sha256[i]);
    }}
    return diff == 0u ? 0 : 1;
}}
"""


def integrity_c(name: str, blobs, algorithm: str) -> tuple[str, str, dict]:
    """(C source to append, header declarations, report entry)."""
    digest, total = weights_digest(blobs, algorithm)
    rows = [f"    {{ (const volatile uint8_t *){cname}, (uint32_t)sizeof({cname}) }},"
            for cname, _, _ in blobs]
    if not rows:  # no constant arrays: an empty message
        rows = ["    { (const volatile uint8_t *)0, 0u },"]
    src = [f"/* Integrity check ({algorithm}) over {len(blobs)} constant arrays, "
           f"{total} bytes, in emission order. */",
           "typedef struct {", "    const volatile uint8_t *p;", "    uint32_t n;",
           f"}} {name}_blob_t;", "",
           f"static const {name}_blob_t {name}_blobs[] = {{", *rows, "};",
           f"static const uint32_t {name}_blob_count = {len(blobs)}u;"]
    if algorithm == "crc32":
        src.append(f"static const uint32_t {name}_expected_crc32 = 0x{digest.hex()}u;")
        src.append(_CRC32_C.format(name=name))
    else:
        src.append(f"static const uint8_t {name}_expected_sha256[32] = {{ "
                   + ", ".join(f"0x{b:02x}u" for b in digest) + " };")
        src.append(_SHA256_C.format(name=name))
    up = name.upper()
    header = (f"#define {up}_INTEGRITY \"{algorithm}\"\n"
              f"#define {up}_WEIGHTS_DIGEST \"{digest.hex()}\"\n"
              f"/* Recomputes the {algorithm} of the weights ({total} bytes) and compares it\n"
              f" * with {up}_WEIGHTS_DIGEST. Returns 0 if intact, non-zero if not. */\n"
              f"int {name}_verify(void);\n")
    report = {"algorithm": algorithm, "digest": digest.hex(), "bytes": total,
              "arrays": len(blobs)}
    return "\n".join(src) + "\n", header, report


def add_integrity(module, algorithm: str) -> dict:
    """Append `<name>_verify()` to a CModule (source and header); returns the report entry."""
    if algorithm not in ALGORITHMS:
        raise TinyAotError(f"unknown integrity algorithm '{algorithm}' "
                           f"(choose from {', '.join(ALGORITHMS)})")
    src, decl, report = integrity_c(module.name, module.blobs, algorithm)
    module.source = module.source + "\n" + src
    marker = "\n#ifdef __cplusplus\n}"
    i = module.header.rfind(marker)
    if i < 0:
        raise RuntimeError("generated header has no closing extern \"C\" block")
    module.header = module.header[:i] + "\n" + decl + module.header[i:]
    return report


def harness_verify_c(name: str) -> str:
    """The harness_data.c addition that makes boards/common/harness_main.c check at boot."""
    return ("\nint tinyaot_harness_verify(void)\n{\n"
            f"    return {name}_verify();\n}}\n")
