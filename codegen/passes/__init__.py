"""Graph passes on the integer IR, run in order by `run_passes`."""
from .dce import eliminate_dead_code
from .layout import assign_layouts
from .kernel_select import select_kernels

from .uint8 import uint8_to_int8

PIPELINE = [
    ("uint8 -> int8 (zero points - 128, exact)", uint8_to_int8),
    ("dead-code elimination", eliminate_dead_code),
    ("layout (NHWC, zero-copy reshapes)", assign_layouts),
    ("kernel selection (fast conv / depthwise / FC, scratch)", select_kernels),
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
