"""Exercise Book 7, Unit A's tests: graded by the faulty versions of the reference they catch.

`LEARNER_SURFACE` is what a learner's tests may touch of `skill_tools.py`;
Unit B's tests are graded through the same surface (`unit_b`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from bookproof.grade.book import JSON, Surface
from bookproof.grade.books.book07.baseline_and_unit_a import (
    BOOK,
    S_UNIT_A,
)

__all__ = ["LEARNER_SURFACE", "REVIEW_TESTS", "Replaced"]


# What a faulty version replaces: always a door function, over a reference
# whose own functions the version has changed in place.
Replaced = Mapping[str, Callable[..., Any]]

LEARNER_SURFACE = Surface(
    functions={"skills_in_folder": JSON, "review_folder": JSON, "run_calls": JSON},
    files=True,
)

REVIEW_TESTS = BOOK.learner_tests(
    exercise=1, file="test_book07_review.py", section=S_UNIT_A, surface=LEARNER_SURFACE
)


def _rereview(
    reference: ModuleType, change: Callable[[dict[str, Any], Any, Any], None]
) -> Replaced:
    """The reference's review, each entry then changed by `change(entry, skill, dispatcher)`."""
    original = reference.review_skills

    def review_skills(skills: Sequence[Any], dispatcher: Any) -> list[dict[str, Any]]:
        reviews: list[dict[str, Any]] = original(skills, dispatcher)
        for entry, skill in zip(reviews, skills, strict=True):
            change(entry, skill, dispatcher)
        return reviews

    # The module's own namespace: the door looks the name up there.
    vars(reference)["review_skills"] = review_skills
    return {"review_folder": reference.review_folder}


def widening_keeps(reference: ModuleType, rng: random.Random) -> Replaced:
    def change(entry: dict[str, Any], skill: Any, dispatcher: Any) -> None:
        if entry["lists"] is not None:
            entry["keeps"] = sorted(entry["lists"])

    return _rereview(reference, change)


def unknown_is_ignored(reference: ModuleType, rng: random.Random) -> Replaced:
    def change(entry: dict[str, Any], skill: Any, dispatcher: Any) -> None:
        entry["unknown"] = list(entry["ignores"])

    return _rereview(reference, change)


def every_backticked_word(reference: ModuleType, rng: random.Random) -> Replaced:
    def change(entry: dict[str, Any], skill: Any, dispatcher: Any) -> None:
        words = set(re.findall(r"`([^`\s]+)`", skill.instructions))
        entry["unreachable"] = sorted(words - set(entry["keeps"]))

    return _rereview(reference, change)


def no_list_keeps_nothing(reference: ModuleType, rng: random.Random) -> Replaced:
    def change(entry: dict[str, Any], skill: Any, dispatcher: Any) -> None:
        if entry["lists"] is None:
            entry["removes"] = sorted(entry["keeps"])
            entry["keeps"] = []

    return _rereview(reference, change)


REVIEW_TESTS.catches_all(
    "ex1_tests_catch",
    points=2,
    versions={
        "keeps every tool a skill lists, even one the run does not allow": widening_keeps,
        "reports every ignored name as unknown": unknown_is_ignored,
        "counts every backticked word of the steps as a tool": every_backticked_word,
        "keeps nothing for a skill that lists no tools": no_list_keeps_nothing,
    },
)
