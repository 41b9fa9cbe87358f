"""Where the project's non-Python parts live (runtime_c, boards, SConstruct)."""
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
RUNTIME_DIR = REPO_ROOT / "runtime_c"
RUNTIME_INCLUDE = RUNTIME_DIR / "include"
RUNTIME_SRC = RUNTIME_DIR / "src"
BOARDS_DIR = REPO_ROOT / "boards"
SCONSTRUCT = REPO_ROOT / "SConstruct"
DEFAULT_MODEL = REPO_ROOT / "models" / "digits_cnn_int8.onnx"
DEFAULT_GOLDEN = REPO_ROOT / "models" / "digits_cnn_int8_golden.npz"


def build_root():
    """Where builds go: <repo>/build, or $TINYAOT_BUILD_DIR (a private tree with
    its own SCons database, e.g. one per parallel test worker)."""
    return Path(os.environ.get("TINYAOT_BUILD_DIR") or REPO_ROOT / "build")


def runtime_sources(kernels=None):
    """runtime_c/src files; with `kernels`, only the ones those functions need."""
    files = sorted(RUNTIME_SRC.glob("*.c"))
    if kernels is None:
        return files
    return [f for f in files if f.stem in kernels]
