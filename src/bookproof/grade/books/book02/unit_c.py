"""Exercise Book 2, Unit C: a party's tubs, promised, an open design task.

The unit gives the tool's name and arguments (`reserve_tubs`, `sku` and
`tubs`), the factory `reservation_tool(shop, reservations)` and what Lucy
needs, and leaves the design to the learner: the argument model, the checks,
what the tool answers. What is graded is what a dispatcher of chapter 2 (the
submission's own `Dispatcher`, with no write authority, so that exercise 3,
done or not, changes nothing here) answers each request with, as its refusal
code or `ok`, and what the tool wrote to `reservations`, a list the grader
keeps in the child and reads back. The value of a promise is the design's
own, and is not graded.
"""

from __future__ import annotations

import random
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Trial
from bookproof.grade.books.book02.baseline_and_unit_a import BOOK, _calls, _invoke
from bookproof.grade.questions import Asks, Ref, call, expect, get, let, same, tup

__all__: list[str] = []

S_UNIT_C_MODELS = BOOK.section("2.4 The three argument models") + " (Exercise Book 2, Unit C)"
S_UNIT_C_REFUSALS = BOOK.section("2.10 Refusals, one by one") + " (Exercise Book 2, Unit C)"
RESERVE = "reserve_tubs"
# The most one promise may hold, as the unit states it.
MAX_TUBS = 20
_NO_TOOL = "The reserve_tubs tool could not be built and asked (did reservation_tool raise?)."


def _freezer(rng: random.Random) -> list[dict[str, Any]]:
    """Chapter 1's shop, some tubs already promised, and a flavour the grader invents."""
    rows = fx.shop_rows()
    for row in rows:
        row["reserved"] = rng.randint(0, row["on_hand"])
    invented = fx.extra_product(rng)
    # 5 to 29 tubs free: room for a promise or two, and one too many within 20.
    invented["on_hand"] = rng.randint(10, 30)
    invented["reserved"] = rng.randint(1, 5)
    return [*rows, invented]


def _free(row: dict[str, Any]) -> int:
    return int(row["on_hand"]) - int(row.get("reserved", 0))


def _desk(rows: list[dict[str, Any]]) -> Asks[tuple[Ref, Ref]]:
    """The tool over `rows`, in a dispatcher that allows it: (dispatcher, reservations)."""
    written: Ref = yield let([])
    tool: Ref = yield call("reservation_tool", fx.shop(rows), written, keep=True)
    desk: Ref = yield call("Dispatcher", tup(tool), allowed=[RESERVE], keep=True)
    return desk, written


def _ask(rng: random.Random, desk: Ref, arguments: dict[str, Any]) -> Asks[Any]:
    answer = yield _invoke(desk, _calls(rng)(RESERVE, arguments))
    return answer


def _answered(answer: Any) -> str | None:
    """`ok`, or the refusal's code, or None for anything that is not an observation."""
    if not isinstance(answer, dict) or type(answer.get("ok")) is not bool:
        return None
    if answer["ok"]:
        return "ok"
    error = answer.get("error")
    return error if isinstance(error, str) else None


@BOOK.exercise(
    4,
    points=2,
    section=S_UNIT_C_REFUSALS,
    asks="Promises of tubs that are free are made, and each is written down once, in order.",
    hint="A promise of tubs the freezer held free was refused, or was not written down as "
    "that flavour and that many tubs, once.",
)
def ex4_promises_made(rng: random.Random) -> Trial:
    rows = _freezer(rng)
    invented = rows[-1]
    desk, written = yield from _desk(rows)
    first = rng.randint(1, 2)
    wanted = [(invented["sku"], first)]
    # Chocolate too, when a tub of it is still free.
    if _free(rows[1]) > 0:
        wanted.append((fx.CHOCOLATE, rng.randint(1, _free(rows[1]))))
    # The rest of the invented flavour's free tubs, up to the most one promise holds.
    wanted.append((invented["sku"], rng.randint(1, min(MAX_TUBS, _free(invented) - first))))
    for sku, tubs in wanted:
        answer = yield from _ask(rng, desk, {"sku": sku, "tubs": tubs})
        if _answered(answer) != "ok":
            return f"A promise of {tubs} tubs of {sku}, which were free, was not made."
    promised = yield get(written)
    return expect(
        same([{"sku": sku, "tubs": tubs} for sku, tubs in wanted], promised),
        "The promises written down were not the promises made, each once, in order.",
    )


