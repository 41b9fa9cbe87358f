"""No import cycles: the import graph of codegen/, imports inside functions included.

The graph is read from the source with `ast` (nothing is imported): every
`import` and `from ... import` statement anywhere in a module (top level,
functions, methods, `if TYPE_CHECKING:` blocks) is an arrow from that module
to the module whose names it uses: `import a.b` and `from a.b import x` point
at a.b; `from pkg import name` points at pkg.name when that is a module, else
at pkg (name is then defined by pkg's __init__). The packages whose __init__
merely runs on the way (a, for `import a.b`) get no arrow: a package that
imports its submodules in its __init__ is not a cycle with them.

CHECKED lists the packages and modules whose strongly connected components
must all be single modules; CHECK_WHOLE_PACKAGE switches the check to every
module of codegen/.

Run as a script for the numbers: `python3 tests/architecture/test_import_graph.py`.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "codegen"

# The driver layer (everything above codegen/compiler.py). A cycle that
# touches any of these fails the test.
CHECKED = (
    "codegen.cli",
    "codegen.commands",
    "codegen.driver",
    "codegen.cycles",
    "codegen.targets",
    "codegen.paths",
    "codegen.errors",
)
CHECK_WHOLE_PACKAGE = True  # every module of codegen/, the compiler core included

# The compiler core's layers, bottom up: a package may import its own modules and those of
# the layers it lists, nothing above (data flows one way: model -> IR -> passes -> plan -> C).
FOUNDATION = ("codegen.errors", "codegen.ir", "codegen.numerics")
LAYERS = {
    "codegen.errors": (),
    "codegen.ir": ("codegen.errors",),
    "codegen.numerics": FOUNDATION,
    "codegen.kernels": FOUNDATION,
    "codegen.ops": FOUNDATION + ("codegen.kernels",),
    "codegen.frontend": FOUNDATION + ("codegen.ops",),
    "codegen.passes": FOUNDATION + ("codegen.ops",),
    "codegen.planner": FOUNDATION + ("codegen.ops", "codegen.kernels"),
    "codegen.backend": FOUNDATION + ("codegen.ops", "codegen.kernels", "codegen.planner"),
    "codegen.reference": FOUNDATION + ("codegen.ops",),
}


def module_files(root=ROOT, package=PACKAGE):
    """{dotted module name: path} of every .py file of the package."""
    out = {}
    for p in sorted((root / package).rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _resolve(module, is_package, level, target):
    """The absolute name of a relative import `from .<level><target>`."""
    if level == 0:
        return target
    base = module.split(".")
    if not is_package:
        base.pop()
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([target] if target else []))


def _named(name, modules):
    """{name} if it is a module of the package, else nothing."""
    return {name} & modules.keys()


def import_graph(root=ROOT, package=PACKAGE):
    """{module: set of modules of the package it imports}, every import statement counted."""
    modules = module_files(root, package)
    graph = {}
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    deps |= _named(a.name, modules)
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_pkg, node.level, node.module or "")
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    deps |= {sub} if sub in modules else _named(base, modules)
        deps.discard(mod)
        graph[mod] = deps
    return graph


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out, key=lambda c: (-len(c), c))


def _in(mod, names):
    return any(mod == n or mod.startswith(n + ".") for n in names)


def checked_cycles(graph, names=CHECKED, whole=CHECK_WHOLE_PACKAGE):
    """The cycles that touch a checked module (every cycle with whole=True)."""
    return [c for c in cycles(graph) if whole or any(_in(m, names) for m in c)]


def internal_imports(root=ROOT, package=PACKAGE):
    """(all import statements naming a package module, those inside a function)."""
    modules = module_files(root, package)
    total = inner = 0
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))
        funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        in_func = {id(x) for f in funcs for x in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [_resolve(mod, is_pkg, node.level, node.module or "")]
            else:
                continue
            if any(_named(n, modules) or n.startswith(package + ".") for n in names):
                total += 1
                inner += id(node) in in_func
    return total, inner


# ----------------------------------------------------------------- the tests

def test_checked_modules_exist():
    """Every CHECKED name is a module or package of codegen/ (a renamed
    package must not silently drop out of the check)."""
    modules = module_files()
    missing = [n for n in CHECKED if not any(_in(m, [n]) for m in modules)]
    assert not missing, missing


def test_no_import_cycles():
    found = checked_cycles(import_graph())
    assert not found, "import cycles (imports inside functions count):\n" + "\n".join(
        f"  {len(c)} modules: {' '.join(c)}" for c in found)


def layer_violations(graph, layers=LAYERS, package=PACKAGE):
    """(module, imported module) pairs where a core layer imports above itself."""
    bad = []
    for mod, deps in sorted(graph.items()):
        own = next((lay for lay in layers if _in(mod, [lay])), None)
        if own is None:
            continue
        allowed = (own,) + tuple(layers[own])
        bad += [(mod, d) for d in sorted(deps) if d != package and not _in(d, allowed)]
    return bad


def test_core_layers_import_only_downwards():
    """ops/ never imports the front end, passes, planner or backend; the front end, passes
    and planner never import the backend; nothing in the core imports the driver."""
    bad = layer_violations(import_graph())
    assert not bad, "imports against the layering:\n" + "\n".join(f"  {a} -> {b}" for a, b in bad)


def test_layer_check_is_not_blind():
    g = {"codegen.ops.x": {"codegen.frontend.y", "codegen.numerics.z"},
         "codegen.frontend.y": {"codegen.ops.x"}, "codegen.numerics.z": set()}
    assert layer_violations(g) == [("codegen.ops.x", "codegen.frontend.y")]


def test_the_graph_sees_imports_inside_functions(tmp_path):
    """The check is not blind: a cycle closed by an import inside a function,
    through `from .. import module` and `from pkg import name-defined-in-__init__`,
    is found; a package importing its own submodules is not a cycle."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("from . import e\nX = 1\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    (pkg / "d.py").write_text("from .sub.b import f\n")
    (pkg / "sub" / "e.py").write_text("def g():\n    from pkg.d import f\n    from .b import f\n")
    (pkg / "sub" / "h.py").write_text("from pkg.sub import X\n")
    (pkg / "sub" / "i.py").write_text("def k():\n    from . import h\n")
    g = import_graph(tmp_path, "pkg")
    assert g["pkg.sub.b"] == {"pkg.c"}
    assert g["pkg.d"] == {"pkg.sub.b"} and g["pkg.sub"] == {"pkg.sub.e"}
    assert g["pkg.sub.h"] == {"pkg.sub"} and g["pkg.sub.i"] == {"pkg.sub.h"}
    assert cycles(g) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
    assert checked_cycles(g, names=("pkg.sub",), whole=False) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
    assert checked_cycles(g, names=("pkg.d",), whole=False) == []
    assert checked_cycles(g, names=("pkg.d",), whole=True) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


if __name__ == "__main__":
    g = import_graph()
    total, inner = internal_imports()
    all_cycles = cycles(g)
    print(f"{len(g)} modules, {sum(len(v) for v in g.values())} module-to-module arrows; "
          f"{total} internal import statements, {inner} inside functions")
    print(f"{len(all_cycles)} cycles holding {sum(len(c) for c in all_cycles)} modules")
    for c in all_cycles:
        print(f"  {len(c)}: {' '.join(c)}")
    bad = checked_cycles(g)
    print(f"cycles touching {', '.join(CHECKED)}: {len(bad)}")
