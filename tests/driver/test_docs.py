"""The documentation stays small, linked and true.

* README.md is at most 16 KB;
* every relative link in README.md and docs/*.md reaches a file (and a
  heading, when it names an anchor);
* docs/results.md is what bench/render_results.py makes of the bench's
  results, and no other page re-pastes a bench number;
* the README's quick start and five-minute tour print what the README says
  (on qemu-m4), and the example firmware of the tour classifies its digit as
  onnxruntime does.
"""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.env import DEFAULT_GOLDEN, DEFAULT_MODEL, REPO, require_arm_toolchain

README = REPO / "README.md"
DOCS = REPO / "docs"
README_LIMIT = 16384

_LINK_RE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_FENCE_RE = re.compile(r"^(```|~~~)")


def pages():
    return [README] + sorted(DOCS.glob("*.md"))


def code_blocks(text):
    """Fenced code blocks, in order: [(info string, body)]."""
    blocks, body, info = [], None, ""
    for line in text.splitlines():
        if _FENCE_RE.match(line.strip()):
            if body is None:
                body, info = [], line.strip()[3:].strip()
            else:
                blocks.append((info, "\n".join(body)))
                body = None
        elif body is not None:
            body.append(line)
    return blocks


def outside_fences(text):
    """The lines outside fenced code blocks."""
    out, inside = [], False
    for line in text.splitlines():
        if _FENCE_RE.match(line.strip()):
            inside = not inside
            continue
        if not inside:
            out.append(line)
    return out


