"""Deterministic C literals: exact floats (hex), wrapped integer arrays."""
from __future__ import annotations

import re
from dataclasses import fields

import numpy as np


def c_ident(name: str) -> str:
    s = re.sub(r"[^0-9A-Za-z_]", "_", name)
    if not s or s[0].isdigit():
        s = "m_" + s
    return s.lower()


def c_float(x) -> str:
    """Exact float32 literal."""
    v = float(np.float32(x))
    if v == 0:
        return "0.0f"
    return float.hex(v).replace("0x1.0000000000000p", "0x1p") + "f"


def c_array(ctype: str, name: str, values, per_line=24, align=None) -> str:
    vals = np.asarray(values).reshape(-1)
    if ctype == "float":
        items = [c_float(v) for v in vals]
    else:
        items = [str(int(v)) for v in vals]
    lines = []
    for i in range(0, len(items), per_line):
        lines.append("    " + ", ".join(items[i:i + per_line]) + ",")
    attr = f" __attribute__((aligned({align})))" if align else ""
    body = "\n".join(lines) if lines else "    0,"
    return f"static const {ctype} {name}[{max(len(items), 1)}]{attr} = {{\n{body}\n}};\n"


def c_value(ftype: str, v) -> str:
    """One field's C text by its declared Python type: float -> exact float literal,
    int -> decimal, str -> a C expression as given (a const array's name, NULL)."""
    if ftype == "float":
        return c_float(v)
    if ftype == "int":
        return str(int(v))
    return str(v)


def c_struct(cname: str, record) -> str:
    """`static const <CTYPE> <cname> = { .field = value, ... };` from a record dataclass whose
    fields are the fields of its C struct, in order (the record's class names the struct: CTYPE).
    Designated initializers: a field added to the struct cannot shift the others' values."""
    ctype = type(record).CTYPE
    items = [f".{f.name} = {c_value(f.type, getattr(record, f.name))}" for f in fields(record)]
    return f"static const {ctype} {cname} = {{ {', '.join(items)} }};\n"
