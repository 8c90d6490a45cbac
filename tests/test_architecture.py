"""The house rules that can be checked by a program, not by eye.

- `heterps_core` is the domain: importing every one of its modules loads no Django, Celery
  or Channels (checked in a fresh interpreter).
- No import cycles among the project's modules (`heterps_core`, `webapp`, `workers`),
  counting every import a module can run: module level and inside functions alike (an
  import hidden in a function is still a dependency; it only moves the failure to run
  time). Imports under `if TYPE_CHECKING:` never run and are not counted.
- Layers: each module belongs to one row of `LAYERS` (an app's `urls`/`routing` modules
  to the site's row: they wire pages together), and imports only its own row or rows
  below it. The few edges that must go up are listed in `UPWARD`, each with its reason.
- Sizes: no module over 500 lines; execution-side modules (they run inside jobs and
  agents, where a reader debugs under pressure) under 300.
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

# Low to high. A module's row is the one of its longest matching prefix.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("heterps_core",),
    ("webapp.environment", "webapp.settings", "webapp.bounds", "webapp.api_errors",
     "webapp.api_schema", "webapp.middleware", "webapp.staticstorage", "webapp.refusals"),
    ("webapp.projects", "webapp.accounts", "webapp.demo"),
    ("webapp.background",),
    ("webapp.catalogue", "webapp.modelzoo"),
    ("webapp.profiling",),
    ("webapp.planning",),
    ("webapp.jobs", "webapp.budgets"),
    ("webapp.costs", "webapp.rltraining", "webapp.dashboard"),
    ("webapp", "webapp.health", "webapp.ops", "webapp.urls",
     "webapp.api_urls", "webapp.routing", "webapp.asgi", "webapp.wsgi"),
    ("workers",),
)

# URL and websocket routing modules wire pages from any app together: they sit with the site.
WIRING = ("urls", "routing")

# (importer, imported) -> why this edge goes up.
UPWARD: dict[tuple[str, str], str] = {
    ("webapp.background.broker", "workers.app"):
        "webapp's one door to Celery: the Celery app (its broker settings and task list) "
        "is defined in workers, and web processes must enqueue on that same app",
    ("webapp.background.broker", "workers.embedded"):
        "the embedded default runs a Celery worker thread inside the server process; "
        "`manage.py up` starts it through the same door",
}

SIZE_LIMIT = 500
EXECUTION_SIZE_LIMIT = 300
EXECUTION_SIDE = (
    "heterps_core/runtime/", "heterps_core/dataparallel/", "heterps_core/ps/",
    "heterps_core/rendezvous.py", "heterps_core/processes.py", "heterps_core/agents.py",
    "heterps_core/cli/run", "heterps_core/cli/remote", "heterps_core/cli/client", "workers/",
)


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


def project_modules() -> dict[str, Path]:
    return {name: path for package in PACKAGES for name, path in modules(package).items()}


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


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: at module level and inside functions and
    classes, but not under `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _import_nodes(node.orelse)
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(node, field, None) or ():
                    yield from _import_nodes([child] if isinstance(child, ast.stmt)
                                             else getattr(child, "body", []))


def _edges(name: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _import_nodes(tree.body):
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


def import_graph() -> dict[str, set[str]]:
    files = project_modules()
    return {name: _edges(name, path, set(files)) for name, path in files.items()}


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


def layer_of(module: str) -> int:
    if module.startswith("webapp.") and module.rsplit(".", 1)[-1] in WIRING:
        module = "webapp.urls"
    best, row = -1, -1
    for number, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, row = len(prefix), number
    if row < 0:
        raise AssertionError(f"{module} is in no row of LAYERS: add it to the table")
    return row


def upward_edges(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((src, dst) for src, targets in graph.items() for dst in targets
                  if layer_of(dst) > layer_of(src))


def test_no_import_cycles_among_the_projects_modules() -> None:
    graph = import_graph()
    assert sum(len(e) for e in graph.values()) > 100  # the walk does see the imports
    assert _cycles(graph) == []


def test_every_module_imports_only_its_layer_and_those_below() -> None:
    upward = upward_edges(import_graph())
    assert [edge for edge in upward if edge not in UPWARD] == []


def test_every_listed_exception_is_still_needed() -> None:
    upward = set(upward_edges(import_graph()))
    assert [edge for edge in UPWARD if edge not in upward] == []


def test_modules_stay_small_enough_to_read_in_one_pass() -> None:
    too_long = {}
    for path in project_modules().values():
        relative = path.relative_to(ROOT).as_posix()
        limit = (EXECUTION_SIZE_LIMIT if relative.startswith(EXECUTION_SIDE)
                 else SIZE_LIMIT)
        lines = len(path.read_text().splitlines())
        if lines > limit:
            too_long[relative] = lines
    assert too_long == {}


def test_the_walk_finds_a_cycle_when_there_is_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_walk_counts_imports_inside_functions_but_not_type_checking_ones() -> None:
    tree = ast.parse(
        "import a\n"
        "if TYPE_CHECKING:\n    import b\n"
        "def f():\n    import c\n    try:\n        import d\n    except E:\n        import e\n"
        "class K:\n    def g(self):\n        from f import x\n")
    found = {n.names[0].name if isinstance(n, ast.Import) else n.module
             for n in _import_nodes(tree.body)}
    assert found == {"a", "c", "d", "e", "f"}


def test_a_module_above_importing_one_below_is_not_upward() -> None:
    graph = {"webapp.jobs.models": {"webapp.catalogue.models"},
             "webapp.catalogue.services": {"webapp.jobs.models"}}
    assert upward_edges(graph) == [("webapp.catalogue.services", "webapp.jobs.models")]
