"""Golden files for the tests: made as a user makes them (`tinyaot golden`), and copies with
one value changed (a golden that a correct build must fail on)."""
from __future__ import annotations

import numpy as np

from tests.helpers.cli import run_cli


def several_ends_golden(tmp_path, n=3, seed=0):
    """tests/helpers/ends_builders.several_ends saved in tmp_path with a golden file from
    onnxruntime (`tinyaot golden`) for n random vectors (a float input, an int8 one):
    (model path, golden path)."""
    import onnx
    from tests.helpers import ends_builders as E
    model = tmp_path / "several_ends.onnx"
    onnx.save(E.several_ends(), str(model))
    rng = np.random.default_rng(seed)
    src = tmp_path / "several_ends_inputs.npz"
    np.savez(src, inputs=rng.normal(size=(n, 1, 16)).astype(np.float32),
             inputs1=rng.integers(-128, 128, size=(n, 1, 8)).astype(np.int8))
    golden = tmp_path / "several_ends_golden.npz"
    p = run_cli("golden", model, "--inputs", src, "-o", golden)
    assert p.returncode == 0, p.stderr
    return model, golden


def one_value_changed(golden, key, vector, out):
    """A copy of golden file `golden` at `out` whose array `key` differs in one integer of
    vector `vector` (by one step, inside int8)."""
    g = dict(np.load(golden))
    y = g[key].copy()
    y[vector].flat[0] = y[vector].flat[0] + 1 if y[vector].flat[0] < 127 else y[vector].flat[0] - 1
    g[key] = y
    np.savez(out, **g)
    return out
