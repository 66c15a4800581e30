"""The packages' imports form layers: no cycle, the runtime never reaches the tooling.

The walk reads every module of `src/sovereign_agent` and `src/bookproof` with
`ast`, nothing is imported. Every import statement counts, wherever it stands:
at the top, inside a function, and under `if TYPE_CHECKING:`. An import made
only for an annotation is still a dependency a reader and a type checker
follow, and a cycle through one is a cycle in the design; so the walk is the
strict one. `from package import name` is an edge to `package.name` when that
is a module, and to `package` otherwise. Importing `a.b.c` also runs the
`__init__` of `a` and `a.b`; those are not counted as edges, or every
package that re-exports its own modules would be a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from bookproof.layout import REPO_ROOT

SRC = REPO_ROOT / "src"
PACKAGES = ("sovereign_agent", "bookproof")

Graph = Mapping[str, frozenset[str]]


def modules(src: Path, packages: Iterable[str]) -> dict[str, tuple[Path, bool]]:
    """Every module under `src` in `packages`, by dotted name: its file, and whether a package."""
    found: dict[str, tuple[Path, bool]] = {}
    for package in packages:
        for path in sorted((src / package).rglob("*.py")):
            parts = list(path.relative_to(src).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = (path, is_package)
    return found


def imported_by(name: str, path: Path, is_package: bool, known: Mapping[str, object]) -> set[str]:
    """The known modules one module imports, from any statement anywhere in it."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in known:
                    found.add(f"{source}.{alias.name}")
                elif source in known:
                    found.add(source)
    return found


def import_graph(src: Path, packages: Iterable[str]) -> dict[str, frozenset[str]]:
    known = modules(src, packages)
    return {
        name: frozenset(imported_by(name, path, is_package, known))
        for name, (path, is_package) in known.items()
    }


def cycles(graph: Graph) -> list[list[str]]:
    """Every strongly connected set of two or more modules, or a module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        # Tarjan's algorithm with an explicit stack of iterators: no recursion limit to meet.
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return found


def reached_from(graph: Graph, start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for child in graph[todo.pop()]:
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


@pytest.fixture(scope="module")
def graph() -> Graph:
    """The repository's import graph, read once by the worker that runs these tests
    (at module level, every worker of `-n 2` would read it while collecting)."""
    return import_graph(SRC, PACKAGES)


def test_the_walk_sees_both_packages_and_the_loops_own_imports(graph: Graph) -> None:
    # Guards the walk itself: a wrong root or a broken reader would find no cycle in nothing.
    assert "sovereign_agent.loop" in graph and "bookproof.verify" in graph
    assert {"sovereign_agent.tools", "sovereign_agent.trace.recorder"} <= graph[
        "sovereign_agent.loop"
    ]


def test_no_module_of_either_package_imports_itself_back(graph: Graph) -> None:
    assert cycles(graph) == []


def test_the_runtime_never_imports_the_tooling(graph: Graph) -> None:
    # The runtime a learner installs holds no bookproof; an import of it would
    # fail on their machine, or pull the tooling's dependencies in.
    runtime = {name for name in graph if name.split(".")[0] == "sovereign_agent"}
    reaching = sorted(
        f"{name} -> {target}"
        for name in runtime
        for target in graph[name]
        if target.split(".")[0] == "bookproof"
    )
    assert reaching == []


def test_the_runtime_names_no_tooling_module_in_any_import() -> None:
    # The graph only holds modules that exist; an import of a bookproof module
    # that was renamed or removed would not be an edge, so every statement is read too.
    offenders = []
    for path in sorted((SRC / "sovereign_agent").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "bookproof"]
    assert offenders == []


def test_replay_sits_above_the_loop_and_the_recorder_below_it(graph: Graph) -> None:
    # The trace package holds both sides of the loop: its format and recorder,
    # which the loop tells what happens, and the replay, which runs the loop.
    loop = reached_from(graph, "sovereign_agent.loop")
    assert "sovereign_agent.trace.recorder" in loop
    assert "sovereign_agent.loop" in graph["sovereign_agent.trace.replay"]
    assert "sovereign_agent.trace.replay" not in loop
    # `import sovereign_agent.trace` (what the loop's import of the recorder
    # runs first) must never start the replay, or the loop would import itself.
    assert "sovereign_agent.trace.replay" not in reached_from(graph, "sovereign_agent.trace")


def plant(root: Path, files: Mapping[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    "back_edge",
    [
        "from shop.loop import run",
        "if TYPE_CHECKING:\n    from shop.loop import Record\n",
        "def later():\n    from . import loop\n",
        "from shop import loop\n",
    ],
    ids=["top-level", "type-checking", "inside-a-function", "module-from-package"],
)
def test_the_walk_finds_a_cycle_however_the_import_is_written(
    tmp_path: Path, back_edge: str
) -> None:
    plant(
        tmp_path,
        {
            "shop/__init__.py": "",
            "shop/loop.py": "from shop.recorder import Recorder\n",
            "shop/recorder.py": f"from typing import TYPE_CHECKING\n{back_edge}\n",
        },
    )
    assert cycles(import_graph(tmp_path, ["shop"])) == [["shop.loop", "shop.recorder"]]


def test_the_walk_finds_no_cycle_in_a_package_that_reexports_its_modules(tmp_path: Path) -> None:
    plant(
        tmp_path,
        {
            "shop/__init__.py": "from shop.tools import Tool\n",
            "shop/tools.py": "from shop.base import Base\n",
            "shop/base.py": "",
        },
    )
    graph = import_graph(tmp_path, ["shop"])
    assert graph["shop"] == {"shop.tools"} and cycles(graph) == []
