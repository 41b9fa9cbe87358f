#!/usr/bin/env python3
"""Is the generated C byte-identical? The invariant of every refactoring.

Compiles every model in models/ and ../shared/models in both numerics and both
--optimize modes (plus the options that change what is emitted: --io float,
--io-buffers user, --depthwise-inplace, --integrity) through the command line
of the tree being measured, and records a SHA-256 of each generated .c and .h,
or the exit code and last stderr line of a compile that is refused.

  python3 scripts/codegen_identity.py --write hashes.json      # this tree
  python3 scripts/codegen_identity.py --check hashes.json      # this tree against a record
  python3 scripts/codegen_identity.py --against REV            # this tree against commit REV
  python3 scripts/codegen_identity.py --against REV --rev HEAD # commit HEAD against commit REV

--against checks REV out into a temporary git worktree and runs the same cases
there with that tree's own code, so the comparison needs no stored record.

--objects records, instead of the C text, the machine code and data of each generated .c
compiled for the Cortex-M4 board (arm-none-eabi-gcc with qemu-m4's flags, `objdump -d -s` of the
object): the proof for a change that means to alter the C's text but not what it compiles to
(comments, initializer syntax).
Exit status 0 when every case matches, 1 when one differs (each is listed).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared" / "models").resolve()

# options beyond numerics x optimize, on the models whose emission they change
EXTRA = {
    "digits_cnn_int8": [["--io", "float"], ["--io-buffers", "user"], ["--integrity", "crc32"],
                        ["--depthwise-inplace"]],
    "mbv2_block_int8": [["--depthwise-inplace"], ["--io-buffers", "user"]],
    "ad01": [["--integrity", "sha256"]],
}


def models():
    """(case stem, path relative to the repo or absolute for ../shared)."""
    out = [(p.stem, f"models/{p.name}") for p in sorted((REPO / "models").glob("*.onnx"))]
    if SHARED.is_dir():
        for p in sorted(SHARED.glob("*/*.onnx")):
            out.append((p.stem, str(p)))
    return out


def cases():
    for stem, path in models():
        variants = [[]] + EXTRA.get(stem, [])
        for numerics in ("ort", "tflite"):
            for optimize in ("speed", "size"):
                for extra in variants:
                    key = " ".join([stem, numerics, optimize] + extra)
                    yield key, path, ["--numerics", numerics, "--optimize", optimize] + extra


M4_FLAGS = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-O2",
            "-ffp-contract=off", "-ffunction-sections", "-fdata-sections", "-std=c99"]
OBJECTS = False  # --objects


def object_digest(tree: Path, c_file: Path):
    """SHA-256 of the machine code and data the generated C compiles to on the M4."""
    obj = c_file.with_suffix(".o")
    subprocess.run(["arm-none-eabi-gcc", *M4_FLAGS, "-I", str(tree / "runtime_c" / "include"),
                    "-I", str(c_file.parent), "-c", str(c_file), "-o", str(obj)], check=True)
    dump = subprocess.run(["arm-none-eabi-objdump", "-d", "-s", str(obj)], check=True,
                          capture_output=True, text=True).stdout
    body = dump.split("\n", 2)[2]  # past the line naming the object file
    return hashlib.sha256(body.encode()).hexdigest()


def run_case(tree: Path, out_root: Path, key, path, args):
    out = out_root / hashlib.sha1(key.encode()).hexdigest()[:12]
    env = dict(os.environ, PYTHONPATH=str(tree), TINYAOT_BUILD_DIR=str(out_root / "build"))
    env.pop("TINYAOT_NO_COLOR", None)
    r = subprocess.run([sys.executable, "-m", "codegen.cli", "compile", path, "-o", str(out)] + args,
                       cwd=tree, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [""])[-1].replace(str(tree), "<tree>")
        return key, {"exit": r.returncode, "error": last[:240],
                     "error_sha256": hashlib.sha256(last.encode()).hexdigest()}
    rec = {}
    for f in sorted(out.iterdir()):
        if OBJECTS and f.suffix == ".c":
            rec[f.name + ":m4-object"] = object_digest(tree, f)
        elif not OBJECTS and f.suffix in (".c", ".h"):
            rec[f.name] = hashlib.sha256(f.read_bytes()).hexdigest()
    return key, rec


def measure(tree: Path, jobs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="tinyaot-identity-") as tmp:
        with ThreadPoolExecutor(jobs) as pool:
            futs = [pool.submit(run_case, tree, Path(tmp), k, p, a) for k, p, a in cases()]
            return dict(sorted(f.result() for f in futs))


def compare(want: dict, got: dict) -> int:
    bad = [k for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
    for k in bad:
        print(f"DIFFERS  {k}\n  before {want.get(k)}\n  after  {got.get(k)}")
    print(f"{len(want) - len(bad) if len(want) >= len(bad) else 0} of {len(want)} cases identical"
          + ("" if not bad else f", {len(bad)} differ"))
    return 1 if bad else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", metavar="JSON")
    g.add_argument("--check", metavar="JSON")
    g.add_argument("--against", metavar="REV")
    ap.add_argument("--rev", metavar="REV",
                    help="with --against: measure commit REV instead of the working tree "
                         "(so the tree can change while it runs)")
    ap.add_argument("--objects", action="store_true",
                    help="compare the M4 machine code of the generated C, not its text")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args(argv)
    global OBJECTS
    OBJECTS = a.objects
    if a.write:
        Path(a.write).write_text(json.dumps(measure(REPO, a.jobs), indent=1) + "\n")
        return 0
    if a.check:
        return compare(json.loads(Path(a.check).read_text()), measure(REPO, a.jobs))
    before = measure_rev(a.against, a.jobs)
    return compare(before, measure_rev(a.rev, a.jobs) if a.rev else measure(REPO, a.jobs))


def measure_rev(rev, jobs):
    """measure() on a temporary git worktree of commit `rev`."""
    with tempfile.TemporaryDirectory(prefix="tinyaot-rev-") as tmp:
        wt = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(wt), rev],
                       check=True)
        try:
            return measure(wt, jobs)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(wt)],
                           check=False)


if __name__ == "__main__":
    sys.exit(main())
