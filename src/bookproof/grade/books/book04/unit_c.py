"""Exercise Book 4, Unit C: which runs need Lucy, an open design task.

The unit gives `runs_to_review(trace_path)` and what Lucy needs of it, and
leaves the design to the learner. What is graded is the list of run ids the
door's `review_in` answers for a daybook this module recorded with the
book's runtime: which runs are in it, and in which order. Each run's trouble
is decided here from how it was scripted (a stop, a killed process, a
failed handler, a refused write, slips the dispatcher refused), never read
back from the learner's code.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Trial
from bookproof.grade.books.book04 import reading
from bookproof.grade.books.book04.baseline_and_unit_a import (
    BOOK,
    _careless_runs,
    _careless_tools,
    _morning,
    _recorded,
    _reply,
)
from bookproof.grade.questions import Asks, call, expect, same
from sovereign_agent.shop import build_tools

__all__: list[str] = []

_UNIT_C = " (Exercise Book 4, Unit C)"
S_UNIT_C = BOOK.section("4.8 The failure taxonomy") + _UNIT_C
S_UNIT_C_FILE = BOOK.section("4.3 Lucy's morning plan, event by event") + _UNIT_C
_NO_LIST = "The door did not return a list of run ids (did runs_to_review raise?)."


def _run_of(lines: list[str]) -> str:
    run: str = json.loads(lines[0])["run"]
    return run


def _clean(rng: random.Random) -> list[str]:
    """Lucy's morning, answered, every call run."""
    shop, prices, replies = _morning(rng)
    return _recorded(rng, build_tools(shop, prices), replies)


def _slips(rng: random.Random) -> list[str]:
    """Requests the dispatcher refused before anything ran (every call one), then an answer."""
    menu: list[Callable[[], tuple[str, Any]]] = [
        lambda: ("draft_order", {"sku": fx.STRAWBERRY, "quantity": str(rng.randint(1, 9))}),
        lambda: ("draft_order", {"sku": fx.VANILLA, "quantity": 6, fx.token(rng, 6): True}),
        lambda: ("run_" + fx.token(rng, 6), {}),
    ]
    replies = [
        _reply(*[(fx.call_id(rng), *rng.choice(menu)()) for _ in range(rng.randint(1, 3))])
        for _ in range(rng.randint(1, 2))
    ]
    replies.append(_reply(content="Done " + fx.token(rng)))
    return _recorded(rng, build_tools(fx.shop(), fx.prices()), replies)


def _refused_write(rng: random.Random) -> list[str]:
    """A write its authority refused, and nothing else wrong."""
    tools, _ = _careless_tools(rng, authority=True)
    replies = [
        _reply((fx.call_id(rng), "place_order", {"sku": fx.VANILLA})),
        _reply(content="Could not order " + fx.token(rng)),
    ]
    return _recorded(rng, tools, replies)


def _stopped(rng: random.Random) -> list[str]:
    """A run that kept asking for the stock until its step bound stopped it."""
    steps = rng.randint(1, 3)
    replies = [_reply((fx.call_id(rng), "list_stock", {})) for _ in range(steps + 2)]
    return _recorded(rng, build_tools(fx.shop(), fx.prices()), replies, max_steps=steps)


def _killed(rng: random.Random) -> list[str]:
    """Lucy's morning, its process killed before the run finished: no last event."""
    return _clean(rng)[: -rng.randint(1, 3)]


def _daybook(rng: random.Random) -> tuple[list[list[str]], set[str]]:
    """Runs one after another, in a random order; the ids of those that need Lucy."""
    fine = [_clean(rng), _slips(rng)]
    trouble = [
        *_careless_runs(rng, 1, authority=False),
        _refused_write(rng),
        _stopped(rng),
        _killed(rng),
    ]
    runs = [*fine, *trouble]
    rng.shuffle(runs)
    return runs, {_run_of(run) for run in trouble}


def _review(lines: list[str]) -> Asks[list[str] | None]:
    answer = yield call("review_in", "".join(lines))
    if not isinstance(answer, list) or not all(isinstance(run, str) for run in answer):
        return None
    return answer


@BOOK.exercise(
    5,
    points=2,
    section=S_UNIT_C,
    asks="Every run that stopped without an answer, never finished, had a handler fail or a "
    "write refused is among the runs to review.",
    hint="A run that stopped without a final answer, was never seen finishing, had a handler "
    "or its result fail, or had a write refused by its authority was not among the runs to "
    "review.",
)
def ex5_review_finds_trouble(rng: random.Random) -> Trial:
    runs, trouble = _daybook(rng)
    found = yield from _review([line for run in runs for line in run])
    if found is None:
        return _NO_LIST
    missed = trouble - set(found)
    return expect(not missed, f"{len(missed)} run(s) that need Lucy were not listed.")


@BOOK.exercise(
    5,
    points=2,
    section=S_UNIT_C,
    asks="A run that answered, whose calls ran or were refused before anything ran, is not "
    "listed, and no run is listed twice.",
    hint="A run that answered and whose only refusals came before anything ran was listed "
    "for review, or a run was listed more than once.",
    requires=ex5_review_finds_trouble,
)
def ex5_review_leaves_the_rest(rng: random.Random) -> Trial:
    runs, trouble = _daybook(rng)
    found = yield from _review([line for run in runs for line in run])
    if found is None:
        return _NO_LIST
    if len(set(found)) != len(found):
        return "A run was listed more than once."
    return expect(
        set(found) == trouble, "A run that answered without a failure that matters was listed."
    )


@BOOK.exercise(
    5,
    points=1,
    section=S_UNIT_C_FILE,
    asks="Runs that interleave in one file are listed in the order they start.",
    hint="Two runs that interleave in one file were listed in another order than the one "
    "in which they started.",
    requires=ex5_review_finds_trouble,
)
def ex5_review_in_start_order(rng: random.Random) -> Trial:
    inner, outer = _careless_runs(rng, 2, authority=False)
    # The outer run starts first and finishes last, and its first failure comes after
    # the whole inner run: by its start it is first, by its trouble or its end, last.
    cut = next(index for index, line in enumerate(outer) if reading.failed_handlers([line]))
    lines = outer[:cut] + inner + outer[cut:]
    found = yield from _review(lines)
    if found is None:
        return _NO_LIST
    wanted = [_run_of(outer), _run_of(inner)]
    return expect(same(wanted, found), "The runs were not listed in the order they started.")
