"""`tinyaot tune`'s parts that need no board: the knapsack against brute force, the
per-layer variant override in the compiler, the layer signature, the record's checks."""
from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

from codegen.compiler import compile_model
from codegen.errors import TinyAotError
from codegen.passes.layer_signature import layer_signature, signature_key
from codegen.tuning import knapsack
from codegen.tuning.knapsack import Candidate
from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL


def _brute(layers, kernel_code, base, limit):
    """Every assignment, the image priced with each kernel linked once."""
    best = None
    for picks in itertools.product(*layers):
        ks = set().union(*(c.kernels for c in picks))
        size = base + sum(kernel_code[k] for k in ks) + sum(c.bytes for c in picks)
        cost = sum(c.cost for c in picks)
        if limit is not None and size > limit:
            continue
        if best is None or (cost, size) < best[:2]:
            best = (cost, size)
    return best


def _random_problem(rng):
    kernels = [f"k{i}" for i in range(rng.randint(2, 6))]
    code = {k: rng.randint(100, 5000) for k in kernels}
    layers = []
    for _ in range(rng.randint(1, 7)):
        n = rng.randint(1, 3)
        layers.append([Candidate(v, rng.randint(10, 1000), rng.randint(0, 3000),
                                 frozenset(rng.sample(kernels, rng.randint(0, 2))))
                       for v in ("speed", "size", "loop")[:n]])
    base = rng.randint(0, 2000)
    total = base + sum(code.values()) + sum(max(c.bytes for c in cs) for cs in layers)
    return layers, code, base, rng.randint(base, total)


def test_knapsack_equals_brute_force():
    rng = random.Random(21)
    for _ in range(300):
        layers, code, base, limit = _random_problem(rng)
        want = _brute(layers, code, base, limit)
        got = knapsack.solve(layers, code, base, limit)
        if want is None:
            assert got is None
            continue
        assert got is not None and got.granularity == 1
        assert got.cost == want[0]
        # the answer's own figures, recomputed from its choice
        picks = [next(c for c in cs if c.variant == v) for cs, v in zip(layers, got.choice)]
        ks = set().union(*(c.kernels for c in picks))
        size = base + sum(code[k] for k in ks) + sum(c.bytes for c in picks)
        assert sum(c.cost for c in picks) == want[0]
        assert size <= limit and got.bytes >= size


def test_knapsack_shared_kernel_code_counted_once():
    # two layers share a big fast kernel: worth it only for both together
    fast = frozenset({"fast"})
    layers = [[Candidate("speed", 100, 10, fast), Candidate("size", 300, 5, frozenset({"w8"}))]
              for _ in range(2)]
    code = {"fast": 1000, "w8": 200}
    assert knapsack.solve(layers, code, 0, 1020).choice == ["speed", "speed"]
    assert knapsack.solve(layers, code, 0, 1019).choice == ["size", "size"]
    assert knapsack.solve(layers, code, 0, 209) is None


def test_default_variants_keep_the_c_identical():
    plain = compile_model(DEFAULT_MODEL)
    keys = {n.name: signature_key(layer_signature(plain.graph, n, "ort"))
            for n in plain.graph.nodes}
    every_speed = {k: {"variant": "speed", "signature": v} for k, v in keys.items()}
    tuned = compile_model(DEFAULT_MODEL, tuning=(every_speed, "t.json"))
    assert tuned.module.source == plain.module.source
    size = compile_model(DEFAULT_MODEL, optimize="size")
    every_size = {k: {"variant": "size", "signature": v} for k, v in keys.items()}
    mixed = compile_model(DEFAULT_MODEL, tuning=(every_size, "t.json"))
    # each layer's kernel is the size build's (only the arena plan may differ: --optimize
    # speed's float-conv input copy)
    assert [x["kernel"] for x in mixed.module.layers] == [x["kernel"] for x in size.module.layers]
    assert mixed.report["tuning"]["variants"]["/pw/Conv"] == "size"


