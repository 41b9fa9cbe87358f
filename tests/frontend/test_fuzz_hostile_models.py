"""Fuzzing the loader and compiler with hostile models (hypothesis).

Seeds are the real models (repo default + ../shared/models) and small QDQ
models built here; each case mutates one at the protobuf level (scales,
zero points, dtypes, dims, graph wiring, names, opsets, domains,
attributes) or at the byte level (truncation, flipped bytes). Every case
must end in a TinyAotError whose message is one line naming the model (and a
node/tensor where the mutation touched one) or in a successful compile.
Anything else -- another exception, a time-out, running out of the memory
guard -- is a bug and fails the test with the case that caused it.

Each case runs compile_model in-process under a wall-clock limit (SIGALRM)
and an address-space guard (RLIMIT_AS raised only ~1.5 GiB above what the
process already maps), so a hang or a memory blow-up is caught instead of
taking the machine down.

Budget: TINYAOT_FUZZ_EXAMPLES (default 200 cases per test run, split over
the tests below); e.g. TINYAOT_FUZZ_EXAMPLES=5000 for a long run. The number
of cases tried and their outcomes are printed in pytest's terminal summary
(conftest.py) and recorded with record_property.
"""
from __future__ import annotations

import os
import re
import resource
import signal
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from codegen.compiler import compile_model
from codegen.errors import TinyAotError
from tests.helpers.env import DEFAULT_MODEL, SHARED, SHARED_MODELS
from tests.helpers.fuzz_stats import FINDINGS, STATS

TOTAL = int(os.environ.get("TINYAOT_FUZZ_EXAMPLES", "200"))
TIME_LIMIT_S = float(os.environ.get("TINYAOT_FUZZ_CASE_SECONDS", "20"))
MEMORY_HEADROOM = 1536 << 20
COLLECT = bool(os.environ.get("TINYAOT_FUZZ_COLLECT"))  # report all findings, do not stop


def _seed_paths():
    paths = [DEFAULT_MODEL]
    for stem in SHARED_MODELS.values():
        p = Path(str(SHARED / stem) + ".onnx")
        if p.exists():
            paths.append(p)
    return paths


SEEDS = {p.stem: p.read_bytes() for p in _seed_paths()}


class _Timeout(BaseException):
    pass


def _vm_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_case(model_bytes: bytes, numerics: str, mutation: str, node=None, tensor=None):
    """Compile one (possibly hostile) model; returns 'ok' or 'error', fails on a bug."""
    fd, path = tempfile.mkstemp(suffix=".onnx", prefix="fuzz-")
    with os.fdopen(fd, "wb") as f:
        f.write(model_bytes)
    old_as = resource.getrlimit(resource.RLIMIT_AS)
    limit = _vm_bytes() + MEMORY_HEADROOM
    if old_as[1] != resource.RLIM_INFINITY:
        limit = min(limit, old_as[1])

    def on_alarm(signum, frame):
        raise _Timeout()

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    kind = msg = None
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, old_as[1]))
        signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT_S)
        try:
            c = compile_model(path, numerics=numerics)
            kind = "ok"
            bad = re.search(r"\b(nan|inf)f?\b", c.module.source + c.module.header)
            if bad:  # a non-finite parameter reached the C: it would not even compile
                kind, msg = "bug", f"generated C contains '{bad.group(0)}'"
        except TinyAotError as e:
            kind, msg = "error", str(e)
        except MemoryError:
            kind, msg = "memory", "MemoryError (memory guard hit)"
        except _Timeout:
            kind, msg = "timeout", f"no answer within {TIME_LIMIT_S} s"
        except Exception as e:  # noqa: BLE001 - any other exception is the bug we look for
            import traceback
            kind = "bug"
            msg = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        resource.setrlimit(resource.RLIMIT_AS, old_as)
        os.unlink(path)
    STATS["cases"] += 1
    STATS[kind] += 1
    if kind not in ("ok", "error"):
        FINDINGS.append((kind, mutation, msg.splitlines()[0] if msg else ""))
        if COLLECT and not mutation.startswith("guard self-test"):
            return kind  # exploration run: list every finding at the end instead
        pytest.fail(f"{mutation} ({numerics}): {kind}: {msg}")
    if kind == "error":
        assert "\n" not in msg and msg.strip(), f"{mutation}: message is not one line: {msg!r}"
        assert "Traceback" not in msg
        assert path in msg, f"{mutation}: message does not name the model: {msg}"
        assert len(msg) < 4000, f"{mutation}: message too long ({len(msg)} chars)"
    return kind


