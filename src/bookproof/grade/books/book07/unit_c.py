"""Exercise Book 7, Unit C: a catalogue within a budget, an open design task.

The unit gives `fitted_catalogue(skills, budget)` and what Lucy needs of it,
and leaves the design to the learner. What is graded is the text the door's
`catalogue_in_folder` answers for a skills folder this book made, judged by
what a model reading it would see: its length, every skill's line and name,
which descriptions are whole and which are shortened (from their end, and
marked), never by how it was worked out. Chapter 7's catalogue line is written
out again here, never read from the book's code.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from bookproof.grade.book import Trial
from bookproof.grade.books.book07.baseline_and_unit_a import (
    BOOK,
    _folder,
    _pick,
    _Skill,
    _skill_names,
    _skills_tree,
    _steps,
    _words,
)
from bookproof.grade.questions import Asks, call, expect, same

__all__: list[str] = []

S_UNIT_C = BOOK.section("7.5 What the model sees") + " (Exercise Book 7, Unit C)"
# What a shortened description ends with: one character, the ellipsis.
MARK = "\u2026"
# A description's bound in chapter 7's front matter.
MAX_DESCRIPTION = 1_024
_NO_TEXT = "The door did not answer with the catalogue's text (did fitted_catalogue raise?)."


def _description(rng: random.Random, vendor: bool) -> str:
    """Lucy's one sentence, or a vendor's paragraph of several hundred characters."""
    if not vendor:
        return _words(rng, 3, 12).capitalize() + "."
    # At least 600 characters: more than any budget of these checks leaves it.
    target = rng.randint(600, MAX_DESCRIPTION - 1)
    text = _words(rng, 10, 20).capitalize()
    while len(text) < target:
        text += " " + _words(rng, 10, 20)
    return text[:target].rstrip() + "."


def _shop(rng: random.Random, vendors: int, *, vendors_first: bool = False) -> list[_Skill]:
    """Lucy's skills beside `vendors` long-winded ones, in the order discovery reads them.

    One of Lucy's descriptions is two words (at most 20 characters), so it is
    always within an equal share of a budget `_squeezed` chooses. With
    `vendors_first`, the vendors' skills sort before Lucy's: a catalogue that
    hands out its room line by line has given it all away before her lines.
    """
    names = _skill_names(rng, rng.randint(3, 6) + vendors)
    long_winded = set(names[:vendors] if vendors_first else rng.sample(names, vendors))
    tiny = rng.choice([name for name in names if name not in long_winded])
    return [
        _Skill(
            name,
            _words(rng, 2, 2).capitalize() + "."
            if name == tiny
            else _description(rng, name in long_winded),
            tuple(_pick(rng, ("list_stock", "supplier", "draft_order"), 1, 3)),
            _steps(rng, ["list_stock"]),
        )
        for name in names
    ]


def _line_start(skill: _Skill) -> str:
    return f"- {skill.name}: "


def _whole(skills: Sequence[_Skill]) -> str:
    """Chapter 7's catalogue: one line per skill, its description's whitespace collapsed."""
    return "\n".join(_line_start(skill) + " ".join(skill.description.split()) for skill in skills)


def _fixed(skills: Sequence[_Skill]) -> int:
    """What every line costs before its description, and the newlines between the lines."""
    return sum(len(_line_start(skill)) for skill in skills) + len(skills) - 1


def _share(skills: Sequence[_Skill], budget: int) -> int:
    """An equal share of what the budget leaves for descriptions once every name is written."""
    return (budget - _fixed(skills)) // len(skills)


def _squeezed(skills: Sequence[_Skill], rng: random.Random) -> int:
    """A budget the whole catalogue overflows, that still leaves every line a fair few words.

    Room for Lucy's own descriptions whole, and 20 to 60 characters a line more: at most
    480, short of any vendor's 600.
    """
    short = sum(len(skill.description) for skill in skills if len(skill.description) < 600)
    return _fixed(skills) + short + rng.randint(20, 60) * len(skills)


def _shown(text: Any, skills: Sequence[_Skill]) -> list[str] | None:
    """Each skill's description as the catalogue shows it, or None when a line or name is lost.

    A line holds its skill's name whole, in the order given, and then either the
    description whole, or a shorter start of it followed by the mark.
    """
    if not isinstance(text, str):
        return None
    lines = text.split("\n")
    if len(lines) != len(skills):
        return None
    shown = []
    for line, skill in zip(lines, skills, strict=True):
        if not line.startswith(_line_start(skill)):
            return None
        description = line[len(_line_start(skill)) :]
        full = " ".join(skill.description.split())
        cut = description.endswith(MARK) and full.startswith(description[: -len(MARK)])
        if description != full and not (cut and len(description) <= len(full)):
            return None
        shown.append(description)
    return shown


def _catalogue(skills: Sequence[_Skill], budget: int, rng: random.Random) -> Asks[Any]:
    root = yield from _folder(_skills_tree(skills, rng))
    answer = yield call("catalogue_in_folder", root, budget, raises=True)
    return answer


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_C,
    asks="A catalogue that would overflow its budget fits in it, with every skill's line and "
    "name whole, and each description whole or shortened from its end and marked.",
    hint="A catalogue over a budget its skills overflow was longer than the budget, lost a "
    "skill's line or part of its name, or showed a description reworded, or shortened "
    "without the mark.",
)
def ex3_catalogue_fits(rng: random.Random) -> Trial:
    skills = _shop(rng, vendors=rng.randint(1, 2))
    budget = _squeezed(skills, rng)
    answer = yield from _catalogue(skills, budget, rng)
    if answer.status != "returned" or not isinstance(answer.value, str):
        return _NO_TEXT
    if len(answer.value) > budget:
        return f"The catalogue was {len(answer.value)} characters, over its budget of {budget}."
    return expect(
        _shown(answer.value, skills) is not None,
        "The catalogue lost a skill's line or name, or changed a description other than by "
        "shortening it from its end, marked.",
    )


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_C,
    asks="Within the budget, a description no longer than an equal share of what the budget "
    "leaves for descriptions is never shortened: the long ones pay.",
    hint="A catalogue over its budget shortened a description shorter than an equal share of "
    "the room the names leave, so a short line paid for a long one, or the catalogue was "
    "longer than the budget.",
)
def ex3_catalogue_spares_the_short(rng: random.Random) -> Trial:
    skills = _shop(rng, vendors=rng.randint(1, 2), vendors_first=True)
    budget = _squeezed(skills, rng)
    answer = yield from _catalogue(skills, budget, rng)
    if answer.status != "returned" or not isinstance(answer.value, str):
        return _NO_TEXT
    if len(answer.value) > budget:
        return f"The catalogue was {len(answer.value)} characters, over its budget of {budget}."
    lines = answer.value.split("\n")
    share = _share(skills, budget)
    for skill in skills:
        full = " ".join(skill.description.split())
        if len(full) <= share and _line_start(skill) + full not in lines:
            return (
                f"The description of {skill.name} ({len(full)} characters, within an equal "
                f"share of {share}) was not shown whole."
            )
    return None


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_C,
    asks="A catalogue that fits its budget is chapter 7's, unchanged, even when one "
    "description is far longer than the others.",
    hint="A catalogue that fitted its budget whole came back other than chapter 7's catalogue.",
    requires=ex3_catalogue_fits,
)
def ex3_catalogue_whole_when_it_fits(rng: random.Random) -> Trial:
    skills = _shop(rng, vendors=1)
    whole = _whole(skills)
    budget = len(whole) + rng.choice([0, rng.randint(1, 40)])
    answer = yield from _catalogue(skills, budget, rng)
    return expect(
        answer.status == "returned" and same(whole, answer.value),
        f"With a budget of {budget} characters, the whole catalogue ({len(whole)}) fitted and "
        "came back changed.",
    )


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_C,
    asks="A budget too small to name every skill, each with at least the mark, raises ValueError.",
    hint="A budget too small to name every skill with at least the mark was not refused "
    "with a ValueError.",
)
def ex3_catalogue_too_small_refused(rng: random.Random) -> Trial:
    skills = _shop(rng, vendors=rng.randint(0, 1))
    # Every line needs its name and at least the mark.
    least = _fixed(skills) + len(skills) * len(MARK)
    budget = rng.randint(least // 2, least - 1)
    answer = yield from _catalogue(skills, budget, rng)
    return expect(
        answer.raised_a("ValueError"),
        f"A budget of {budget} characters, too small for {len(skills)} names, was not refused "
        "with ValueError.",
    )
