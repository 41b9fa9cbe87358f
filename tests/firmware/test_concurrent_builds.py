"""Many host builds at once on one build tree (issue 22 item 13): a CI
matrix, `make -j` or two terminals sharing TINYAOT_BUILD_DIR.

Before the fix, host builds shared one SCons database (.sconsign.dblite)
and compiled the runtime kernels into one shared folder, each SCons run
deleting and rewriting objects the others were linking: on a cold tree most
of 12 concurrent `tinyaot run --board host` failed (`ld: cannot find
.../tinyaot_*.os`, `.sconsign.tmp -> .sconsign.dblite`). Now every build
has its own database and the kernel objects appear in the cache complete or
not at all (codegen/driver/firmware.py: host_kernel_cache).
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, REPO

RUNS = 12  # enough to collide every time on the old code, small enough for 2 cores


@pytest.mark.slow
def test_concurrent_host_runs_on_one_cold_build_tree(tmp_path):
    g = np.load(DEFAULT_GOLDEN)
    inp = tmp_path / "in.npz"
    np.savez(inp, inputs=g["inputs"][:4])
    env = dict(os.environ, TINYAOT_BUILD_DIR=str(tmp_path / "build"))
    procs = [subprocess.Popen([sys.executable, "-m", "codegen.cli", "run", str(DEFAULT_MODEL),
                               "--board", "host", "--inputs", str(inp),
                               "-o", str(tmp_path / f"out{k}.npz")],
                              cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
             for k in range(RUNS)]
    results = [(p.wait(timeout=900), p.stdout.read(), p.stderr.read()) for p in procs]
    failed = [(rc, err[-600:]) for rc, _, err in results if rc != 0]
    assert not failed, f"{len(failed)} of {RUNS} failed: {failed[:2]}"
    for k in range(RUNS):
        got = np.load(tmp_path / f"out{k}.npz")["outputs"]
        np.testing.assert_array_equal(got.reshape(4, -1), g["outputs"][:4].reshape(4, -1))
    # one complete kernel folder in the cache, no temporary one left behind
    cache = tmp_path / "build" / "host-kernels"
    folders = [p for p in cache.iterdir() if p.is_dir()]
    assert len(folders) == 1 and not folders[0].name.count(".tmp-"), folders
    assert {p.stem for p in folders[0].glob("*.os")} >= {"tinyaot_softmax_s8"}
    # and no shared SCons database was written for them
    assert not (tmp_path / "build" / ".sconsign.dblite").exists()