def links(text):
    """Link targets outside code (fenced blocks and inline code spans)."""
    prose = "\n".join(re.sub(r"`[^`]*`", "", ln) for ln in outside_fences(text))
    return _LINK_RE.findall(prose)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces -> '-'."""
    h = re.sub(r"`|\*\*?|__", "", heading.strip().lower())
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)  # a link in a heading keeps its text
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(text):
    seen, out = {}, set()
    for line in outside_fences(text):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = slug(m.group(1))
        k = seen.get(s, 0)
        seen[s] = k + 1
        out.add(s if k == 0 else f"{s}-{k}")
    return out


def broken_links(path: Path):
    """Relative links of one markdown file that reach no file or no heading."""
    text = path.read_text()
    bad = []
    for target in links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            bad.append(f"{path.name}: {target}: no such file")
            continue
        try:
            dest.relative_to(REPO)
        except ValueError:
            bad.append(f"{path.name}: {target}: outside the repository")
            continue
        if anchor:
            if dest.suffix != ".md" or anchor not in anchors(dest.read_text()):
                bad.append(f"{path.name}: {target}: no heading #{anchor} in {dest.name}")
    return bad


def render_results():
    spec = importlib.util.spec_from_file_location("render_results", REPO / "bench" / "render_results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------ size, links

def test_readme_is_at_most_16_kb():
    size = README.stat().st_size
    assert size <= README_LIMIT, f"README.md is {size} B, the limit is {README_LIMIT} B"


def test_docs_pages_exist():
    want = {"architecture", "numerics", "memory-plan", "kernels", "boards", "cli", "export",
            "testing", "results", "models"}
    have = {p.stem for p in DOCS.glob("*.md")}
    assert want <= have, f"missing docs pages: {sorted(want - have)}"
    readme_links = {t.partition("#")[0] for t in links(README.read_text())}
    unlinked = sorted(f"docs/{p}.md" for p in have if f"docs/{p}.md" not in readme_links)
    assert unlinked == [], "every docs page is linked from the README"


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_relative_links_resolve(page):
    assert broken_links(page) == []


def test_link_checker_finds_broken_links(tmp_path, monkeypatch):
    """The checker itself: a missing file, a missing anchor and a good anchor."""
    doc = tmp_path / "a.md"
    (tmp_path / "b.md").write_text("# Title\n\n## Speed or size (`--optimize`)\n\ntext\n")
    doc.write_text("# A\n\nSee [b](b.md#speed-or-size---optimize), [gone](c.md), "
                   "[no anchor](b.md#nothing), [here](#a), [web](https://example.org/x).\n\n"
                   "```\n[in code](d.md)\n```\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert broken_links(doc) == ["a.md: c.md: no such file",
                                 "a.md: b.md#nothing: no heading #nothing in b.md"]


def test_slug_matches_github_rules():
    assert slug("Speed or size (`--optimize`)") == "speed-or-size---optimize"
    assert slug("The generated API") == "the-generated-api"
    assert slug("I/O buffers: arena or user") == "io-buffers-arena-or-user"
    assert anchors("# X\n## Notes\n## Notes\n") == {"x", "notes", "notes-1"}


# ------------------------------------------------------------------ results page

def test_results_page_is_generated_from_bench_json():
    rr = render_results()
    size = rr.load(rr.SIZE_JSON) if rr.SIZE_JSON.exists() else None
    want = rr.render(rr.load(rr.SPEED_JSON), size)
    assert (DOCS / "results.md").read_text() == want, \
        "docs/results.md is stale: run python3 bench/render_results.py"


def _row(model, numerics, ins, tflm=None, arena=1000, bound=1000, tflm_arena=None,
         mismatches=0, code=100, weights=900, tables=20):
    return {"model": model, "numerics": numerics, "board": "qemu-m4", "optimize": "speed",
            "instructions": ins, "macs": 5000, "mac_per_instruction": round(5000 / ins, 3),
            "arena_bytes": arena, "arena_lower_bound": bound,
            "flash_bytes": code + weights + tables, "flash_code": code,
            "flash_weights": weights, "flash_tables": tables, "vectors": 8, "mismatches": mismatches,
            "tflm_cmsis_nn_instructions": tflm,
            "ratio_to_tflm": round(ins / tflm, 3) if tflm else None,
            "tflm_arena_bytes": tflm_arena}


def test_render_results_on_hand_made_rows():
    """Expected strings written by hand from the rows, not taken from the renderer."""
    rr = render_results()
    speed = [_row("m1", "ort", 40000, tflm=100000, tflm_arena=900),
             _row("m1", "tflite", 60000, tflm=100000, arena=800, tflm_arena=900),
             _row("own", "ort", 12345, arena=1200, bound=1100, mismatches=3)]
    size = [dict(_row("m1", "ort", 80000, tflm=100000, code=50, weights=250, tables=6),
                 optimize="size")]
    page = rr.render(speed, size)
    assert "| m1 | ort | 8 (all bit-exact) | 40,000 | 5,000 | 0.125 | 100,000 | 0.4 | " \
           "1,000 (1,000) | 900 | 1,020 (100 / 900 / 20) |" in page
    assert "| own | ort | 8 (3 elements differ) | 12,345 |" in page
    assert "1 of 3 runs differ: own `ort` (3 elements)" in page
    assert "`ort` 0.400x (m1) to 0.400x (m1); `tflite` 0.600x (m1) to 0.600x (m1); " \
           "above the 0.5x target: m1 `tflite`." in page
    assert "larger in m1 `ort` (1,000 B against 900 B)" in page
    assert "above it in own `ort` (1,200 B, bound 1,100 B)" in page
    # size against speed: flash 306 / 1020, instructions 80000 / 40000
    assert "| m1 | ort | 8 (all bit-exact) | 1,020 (100 / 900 / 20) | 306 (50 / 250 / 6) | 0.30 | " \
           "40,000 | 80,000 | 2.0 | 0.8 | 1,000 / 1,000 |" in page
    assert "## Size" not in rr.render(speed, None)


def _bench_numbers():
    """Every instruction count of the bench, as the pages would write it."""
    rr = render_results()
    rows = rr.load(rr.SPEED_JSON) + (rr.load(rr.SIZE_JSON) if rr.SIZE_JSON.exists() else [])
    return {(r["model"], v) for r in rows for v in (r["instructions"],) if v and v >= 10000}


def test_no_page_pastes_bench_numbers():
    """Results live in docs/results.md only; the README may quote the quick
    start's own output (the default model, digits)."""
    found = []
    for page in pages():
        if page.name == "results.md":
            continue
        text = page.read_text()
        for model, v in _bench_numbers():
            if page == README and model == "digits":
                continue
            if re.search(rf"(?<![\d,]){v:,}(?![\d,])|(?<![\d,]){v}(?![\d,])", text):
                found.append(f"{page.name}: {model} {v}")
    assert found == [], "bench numbers pasted by hand (link docs/results.md instead)"


