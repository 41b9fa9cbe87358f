"""The PNG charts hide nothing (issue 22 item 11): arena labels stay inside
their blocks, the legend covers no block, titles name the model; the
profile chart names every layer's kernel and writes its share.

Geometry is read from what matplotlib drew (display coordinates of the
rectangles, texts and legend), for the models whose old charts had labels
spilling over neighbours or a legend on a block (decoder, ic01)."""
from __future__ import annotations

import pytest

from codegen.compiler import compile_model
from codegen.driver.plots import memory_title, plot_memory, plot_profile

from tests.helpers.env import REPO, require_arm_toolchain, shared_model

TOL = 1.0  # pixels


def _inside(a, b):
    return a[0] >= b[0] - TOL and a[1] >= b[1] - TOL and a[2] <= b[2] + TOL and a[3] <= b[3] + TOL


def _overlap(a, b):
    return min(a[2], b[2]) - max(a[0], b[0]) > TOL and min(a[3], b[3]) - max(a[1], b[1]) > TOL


def _models():
    yield REPO / "models" / "digits_cnn_int8.onnx"
    yield REPO / "models" / "decoder_int8.onnx"       # old chart: the legend on the output block
    yield REPO / "models" / "mbv2_block_int8.onnx"


def _check_memory_chart(model, tmp_path):
    c = compile_model(model)
    layout = {}
    png = tmp_path / f"{c.module.name}.png"
    plot_memory(c.plan, c.graph, png, title=memory_title(c), layout=layout)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    blocks, labels = layout["blocks"], layout["labels"]
    assert blocks and labels
    for text, box, block in labels:
        assert _inside(box, block), (c.module.name, text, box, block)  # never spills
        for other in blocks:
            if other != block:
                assert not _overlap(box, other), (c.module.name, text)
    for b in blocks:
        assert not _overlap(layout["legend"], b), c.module.name     # legend covers no block
        assert _inside(b, layout["axes"])
    assert layout["title"].startswith(f"{c.module.name}: arena {c.plan.size:,} B")
    # the big blocks are all labelled, with their size
    big = [b for b in blocks if (b[2] - b[0]) > 80 and (b[3] - b[1]) > 30]
    assert len([lab for lab in labels if lab[2] in big]) == len(big)
    assert any(" B" in text for text, _, _ in labels)
    return layout


@pytest.mark.parametrize("model", list(_models()), ids=lambda p: p.stem)
def test_memory_chart_labels_stay_in_their_blocks(model, tmp_path):
    _check_memory_chart(model, tmp_path)


@pytest.mark.shared
def test_memory_chart_of_ic01(tmp_path):
    onnx_path, _ = shared_model("ic01")
    _check_memory_chart(onnx_path, tmp_path)


def _profile_result():
    """A profile result as driver/profile.py gives it (the chart's input)."""
    layers = [
        {"index": 0, "op": "conv2d", "kernel": "tinyaot_convolve_f32_s8", "instructions": 454960,
         "share": 0.6, "macs": 320000},
        {"index": 1, "op": "reshape", "kernel": "alias (zero-copy)", "instructions": 0,
         "share": 0.0, "macs": 0},
        {"index": 2, "op": "fully_connected", "kernel": "tinyaot_fully_connected_f32_s8",
         "instructions": 303306, "share": 0.4, "macs": 1000},
    ]
    return {"name": "m", "board": "qemu-m4", "numerics": "ort", "total_instructions": 758266,
            "macs": 321000, "layers": layers}


def test_profile_chart_names_kernels_and_shares(tmp_path):
    r = _profile_result()
    layout = {}
    plot_profile(r, tmp_path / "p.png", layout=layout)
    for lab, x in zip(layout["labels"], r["layers"]):
        assert lab.startswith(f"{x['index']} {x['op']}") and x["kernel"] in lab, lab
    for (text, box), x in zip(layout["notes"], r["layers"]):
        assert text.startswith(f"{100 * x['share']:.1f} %") and f"{x['instructions']:,}" in text
        assert _inside(box, layout["axes"]), text   # the longest bar's note inside the axes too
    assert "758,266 instructions" in layout["title"] and "qemu-m4" in layout["title"]


@pytest.mark.qemu
def test_profile_png_from_the_cli(tmp_path):
    require_arm_toolchain()
    from codegen.cli import main
    png = tmp_path / "prof.png"
    assert main(["profile", str(REPO / "models" / "digits_cnn_int8.onnx"), "--board", "qemu-m4",
                 "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
