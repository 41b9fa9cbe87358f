"""The prepared records that become C initializers (kernels/c_format.c_struct, positional)
mirror their runtime_c struct field by field and in order: the header is the oracle, read
by cffi (tests/kernel_ffi.py), so a reordered or missing field fails here, not as a
silently shifted initializer in the generated C."""
import dataclasses

import pytest

import kernel_ffi as K
from codegen.ops.add import AddParams
from codegen.ops.conv2d import ConvF32Plan
from codegen.ops.conv_records import ConvDims, FloatConvRecord, RequantRecord
from codegen.ops.fully_connected import FloatFcRecord
from codegen.ops.matmul import MatmulParams
from codegen.ops.mul import MulParams
from codegen.ops.pooling import PoolParams
from codegen.ops.requantize import RequantizeParams
from codegen.ops.softmax import SoftmaxParams

RECORDS = [(AddParams, "tinyaot_add_params_t"), (MulParams, "tinyaot_mul_params_t"),
           (PoolParams, "tinyaot_pool_params_t"), (SoftmaxParams, "tinyaot_softmax_params_t"),
           (RequantizeParams, "tinyaot_requantize_params_t"),
           (MatmulParams, "tinyaot_matmul_params_t"), (RequantRecord, "tinyaot_requant_t"),
           (ConvDims, "tinyaot_conv_dims_t"), (FloatConvRecord, "tinyaot_float_conv_t"),
           (FloatFcRecord, "tinyaot_float_fc_t"), (ConvF32Plan, "tinyaot_conv_f32_plan_t")]


@pytest.mark.parametrize("record,ctype", RECORDS, ids=[c for _, c in RECORDS])
def test_record_fields_are_the_struct_fields_in_order(record, ctype):
    assert [f.name for f in dataclasses.fields(record)] == K.struct_fields(ctype)


@pytest.mark.parametrize("record,ctype", RECORDS, ids=[c for _, c in RECORDS])
def test_record_field_kinds_match_the_struct(record, ctype):
    """float fields are C floats, int fields C integers, str fields pointers (a C name / NULL)."""
    kinds = {"float": "float", "int": "int", "str": "pointer"}
    for f, (name, cf) in zip(dataclasses.fields(record), K.ffi.typeof(ctype).fields):
        t = cf.type
        got = ("pointer" if t.kind == "pointer"
               else "float" if t.cname in ("float", "double") else "int")
        assert kinds[f.type] == got, f"{ctype}.{name}: record says {f.type}, C has {t.cname}"