# --------------------------------------------------------------- mutations

BAD_SCALES = [0.0, -0.5, float("nan"), float("inf"), -float("inf"), 1e-45, 3e38, 1e-30]
DIMS = [0, -1, 1, 3, 2**31 - 1, 2**31, 2**32 + 1, 10**9, 2**62]


def _initializers_by(proto, pred):
    return [i for i in proto.graph.initializer if pred(i)]


def _scale_inits(proto):
    return _initializers_by(proto, lambda i: i.data_type == TensorProto.FLOAT
                            and any(i.name == n.input[1] for n in proto.graph.node
                                    if n.op_type in ("QuantizeLinear", "DequantizeLinear")
                                    and len(n.input) > 1))


def _zp_inits(proto):
    names = {n.input[2] for n in proto.graph.node
             if n.op_type in ("QuantizeLinear", "DequantizeLinear") and len(n.input) > 2}
    return _initializers_by(proto, lambda i: i.name in names)


def _set_init(proto, init, arr):
    new = numpy_helper.from_array(np.asarray(arr), init.name)
    init.CopyFrom(new)


def mutate(proto: onnx.ModelProto, data, kind: str):
    """Apply one mutation of `kind` in place; returns (description, node, tensor)."""
    g = proto.graph
    nodes = list(g.node)
    inits = list(g.initializer)
    pick = lambda seq, label: seq[data.draw(st.integers(0, len(seq) - 1), label=label)]  # noqa: E731

    if kind == "scale":
        cands = _scale_inits(proto)
        init = pick(cands, "scale init")
        v = data.draw(st.sampled_from(BAD_SCALES), label="scale")
        arr = numpy_helper.to_array(init).astype(np.float32).copy()
        flat = arr.reshape(-1)
        flat[data.draw(st.integers(0, max(0, flat.size - 1)), label="idx")] = v
        _set_init(proto, init, flat.reshape(arr.shape))
        return f"scale {init.name}={v}", None, init.name
    if kind == "zero_point":
        init = pick(_zp_inits(proto), "zp init")
        v = data.draw(st.sampled_from([-129, 128, 255, 256, -1, 70000, -2**31]), label="zp")
        dt = data.draw(st.sampled_from([np.int32, np.int16, np.int64, np.uint8, np.float32]),
                       label="zp dtype")
        arr = numpy_helper.to_array(init)
        new = np.full(arr.shape, v).astype(dt) if dt != np.uint8 else \
            np.full(arr.shape, v % 256).astype(dt)
        _set_init(proto, init, new)
        return f"zero point {init.name}={v} as {np.dtype(dt).name}", None, init.name
    if kind == "dtype":
        init = pick(inits, "init")
        dt = data.draw(st.sampled_from([TensorProto.FLOAT, TensorProto.INT8, TensorProto.UINT8,
                                        TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
                                        TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BOOL,
                                        TensorProto.STRING, 0, 99]), label="dtype")
        reinterpret = data.draw(st.booleans(), label="keep raw bytes")
        if reinterpret or dt in (0, 99, TensorProto.STRING):
            init.data_type = dt  # raw bytes now (mis)read as another type
        else:
            arr = numpy_helper.to_array(init)
            np_dt = helper.tensor_dtype_to_np_dtype(dt)
            with np.errstate(all="ignore"):
                _set_init(proto, init, arr.astype(np_dt))
        return f"dtype of {init.name} -> {dt}", None, init.name
    if kind == "init_dims":
        init = pick(inits, "init")
        mode = data.draw(st.sampled_from(["grow", "shrink", "huge", "negative", "rank"]), label="m")
        dims = list(init.dims)
        if mode == "grow" and dims:
            dims[data.draw(st.integers(0, len(dims) - 1))] += 1
        elif mode == "shrink" and dims:
            dims[data.draw(st.integers(0, len(dims) - 1))] = 0
        elif mode == "huge":
            dims = dims + [data.draw(st.sampled_from(DIMS))]
        elif mode == "negative":
            dims = [-d for d in dims] or [-1]
        else:
            dims = [int(np.prod(dims))] if dims else [1, 1]
        del init.dims[:]
        init.dims.extend(dims)
        return f"dims of {init.name} -> {dims}", None, init.name
    if kind == "consistent_reshape":
        # data and dims agree, but no longer match the graph
        init = pick(inits, "init")
        arr = numpy_helper.to_array(init)
        n = data.draw(st.integers(1, 64), label="n")
        new = np.resize(arr, (n,) + tuple(arr.shape[1:])) if arr.ndim else np.resize(arr, (n,))
        _set_init(proto, init, new)
        return f"resized {init.name} to {new.shape}", None, init.name
    if kind == "input_dims":
        inp = g.input[0]
        dims = inp.type.tensor_type.shape.dim
        if not len(dims):
            return "no-op", None, None
        i = data.draw(st.integers(0, len(dims) - 1), label="dim")
        v = data.draw(st.sampled_from(DIMS + [7, 1000, 65536]), label="v")
        dims[i].Clear()
        if v >= 0 and v < 2**63:
            dims[i].dim_value = v
        else:
            dims[i].dim_param = "N"
        return f"input dim {i} -> {v}", None, inp.name
    if kind == "input_dtype":
        inp = g.input[0]
        inp.type.tensor_type.elem_type = data.draw(st.sampled_from(
            [TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32, TensorProto.DOUBLE,
             TensorProto.FLOAT16, TensorProto.INT64]))
        return "input dtype", None, inp.name
    if kind == "cycle":
        if len(nodes) < 2:
            return "no-op", None, None
        i = data.draw(st.integers(0, len(nodes) - 2), label="early")
        j = data.draw(st.integers(i + 1, len(nodes) - 1), label="late")
        if not nodes[i].input or not nodes[j].output:
            return "no-op", None, None
        g.node[i].input[0] = nodes[j].output[0]
        return f"cycle: {nodes[i].name} reads {nodes[j].output[0]}", nodes[i].name, None
    if kind == "reorder":
        perm = data.draw(st.permutations(range(len(nodes))), label="perm")
        del g.node[:]
        g.node.extend(nodes[k] for k in perm)
        return "nodes reordered", None, None
    if kind == "missing_init":
        init = pick(inits, "init")
        g.initializer.remove(init)
        return f"removed initializer {init.name}", None, init.name
    if kind == "delete_node":
        n = pick(nodes, "node")
        g.node.remove(n)
        return f"removed node {n.name}", n.name, None
    if kind == "duplicate_name":
        a = pick(nodes, "a")
        b = pick(nodes, "b")
        if not a.output or not b.output or a is b:
            return "no-op", None, None
        a.output[0] = b.output[0]
        return f"{a.name} also produces {b.output[0]}", a.name, b.output[0]
    if kind == "duplicate_init":
        init = pick(inits, "init")
        other = pick(inits, "other")
        dup = onnx.TensorProto()
        dup.CopyFrom(other)
        dup.name = init.name
        g.initializer.append(dup)
        return f"second initializer named {init.name}", None, init.name
    if kind == "opset":
        v = data.draw(st.sampled_from([0, 1, 6, 9, 10, 11, 13, 17, 21, 22, 99, 2**40]))
        for imp in proto.opset_import:
            if imp.domain in ("", "ai.onnx"):
                imp.version = v
        return f"opset {v}", None, None
    if kind == "domain":
        n = pick(nodes, "node")
        n.domain = data.draw(st.sampled_from(["com.microsoft", "ai.onnx.ml", "x.y", "ai.onnx"]))
        if data.draw(st.booleans()):
            proto.opset_import.append(helper.make_opsetid(n.domain, 1))
        return f"domain of {n.name} -> {n.domain}", n.name, None
    if kind == "op_type":
        n = pick(nodes, "node")
        n.op_type = data.draw(st.sampled_from(
            ["Conv", "MatMul", "Gemm", "Add", "Relu", "Clip", "AveragePool", "MaxPool",
             "Softmax", "Reshape", "Transpose", "QuantizeLinear", "DequantizeLinear",
             "Identity", "Flatten", "GlobalAveragePool", "Squeeze", "NoSuchOp", ""]))
        return f"op of {n.name} -> {n.op_type}", n.name, None
    if kind == "attribute":
        n = pick([x for x in nodes if x.attribute] or nodes, "node")
        name = data.draw(st.sampled_from(["strides", "pads", "dilations", "kernel_shape", "group",
                                          "axis", "perm", "auto_pad", "transB", "alpha"]))
        val = data.draw(st.one_of(
            st.integers(-3, 2**40),
            st.lists(st.integers(-4, 2**33), min_size=1, max_size=6),
            st.sampled_from(["SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET", "BOGUS"]),
            st.floats(allow_nan=True, allow_infinity=True, width=32)))
        for a in list(n.attribute):
            if a.name == name:
                n.attribute.remove(a)
        n.attribute.append(helper.make_attribute(name, val))
        return f"attribute {name}={val!r} on {n.name}", n.name, None
    if kind == "rename_input":
        n = pick(nodes, "node")
        if not n.input:
            return "no-op", None, None
        k = data.draw(st.integers(0, len(n.input) - 1))
        n.input[k] = data.draw(st.sampled_from(["", "nope", n.input[k] + "_x"]))
        return f"input {k} of {n.name} -> {n.input[k]!r}", n.name, None
    if kind == "extra_inputs":
        n = pick(nodes, "node")
        n.input.extend([n.input[0] if n.input else ""] * data.draw(st.integers(1, 3)))
        return f"extra inputs on {n.name}", n.name, None
    if kind == "outputs":
        mode = data.draw(st.sampled_from(["none", "two", "input", "bogus"]))
        if not len(g.output) or not len(g.input):
            return "no-op", None, None
        if mode == "none":
            del g.output[:]
        elif mode == "two":
            g.output.append(g.output[0])
        elif mode == "input":
            g.output[0].name = g.input[0].name
        else:
            g.output[0].name = "bogus"
        return f"graph outputs: {mode}", None, None
    if kind == "external_data":
        init = pick(inits, "init")
        init.data_location = TensorProto.EXTERNAL
        del init.external_data[:]
        e = init.external_data.add()
        e.key, e.value = "location", data.draw(st.sampled_from(["/etc/passwd", "../x.bin",
                                                               "missing.bin"]))
        init.ClearField("raw_data")
        return f"external data for {init.name}", None, init.name
    raise AssertionError(kind)


