"""The engine's house rules, checked statically over the source (an ast walk, so an import
inside a function counts as much as one at the top; only `if TYPE_CHECKING:` blocks, which
never run, are left out, and so are registries that load a module by its name):

- no import cycle among `engine/` modules;
- `engine/` imports no Django (nor the web apps);
- `records/`, `jobs/` and `tunerweb/` (migrations included) import the engine through at
  most three distinct modules: the front door `engine`, and `engine.gpu` where a worker
  starts on a GPU.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WEB_PACKAGES = ("records", "jobs", "tunerweb")
WEB_MAY_IMPORT = {"engine", "engine.gpu"}
MAX_ENGINE_MODULES_FOR_THE_WEB = 3


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def python_files(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST):
    """Every node, lazy imports included, but not the bodies of `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            yield from (n for orelse in child.orelse for n in _walk_one(orelse))
            continue
        yield child
        yield from _walk(child)


def _walk_one(node: ast.AST):
    yield node
    yield from _walk(node)


def bound_names(package: str) -> set[str]:
    """Names a package's __init__ binds at its top level (imports, assignments, defs)."""
    init = ROOT.joinpath(*package.split("."), "__init__.py")
    if not package or not init.exists():
        return set()
    names: set[str] = set()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def imported_modules(path: Path, known: set[str], this: str | None = None) -> set[str]:
    """The modules a file (module `this`) imports, resolved to absolute names; `from pkg
    import mod` names `pkg.mod` when that is a module of `known`."""
    this = this or module_name(path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            bound = bound_names(target)  # a name the package binds is not its submodule
            names = [f"{target}.{alias.name}" for alias in node.names if alias.name not in bound]
            submodules = [name for name in names if name in known]
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(target)
    return found


def engine_graph() -> dict[str, set[str]]:
    files = python_files("engine")
    known = {module_name(p) for p in files}
    return {module_name(p): imported_modules(p, known) & known - {module_name(p)} for p in files}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def test_no_import_cycle_among_engine_modules():
    graph = engine_graph()
    assert len(graph) > 40 and graph["engine.ops.conv2d.template"] >= {"engine.ops.conv2d.kernel",
                                                                         "engine.ops.conv2d.tiling"}
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_cycle_finder_finds_a_lazy_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_each_operators_kernel_reads_its_tiling_and_the_tiling_no_cuda():
    graph = engine_graph()
    ops = sorted({name.split(".")[2] for name in graph if name.startswith("engine.ops.") and name.count(".") == 3})
    assert ops == ["broadcast", "conv2d", "conv2d_igemm", "conv2d_tc", "conv2d_winograd", "conv2d_winograd_nonfused",
                   "custom", "depthwise", "gemm",
                   "gemm_tc"]
    for op in ops:
        package = f"engine.ops.{op}"
        assert f"{package}.tiling" in graph[f"{package}.kernel"]
        assert f"{package}.template" not in graph[f"{package}.kernel"]
        assert not {f"{package}.kernel", f"{package}.template", "engine.ops.cuda"} & graph[f"{package}.tiling"]


def test_the_engine_imports_no_django():
    files = python_files("engine")
    known = {module_name(p) for p in files}
    offenders = {module_name(p): sorted(m for m in imported_modules(p, known)
                                        if m.split(".")[0] in {"django", "celery", *WEB_PACKAGES})
                 for p in files}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_web_side_enters_the_engine_through_its_front_door():
    known = {module_name(p) for p in python_files("engine")}
    used: dict[str, set[str]] = {}
    for package in WEB_PACKAGES:
        for path in python_files(package):
            for module in imported_modules(path, known):
                if module == "engine" or module.startswith("engine."):
                    used.setdefault(module, set()).add(str(path.relative_to(ROOT)))
    assert "engine" in used and len(used) <= MAX_ENGINE_MODULES_FOR_THE_WEB
    assert set(used) <= WEB_MAY_IMPORT, {m: sorted(f) for m, f in used.items() if m not in WEB_MAY_IMPORT}


def test_the_rules_see_lazy_imports_and_skip_type_checking_blocks(tmp_path):
    source = tmp_path / "view.py"
    source.write_text("import os\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import engine.task\n"
                      "def f():\n    from engine.replay import load_recording\n    from . import forms\n")
    known = {"engine", "engine.replay", "engine.task", "records.forms"}
    assert imported_modules(source, known, this="records.view") == {"os", "typing", "engine.replay", "records.forms"}
