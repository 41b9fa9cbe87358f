"""The cycle model's data: per-core cost tables (cores/*.toml) and parts (parts.toml).

Typed records for the rest of the package, checked when loaded, and the plugin's
config file written from them (codegen/cycles/plugin/cyclemodel.c reads it).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from ..errors import TinyAotError

DATA_DIR = Path(__file__).resolve().parent
CORES_DIR = DATA_DIR / "cores"
PARTS_FILE = DATA_DIR / "parts.toml"

# The classes of plugin/thumb_decode.h (CLASS_LIST), in its order.
CLASSES = ("ALU", "MUL", "MLA", "MULL", "MLAL", "DSPMUL", "DIV",
           "LDR", "STR", "STR_REG", "LDRD", "STRD", "LDM", "STM",
           "B", "BL", "BCOND", "BX", "TB", "IT", "NOP", "SYS",
           "VALU", "VMUL", "VMLA", "VDIV", "VSQRT", "VLDR", "VSTR", "VLDM", "VSTM",
           "VMOV", "VMOV2", "MVE", "MVE_LDST", "UNKNOWN")
RULES = ("p_direct", "p_indirect", "p_unaligned", "skip_cost", "ldr_pipeline",
         "unaligned_rule", "dual_issue")


@dataclass(frozen=True)
class CoreTable:
    name: str
    manual: str
    rules: dict           # rule -> int
    cycles: dict          # class -> (cycles, per_register)
    refs: dict            # class or rule -> manual reference
    llvm: dict            # class -> how LLVM's scheduling model disagrees
    pairs: tuple          # (first class, second class) that dual-issue


@dataclass(frozen=True)
class Cache:
    lines: int
    line_bytes: int
    ways: int


@dataclass(frozen=True)
class Part:
    name: str
    title: str
    boards: tuple
    core: str | None       # None: the board's core (the ideal part)
    clock_hz: int
    flash_wait_states: int
    flash_read_bytes: int
    prefetch: bool
    icache: Cache
    dcache: Cache
    ref: str
    verified: bool

    def ms(self, cycles):
        return 1000.0 * cycles / self.clock_hz


def _bad(path, what):
    return TinyAotError(f"cycle model data: {what}", model=str(path))


@lru_cache(maxsize=None)
def load_core(name: str) -> CoreTable:
    path = CORES_DIR / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in CORES_DIR.glob("*.toml")))
        raise TinyAotError(f"no cycle table for core '{name}' (tables: {known})")
    d = tomllib.loads(path.read_text())
    classes, rules = d.get("classes", {}), d.get("rules", {})
    missing = [c for c in CLASSES if c not in classes] + [r for r in RULES if r not in rules]
    extra = [c for c in classes if c not in CLASSES] + [r for r in rules if r not in RULES]
    if missing or extra:
        raise _bad(path, f"missing {missing}, unknown {extra}")
    cycles, refs, llvm = {}, {}, {}
    for c, row in classes.items():
        if "ref" not in row or not isinstance(row.get("cycles"), int):
            raise _bad(path, f"class {c} needs integer cycles and a ref")
        cycles[c] = (row["cycles"], int(row.get("per_register", 0)))
        refs[c] = row["ref"]
        if "llvm" in row:
            llvm[c] = row["llvm"]
    for r, row in rules.items():
        if "ref" not in row or not isinstance(row.get("value"), int):
            raise _bad(path, f"rule {r} needs an integer value and a ref")
        refs[r] = row["ref"]
    pairs = []
    for a, seconds in d.get("pairs", {}).items():
        for b in seconds:
            if a not in CLASSES or b not in CLASSES:
                raise _bad(path, f"pair {a} {b}: unknown class")
            pairs.append((a, b))
    return CoreTable(d.get("core", name), d.get("manual", ""),
                     {r: v["value"] for r, v in rules.items()}, cycles, refs, llvm, tuple(pairs))


def _cache(path, name, d, key):
    c = d.get(key, {})
    try:
        lines, line_bytes, ways = int(c["lines"]), int(c["line_bytes"]), int(c["ways"])
    except (KeyError, TypeError, ValueError):
        raise _bad(path, f"part {name}: {key} needs lines, line_bytes, ways") from None
    if lines and (ways <= 0 or lines % ways or line_bytes & (line_bytes - 1)):
        raise _bad(path, f"part {name}: {key} lines must be a multiple of ways, line_bytes a power of 2")
    return Cache(lines, line_bytes, ways)


@lru_cache(maxsize=None)
def load_parts() -> dict:
    d = tomllib.loads(PARTS_FILE.read_text())
    parts = {}
    for name, p in d.items():
        try:
            parts[name] = Part(
                name=name, title=p["title"], boards=tuple(p["boards"]), core=p.get("core"),
                clock_hz=int(p["clock_hz"]), flash_wait_states=int(p["flash_wait_states"]),
                flash_read_bytes=int(p["flash_read_bytes"]), prefetch=bool(p["prefetch"]),
                icache=_cache(PARTS_FILE, name, p, "icache"),
                dcache=_cache(PARTS_FILE, name, p, "dcache"),
                ref=p["ref"], verified=bool(p.get("verified", False)))
        except KeyError as e:
            raise _bad(PARTS_FILE, f"part {name} has no {e}") from None
        if parts[name].icache.lines < 1:
            raise _bad(PARTS_FILE, f"part {name}: icache needs at least one line (the line buffer)")
    return parts


def board_core(board: dict) -> str:
    """The core whose table prices the board's instructions: its QEMU cpu, unless the
    board names another of the same instruction set (`cycle_core`: a Cortex-M0+ part
    timed on the Cortex-M0 machine, codegen/targets/parts.py)."""
    return str(board.get("cycle_core") or board.get("cpu", ""))


def parts_for_board(board: dict) -> list:
    """The parts that can run this board's firmware (the ideal part first)."""
    core = board_core(board)
    return [p for p in load_parts().values()
            if board["name"] in p.boards and (p.core is None or p.core == core)]


