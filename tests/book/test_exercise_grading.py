"""Every exercise book the manifest lists: the reference scores full marks, the starter none.

One test per book, driven by the manifest: the reference solution's folder,
handed in as a learner hands in theirs (every file beside the README, the
unit plans and their notebooks) and graded by the real grader in bubblewrap,
earns every point; the untouched starter's folder earns its chapter baseline
and not one exercise point. What each book's mistakes lose
is in that book's own test file. A folder that book's file has graded
already in this session (the starter is in each) is not graded again.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from committed import as_committed
from grading import SharedGrades, grade_batch

from bookproof.grade.books import load_book
from bookproof.layout import ChapterParts, default_layout, load_manifest

LAYOUT = default_layout()
GRADED = [
    LAYOUT.parts(chapter)
    for chapter in load_manifest(LAYOUT.manifest).drafted
    if LAYOUT.grader_book(chapter.number).exists()
]


def handed_in(book: ChapterParts, folder: Path) -> dict[str, str]:
    """What a learner hands in from `folder`: its files but the README, plans and notebooks."""
    kept_back = {"README.md", *(path.name for path in (*book.unit_plans(), *book.notebooks()))}
    return {
        path.name: path.read_text(encoding="utf-8")
        for path in sorted(folder.iterdir())
        if path.is_file() and path.name not in kept_back
    }


@pytest.mark.slow
@pytest.mark.parametrize("book", GRADED, ids=lambda parts: parts.folder)
def test_the_reference_scores_full_marks_and_the_starter_only_its_baseline(
    book: ChapterParts, tmp_path: Path, shared_grades: SharedGrades
) -> None:
    graded = load_book(book.number)
    report = grade_batch(
        book.number,
        {
            "solution": handed_in(book, book.solutions),
            "starter": handed_in(book, as_committed(book.exercises)),
        },
        base=tmp_path,
        shared=shared_grades,
    )
    assert report["solution"].holds_every_check_of(graded)
    assert report["starter"].earns_only_the_baseline_of(graded)