# ------------------------------------------------------------------ quick start and tour

def _block_with(text, needle):
    got = [body for _, body in code_blocks(text) if needle in body]
    assert len(got) == 1, f"README has {len(got)} code blocks containing {needle!r}"
    return got[0]


def _report_lines(text):
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("model "))
    end = next(i for i, ln in enumerate(lines) if ln in ("PASS", "FAIL") and i > start)
    return lines[start:end + 1]


@pytest.mark.qemu
def test_quick_start_output_is_real():
    """`scons board=qemu-m4` prints exactly the report the README quotes."""
    require_arm_toolchain()
    proc = subprocess.run([sys.executable, "-m", "SCons", "board=qemu-m4"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    readme = _block_with(README.read_text(), "(outputs),")
    assert _report_lines(readme) == _report_lines(proc.stdout)


@pytest.mark.qemu
def test_tour_is_real(tmp_path, capsys):
    """The tour: compile's line, verify's report, export's line and the
    example firmware's answer, each as the README prints it."""
    require_arm_toolchain()
    if shutil.which("make") is None:
        pytest.skip("make is missing")
    from codegen.cli import main as cli_main
    readme = README.read_text()

    assert cli_main(["compile", str(DEFAULT_MODEL), "-o", str(tmp_path / "digits")]) == 0
    line = capsys.readouterr().out.strip()
    summary = line[line.index("(arena"):]
    assert f"report.json {summary}" in readme

    assert cli_main(["verify", str(DEFAULT_MODEL), "--golden", str(DEFAULT_GOLDEN),
                     "--board", "qemu-m4"]) == 0
    got = capsys.readouterr().out
    assert _report_lines(_block_with(readme, "(outputs_onnxruntime)")) == _report_lines(got)

    # export measures one inference exactly as verify does (one firmware run);
    # the test skips that second build and checks the README's numbers against verify's
    lib = tmp_path / "digits_lib"
    assert cli_main(["export", str(DEFAULT_MODEL), "--board", "qemu-m4", "-o", str(lib),
                     "--no-measure"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    ins = re.search(r"^instructions (\d+) per", got, re.M).group(1)
    flash = re.search(r"^flash +(\d+) B", got, re.M).group(1)
    assert f"{first}, flash {flash} B, {ins} instructions on qemu-m4\n" in readme

    out = tmp_path / "app"
    proc = subprocess.run(["make", "-C", str(DOCS / "example"), f"TINYAOT_EXPORT={lib}",
                           f"OUT={out}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    from codegen.targets import qemu
    board = qemu.load_board("qemu-m4")
    run = subprocess.run(["qemu-system-arm", "-M", board["qemu_machine"], "-nographic",
                          "-semihosting", "-kernel", str(out / "app.elf")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    said = (run.stdout + run.stderr).strip()
    # the oracle: onnxruntime's output for that digit (the golden file) and its label
    g = np.load(DEFAULT_GOLDEN)
    assert said == f"predicted {int(np.argmax(g['outputs_onnxruntime'][0]))}, " \
                   f"label {int(g['labels'][0])}"
    assert said in readme


def test_example_digit_is_the_first_golden_input():
    text = (DOCS / "example" / "digit.h").read_text()
    body = text[text.index("digit[64] = {") + len("digit[64] = {"):text.index("};")]
    values = [int(v) for v in body.replace("\n", " ").split(",")]
    g = np.load(DEFAULT_GOLDEN)
    assert values == g["inputs"][0].reshape(-1).tolist()
    assert re.search(rf"label = {int(g['labels'][0])};", text)


def test_results_json_rows_are_complete():
    """The generator's input: every row has the fields it reads."""
    rr = render_results()
    need = {"model", "numerics", "board", "instructions", "macs", "mac_per_instruction",
            "arena_bytes", "arena_lower_bound", "flash_code", "flash_weights", "vectors",
            "mismatches", "tflm_cmsis_nn_instructions", "ratio_to_tflm", "tflm_arena_bytes"}
    for path in (rr.SPEED_JSON, rr.SIZE_JSON):
        if path.exists():
            for r in json.loads(path.read_text()):
                assert need <= set(r), (path.name, r.get("model"), sorted(need - set(r)))
