"""Every exercise book's starter is its solution but for the exercises: same door, same chapter.

A learner edits only the marked exercise parts of a starter. The part the
chapter wrote (from `# --- Chapter N:` to `# --- Exercise 1`) and the grader's
door (everything after `# --- The grader's door`) must be the reference's own,
letter for letter, or the grader would be calling a different module from
the one the learner was given. One test for every drafted chapter of the
manifest, so a chapter added later is held without a line here; where books
differ is data below.
"""

from __future__ import annotations

import pytest
from committed import as_committed

from bookproof.grade.books import load_book
from bookproof.layout import ChapterParts, default_layout, load_manifest

LAYOUT = default_layout()
DOOR = "# --- The grader's door"
EXERCISES = "# --- Exercise 1"

# Books 1 and 2 hand in a whole file the learner writes: there is no door.
WITHOUT_DOOR = {1, 2}
# Book 4's exercises are marked per function, with no `# --- Exercise 1` line.
WITHOUT_EXERCISES_MARKER = {4}
# Books whose chapter part must be marked (a book added later is held where it is marked).
CHAPTER_MARKED = {7, 8, 9, 10, 11, 13}
# Where the shared ending starts before the door: book 8's build of the tools
# a run keeps after untrusted text is the chapter's, not an exercise.
SHARED_FROM = {8: "# The tools a run keeps once it has read untrusted text"}

WITH_DOOR = [
    LAYOUT.parts(chapter)
    for chapter in load_manifest(LAYOUT.manifest).drafted
    if chapter.number not in WITHOUT_DOOR
]


def chapter_id(parts: ChapterParts) -> str:
    return parts.folder


def starter_and_solution(book: ChapterParts) -> tuple[str, str]:
    """The committed starter (never a learner's edit of it) and the reference."""
    module = load_book(book.number).module
    return (
        (as_committed(book.exercises) / f"{module}.py").read_text(encoding="utf-8"),
        book.solution(module).read_text(encoding="utf-8"),
    )


def test_the_tables_name_only_drafted_chapters() -> None:
    drafted = {chapter.number for chapter in load_manifest(LAYOUT.manifest).drafted}
    for table in (WITHOUT_DOOR, WITHOUT_EXERCISES_MARKER, CHAPTER_MARKED, set(SHARED_FROM)):
        assert table <= drafted


@pytest.mark.parametrize("book", WITH_DOOR, ids=chapter_id)
def test_the_starter_and_the_solution_share_the_chapter_part_and_the_door(
    book: ChapterParts,
) -> None:
    starter, solution = starter_and_solution(book)
    markers = [DOOR]
    if book.number not in WITHOUT_EXERCISES_MARKER:
        markers.append(EXERCISES)
    chapter = f"# --- Chapter {book.number}:"
    marked = book.number in CHAPTER_MARKED or chapter in starter
    if marked:
        markers.append(chapter)
    for marker in markers:
        assert starter.count(marker) == solution.count(marker) == 1, marker
    assert starter.split(DOOR)[1] == solution.split(DOOR)[1]
    if marked:
        assert (
            starter.split(EXERCISES)[0].split(chapter)[1]
            == solution.split(EXERCISES)[0].split(chapter)[1]
        )
    if book.number in SHARED_FROM:
        shared = SHARED_FROM[book.number]
        assert starter[starter.index(shared) :] == solution[solution.index(shared) :]
