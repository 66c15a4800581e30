"""Exercise Book 14, Unit A: `weekday_program` (exercise 1), run by the grader, not the submission.

A check asks the submission for a weekday's program, a string, and runs it
itself with `run_python` on the grader's limits over a sales file it
invented for this check, with flavours beyond the shop's so that no answer
can be learnt by heart. The program must print exactly one line of JSON,
`{"sku": ..., "tubs": ...}`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from bookproof.grade.book import Trial
from bookproof.grade.books.book14.common import (
    BOOK,
    S_UNIT_A,
    WEEKDAYS,
    Row,
    best_on,
    invented_sales,
    run_program,
)
from bookproof.grade.questions import call, expect
from sovereign_agent.generated_code import CodeResult, Outcome


def _judge(result: CodeResult | str, wanted: dict[str, object]) -> str | None:
    if isinstance(result, str):
        return result
    if result.outcome is not Outcome.PRINTED:
        return f"Your program ended {result.outcome.value}: {result.error}"
    lines = result.output.splitlines()
    if len(lines) != 1:
        return f"Your program should print exactly one line; it printed {len(lines)}."
    try:
        printed = json.loads(lines[0])
    except ValueError:
        return "Your program should print one line of JSON."
    return expect(
        isinstance(printed, dict) and printed == wanted and type(printed["tubs"]) is int,
        "Your program printed another answer than this sales file gives for that weekday.",
    )


def _tied(rng: random.Random, rows: Sequence[Row], weekday: str) -> list[Row]:
    """The same file with two flavours tied ahead on `weekday`: the same tubs, days shuffled."""
    first, second = rng.sample(sorted({sku for _, _, sku, _ in rows}), 2)
    days = sorted({day for day, name, _, _ in rows if name == weekday})
    # Above the 30 tubs any other flavour sells on a day: these two lead, level.
    tubs = [rng.randint(31, 60) for _ in days]
    shuffled = rng.sample(tubs, len(tubs))
    given = {
        first: dict(zip(days, tubs, strict=True)),
        second: dict(zip(days, shuffled, strict=True)),
    }
    return [
        (day, name, sku, given[sku][day] if sku in given and name == weekday else count)
        for day, name, sku, count in rows
    ]


def _one_leader(rows: Sequence[Row], weekday: str) -> list[Row]:
    """The same file, with one tub more for the leader's first `weekday` if two are level.

    The first check judges the arithmetic alone; ties have a check of their own.
    """
    totals: dict[str, int] = {}
    for _, name, sku, tubs in rows:
        if name == weekday:
            totals[sku] = totals.get(sku, 0) + tubs
    ranked = sorted(totals.values(), reverse=True)
    if len(ranked) < 2 or ranked[0] != ranked[1]:
        return list(rows)
    leader = min(sku for sku, total in totals.items() if total == ranked[0])
    first = next(i for i, row in enumerate(rows) if row[1] == weekday and row[2] == leader)
    day, name, sku, tubs = rows[first]
    return [*rows[:first], (day, name, sku, tubs + 1), *rows[first + 1 :]]


@BOOK.exercise(
    1,
    points=3,
    section=S_UNIT_A,
    asks="weekday_program(weekday) is a program that, run over a sales file, prints the flavour "
    "with most tubs on that weekday and the most it sold on one such day.",
    hint="The program's line named another flavour or another number than this sales file gives "
    "for that weekday, printed more than one line, or the program did not finish.",
)
def ex1_weekday_program(rng: random.Random) -> Trial:
    weekday = rng.choice(WEEKDAYS)
    rows = _one_leader(invented_sales(rng), weekday)
    result = run_program((yield call("weekday_program", weekday)), rows)
    return _judge(result, best_on(rows, weekday))


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="When two flavours sell the same on that weekday, the program names the first by name.",
    hint="With two flavours level on that weekday, the program named the one later by name, "
    "or not one of the two.",
    requires=ex1_weekday_program,
)
def ex1_weekday_program_ties(rng: random.Random) -> Trial:
    weekday = rng.choice(WEEKDAYS)
    rows = _tied(rng, invented_sales(rng, extra_skus=rng.randint(1, 2)), weekday)
    result = run_program((yield call("weekday_program", weekday)), rows)
    return _judge(result, best_on(rows, weekday))
