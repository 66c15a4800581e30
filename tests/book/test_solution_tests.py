"""Every exercise book's reference tests: they pass against the solution, fail against the starter.

A book whose unit asks the learner for tests ships the reference's own
`test_*.py` beside the solution. Handed in as a learner hands them in (the
book's module and those tests, run with pytest from inside the folder), they
must pass against the reference and fail against the untouched starter, or
they catch nothing. One test each, for every drafted chapter whose solutions
hold tests, so that a chapter added later is held without a line here; how
many pass and fail is each book's own data (`COUNTS`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from committed import as_committed
from exercise_books import PYTEST, hand_in, run_in

from bookproof.grade.books import load_book
from bookproof.layout import ChapterParts, default_layout, load_manifest

# Each runs pytest in a subprocess over a hand-in: the full suite's, not the quick tier's.
# Their store files (pytest's tmp_path, tempfile's folders) go to memory where the
# machine has one: real SQLite files, committed hundreds of times by the state machines,
# without a wait for a shared disk at each commit.
pytestmark = pytest.mark.slow

LAYOUT = default_layout()
# Chapters whose reference tests are handed in another way, and held in their own file:
# book 2's whole solutions folder (tests/book/test_ch02_exercises.py), book 4's
# several modules (tests/book/test_ch04_exercises.py).
HELD_ELSEWHERE = {2, 4}
WITH_TESTS = [
    parts
    for parts in map(LAYOUT.parts, load_manifest(LAYOUT.manifest).drafted)
    if any(parts.solutions.glob("test_*.py")) and parts.number not in HELD_ELSEWHERE
]

# (against the solution, against the starter): pytest's summary, as it counts them.
COUNTS: dict[int, tuple[str, str]] = {
    1: ("11 passed", "9 failed, 2 passed"),
    3: ("9 passed", "7 failed, 2 passed"),
    # What holds already: a good count sets the stock, the one-open-draft rule,
    # and the refusal of a file newer than the code.
    5: ("15 passed", "12 failed, 3 passed"),
    # What holds already: an exact and a short note (one line at a time is
    # fine when every line is good), the nephew's two write-off tests, and an
    # unknown flavour written off (a KeyError, after an UPDATE that matched nothing).
    6: ("19 passed", "14 failed, 5 passed"),
    # What holds already: discovery refuses a malformed skill, with its line.
    7: ("20 passed", "19 failed, 1 passed"),
    # What holds already: a listing that names nothing narrows nothing.
    8: ("12 passed", "11 failed, 1 passed"),
    # What holds already: the server's words are never offered, whatever joins; the
    # starter finds nothing changed, which is right for the same list and for a tool added.
    9: ("14 passed", "11 failed, 3 passed"),
    # What holds already: an approval of exactly the cap, an uncapped operator,
    # a denial, and a run with nothing approved releasing nothing.
    10: ("10 passed", "6 failed, 4 passed"),
}


def chapter_id(parts: ChapterParts) -> str:
    return parts.folder


def module_of(parts: ChapterParts) -> str:
    """The file the book hands in, as the grader's book names it."""
    return f"{load_book(parts.number).module}.py"


def test_the_counts_name_only_books_held_here() -> None:
    assert set(COUNTS) <= {parts.number for parts in WITH_TESTS}


@pytest.mark.parametrize("book", WITH_TESTS, ids=chapter_id)
def test_the_solutions_own_tests_pass_against_the_solution(
    book: ChapterParts, tmp_path: Path
) -> None:
    module = module_of(book)
    solution = (book.solutions / module).read_text(encoding="utf-8")
    folder = hand_in(tmp_path, book.solutions, module, solution)
    result = run_in(folder, *PYTEST, temporary_in_memory=True)
    assert result.returncode == 0, result.stdout
    if book.number in COUNTS:
        assert COUNTS[book.number][0] in result.stdout


@pytest.mark.parametrize("book", WITH_TESTS, ids=chapter_id)
def test_the_solutions_own_tests_fail_against_the_starter(
    book: ChapterParts, tmp_path: Path
) -> None:
    module = module_of(book)
    starter = (as_committed(book.exercises) / module).read_text(encoding="utf-8")
    folder = hand_in(tmp_path, book.solutions, module, starter)
    result = run_in(folder, *PYTEST, temporary_in_memory=True)
    assert result.returncode == 1
    if book.number in COUNTS:
        assert COUNTS[book.number][1] in result.stdout
