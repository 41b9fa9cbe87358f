"""Graph passes on the integer IR, run in order by `run_passes`."""
from .dce import eliminate_dead_code
from .layout import assign_layouts

PIPELINE = [
    ("dead-code elimination", eliminate_dead_code),
    ("layout (NHWC, zero-copy reshapes)", assign_layouts),
]


def run_passes(graph, dump=None):
    """Run every pass; `dump(title, graph)` is called after each one."""
    if dump:
        dump("frontend", graph)
    for title, fn in PIPELINE:
        fn(graph)
        if dump:
            dump(title, graph)
    return graph
