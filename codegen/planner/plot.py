"""`tinyaot compile --plot-memory mem.png`: the arena over time.

One rectangle per arena block: x from the step that writes it to the last
step that reads it, y from its offset to offset + size. In-place chains are
one block (one rectangle, labelled with the ops that ran in place); the
dashed line is the arena size, the dotted one the lower bound. Needs
matplotlib (a tinyaot dependency); rendered off-screen (Agg).
"""
from __future__ import annotations


def plot_memory(plan, graph, path, title=None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    steps = len(graph.nodes)
    blocks = [b for b in plan.blocks if b.external is None and b.offset >= 0 and b.size > 0]
    fig, ax = plt.subplots(figsize=(max(6.0, min(24.0, 0.35 * steps + 4)), 5), dpi=100)
    cmap = plt.get_cmap("tab20")
    for k, b in enumerate(sorted(blocks, key=lambda b: (b.first, b.offset))):
        x0, x1 = b.first - 0.45, b.last + 0.45
        ax.add_patch(Rectangle((x0, b.offset), x1 - x0, b.size, facecolor=cmap(k % 20),
                               edgecolor="black", linewidth=0.6, alpha=0.85))
        label = graph.nodes[b.first].op if 0 <= b.first < steps else b.name
        if getattr(b, "scratch", False):
            label = "scratch"
        if b.inplace:
            label += "+" + "+".join(m["op"] for m in b.inplace)
        if b.size >= 0.06 * max(plan.size, 1):
            ax.text((x0 + x1) / 2, b.offset + b.size / 2, label, ha="center", va="center",
                    fontsize=7, clip_on=True)
    ax.axhline(plan.size, color="red", linestyle="--", linewidth=1,
               label=f"arena {plan.size} B")
    ax.axhline(plan.lower_bound, color="gray", linestyle=":", linewidth=1,
               label=f"lower bound {plan.lower_bound} B")
    ax.set_xlim(-1.5, steps + 0.5)
    ax.set_ylim(0, max(plan.size, 1) * 1.08)
    ax.set_xlabel("step (layer index)")
    ax.set_ylabel("arena offset (bytes)")
    ax.set_title(title or f"{graph.name}: {len(blocks)} arena blocks, io buffers {plan.io_buffers}")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(str(path))
    plt.close(fig)
    return str(path)
