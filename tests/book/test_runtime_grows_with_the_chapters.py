"""The runtime holds the latest version of every definition the book teaches.

`src/sovereign_agent/` grows chapter by chapter. When a chapter's learner file
defines a function or class that the runtime also defines, the runtime's
definition must be the one from the LATEST drafted chapter whose learner file
defines that name (same syntax tree, positions ignored). A chapter that
changes `Dispatcher` or `run_task` therefore shows the new version, its
learner file carries it, and the runtime follows; an earlier chapter's older
version is no longer the runtime's, and never needs to be.
"""

from __future__ import annotations

import ast
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path

import pytest

from bookproof.layout import default_layout, load_manifest

ROOT = default_layout().root
TEXTBOOK = default_layout().textbook
RUNTIME = ROOT / "src/sovereign_agent"

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Taught:
    """One chapter's version of a definition: where it is, and its syntax tree."""

    chapter: int
    learner: Path
    tree: str


def definitions(path: Path, among: Container[str] | None = None) -> dict[str, str]:
    """The syntax tree of each top-level definition in `path` (only those named
    `among`, when given: dumping a tree costs more than parsing it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {
        node.name: ast.dump(node, include_attributes=False)
        for node in tree.body
        if isinstance(node, _Definition) and (among is None or node.name in among)
    }


def defined_names(path: Path) -> list[str]:
    """The name of each top-level definition in `path`, in order (no tree dumped)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [node.name for node in tree.body if isinstance(node, _Definition)]


def latest_taught() -> dict[str, Taught]:
    """For every name a drafted learner file defines, the highest-numbered chapter's version."""
    layout = default_layout()
    # The manifest lists chapters in increasing order: a later chapter's version wins.
    latest: dict[str, Taught] = {}
    for chapter in load_manifest(layout.manifest).drafted:
        learner = layout.parts(chapter).learner
        for name, tree in definitions(learner).items():
            latest[name] = Taught(chapter.number, learner, tree)
    return latest


LATEST = latest_taught()


def runtime_definitions(among: Container[str]) -> list[tuple[Path, str, str]]:
    """(module, name, syntax tree) of every top-level definition in the runtime named `among`."""
    return [
        (module, name, tree)
        for module in sorted(RUNTIME.rglob("*.py"))
        for name, tree in definitions(module, among).items()
    ]


TAUGHT_IN_RUNTIME = runtime_definitions(LATEST)


@pytest.mark.parametrize(
    ("module", "name", "tree"),
    TAUGHT_IN_RUNTIME,
    ids=[f"{m.relative_to(RUNTIME)}:{n}" for m, n, _ in TAUGHT_IN_RUNTIME],
)
def test_the_runtime_definition_is_the_latest_chapters_learner_definition(
    module: Path, name: str, tree: str
) -> None:
    taught = LATEST[name]
    assert tree == taught.tree, (
        f"{name} in {module.relative_to(ROOT)} differs from chapter {taught.chapter}'s "
        f"learner file ({taught.learner.relative_to(ROOT)}), the latest chapter that defines it"
    )


def test_the_rule_covers_what_chapters_2_and_3_teach() -> None:
    # Guards the test itself: a broken manifest read or a renamed folder must
    # not let it pass by comparing nothing.
    covered = {name for _, name, _ in TAUGHT_IN_RUNTIME}
    assert {
        "ToolCall",
        "ExecutableTool",
        "ToolOutcome",
        "Dispatcher",
        "build_tools",
        "replenishment_need",
        "StopReason",
        "RunRecord",
        "run_task",
    } <= covered


def test_a_name_redefined_by_a_later_chapter_is_held_to_the_later_version() -> None:
    # Chapters 1, 2 and 6 each define replenishment_need; the runtime's is chapter 6's.
    assert LATEST["replenishment_need"].chapter == 6
    for learner in (
        "learner/profrod_sovereign_agent_ch01_first_model_call_learner.py",
        "learner/profrod_sovereign_agent_ch02_pydantic_shop_tools_learner.py",
    ):
        earlier = definitions(TEXTBOOK / learner)
        assert earlier["replenishment_need"] != LATEST["replenishment_need"].tree


# Every runtime module says in its docstring's first words whether the book
# prints it, and which chapters; the words are held to the check above, so a
# reader of `src/sovereign_agent` can trust them: "Printed in chapters ..." when
# every top-level definition is a chapter's, "Partly printed, in chapters ..."
# when some are and the rest is support, "Support the book does not print"
# when none is.
def chapters_in_words(chapters: list[int]) -> str:
    words = [str(number) for number in chapters]
    if len(words) == 1:
        return f"chapter {words[0]}"
    return f"chapters {', '.join(words[:-1])} and {words[-1]}"


def expected_opening(module: Path) -> str:
    names = defined_names(module)
    taught = sorted({LATEST[name].chapter for name in names if name in LATEST})
    if not taught:
        return "Support the book does not print:"
    partly = any(name not in LATEST for name in names)
    return f"{'Partly printed, in' if partly else 'Printed in'} {chapters_in_words(taught)}:"


RUNTIME_MODULES = sorted(RUNTIME.rglob("*.py"))


@pytest.mark.parametrize(
    "module", RUNTIME_MODULES, ids=[str(m.relative_to(RUNTIME)) for m in RUNTIME_MODULES]
)
def test_every_runtime_module_opens_by_saying_whether_the_book_prints_it(module: Path) -> None:
    docstring = ast.get_docstring(ast.parse(module.read_text(encoding="utf-8"))) or ""
    expected = expected_opening(module)
    assert docstring.startswith(expected), (
        f"{module.relative_to(ROOT)}: its docstring must open with {expected!r}, "
        "as the learner files say (a later chapter that prints one of its "
        "definitions changes which chapters these are)"
    )


def test_the_three_openings_are_each_in_use() -> None:
    # Guards the test above: a rule that always expects the same words would pass on
    # a runtime where every docstring was written to that one line.
    openings = {expected_opening(module).split(" chapter")[0] for module in RUNTIME_MODULES}
    assert openings == {
        "Printed in",
        "Partly printed, in",
        "Support the book does not print:",
    }
    assert expected_opening(RUNTIME / "tools.py") == "Printed in chapters 2, 4, 7 and 10:"
