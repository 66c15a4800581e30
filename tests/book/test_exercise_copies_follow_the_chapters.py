"""Starters and solutions carry copies of the chapter's code; those copies may not drift.

A starter is its chapter's learner file reshaped to the grader's interface, and
a solution completes the starter. Every definition they share with the learner
file must stay identical to it (same syntax tree), except the ones the exercise
book exists to change, declared below. A fix to the chapter's code therefore
cannot leave a stale copy in front of learners.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from committed import as_committed

from bookproof.layout import ChapterParts, default_layout, load_manifest

ROOT = default_layout().root

# Per exercise book: the chapter definitions its starter and solution may change.
CHANGED_BY_THE_EXERCISES: dict[int, dict[str, frozenset[str]]] = {
    1: {
        # Exercise 2 adds `taken_at` to the snapshot, and so to these signatures.
        "exercises": frozenset({"snapshot_json", "build_brief_request", "morning_brief"}),
        "solutions": frozenset({"snapshot_json", "build_brief_request", "morning_brief"}),
    },
    2: {
        # The graded interface: build_tools(shop, prices, *, extra_tools, allowed);
        # and exercise 2's starting point, the need worked out in two places.
        "exercises": frozenset({"build_tools", "stock_report", "draft_order"}),
        # Exercise 2 adds reserved stock to the need.
        "solutions": frozenset({"build_tools", "replenishment_need"}),
    },
    3: {
        "exercises": frozenset(),
        # Exercise B adds the `repeated_refusal` stop reason to the loop.
        "solutions": frozenset({"StopReason", "run_task"}),
    },
    4: {
        # The exercises add functions beside the chapter's code; none of the
        # chapter's definitions changes.
        "exercises": frozenset(),
        "solutions": frozenset(),
    },
    5: {
        # Both exercises add operator actions (and a migration) beside the
        # chapter's store; none of the chapter's definitions changes.
        "exercises": frozenset(),
        "solutions": frozenset(),
    },
    6: {
        # Both exercises add operator actions beside the chapter's; none of
        # the chapter's definitions changes.
        "exercises": frozenset(),
        "solutions": frozenset(),
    },
    7: {
        # Both exercises add functions beside the chapter's reader, discovery
        # and load_skill (a review, and reference files); none of them changes.
        "exercises": frozenset(),
        "solutions": frozenset(),
    },
    8: {
        # Both exercises add tools beside the chapter's read_document (a
        # listing, and notes by reference); none of the chapter's code changes.
        "exercises": frozenset(),
        "solutions": frozenset(),
    },
    9: {
        # Both exercises add declarations and a function beside the chapter's
        # matching (price_quote, changed_tools); none of the chapter's code changes.
        "exercises": frozenset(),
        "solutions": frozenset(),
    },
    10: {
        # Both exercises add functions beside the chapter's fixture and model
        # (approve_within_cap, release_run); none of the chapter's code changes.
        "exercises": frozenset(),
        "solutions": frozenset(),
    },
    11: {
        # Both exercises add functions beside the chapter's desk and Friday
        # (purchase_report, reconcile); none of the chapter's code changes.
        "exercises": frozenset(),
        "solutions": frozenset(),
    },
    12: {
        # Both exercises add functions beside the chapter's morning and workers
        # (resume_plan, lease_decision); none of the chapter's code changes.
        "exercises": frozenset(),
        "solutions": frozenset(),
    },
    13: {
        # The exercises add functions beside the chapter's code (and the
        # grader's door); none of the chapter's definitions changes.
        "exercises": frozenset(),
        "solutions": frozenset(),
    },
    14: {
        # Both exercises add functions beside the chapter's program and model
        # steps (weekday_program, read_answer); none of the chapter's code changes.
        "exercises": frozenset(),
        "solutions": frozenset(),
    },
}


def drafted_chapters() -> list[ChapterParts]:
    layout = default_layout()
    return [layout.parts(chapter) for chapter in load_manifest(layout.manifest).drafted]


def definitions(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: ast.dump(node, include_attributes=False)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def copies(folder: Path) -> list[Path]:
    return sorted(path for path in folder.glob("*.py") if not path.name.startswith("test_"))


def test_every_drafted_exercise_book_declares_what_it_changes() -> None:
    numbers = {chapter.number for chapter in drafted_chapters()}
    assert numbers <= set(CHANGED_BY_THE_EXERCISES), (
        "declare the chapter definitions each new exercise book changes in this test"
    )


@pytest.mark.parametrize("kind", ["exercises", "solutions"])
@pytest.mark.parametrize("chapter", drafted_chapters(), ids=lambda chapter: f"ch{chapter.number}")
def test_shared_definitions_are_the_chapters_own(chapter: ChapterParts, kind: str) -> None:
    learner = definitions(chapter.learner)
    changed = CHANGED_BY_THE_EXERCISES[chapter.number][kind]
    folder = as_committed(chapter.exercises) if kind == "exercises" else chapter.solutions
    files = copies(folder)
    assert files, f"no module in {folder}"
    for path in files:
        copy = definitions(path)
        shared = set(copy) & set(learner)
        drifted = sorted(name for name in shared - changed if copy[name] != learner[name])
        assert drifted == [], f"{path.relative_to(ROOT)} no longer matches the chapter"
        # A declared change that is no longer a change is a stale declaration.
        unchanged = sorted(name for name in changed & shared if copy[name] == learner[name])
        assert unchanged == [], f"{path.relative_to(ROOT)}: declared as changed but identical"
        assert changed <= set(copy), f"{path.relative_to(ROOT)} lacks a definition it changes"
