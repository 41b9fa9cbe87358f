""".tflite flatbuffer -> plain typed records (TflModel), nothing lowered yet.

The `tflite` package's generated flatbuffer classes do the parsing; this module
copies what the lowering needs into dataclasses (tensors with their constant
data and quantization, operators with their builtin name and options as a
dict), so the rest of the front end never touches flatbuffer tables. A file
that is not a TFLite model, or whose offsets point outside the file, becomes
one TinyAotError naming the file.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np

from ...errors import TinyAotError

# TensorType enum -> numpy dtype name (None: tinyaot never reads such data)
_DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: None, 6: "bool",
           7: "int16", 8: None, 9: "int8", 10: "float64", 11: None, 12: "uint64", 13: None,
           14: None, 15: "uint32", 16: "uint16", 17: "int4", 18: None}


@dataclass
class TflTensor:
    index: int
    name: str
    shape: tuple
    dtype: str  # numpy name, or "type<N>" for types tinyaot cannot hold
    scale: np.ndarray | None = None  # float32 [k]; None: not quantized
    zero_point: np.ndarray | None = None  # int64 [k]
    quantized_dimension: int = 0
    data: np.ndarray | None = None  # constants (buffer with data)
    is_variable: bool = False

    @property
    def is_const(self) -> bool:
        return self.data is not None


@dataclass
class TflOperator:
    index: int
    builtin: str  # "CONV_2D", ..., or "CUSTOM:<code>"
    version: int
    inputs: tuple  # tensor indices, -1 = optional input left out
    outputs: tuple
    options: dict = field(default_factory=dict)  # snake_case field -> value


@dataclass
class TflModel:
    path: str
    name: str
    tensors: list
    operators: list
    inputs: tuple
    outputs: tuple
    subgraphs: int = 1


def read_tflite(path) -> TflModel:
    path = str(path)
    if not os.path.exists(path):
        raise TinyAotError("no such file", model=path)
    if os.path.isdir(path):
        raise TinyAotError("is a directory, not a TFLite file", model=path)
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except OSError as e:
        raise TinyAotError(f"cannot read: {e.strerror}", model=path) from None
    try:
        import tflite  # noqa: F401
    except ImportError:
        raise TinyAotError("reading a .tflite file needs the 'tflite' package "
                           "(pip install tflite)", model=path) from None
    if len(buf) < 8 or buf[4:8] != b"TFL3":
        raise TinyAotError("not a TFLite model (no 'TFL3' flatbuffer identifier)", model=path)
    try:
        return _read(buf, path)
    except TinyAotError:
        raise
    except Exception:  # flatbuffers raises struct/index/unicode errors on corrupt offsets
        raise TinyAotError("not a valid TFLite model (the flatbuffer is corrupt or truncated)",
                           model=path) from None


def _read(buf, path) -> TflModel:
    import tflite

    m = tflite.Model.GetRootAs(buf, 0)
    if m.SubgraphsLength() < 1:
        raise TinyAotError("TFLite model has no subgraph", model=path)
    sg = m.Subgraphs(0)
    tensors = [_tensor(sg.Tensors(i), i, m, buf, path) for i in range(sg.TensorsLength())]
    codes = [_opcode_name(m.OperatorCodes(i)) for i in range(m.OperatorCodesLength())]
    versions = [m.OperatorCodes(i).Version() for i in range(m.OperatorCodesLength())]
    ops = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        k = op.OpcodeIndex()
        if k >= len(codes):
            raise TinyAotError(f"operator {i} names operator code {k} of {len(codes)}", model=path)
        ins = tuple(int(v) for v in _ints(op.InputsAsNumpy(), op.InputsLength()))
        outs = tuple(int(v) for v in _ints(op.OutputsAsNumpy(), op.OutputsLength()))
        for t in ins + outs:
            if t < -1 or t >= len(tensors):
                raise TinyAotError(f"operator {i} ({codes[k]}) names tensor {t} of {len(tensors)}",
                                   model=path)
        ops.append(TflOperator(i, codes[k], versions[k], ins, outs, _options(op)))
    g_in = tuple(int(v) for v in _ints(sg.InputsAsNumpy(), sg.InputsLength()))
    g_out = tuple(int(v) for v in _ints(sg.OutputsAsNumpy(), sg.OutputsLength()))
    for t in g_in + g_out:
        if t < 0 or t >= len(tensors):
            raise TinyAotError(f"graph input/output names tensor {t} of {len(tensors)}", model=path)
    name = (sg.Name() or b"").decode("utf-8", "replace") or \
        os.path.splitext(os.path.basename(path))[0]
    return TflModel(path, name, tensors, ops, g_in, g_out, m.SubgraphsLength())


def _ints(arr, n):
    return [] if n == 0 else list(np.asarray(arr).reshape(-1))


def _opcode_name(code) -> str:
    import tflite

    b = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    if b == tflite.BuiltinOperator.CUSTOM:
        return "CUSTOM:" + (code.CustomCode() or b"?").decode("utf-8", "replace")
    return tflite.BUILTIN_OPCODE2NAME.get(b, f"BUILTIN_{b}")


def _tensor(t, index, m, buf, path) -> TflTensor:
    name = (t.Name() or b"").decode("utf-8", "replace") or f"tensor_{index}"
    shape = tuple(int(d) for d in _ints(t.ShapeAsNumpy(), t.ShapeLength()))
    if any(d < 0 for d in shape):
        raise TinyAotError(f"tensor has a negative dimension {list(shape)}", model=path,
                           tensor=name)
    code = t.Type()
    dtype = _DTYPES.get(code) or f"type{code}"
    out = TflTensor(index, name, shape, dtype, is_variable=bool(t.IsVariable()))
    q = t.Quantization()
    if q is not None and q.ScaleLength() > 0:
        out.scale = np.asarray(q.ScaleAsNumpy(), dtype=np.float32).reshape(-1).copy()
        zp = _ints(q.ZeroPointAsNumpy(), q.ZeroPointLength())
        out.zero_point = (np.asarray(zp, dtype=np.int64) if zp
                          else np.zeros(out.scale.size, np.int64))
        out.quantized_dimension = int(q.QuantizedDimension())
    b = t.Buffer()
    if b >= m.BuffersLength():
        raise TinyAotError(f"tensor names buffer {b} of {m.BuffersLength()}", model=path,
                           tensor=name)
    if b > 0:
        data = _buffer_bytes(m.Buffers(b), buf)
        if data is not None and len(data):
            out.data = _array(data, dtype, shape, path, name)
    return out


def _buffer_bytes(b, buf):
    if b.Offset() > 1:  # large models: the data follows the flatbuffer in the file
        off, size = int(b.Offset()), int(b.Size())
        if off + size > len(buf):
            raise TinyAotError("a buffer points past the end of the file")
        return buf[off:off + size]
    if b.DataLength() == 0:
        return None
    return np.asarray(b.DataAsNumpy(), dtype=np.uint8).tobytes()


def _array(data, dtype, shape, path, name):
    if dtype not in ("float32", "float16", "int32", "uint8", "int64", "bool", "int16", "int8",
                     "float64", "uint64", "uint32", "uint16"):
        return np.frombuffer(data, np.uint8).copy()  # held as bytes; lowering refuses the type
    dt = np.dtype(dtype).newbyteorder("<")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if len(data) != count * dt.itemsize:
        raise TinyAotError(f"constant of shape {list(shape)} {dtype} needs "
                           f"{count * dt.itemsize} bytes, its buffer has {len(data)}",
                           model=path, tensor=name)
    return np.frombuffer(data, dt).astype(dtype).reshape(shape).copy()


def _options(op) -> dict:
    """The builtin options table as {snake_case: value} (vectors as lists)."""
    import tflite

    kind = op.BuiltinOptionsType()
    if kind == 0:
        return {}
    cls_name = _OPTION_NAMES.get(kind)
    cls = getattr(tflite, cls_name, None) if cls_name else None
    table = op.BuiltinOptions()
    if cls is None or table is None:
        return {}
    obj = cls()
    obj.Init(table.Bytes, table.Pos)
    out = {}
    for attr in dir(cls):
        if not attr[:1].isupper() or attr in ("Init",) or attr.startswith("GetRootAs") \
                or attr.endswith(("AsNumpy", "Length", "IsNone", "BufferHasIdentifier")):
            continue
        if hasattr(cls, attr + "AsNumpy"):
            n = getattr(obj, attr + "Length")()
            value = [v.item() for v in np.asarray(getattr(obj, attr + "AsNumpy")()).reshape(-1)] \
                if n else []
        elif hasattr(cls, attr + "Length"):
            continue  # vector of tables: no builtin tinyaot lowers uses one
        else:
            value = getattr(obj, attr)()
        if isinstance(value, (bytes, bytearray)):
            value = value.decode("utf-8", "replace")
        out[_snake(attr)] = value
    return out


def _snake(camel):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()


def _option_names():
    import tflite

    return {v: k for k, v in vars(tflite.BuiltinOptions).items()
            if isinstance(v, int) and not k.startswith("_")}


try:
    _OPTION_NAMES = _option_names()
except ImportError:  # reported when a .tflite file is read (read_tflite)
    _OPTION_NAMES = {}
