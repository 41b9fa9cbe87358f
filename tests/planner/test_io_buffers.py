"""--io-buffers arena (the default): input and output inside the arena, exact and
reachable; --io-buffers user keeps them in the caller's buffers."""
import numpy as np
import pytest

from codegen.cli import main
from codegen.compiler import compile_model
from codegen.driver.firmware import build_generated
from codegen.planner import check_plan
from codegen.driver.verify import run_model

from tests.helpers.env import DEFAULT_MODEL, shared_model


def test_header_says_which_mode_and_arena_is_the_default():
    user = compile_model(DEFAULT_MODEL, io_buffers="user")
    assert user.plan.io_buffers == "user" and user.report["io_buffers"] == "user"
    assert "I/O buffers: user" in user.module.header
    assert "_IO_BUFFERS_IN_ARENA 0" in user.module.header
    assert "digits_cnn_int8_input(void)" not in user.module.header
    arena = compile_model(DEFAULT_MODEL)
    assert arena.plan.io_buffers == "arena" and arena.report["io_buffers"] == "arena"
    h = arena.module.header
    assert "I/O buffers: arena" in h and "_IO_BUFFERS_IN_ARENA 1" in h
    for decl in ("int8_t *digits_cnn_int8_input(void);",
                 "const int8_t *digits_cnn_int8_output(void);",
                 "int digits_cnn_int8_invoke(void);"):
        assert decl in h
    g = arena.graph
    bi, bo = arena.plan.where[g.inputs[0]], arena.plan.where[g.outputs[0]]
    assert bi.external is None and bo.external is None
    assert 0 <= bi.offset and bi.offset + bi.size <= arena.plan.size
    check_plan(g, arena.plan)
    assert arena.plan.size >= user.plan.size


def test_arena_io_is_bit_exact_through_run_and_through_the_pointers(default_golden, tmp_path):
    from cffi import FFI

    c = compile_model(DEFAULT_MODEL, io_buffers="arena")
    inputs, expected = default_golden["inputs"], default_golden["outputs"]
    outs, info = run_model(DEFAULT_MODEL, inputs, board="host", compiled=c,
                           build_dir=tmp_path / "run")
    assert info["status"] == [0] * len(inputs)
    np.testing.assert_array_equal(outs.reshape(expected.shape), expected)
    so = build_generated(tmp_path / "run", "host", harness=False)
    ffi = FFI()
    ffi.cdef("int8_t *digits_cnn_int8_input(void); const int8_t *digits_cnn_int8_output(void);"
             "int digits_cnn_int8_invoke(void);")
    lib = ffi.dlopen(so)
    flat = inputs.reshape(len(inputs), -1)
    for x, want in zip(flat[:8], expected.reshape(len(inputs), -1)[:8]):
        ffi.memmove(lib.digits_cnn_int8_input(), x.tobytes(), x.size)
        assert lib.digits_cnn_int8_invoke() == 0
        got = np.frombuffer(ffi.buffer(lib.digits_cnn_int8_output(), want.size), np.int8)
        np.testing.assert_array_equal(got, want)
    ffi.dlclose(lib)


@pytest.mark.shared
def test_arena_io_on_vww01_costs_no_arena_bytes():
    """vww01's 27,648-byte input fits in space the arena has anyway."""
    onnx_path, _ = shared_model("vww01")
    user = compile_model(onnx_path, numerics="tflite", io_buffers="user")
    arena = compile_model(onnx_path, numerics="tflite")
    check_plan(arena.graph, arena.plan)
    assert arena.plan.size == user.plan.size == user.plan.lower_bound
    assert arena.plan.lower_bound == arena.plan.size


def test_cli_io_buffers_and_plot_memory(tmp_path):
    png = tmp_path / "mem.png"
    out = tmp_path / "gen"
    assert main(["compile", str(DEFAULT_MODEL), "-o", str(out), "--plot-memory", str(png)]) == 0
    assert "I/O buffers: arena" in (out / "digits_cnn_int8.h").read_text()
    assert main(["compile", str(DEFAULT_MODEL), "-o", str(tmp_path / "u"),
                 "--io-buffers", "user"]) == 0
    assert "I/O buffers: user" in (tmp_path / "u" / "digits_cnn_int8.h").read_text()
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    import matplotlib.image as mpimg

    img = mpimg.imread(str(png))
    colors = {tuple(p) for p in (img[..., :3].reshape(-1, 3) * 255).astype(int)[::7]}
    assert len(colors) > 20  # rectangles in several colours, not a blank canvas
    with pytest.raises(SystemExit):  # argparse: not a choice
        main(["compile", str(DEFAULT_MODEL), "-o", str(tmp_path / "bad"), "--io-buffers", "x"])
    assert not (tmp_path / "bad").exists()


def test_unknown_io_buffers_mode_is_a_user_error():
    from codegen.errors import TinyAotError

    with pytest.raises(TinyAotError, match="io-buffers"):
        compile_model(DEFAULT_MODEL, io_buffers="nowhere")


def test_verify_user_mode_from_the_cli_is_bit_exact(capsys):
    from tests.helpers.env import DEFAULT_GOLDEN
    assert main(["verify", str(DEFAULT_MODEL), "--golden", str(DEFAULT_GOLDEN),
                 "--io-buffers", "user", "--json"]) == 0
    import json
    r = json.loads(capsys.readouterr().out)
    assert r["mismatches"] == 0 and r["plan"]["io_buffers"] == "user"


@pytest.mark.qemu
def test_qemu_harness_times_the_inference_alone_in_both_modes():
    """The firmware copies an arena-resident input in (and the output out)
    outside the timed call, so both modes run the same kernels for the same
    count, and both are bit-exact with the golden vectors."""
    from tests.helpers.env import DEFAULT_GOLDEN, require_arm_toolchain
    from codegen.driver.verify import verify_model
    require_arm_toolchain()
    reps = {io: verify_model(DEFAULT_MODEL, DEFAULT_GOLDEN, board="qemu-m4", io_buffers=io)
            for io in ("arena", "user")}
    for io, r in reps.items():
        assert r["mismatches"] == 0 and r["vectors_passed"] == r["vectors"], io
        assert r["plan"]["io_buffers"] == io
    assert reps["arena"]["instructions_per_inference"] == reps["user"]["instructions_per_inference"]


@pytest.mark.shared
def test_memory_plan_table_is_current():
    """docs/memory-plan.md's arena table is what `python -m codegen.driver.arena_table`
    prints (both I/O modes, lower bounds, TFLite Micro's arena_used_bytes)."""
    from codegen.paths import REPO_ROOT
    from codegen.driver import arena_table as benchmark

    rows = benchmark.rows()
    assert {k for k, _, _ in rows} >= set(benchmark.SHARED) | {"digits"}
    for key, _, m in rows:
        act, scratch = m["bounds"]
        assert act <= scratch == m["arena"]  # the arena is its lower bound on every model
        assert m["user"] <= m["arena"] <= m["user"] + m["io"]  # default never costs total RAM
    assert benchmark.table(rows) in (REPO_ROOT / "docs" / "memory-plan.md").read_text()