def test_one_layer_size_variant_is_bit_exact_on_host(tmp_path):
    from codegen.driver.verify import verify_model
    plain = compile_model(DEFAULT_MODEL)
    n = next(n for n in plain.graph.nodes if n.name == "/conv2/Conv")
    one = {n.name: {"variant": "size",
                    "signature": signature_key(layer_signature(plain.graph, n, "ort"))}}
    c = compile_model(DEFAULT_MODEL, tuning=(one, None))
    kern = {x["name"]: x["kernel"] for x in c.module.layers}
    assert kern["/conv2/Conv"] == "tinyaot_convolve_w8_s8"
    assert kern["/pw/Conv"] == "tinyaot_convolve_fast_s8"  # the others untouched
    r = verify_model(DEFAULT_MODEL, DEFAULT_GOLDEN, board="host", compiled=c)
    assert r["mismatches"] == 0 and r["vectors"] > 0


def test_signature_ignores_the_kernel_chosen_and_sees_shapes():
    a = compile_model(DEFAULT_MODEL)
    b = compile_model(DEFAULT_MODEL, optimize="size")
    for na, nb in zip(a.graph.nodes, b.graph.nodes):
        assert layer_signature(a.graph, na, "ort") == layer_signature(b.graph, nb, "ort")
    conv1, conv2 = (next(n for n in a.graph.nodes if n.name == k)
                    for k in ("/pw/Conv", "/conv2/Conv"))
    s1, s2 = (layer_signature(a.graph, n, "ort") for n in (conv1, conv2))
    assert s1 != s2
    assert s1["inputs"][1]["shape"] == [8, 8, 1, 1] and s1["attrs"]["kernel"] == [1, 1]
    assert signature_key(s1) != signature_key(layer_signature(a.graph, conv1, "tflite"))


def _record(tmp_path, layers):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"format": "tinyaot-tuning/1", "tuned": {"layers": layers}}))
    return p


def test_tuning_record_for_another_model_is_refused(tmp_path):
    c = compile_model(DEFAULT_MODEL)
    n = c.graph.nodes[0]
    key = signature_key(layer_signature(c.graph, n, "ort"))
    ok = _record(tmp_path, [{"node": n.name, "choice": "size", "signature": key}])
    assert compile_model(DEFAULT_MODEL, tuning=str(ok)).report["tuning"]["variants"] == {
        n.name: "size"}
    other = _record(tmp_path, [{"node": "nope", "choice": "size", "signature": key}])
    with pytest.raises(TinyAotError, match="layer 'nope' is not in this model"):
        compile_model(DEFAULT_MODEL, tuning=str(other))
    stale = _record(tmp_path, [{"node": n.name, "choice": "size", "signature": "conv2d:0"}])
    with pytest.raises(TinyAotError, match="differs from the one tuned"):
        compile_model(DEFAULT_MODEL, tuning=str(stale))
    bad = _record(tmp_path, [{"node": n.name, "choice": "fastest", "signature": key}])
    with pytest.raises(TinyAotError, match="unknown kernel variant 'fastest'"):
        compile_model(DEFAULT_MODEL, tuning=str(bad))
    with pytest.raises(TinyAotError, match="no such file"):
        compile_model(DEFAULT_MODEL, tuning=str(tmp_path / "missing.json"))


