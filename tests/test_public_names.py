"""A runtime module's `__all__` names what readers and tools use of it, no more and no less.

Readers and tools are the book's listings, the checkpoints, the learner
files and figure scripts (`book/`), the exercise starters (as committed),
the solutions, the scripts, the tooling (`src/bookproof`) and the runtime's
other modules. The project's tests are not: what a test needs stays
importable by its module path without being exported. A name is used when
one of those files imports it from the module (`from M import name`), reads
it as an attribute of the module (`M.name`, or through an alias), or names
it as a factory (`"M:name"`). Every name in `__all__` must be so used, or
be part of a used name's contract (an exception it raises, a type in its
signature), listed below with its reason. The other direction (every name
so used is exported) held when the lists were trimmed, and is not a test:
chapters are being written beside this one, and a new chapter that imports
one more name by its module path works as it is (Python and strict mypy
allow it); exporting the name is a tidy-up, not a fix.

The walk reads files with `ast`, nothing is imported. The modules held here
are the ones whose surface was trimmed by this rule; other modules keep the
surface their own tests give them.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from committed import EXERCISES

ROOT = Path(__file__).resolve().parents[1]
HELD = (
    "sovereign_agent.documents",
    "sovereign_agent.skills",
    "sovereign_agent.store",
    "sovereign_agent.evaluate",
    "sovereign_agent.evaluate.interval",
    "sovereign_agent.evaluate.metrics",
    "sovereign_agent.evaluate.report",
    "sovereign_agent.evaluate.run",
    "sovereign_agent.evaluate.sloppy",
    "sovereign_agent.evaluate.suite",
    "sovereign_agent.evaluate.variants",
    "sovereign_agent.trace.replay",
    "sovereign_agent.trace.summary",
)
# Exported although no reader imports them by name: each is part of the
# contract of a name readers do use.
CONTRACT: dict[str, dict[str, str]] = {
    "sovereign_agent.skills": {
        "Provenance": "the type of discover_skills' and build_skill_tools' provenance",
    },
    "sovereign_agent.store": {
        "NewerSchema": "open_store raises it for a file from a newer runtime",
        "NotAStore": "open_store raises it for a file that is not the shop's store",
        "StoreBusy": "open_store raises it while another process holds the file",
    },
    "sovereign_agent.evaluate": {
        "Suite": "what load_suite returns",
        "SuiteError": "what load_suite raises",
        "VariantResult": "what run_suite returns",
        "RunResult": "each run of a VariantResult",
    },
    "sovereign_agent.evaluate.run": {
        "Progress": "the type of run_suite's progress callback",
    },
    "sovereign_agent.trace.replay": {
        "Divergence": "what a ReplayReport says went differently",
    },
    "sovereign_agent.trace.summary": {
        "TraceSummary": "what summarize returns",
    },
}
_FACTORY = re.compile(r"(sovereign_agent(?:\.\w+)+):(\w+)")
_PYTHON_BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _module_file(module: str) -> Path:
    path = ROOT / "src" / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _readers() -> Iterator[tuple[Path, str]]:
    """Every file of the readers and tools, with the Python it holds."""
    folders = [ROOT / "book", ROOT / "solutions", ROOT / "scripts", ROOT / "src", EXERCISES]
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            if path.suffix == ".py":
                yield path, path.read_text(encoding="utf-8")
            elif path.suffix == ".md":
                text = path.read_text(encoding="utf-8")
                for block in _PYTHON_BLOCK.findall(text):
                    yield path, block
            elif path.suffix == ".ipynb":
                cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
                for cell in cells:
                    if cell["cell_type"] == "code":
                        source = cell["source"]
                        yield path, "".join(source) if isinstance(source, list) else source


def _uses_in(tree: ast.AST) -> Iterator[tuple[str, str]]:
    """(module, name) for every use of a held module's name in one piece of Python."""
    aliases: dict[str, str] = {}
    # One walk of the tree (the whole readers' Python is walked, the test's
    # cost): attributes are kept and matched once every alias is known, as an
    # alias may be imported after, or below, a use.
    attributes: list[ast.Attribute] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            attributes.append(node)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if node.module in HELD:
                    yield node.module, alias.name
                submodule = f"{node.module}.{alias.name}"
                if submodule in HELD:
                    aliases[alias.asname or alias.name] = submodule
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in HELD:
                    aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for module, name in _FACTORY.findall(node.value):
                if module in HELD:
                    yield module, name
    for attribute in attributes if aliases else ():
        # An alias is a name or a dotted name: only such an owner can be one.
        if isinstance(attribute.value, ast.Name | ast.Attribute):
            owner = ast.unparse(attribute.value)
            if owner in aliases:
                yield aliases[owner], attribute.attr


@functools.cache
def _used() -> dict[str, dict[str, set[str]]]:
    """For each held module: each name readers and tools use, and the files that use it."""
    used: dict[str, dict[str, set[str]]] = {module: {} for module in HELD}
    own = {_module_file(module): module for module in HELD}
    for path, source in _readers():
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # a listing shown as a part (`changes=`), or not Python
        where = str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        for module, name in _uses_in(tree):
            if own.get(path) != module:
                used[module].setdefault(name, set()).add(where)
    return used


@pytest.mark.parametrize("module", HELD)
def test_every_exported_name_is_used_or_part_of_a_used_names_contract(module: str) -> None:
    exported = set(importlib.import_module(module).__all__)
    contract = CONTRACT.get(module, {})
    assert set(contract) <= exported
    unused = exported - set(_used()[module]) - set(contract)
    assert unused == set()


def test_the_walk_sees_the_uses_it_is_meant_to_see() -> None:
    # One of each kind: a from-import in a chapter, an attribute of an aliased
    # module in a checkpoint, a name a runtime module imports from another.
    used = _used()
    assert any("ch05" in f for f in used["sovereign_agent.store"]["open_store"])
    assert "sovereign_agent.evaluate.variants" in HELD
    assert any(
        f.startswith("src/sovereign_agent/evaluate/")
        for f in used["sovereign_agent.evaluate.variants"]["variant_tools"]
    )
    tree = ast.parse(
        "import sovereign_agent.store as s\ns.seed_store()\nf = 'sovereign_agent.store:x'"
    )
    assert sorted(_uses_in(tree)) == [
        ("sovereign_agent.store", "seed_store"),
        ("sovereign_agent.store", "x"),
    ]
