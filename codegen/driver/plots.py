"""The PNG charts of the commands: the arena plan (`compile --plot-memory`,
`report --plot`) and the instructions per layer (`profile --png`).

Drawn so that nothing hides anything: a block's label is drawn only where it
fits inside the block (the full label with the block's size, the label, the
first op, each also turned upright; else none), never over its neighbours;
the legend sits outside the axes, never on a block; the profile names each
layer's kernel and writes its share and count at its bar. Each function can
fill `layout` (display coordinates of what it drew) for the tests.
Rendered off-screen (Agg) and written atomically.
"""
from __future__ import annotations

import os


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path):
    tmp = str(path) + ".tmp.png"
    fig.savefig(tmp, dpi=100, bbox_inches="tight")  # the outside legend included
    os.replace(tmp, str(path))
    return str(path)


def _box(bb):
    return (float(bb.x0), float(bb.y0), float(bb.x1), float(bb.y1))


def _fits(t, rect_bb, renderer, pad=2.0):
    tb = t.get_window_extent(renderer)
    return tb.width <= rect_bb.width - pad and tb.height <= rect_bb.height - pad


def _block_label(b, graph):
    steps = len(graph.nodes)
    if getattr(b, "scratch", False):
        return "scratch"
    if b.name in graph.inputs:
        return "input"
    if b.name in graph.outputs:
        return "output"
    label = graph.nodes[b.first].op if 0 <= b.first < steps else b.name
    if b.inplace:
        label += "+" + "+".join(m["op"] for m in b.inplace)
    return label


def plot_memory(plan, graph, path, title=None, layout=None):
    """One rectangle per arena block: x from the step that writes it to the
    last step that reads it, y from its offset to offset + size. In-place
    chains are one block, labelled with the ops that ran in place; the dashed
    line is the arena size, the dotted one the lower bound."""
    plt = _pyplot()
    from matplotlib.patches import Rectangle
    from matplotlib.ticker import MaxNLocator

    steps = len(graph.nodes)
    blocks = sorted([b for b in plan.blocks if b.external is None and b.offset >= 0 and b.size > 0],
                    key=lambda b: (b.first, b.offset))
    fig, ax = plt.subplots(figsize=(max(6.0, min(24.0, 0.35 * steps + 4)), 5), dpi=100)
    cmap = plt.get_cmap("tab20")
    drawn = []
    for k, b in enumerate(blocks):
        x0, x1 = b.first - 0.45, b.last + 0.45
        rect = Rectangle((x0, b.offset), x1 - x0, b.size, facecolor=cmap(k % 20),
                         edgecolor="black", linewidth=0.6, alpha=0.85)
        ax.add_patch(rect)
        label = _block_label(b, graph)
        t = ax.text((x0 + x1) / 2, b.offset + b.size / 2, "", ha="center", va="center",
                    fontsize=7, clip_on=True)
        drawn.append((b, rect, t, label))
    same = plan.size == plan.lower_bound
    ax.axhline(plan.size, color="red", linestyle="--", linewidth=1,
               label=f"arena {plan.size:,} B" + (" = lower bound" if same else ""))
    if not same:
        ax.axhline(plan.lower_bound, color="gray", linestyle=":", linewidth=1,
                   label=f"lower bound {plan.lower_bound:,} B")
    ax.set_xlim(min([-0.5] + [b.first - 0.5 for b in blocks]), steps - 0.5 + 1)
    ax.set_ylim(0, max(plan.size, 1) * 1.03)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(lambda v, _: f"{int(v):,}")
    ax.set_xlabel("step (layer index; -1: before the first layer)")
    ax.set_ylabel("arena offset (bytes)")
    io = "input and output in the arena" if plan.io_buffers == "arena" else \
        "input and output in the caller's buffers"
    ax.set_title(title or f"{graph.name}: {len(blocks)} arena blocks, {io}")
    leg = ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8)
    fig.tight_layout()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    shown = []
    for b, rect, t, label in drawn:
        rb = rect.get_window_extent(renderer)
        first = label.split("+")[0]
        for text, rot in ((f"{label}\n{b.size:,} B", 0), (label, 0), (f"{label}\n{b.size:,} B", 90),
                          (label, 90), (first, 0), (first, 90)):
            t.set_text(text)
            t.set_rotation(rot)
            if _fits(t, rb, renderer):
                shown.append((text, _box(t.get_window_extent(renderer)), _box(rb)))
                break
        else:
            t.set_visible(False)  # too small for any label: the colour tells it apart
    if layout is not None:
        layout.update(blocks=[_box(r.get_window_extent(renderer)) for _, r, _, _ in drawn],
                      labels=shown, legend=_box(leg.get_window_extent(renderer)),
                      axes=_box(ax.get_window_extent(renderer)), title=ax.get_title())
    out = _save(fig, path)
    plt.close(fig)
    return out


def memory_title(c):
    """The arena chart's title for a compiled model."""
    p = c.plan
    n = len([b for b in p.blocks if b.external is None and b.offset >= 0 and b.size > 0])
    io = "input and output inside" if p.io_buffers == "arena" else "input and output outside"
    return (f"{c.module.name}: arena {p.size:,} B (lower bound {p.lower_bound:,} B), "
            f"{n} blocks, {io}")


def plot_profile(r, path, layout=None):
    """Instructions per layer: one bar per layer, named with its op and
    kernel, its share of the inference and its count written at the bar."""
    plt = _pyplot()
    rows = r["layers"]
    labels = [f"{x['index']} {x['op']}  ({x['kernel']})" for x in rows]
    vals = [x["instructions"] for x in rows]
    top = max(vals + [1])
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(rows) + 1.8))
    bars = ax.barh(range(len(rows)), vals, color="tab:blue")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.3)  # room for the annotation after the longest bar
    ax.xaxis.set_major_formatter(lambda v, _: f"{int(v):,}")
    ax.set_xlabel("instructions (QEMU -icount)")
    macs = f", {r['macs']:,} MACs" if r.get("macs") else ""
    ax.set_title(f"{r['name']} on {r['board']} ({r['numerics']}): "
                 f"{r['total_instructions']:,} instructions per inference{macs}")
    notes = []
    for bar, x in zip(bars, rows):
        notes.append(ax.text(bar.get_width() + top * 0.01, bar.get_y() + bar.get_height() / 2,
                             f"{100 * x['share']:.1f} %  {x['instructions']:,}", va="center",
                             ha="left", fontsize=7))
    fig.tight_layout()
    if layout is not None:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        layout.update(labels=[t.get_text() for t in ax.get_yticklabels()],
                      notes=[(t.get_text(), _box(t.get_window_extent(renderer))) for t in notes],
                      axes=_box(ax.get_window_extent(renderer)), title=ax.get_title())
    out = _save(fig, path)
    plt.close(fig)
    return out