def test_cli_tuning_errors_are_one_line(tmp_path, capsys):
    from codegen.cli import main
    (tmp_path / "junk.json").write_text("{")
    rc = main(["compile", str(DEFAULT_MODEL), "-o", str(tmp_path / "out"),
               "--tuning", str(tmp_path / "junk.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "not a tuning record" in err
    assert not (tmp_path / "out").exists()
    assert main(["tune", str(DEFAULT_MODEL), "--board", "host"]) == 2
    assert "QEMU board" in capsys.readouterr().err


def test_loop_variant_keeps_a_float_fc_out_of_straight_line_code(monkeypatch):
    from codegen.kernels import fc_float_unrolled as fu
    from tests.helpers.env import shared_model
    model, golden = shared_model("ad01")
    # ad01's first float layer (8.7 % zero weights) is straight-line code from 5 % (the
    # default, 20 %, keeps it on the loop kernel)
    monkeypatch.setattr(fu, "MIN_ZERO_FRACTION", 0.05)
    plain = compile_model(model)
    unrolled = [x for x in plain.module.layers if "_fc_unrolled" in str(x["kernel"])]
    assert unrolled, "ad01 has straight-line float FC layers under --numerics ort"
    x = unrolled[0]
    n = plain.graph.nodes[x["index"]]
    one = {n.name: {"variant": "loop",
                    "signature": signature_key(layer_signature(plain.graph, n, "ort"))}}
    c = compile_model(model, tuning=(one, None))
    kern = {y["index"]: y["kernel"] for y in c.module.layers}
    assert kern[x["index"]] == "tinyaot_fully_connected_f32_s8"
    assert sum("_fc_unrolled" in str(k) for k in kern.values()) == len(unrolled) - 1
    assert np.all([kern[y["index"]] == y["kernel"] for y in unrolled[1:]])


def test_a_stale_record_is_not_trusted(tmp_path):
    from codegen.targets.boards import board_or_error
    from codegen.tuning import record
    b = board_or_error("qemu-m4")
    ctx = record.context(b, "ideal", "cycles", "ort")
    rec = record.empty(ctx)
    rec["measurements"]["conv2d:x"] = {"candidates": {"speed": {"cycles": 1}}}
    assert record.usable(rec, ctx) is rec
    for key, value in (("tinyaot_version", "0.0.0"), ("part", "stm32l4r5"),
                       ("objective", "instructions"),
                       ("toolchain", {"cc": "arm-none-eabi-gcc 1.0", "qemu": ctx["toolchain"]["qemu"]})):
        other = dict(ctx, **{key: value})
        fresh = record.usable(rec, other)
        assert fresh["measurements"] == {} and fresh["context"] == other
    p = tmp_path / "r.json"
    record.save(rec, p)
    assert record.load(p) == rec
    assert list(tmp_path.iterdir()) == [p]  # nothing half-written left beside it


def test_compile_and_export_take_a_tuning_record(tmp_path, capsys):
    from codegen.cli import main
    c = compile_model(DEFAULT_MODEL)
    n = next(n for n in c.graph.nodes if n.name == "/conv2/Conv")
    rec = _record(tmp_path, [{"node": n.name, "choice": "size",
                              "signature": signature_key(layer_signature(c.graph, n, "ort"))}])
    assert main(["compile", str(DEFAULT_MODEL), "-o", str(tmp_path / "gen"), "--tuning",
                 str(rec)]) == 0
    report = json.loads((tmp_path / "gen" / "report.json").read_text())
    assert report["tuning"]["variants"] == {"/conv2/Conv": "size"}
    src = (tmp_path / "gen" / "digits_cnn_int8.c").read_text()
    assert "tinyaot_convolve_w8_s8(" in src and "tinyaot_convolve_fast_s8(" in src
    assert main(["export", str(DEFAULT_MODEL), "--board", "host", "-o", str(tmp_path / "lib"),
                 "--tuning", str(rec), "--no-measure"]) == 0
    assert "tinyaot_convolve_w8_s8(" in (tmp_path / "lib" / "src" / "digits_cnn_int8.c").read_text()


def test_a_layer_carries_the_code_its_kernel_calls():
    """A float conv on int8 weights links the tiles it shares with the float-weight kernel
    (and that kernel's object, for its scratch size): the tuner must count that code with
    the layer's choice, or a tuned build that picks it overruns the flash limit (seen on a
    second model whose one build for the image had not linked them)."""
    from codegen.tuning.trials import layer_kernels
    linked = {"tinyaot_convolve_f32_b8_s8", "tinyaot_convolve_f32_tiles_s8",
              "tinyaot_convolve_f32_s8", "tinyaot_add_s8", "tinyaot_convolve_w8_s8"}
    assert layer_kernels("tinyaot_convolve_f32_b8_s8", linked) == [
        "tinyaot_convolve_f32_b8_s8", "tinyaot_convolve_f32_s8", "tinyaot_convolve_f32_tiles_s8"]
    assert layer_kernels("tinyaot_convolve_w8_s8", linked) == ["tinyaot_convolve_w8_s8"]
    assert layer_kernels("alias (zero-copy)", linked) == []
