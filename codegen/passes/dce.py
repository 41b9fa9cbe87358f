"""Dead-code elimination: drop nodes and constants the outputs do not need."""


def eliminate_dead_code(g):
    live = set(g.outputs)
    kept = []
    for n in reversed(g.nodes):
        if any(o in live for o in n.outputs):
            kept.append(n)
            live.update(i for i in n.inputs if i)
    kept.reverse()
    g.nodes = kept
    used = live | set(g.inputs)
    for name in list(g.tensors):
        if name not in used:
            del g.tensors[name]
    return g
