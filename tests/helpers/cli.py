"""Running `python -m codegen.cli` as a user would, and what a clean user error looks like:
exit 2, one line starting `tinyaot: error:`, no traceback."""
from __future__ import annotations

import subprocess
import sys

from tests.helpers.env import REPO


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "codegen.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or REPO)


def assert_clean_error(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr
    assert len(err.splitlines()) == 1, err
    assert err.startswith("tinyaot: error:")
    for n in needles:
        assert n in err, (n, err)
