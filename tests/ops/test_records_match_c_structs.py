"""The prepared records that become C initializers (kernels/c_format.c_struct, designated)
mirror their runtime_c struct field by field and in order: the header is the oracle, read
by cffi (tests/helpers/kernels_cffi.py), so a renamed, reordered or missing field fails here,
not as a C compile error (designated initializers name every field) or a field left zero."""
import dataclasses
import importlib
import pkgutil

import pytest

import codegen.ops
from tests.helpers import kernels_cffi as K


def records():
    """Every record class under codegen/ops/ that names its C struct (CTYPE)."""
    found = {}
    for info in pkgutil.iter_modules(codegen.ops.__path__):
        m = importlib.import_module(f"codegen.ops.{info.name}")
        for obj in vars(m).values():
            if dataclasses.is_dataclass(obj) and isinstance(getattr(obj, "CTYPE", None), str):
                found[obj.__qualname__] = obj
    return [(r, r.CTYPE) for _, r in sorted(found.items())]


RECORDS = records()


def test_the_records_are_found():
    """The discovery is not blind: the records of several operators, and one per C struct."""
    names = {c for _, c in RECORDS}
    assert {"tinyaot_add_params_t", "tinyaot_requant_t", "tinyaot_conv_dims_t",
            "tinyaot_softmax_params_t"} <= names
    assert len(names) == len(RECORDS)


@pytest.mark.parametrize("record,ctype", RECORDS, ids=[c for _, c in RECORDS])
def test_record_fields_are_the_struct_fields_in_order(record, ctype):
    assert [f.name for f in dataclasses.fields(record)] == K.struct_fields(ctype)


@pytest.mark.parametrize("record,ctype", RECORDS, ids=[c for _, c in RECORDS])
def test_record_field_kinds_match_the_struct(record, ctype):
    """float fields are C floats, int fields C integers, the others pointers (a C name / NULL,
    or an array the emitter writes as a const array and names)."""
    for f, (name, cf) in zip(dataclasses.fields(record), K.ffi.typeof(ctype).fields):
        t = cf.type
        got = ("pointer" if t.kind == "pointer"
               else "float" if t.cname in ("float", "double") else "int")
        assert {"float": "float", "int": "int"}.get(f.type, "pointer") == got, f"{ctype}.{name}: record says {f.type}, C has {t.cname}"