PROTO_MUTATIONS = ["scale", "zero_point", "dtype", "init_dims", "consistent_reshape",
                   "input_dims", "input_dtype", "cycle", "reorder", "missing_init",
                   "delete_node", "duplicate_name", "duplicate_init", "opset", "domain",
                   "op_type", "attribute", "rename_input", "extra_inputs", "outputs",
                   "external_data"]


# --------------------------------------------------------- hand-built seeds

def qdq_model(kind, n=1, c=2, h=5, w=5, oc=3, k=3, stride=1, pad=0, group=1, feats=8,
              units=4, opset=13, dtype=TensorProto.INT8):
    """A small QDQ model of one layer (+ Relu) built from parameters."""
    rng = np.random.default_rng(0)
    np_dt = helper.tensor_dtype_to_np_dtype(dtype)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s_x"),
             numpy_helper.from_array(np.array(0, np_dt), "z_x"),
             numpy_helper.from_array(np.array(0.1, np.float32), "s_y"),
             numpy_helper.from_array(np.array(0, np_dt), "z_y")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "s_x", "z_x"], ["xf"], name="dq_x")]
    if kind == "conv":
        xshape = [n, c, h, w]
        cin_g = max(1, c // max(1, group))
        wq = rng.integers(-127, 128, size=(oc, cin_g, k, k)).astype(np.int8)
        per_ch = opset >= 13  # per-channel DequantizeLinear (axis) needs opset 13
        qs = (oc,) if per_ch else ()
        ax = {"axis": 0} if per_ch else {}
        inits += [numpy_helper.from_array(wq, "w"),
                  numpy_helper.from_array(np.full(qs, 0.02, np.float32), "s_w"),
                  numpy_helper.from_array(np.zeros(qs, np.int8), "z_w"),
                  numpy_helper.from_array(rng.integers(-1000, 1000, oc).astype(np.int32), "b"),
                  numpy_helper.from_array(np.full(qs, 0.001, np.float32), "s_b"),
                  numpy_helper.from_array(np.zeros(qs, np.int32), "z_b")]
        nodes += [helper.make_node("DequantizeLinear", ["w", "s_w", "z_w"], ["wf"], name="dq_w",
                                   **ax),
                  helper.make_node("DequantizeLinear", ["b", "s_b", "z_b"], ["bf"], name="dq_b",
                                   **ax),
                  helper.make_node("Conv", ["xf", "wf", "bf"], ["yf"], name="conv",
                                   strides=[stride, stride], pads=[pad] * 4, group=group,
                                   kernel_shape=[k, k])]
    elif kind == "fc":
        xshape = [n, feats]
        wq = rng.integers(-127, 128, size=(feats, units)).astype(np.int8)
        inits += [numpy_helper.from_array(wq, "w"),
                  numpy_helper.from_array(np.array(0.02, np.float32), "s_w"),
                  numpy_helper.from_array(np.array(0, np.int8), "z_w")]
        nodes += [helper.make_node("DequantizeLinear", ["w", "s_w", "z_w"], ["wf"], name="dq_w"),
                  helper.make_node("MatMul", ["xf", "wf"], ["yf"], name="matmul")]
    elif kind == "pool":
        xshape = [n, c, h, w]
        nodes += [helper.make_node("AveragePool", ["xf"], ["yf"], name="pool",
                                   kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)]
    else:  # add / softmax
        xshape = [n, feats]
        op = "Add" if kind == "add" else "Softmax"
        nodes += [helper.make_node(op, ["xf", "xf"] if op == "Add" else ["xf"], ["yf"],
                                   name=kind)]
    nodes += [helper.make_node("Relu", ["yf"], ["rf"], name="relu"),
              helper.make_node("QuantizeLinear", ["rf", "s_y", "z_y"], ["y"], name="q_y")]
    x = helper.make_tensor_value_info("x", dtype, xshape)
    y = helper.make_tensor_value_info("y", dtype, None)
    m = helper.make_model(helper.make_graph(nodes, f"fuzz_{kind}", [x], [y], inits),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


@st.composite
def built_models(draw):
    kind = draw(st.sampled_from(["conv", "fc", "pool", "add", "softmax"]))
    # Sizes that become weights (channels, features) stay small so that building
    # the seed allocates little; huge spatial sizes cost nothing to build.
    small = st.one_of(st.integers(1, 9), st.sampled_from([0, 64]))
    dim = st.one_of(st.integers(1, 9), st.sampled_from([0, 64, 2**16, 2**31 - 1, 2**40]))
    m = qdq_model(kind, n=draw(st.sampled_from([1, 1, 1, 2])), c=draw(small), h=draw(dim),
                  w=draw(dim), oc=draw(st.integers(1, 6)), k=draw(st.integers(1, 5)),
                  stride=draw(st.integers(1, 3)), pad=draw(st.integers(0, 3)),
                  group=draw(st.sampled_from([1, 1, 2, 3])), feats=draw(small),
                  units=draw(st.integers(1, 6)),
                  opset=draw(st.sampled_from([10, 13, 13, 17, 21])),
                  dtype=draw(st.sampled_from([TensorProto.INT8, TensorProto.INT8,
                                              TensorProto.UINT8])))
    return kind, m


# ------------------------------------------------------------------- tests

@pytest.fixture(autouse=True)
def _whole_test_memory_guard():
    """Building and mutating seeds runs outside run_case: bound it as well."""
    old = resource.getrlimit(resource.RLIMIT_AS)
    limit = _vm_bytes() + 2 * MEMORY_HEADROOM
    if old[1] != resource.RLIM_INFINITY:
        limit = min(limit, old[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old)


def _settings(share):
    return settings(max_examples=max(1, int(TOTAL * share)), deadline=None, database=None,
                    derandomize=not os.environ.get("TINYAOT_FUZZ_RANDOM"),
                    suppress_health_check=list(HealthCheck), print_blob=True)


@_settings(0.45)
@given(data=st.data())
def test_fuzz_mutated_real_models(data, record_property):
    seed = data.draw(st.sampled_from(sorted(SEEDS)), label="seed")
    proto = onnx.load_from_string(SEEDS[seed])
    desc = []
    node = tensor = None
    for _ in range(data.draw(st.integers(1, 2), label="mutations")):
        kind = data.draw(st.sampled_from(PROTO_MUTATIONS), label="kind")
        d, node, tensor = mutate(proto, data, kind)
        desc.append(f"{kind}: {d}")
    numerics = data.draw(st.sampled_from(["ort", "tflite"]), label="numerics")
    run_case(proto.SerializeToString(), numerics, f"{seed}: " + "; ".join(desc), node, tensor)
    record_property("fuzz_cases", STATS["cases"])


@_settings(0.25)
@given(data=st.data())
def test_fuzz_corrupted_bytes(data, record_property):
    seed = data.draw(st.sampled_from(sorted(SEEDS)), label="seed")
    raw = bytearray(SEEDS[seed])
    mode = data.draw(st.sampled_from(["truncate", "flip", "flip_many", "splice", "garbage"]))
    if mode == "truncate":
        cut = data.draw(st.integers(0, len(raw) - 1), label="cut")
        raw = raw[:cut]
    elif mode in ("flip", "flip_many"):
        for _ in range(1 if mode == "flip" else data.draw(st.integers(2, 64))):
            i = data.draw(st.integers(0, len(raw) - 1), label="pos")
            raw[i] ^= 1 << data.draw(st.integers(0, 7), label="bit")
    elif mode == "splice":
        i = data.draw(st.integers(0, len(raw) - 1))
        raw = raw[:i] + data.draw(st.binary(min_size=1, max_size=64)) + raw[i:]
    else:
        raw = bytearray(data.draw(st.binary(min_size=0, max_size=256)))
    numerics = data.draw(st.sampled_from(["ort", "tflite"]), label="numerics")
    run_case(bytes(raw), numerics, f"{seed}: bytes {mode}")
    record_property("fuzz_cases", STATS["cases"])


@_settings(0.30)
@given(data=st.data(), built=built_models())
def test_fuzz_built_models(data, built, record_property):
    kind, proto = built
    desc = f"built {kind}"
    node = tensor = None
    if data.draw(st.booleans(), label="mutate"):
        mk = data.draw(st.sampled_from(PROTO_MUTATIONS), label="kind")
        d, node, tensor = mutate(proto, data, mk)
        desc += f"; {mk}: {d}"
    numerics = data.draw(st.sampled_from(["ort", "tflite"]), label="numerics")
    run_case(proto.SerializeToString(), numerics, desc, node, tensor)
    record_property("fuzz_cases", STATS["cases"])


def test_fuzz_guard_catches_blowups(tmp_path):
    """The guard itself works: a real MemoryError and a hang are reported, not hidden."""
    import codegen.compiler as comp

    real = comp.load_model
    seed = next(iter(SEEDS.values()))
    try:
        comp.load_model = lambda *a, **k: bytearray(8 << 30)  # 8 GiB: over the guard
        with pytest.raises(pytest.fail.Exception, match="memory"):
            run_case(seed, "tflite", "guard self-test: memory")

        def spin(*a, **k):
            while True:
                pass
        global TIME_LIMIT_S
        saved, TIME_LIMIT_S = TIME_LIMIT_S, 0.3
        comp.load_model = spin
        with pytest.raises(pytest.fail.Exception, match="timeout"):
            run_case(seed, "tflite", "guard self-test: hang")
        TIME_LIMIT_S = saved
    finally:
        comp.load_model = real
        # the self-test's deliberate findings are not fuzz findings
        for _ in range(2):
            if FINDINGS and FINDINGS[-1][1].startswith("guard self-test"):
                FINDINGS.pop()
        STATS.subtract({"cases": 2, "memory": 1, "timeout": 1})
    ok = run_case(seed, "tflite", "guard self-test: plain seed")
    assert ok == "ok"
    STATS.subtract({"cases": 1, "ok": 1})