def select_parts(board: dict, names=None) -> list:
    avail = parts_for_board(board)
    if not names:
        return avail
    by = {p.name: p for p in avail}
    out = []
    for n in names:
        if n not in by:
            raise TinyAotError(f"--part {n}: not a part of board {board['name']} "
                               f"(parts: {', '.join(by)})")
        out.append(by[n])
    return out


def plugin_config(core: CoreTable, parts, board: dict, out_path, begin=None, end=None,
                  call=None, mark=None, marks=0) -> str:
    """The plugin's config file: one setting per line."""
    lines = [f"# core {core.name}; parts {' '.join(p.name for p in parts)}", f"out {out_path}"]
    for r in RULES:
        lines.append(f"{r} {core.rules[r]}")
    for c in CLASSES:
        cyc, per = core.cycles[c]
        lines.append(f"class {c} {cyc} {per}")
    lines += [f"pair {a} {b}" for a, b in core.pairs]
    for key, addr in (("begin", begin), ("end", end), ("call", call)):
        if addr is not None:
            lines.append(f"{key} {addr:#x}")
    if mark is not None and marks:
        lines.append(f"mark {mark:#x} {int(marks)}")
    lo = int(board["flash_origin"])
    hi = lo + int(board["flash_size"])
    for p in parts:
        lines += [f"part {p.name}", f"flash {lo:#x} {hi:#x}",
                  f"wait_states {p.flash_wait_states}", f"read_bytes {p.flash_read_bytes}",
                  f"prefetch {int(p.prefetch)}",
                  f"icache {p.icache.lines // p.icache.ways} {p.icache.ways} {p.icache.line_bytes}",
                  f"dcache {p.dcache.lines // max(p.dcache.ways, 1) if p.dcache.lines else 0} "
                  f"{p.dcache.ways if p.dcache.lines else 0} {p.dcache.line_bytes}"]
    return "\n".join(lines) + "\n"
