"""The house rules that can be checked by a program, not by eye.

- `heterps_core` is the domain: importing every one of its modules loads no Django, Celery
  or Channels (checked in a fresh interpreter).
- No import cycles among the project's modules (`heterps_core`, `webapp`, `workers`): a
  small AST walk over the imports each module runs when it is imported (module level, not
  inside functions or `if TYPE_CHECKING:`), then strongly connected components.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("heterps_core", "webapp", "workers")
FORBIDDEN = ("django", "celery", "channels", "rest_framework", "daphne")


def modules(package: str) -> dict[str, Path]:
    """Dotted name -> file of every module of `package` (packages by their __init__)."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "migrations" in parts or parts[-1] == "__main__":  # __main__ runs the CLI
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def test_importing_every_core_module_loads_no_web_framework() -> None:
    names = sorted(modules("heterps_core"))
    script = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        f"loaded = sorted({{m.split('.')[0] for m in sys.modules}} & set({FORBIDDEN!r}))\n"
        "print(','.join(loaded))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(ROOT),
                                                       "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", f"heterps_core loads {done.stdout.strip()}"


def _import_time_nodes(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements run at import time: module level, inside if/try/with, not in
    function or class bodies' functions, not under `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            test = node.test
            checking = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
            if not checking:
                yield from _import_time_nodes(node.body)
            yield from _import_time_nodes(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _import_time_nodes(block)
            for handler in node.handlers:
                yield from _import_time_nodes(handler.body)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _import_time_nodes(node.body)


def _edges(name: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _import_time_nodes(tree.body):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:  # relative: from the module's own package
            package = name.split(".") if is_package else name.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([base] if base else [])])
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            targets.add(submodule if submodule in known else base)
    # A module's own packages are imported first by Python, never by its code: not edges.
    parents = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    return {t for t in targets if t in known and t != name and t not in parents}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_among_the_projects_modules() -> None:
    files = {name: path for package in PACKAGES for name, path in modules(package).items()}
    graph = {name: _edges(name, path, set(files)) for name, path in files.items()}
    assert sum(len(e) for e in graph.values()) > 100  # the walk does see the imports
    assert _cycles(graph) == []


def test_the_walk_finds_a_cycle_when_there_is_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
