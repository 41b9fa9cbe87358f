"""Where the project's non-Python parts live (runtime_c, boards, SConstruct)."""
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
RUNTIME_DIR = REPO_ROOT / "runtime_c"
RUNTIME_INCLUDE = RUNTIME_DIR / "include"     # the public API: the only -I user code needs
RUNTIME_SRC = RUNTIME_DIR / "src"             # kernels, one folder per category
RUNTIME_INTERNAL = RUNTIME_SRC / "internal"   # helpers the kernels include as "../internal/x.h"
BOARDS_DIR = REPO_ROOT / "boards"
SCONSTRUCT = REPO_ROOT / "SConstruct"
DEFAULT_MODEL = REPO_ROOT / "models" / "digits_cnn_int8.onnx"
DEFAULT_GOLDEN = REPO_ROOT / "models" / "digits_cnn_int8_golden.npz"


def build_root():
    """Where builds go: <repo>/build, or $TINYAOT_BUILD_DIR (a private tree with
    its own SCons database, e.g. one per parallel test worker)."""
    return Path(os.environ.get("TINYAOT_BUILD_DIR") or REPO_ROOT / "build")


def runtime_sources(kernels=None):
    """runtime_c/src/<category>/*.c; with `kernels`, only the ones those functions need.

    Sorted by file name, not by folder: the firmware's kernel archive keeps one
    member order (and so one link layout) whatever category a kernel sits in."""
    files = sorted(RUNTIME_SRC.rglob("*.c"), key=lambda p: p.name)
    if kernels is None:
        return files
    return [f for f in files if f.stem in kernels]
