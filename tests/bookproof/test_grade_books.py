"""Every exercise book's declarations hold to the rules, and its plans tell learners the truth.

The rules a book module cannot break by accident: ids unique and stable,
`requires` pointing back, a faulty version for every learner-test file. The
plans' tables ("check | points | what it proves") must list each exercise
check exactly once with the grader's points, and every feedback pointer must
name a heading the chapter really has.
"""

from __future__ import annotations

import random
import re
import textwrap

import pytest

from bookproof.grade.book import BASELINE, EXERCISE, Book, BookError
from bookproof.grade.books import load_book
from bookproof.grade.questions import call
from bookproof.layout import ChapterParts, default_layout, load_manifest

LAYOUT = default_layout()
ROOT = LAYOUT.root
ROW = re.compile(r"^\| `([a-z0-9_]+)` \| (\d+) \|", re.MULTILINE)
# Every drafted chapter's exercise book that the grader has checks for (a
# module bookNN.py, or a package bookNN/ where one file was too long).
GRADED = [
    LAYOUT.parts(chapter)
    for chapter in load_manifest(LAYOUT.manifest).drafted
    if LAYOUT.grader_book(chapter.number).exists()
]


def _book(chapter: ChapterParts) -> Book:
    return load_book(chapter.number)


@pytest.mark.parametrize("chapter", GRADED, ids=lambda c: c.folder)
def test_every_exercise_check_is_in_one_plan_with_its_points(chapter: ChapterParts) -> None:
    book = _book(chapter)
    listed: dict[str, int] = {}
    for plan in chapter.unit_plans():
        for check_id, points in ROW.findall(plan.read_text(encoding="utf-8")):
            assert check_id not in listed, f"{check_id} is listed twice"
            listed[check_id] = int(points)
    declared = {check.id: check.points for check in book.checks}
    assert {c: p for c, p in listed.items() if c not in declared} == {}, "listed, not graded"
    assert all(listed[c] == declared[c] for c in listed), "a plan states other points"
    exercise = {check.id for check in book.checks if check.kind == EXERCISE}
    assert exercise <= set(listed), "an exercise check no plan mentions"


@pytest.mark.parametrize("chapter", GRADED, ids=lambda c: c.folder)
def test_every_feedback_pointer_names_a_real_heading_of_its_chapter(
    chapter: ChapterParts,
) -> None:
    text = chapter.text.read_text(encoding="utf-8")
    headings = set(re.findall(r"^#{2,3} (.+)$", text, re.MULTILINE))
    for check in _book(chapter).checks:
        quoted = re.fullmatch(r"Chapter \d+, '(.+)'(?: \(.+\))?", check.section)
        assert quoted is not None, check.id
        assert quoted.group(1) in headings, f"{check.id}: no heading {quoted.group(1)!r}"


@pytest.mark.parametrize("chapter", GRADED, ids=lambda c: c.folder)
def test_every_learner_test_file_has_faulty_versions_and_a_reference(
    chapter: ChapterParts,
) -> None:
    book = _book(chapter)
    for group in book.groups():
        assert group.checks, group.file
        assert group.reference_runs >= 2
        assert book.reference(ROOT).is_file()
        assert (chapter.solutions / group.file).is_file()


def test_a_check_id_declared_twice_is_refused() -> None:
    book = Book(99, "t", module="m", chapter="Chapter 99")

    def twice(rng: object):  # type: ignore[no-untyped-def]
        yield call("f")

    book.baseline(points=1, section="s", asks="a", hint="h")(twice)
    with pytest.raises(BookError, match="declared twice"):
        book.baseline(points=1, section="s", asks="a", hint="h")(twice)


def test_requires_must_name_a_check_declared_before() -> None:
    book = Book(99, "t", module="m", chapter="Chapter 99")
    other = Book(98, "t", module="m", chapter="Chapter 98")

    def work(rng: object):  # type: ignore[no-untyped-def]
        yield call("f")

    elsewhere = other.exercise(1, points=1, section="s", asks="a", hint="h")(work)
    with pytest.raises(BookError, match="requires"):
        book.exercise(1, points=1, section="s", asks="a", hint="h", requires=elsewhere)(work)


@pytest.mark.parametrize("points", [0, -1, True, 1.5])
def test_points_must_be_a_positive_int(points: object) -> None:
    book = Book(99, "t", module="m", chapter="Chapter 99")

    def check(rng: object):  # type: ignore[no-untyped-def]
        yield call("f")

    with pytest.raises(BookError, match="points"):
        book.baseline(points=points, section="s", asks="a", hint="h")(check)  # type: ignore[arg-type]


def test_kinds_are_chapter_baseline_or_exercise() -> None:
    kinds = {check.kind for chapter in GRADED for check in _book(chapter).checks}
    assert kinds == {BASELINE, EXERCISE}


def test_the_worked_example_in_the_package_docstring_declares_a_book_that_runs() -> None:
    import bookproof.grade
    from bookproof.grade.questions import Folder, Question

    doc = bookproof.grade.__doc__ or ""
    blocks = re.findall(r"::\n\n((?:    .*\n|\n)+)", doc)
    assert len(blocks) == 3
    code = "\n".join(textwrap.dedent(block) for block in blocks)
    namespace: dict[str, object] = {}
    exec(compile(code, "bookproof.grade docstring", "exec"), namespace)
    book = namespace["BOOK"]
    assert isinstance(book, Book)
    assert [check.id for check in book.checks] == [
        "ch6_stock_report",
        "ex1_incoming",
        "ex2_tests_catch_incoming_twice",
        "ex2_lists_plain_notes",
    ]
    for check in book.checks:
        if check.trial is not None:
            assert isinstance(next(check.trial(random.Random(0))), Question | Folder)