@BOOK.exercise(
    4,
    points=2,
    section=S_UNIT_C_REFUSALS,
    asks="A promise of more tubs than the freezer holds beyond every earlier promise fails as "
    "a request wrong for the shop, and is not written down.",
    hint="A promise of more tubs than were free, counting those already promised in the stock "
    "and those promised earlier in the run, was made, written down, or refused with another "
    "reason than a request wrong for the shop.",
)
def ex4_never_more_than_the_freezer(rng: random.Random) -> Trial:
    rows = _freezer(rng)
    invented = rows[-1]
    desk, written = yield from _desk(rows)
    free = _free(invented)
    # A first promise that leaves between 1 and 19 tubs free, so one more is within 20.
    first = rng.randint(max(1, free - 19), min(MAX_TUBS, free - 1))
    expected = [{"sku": invented["sku"], "tubs": first}]
    answer = yield from _ask(rng, desk, {"sku": invented["sku"], "tubs": first})
    if _answered(answer) != "ok":
        return f"A first promise of {first} tubs, of {free} free, was not made."
    # One tub more than is left once the first promise is counted.
    over = free - first + 1
    answer = yield from _ask(rng, desk, {"sku": invented["sku"], "tubs": over})
    if _answered(answer) != "tool_failed":
        return (
            f"A promise of {over} tubs, with only {over - 1} still free after the first "
            "promise, was not refused as tool_failed."
        )
    # A flavour whose every tub is promised in the stock already.
    vanilla = rows[0]
    full = {**vanilla, "reserved": vanilla["on_hand"]}
    rows[0] = full
    desk_full, written_full = yield from _desk(rows)
    answer = yield from _ask(rng, desk_full, {"sku": fx.VANILLA, "tubs": 1})
    if _answered(answer) != "tool_failed":
        return "A promise of vanilla, every tub of it already promised, was not refused."
    promised = yield get(written)
    promised_full = yield get(written_full)
    return expect(
        same(expected, promised) and same([], promised_full),
        "A refused promise was written down.",
    )


@BOOK.exercise(
    4,
    points=1,
    section=S_UNIT_C_MODELS,
    asks="A number of tubs that is not a whole number from 1 to 20, or an argument the tool "
    "does not take, is refused as invalid arguments before the tool runs.",
    hint="A promise of 6.0, True or text for tubs, of 0 or 21 tubs, or with an argument the "
    "tool does not take, was made, or was refused with another reason than invalid arguments.",
)
def ex4_numbers_refused(rng: random.Random) -> Trial:
    rows = _freezer(rng)
    invented = rows[-1]
    desk, written = yield from _desk(rows)
    sku = invented["sku"]
    bad: list[dict[str, Any]] = [
        {"sku": sku, "tubs": 2.0},
        {"sku": sku, "tubs": True},
        {"sku": sku, "tubs": "2"},
        {"sku": sku, "tubs": 0},
        {"sku": sku, "tubs": MAX_TUBS + rng.randint(1, 30)},
        {"sku": sku, "tubs": -rng.randint(1, 9)},
        {"sku": sku, "tubs": 1, "customer": fx.token(rng)},
        {"tubs": 1},
    ]
    for arguments in bad:
        answer = yield from _ask(rng, desk, arguments)
        if _answered(answer) != "invalid_arguments":
            return f"A request with arguments {sorted(arguments)} was not invalid_arguments."
    promised = yield get(written)
    return expect(same([], promised), "A refused request was written down as a promise.")


@BOOK.exercise(
    4,
    points=1,
    section=S_UNIT_C_REFUSALS,
    asks="A promise of a flavour the shop does not sell fails as a request wrong for the shop, "
    "and is not written down.",
    hint="A promise of a flavour the shop does not sell was made, written down, or refused "
    "with another reason than a request wrong for the shop.",
)
def ex4_unknown_flavour(rng: random.Random) -> Trial:
    desk, written = yield from _desk(_freezer(rng))
    answer = yield from _ask(rng, desk, {"sku": fx.sku(rng), "tubs": 1})
    if _answered(answer) != "tool_failed":
        return "A promise of a flavour the shop does not sell was not refused as tool_failed."
    promised = yield get(written)
    return expect(same([], promised), "A refused promise was written down.")
