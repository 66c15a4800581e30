"""Exercise Book 13: the checks for a submission's `limits.py`.

The graded interface is plain functions of plain JSON: the chapter's token
bucket and streams through the grader's door at the end of the starter
(`bucket_takes`, `stream_calls`), and the two exercises, `sliding_window_wait`
(Unit A) and `cheapest_model` (Unit B), called as they are; and Unit C's
open design task, `run_budget`, judged only by how a day of runs the door's
`day_file` makes under it stops and spends.

Every check chooses its data at random for this run: capacities, rates and
call times on a grid a binary float holds exactly, so the waits it expects
are exact; prices, token counts and budgets in whole numbers. The values it
expects are worked out here, with exact fractions and integers, never with
the book's code.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from bookproof.grade.book import Book, Trial
from bookproof.grade.questions import call, expect, same

__all__ = ["BOOK"]

BOOK = Book(13, "Exercise Book 13: limits", module="limits", chapter="Chapter 13")

S_BUCKET = BOOK.section("13.4 How often: a token bucket")
S_STREAM = BOOK.section("13.8 Streaming: nothing runs until the stream ends")
S_UNIT_A = BOOK.section("13.11 Exercises") + " (Exercise Book 13, Unit A)"
S_UNIT_B = BOOK.section("13.11 Exercises") + " (Exercise Book 13, Unit B)"
S_MONEY = BOOK.section("13.5 How much: tokens and pence") + " (Exercise Book 13, Unit C)"

# Times are multiples of 1/64 s and rates powers of two: every sum and product
# the bucket or the window makes is then exact in a float.
GRID = 64
SKUS = ("VANILLA", "CHOCOLATE", "STRAWBERRY", "PISTACHIO", "MANGO")


def _close(expected: Fraction, answer: Any) -> bool:
    return (
        isinstance(answer, int | float)
        and not isinstance(answer, bool)
        and abs(Fraction(answer) - expected) < Fraction(1, 10**9)
    )


# --- chapter 13, as the starter already has it -------------------------------------------


def bucket_waits(capacity: int, rate: Fraction, times: list[Fraction]) -> list[Fraction]:
    """What each call is told by a bucket of `capacity` tokens refilled at `rate` a second."""
    tokens, at, waits = Fraction(capacity), times[0], []
    for now in times:
        tokens, at = min(Fraction(capacity), tokens + (now - at) * rate), now
        if tokens >= 1:
            tokens -= 1
            waits.append(Fraction(0))
        else:
            waits.append((1 - tokens) / rate)
    return waits


@BOOK.baseline(
    points=1,
    section=S_BUCKET,
    asks="The token bucket allows a burst up to its capacity, then tells each call how long "
    "until a token has grown back.",
    hint="TokenBucket.take must refill by the time gone times the rate (never past capacity), "
    "take a token when one is there, and otherwise answer (1 - tokens) / rate.",
)
def ch13_bucket(rng: random.Random) -> Trial:
    capacity = rng.randint(1, 4)
    rate = Fraction(2) ** rng.randint(-1, 3)
    times, now = [], Fraction(0)
    for _ in range(rng.randint(4, 10)):
        times.append(now)
        now += Fraction(rng.randint(0, GRID // 2), GRID)
    answer = yield call("bucket_takes", capacity, float(rate), [float(t) for t in times])
    expected = bucket_waits(capacity, rate, times)
    good = isinstance(answer, list) and len(answer) == len(expected)
    return expect(
        good and all(_close(want, got) for want, got in zip(expected, answer, strict=False)),
        "The bucket's answers to a row of calls are not what a token bucket tells them.",
    )


def _chat_events(sku: str, pieces: list[str]) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"object": "chat.completion.chunk", "model": "m", "choices": [choice]}

    opening = {"index": 0, "id": "call_1", "type": "function"}
    return [
        chunk({"role": "assistant", "content": f"Checking {sku}."}),
        chunk({"tool_calls": [{**opening, "function": {"name": "check_availability"}}]}),
        *(chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces),
        chunk({}, "tool_calls"),
    ]


def _messages_events(sku: str, pieces: list[str]) -> list[dict[str, Any]]:
    start = {"type": "tool_use", "id": "call_1", "name": "check_availability", "input": {}}
    return [
        {"type": "message_start", "message": {"model": "m", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": start},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
            for piece in pieces
        ),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]


@BOOK.baseline(
    points=1,
    section=S_STREAM,
    asks="A streamed call comes to the same call in both dialects, and a stream cut part-way "
    "to a ModelResponseError.",
    hint="The streams must be assembled whole, after [DONE] or message_stop, and a stream "
    "without its end must be refused.",
)
def ch13_streams(rng: random.Random) -> Trial:
    sku = rng.choice(SKUS)
    arguments = json.dumps({"sku": sku})
    cut = rng.randint(1, len(arguments) - 1)
    pieces = [arguments[:cut], arguments[cut:]]
    whole = f"check_availability {arguments}"
    for named, events in (
        (False, _chat_events(sku, pieces)),
        (True, _messages_events(sku, pieces)),
    ):
        answer = yield call("stream_calls", events, named, None)
        if not same(whole, answer):
            return "A whole stream did not come to the call it carries."
        cut_answer = yield call("stream_calls", events, named, rng.randint(10, 120))
        if not (isinstance(cut_answer, str) and cut_answer.startswith("ModelResponseError")):
            return "A stream cut part-way was not refused as a ModelResponseError."
    return None


# --- exercise 1: a sliding-window rate limit ----------------------------------------------


def window_wait(allowed: list[Fraction], now: Fraction, calls: int, per_s: Fraction) -> Fraction:
    inside = sorted(moment for moment in allowed if now < moment + per_s)
    return Fraction(0) if len(inside) < calls else inside[-calls] + per_s - now


def _full_window(rng: random.Random) -> tuple[list[Fraction], Fraction, int, Fraction]:
    """Calls all inside the window, distinct, and at least `calls` of them: it has no room."""
    calls = rng.randint(2, 4)
    per_s = Fraction(rng.choice([1, 2, 4]))
    now = Fraction(rng.randint(8 * GRID, 12 * GRID), GRID)
    ticks = rng.sample(
        range(int((now - per_s) * GRID) + 1, int(now * GRID) + 1), calls + rng.randint(0, 3)
    )
    return [Fraction(tick, GRID) for tick in ticks], now, calls, per_s


def _ask_window(
    allowed: list[Fraction], now: Fraction, calls: int, per_s: Fraction, shuffle: random.Random
) -> Any:
    times = [float(moment) for moment in allowed]
    shuffle.shuffle(times)  # the times come in any order
    return call("sliding_window_wait", times, float(now), calls, float(per_s))


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="sliding_window_wait answers how long until the window has room for one more call.",
    hint="Only the calls still inside the window count; while fewer of them than the limit "
    "remain, there is no wait, and otherwise the wait ends as the oldest that matters leaves.",
)
def ex1_window_waits(rng: random.Random) -> Trial:
    for _ in range(5):
        allowed, now, calls, per_s = _full_window(rng)
        answer = yield _ask_window(allowed, now, calls, per_s, rng)
        if not _close(window_wait(allowed, now, calls, per_s), answer):
            return "For a window with no room, the wait is not when the right call leaves it."
    allowed, now, calls, per_s = _full_window(rng)
    answer = yield _ask_window(allowed[: calls - 1], now, calls, per_s, rng)
    return expect(_close(Fraction(0), answer), "A window with room should answer 0.0.")


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="Calls made more than `per_s` seconds ago no longer count.",
    hint="A call made a whole window ago or earlier has left the window and no longer counts.",
)
def ex1_old_calls_leave(rng: random.Random) -> Trial:
    allowed, now, calls, per_s = _full_window(rng)
    recent = sorted(allowed)[-(calls - 1) :]
    old = [now - per_s - Fraction(rng.randint(1, 3 * GRID), GRID) for _ in range(calls)]
    answer = yield _ask_window(old + recent, now, calls, per_s, rng)
    return expect(
        _close(Fraction(0), answer),
        "Calls older than the window were counted: with them gone, there is room.",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="sliding_window_wait refuses a limit of no calls, a window of no time, and a call "
    "allowed after now.",
    hint="A limit below one call, a window of no time, or a call dated after now is a ValueError.",
)
def ex1_window_refuses(rng: random.Random) -> Trial:
    now = rng.randint(2, 9) * 1.0
    for times, calls, per_s in (
        ([now - 1.0], 0, 1.0),
        ([now - 1.0], 2, 0.0),
        ([now - 1.0], 2, -1.0),
        ([now + 0.5], 2, 1.0),
    ):
        answer = yield call("sliding_window_wait", times, now, calls, per_s, raises=True)
        if not answer.raised_a("ValueError"):
            return "A limit that makes no sense, or a call from the future, was not refused."
    return None


# --- exercise 2: the cheapest model a budget can pay for ---------------------------------


def _prices(rng: random.Random) -> dict[str, list[int]]:
    names = rng.sample(["haiku", "mini", "nano", "sonnet", "large", "local"], rng.randint(2, 5))
    return {name: [rng.randint(0, 3_000), rng.randint(0, 12_000)] for name in names}


def cheapest(prices: dict[str, list[int]], given: int, produced: int, pence: int) -> str | None:
    costs = sorted(
        (given * price_in + produced * price_out, name)
        for name, (price_in, price_out) in prices.items()
    )
    affordable = [name for cost, name in costs if cost <= pence * 1_000_000]
    return affordable[0] if affordable else None


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="cheapest_model picks the cheapest model the pence left can pay for, or None.",
    hint="Work out each model's cost in millionths of a penny (tokens times pence per million), "
    "keep those within pence_left * 1,000,000, and answer the cheapest.",
)
def ex2_cheapest(rng: random.Random) -> Trial:
    for _ in range(6):
        prices = _prices(rng)
        given, produced = rng.randint(0, 20_000), rng.randint(0, 4_000)
        pence = rng.randint(0, 40)
        costs = [given * price_in + produced * price_out for price_in, price_out in prices.values()]
        if len(set(costs)) < len(costs) or pence * 1_000_000 in costs:
            # Ties and exact budgets have a check of their own (ex2_exact_edges).
            continue
        answer = yield call("cheapest_model", prices, given, produced, pence)
        if not same(cheapest(prices, given, produced, pence), answer):
            return "For a price table and a budget, the model is not the cheapest it can pay for."
    return None


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A cost equal to the pence left is affordable, and equal costs go to the first name.",
    hint="A cost exactly equal to what is left is affordable, counted in whole numbers with no "
    "rounding, and a tie goes to the model whose name sorts first.",
)
def ex2_exact_edges(rng: random.Random) -> Trial:
    pence = rng.randint(1, 9)
    tokens = 1_000
    # Each model costs exactly `pence` for 1,000 tokens read and none written.
    price = pence * 1_000
    prices = {"zeta": [price, 0], "alpha": [price, 0], "omega": [price + 1, 0]}
    answer = yield call("cheapest_model", prices, tokens, 0, pence)
    short = yield call("cheapest_model", prices, tokens, 0, pence - 1)
    return expect(
        same("alpha", answer) and same(None, short),
        "A model costing exactly the pence left should be chosen, the first name on a tie.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="cheapest_model refuses a negative token count or a negative budget.",
    hint="A negative token count or a negative budget is a ValueError.",
)
def ex2_refuses(rng: random.Random) -> Trial:
    prices = _prices(rng)
    for given, produced, pence in ((-1, 10, 5), (10, -rng.randint(1, 9), 5), (10, 10, -1)):
        answer = yield call("cheapest_model", prices, given, produced, pence, raises=True)
        if not answer.raised_a("ValueError"):
            return "A negative token count or budget was not refused."
    return None


# --- exercise 3 (Unit C, an open design task): a day's money, shared among its runs ------
#
# The unit gives `run_budget(spent_today_micropence, daily_pence, reserve_pence,
# urgent)` and what Lucy needs of a day; the design is the learner's. What is
# graded is the day only: the door's `day_file` runs each [urgent, steps] in
# turn, under the budget the learner's function gives it, with a model whose
# request n reads 10,000 n tokens and writes 1,000, and answers how each run
# stopped and what it spent. What the grader expects is worked out here from
# chapter 13's rule (a request that would certainly overspend is never sent),
# written out again, never computed from the book's code.

Rule = Callable[[int, int, int, bool], int | None]


def run_spends(budget: int, steps: int, price: list[int]) -> tuple[str, int]:
    """How chapter 13's money budget stops one run of the door's model: [stop, micropence]."""
    price_in, price_out = price
    spent, read_and_written = 0, None
    for n in range(1, steps + 2):
        # Before every request but the first: the next one reads at least all the last did.
        if read_and_written is not None and spent + read_and_written * price_in > budget * 10**6:
            return "money_budget", spent
        spent += 10_000 * n * price_in + 1_000 * price_out
        read_and_written = 10_000 * n + 1_000
    return "final_answer", spent


def a_day(daily: int, reserve: int, price: list[int], runs: list[list[Any]], rule: Rule) -> Any:
    """Each run of the day as the door reports it, with budgets chosen by `rule`."""
    spent, day = 0, []
    for urgent, steps in runs:
        budget = rule(spent, daily, reserve, urgent)
        if budget is None:
            day.append(["not_started", 0])
            continue
        stop, cost = run_spends(budget, steps, price)
        day.append([stop, cost])
        spent += cost
    return day


def _left(spent: int, ceiling: int, up: bool) -> int | None:
    room = ceiling * 10**6 - spent
    pence = -(-room // 10**6) if up else room // 10**6
    return pence if pence >= 1 else None


def lucys_rule(spent: int, daily: int, reserve: int, urgent: bool) -> int | None:
    """What the unit asks: all the day leaves to the run, in whole pence rounded down."""
    return _left(spent, daily if urgent else daily - reserve, up=False)


# Other rules a learner might write: data is chosen so that the day tells them apart.
OTHER_RULES: dict[str, Rule] = {
    "rounded up": lambda s, d, r, u: _left(s, d if u else d - r, up=True),
    "reserve for nobody": lambda s, d, r, u: _left(s, d, up=False),
    "reserve for everyone": lambda s, d, r, u: _left(s, d - r, up=False),
    "spent forgotten": lambda s, d, r, u: _left(0, d if u else d - r, up=False),
}


def telling_day(rng: random.Random, reserve: bool) -> tuple[int, int, list[int], list[list[Any]]]:
    """A day (daily, reserve, price, runs) that runs out, on which the other rules go wrong."""
    while True:
        daily = rng.randint(20, 80)
        kept = rng.randint(3, daily // 3) if reserve else 0
        price = [rng.randint(30, 400), rng.randint(300, 4_000)]
        runs = [
            [reserve and rng.random() < 0.4, rng.randint(1, 7)] for _ in range(rng.randint(4, 8))
        ]
        expected = a_day(daily, kept, price, runs, lucys_rule)
        others = [
            a_day(daily, kept, price, runs, rule)
            for name, rule in OTHER_RULES.items()
            if reserve or "reserve" not in name
        ]
        if ["not_started", 0] in expected and all(other != expected for other in others):
            return daily, kept, price, runs


@BOOK.exercise(
    3,
    points=2,
    section=S_MONEY,
    asks="Over a day of runs, each run is given all the money the day has left, in whole pence, "
    "and a run is not started once less than a penny is left.",
    hint="Over a day of runs with no reserve, a run was given more than the day had left, or "
    "less, or was started with less than a penny left, or not started with a penny or more.",
)
def ex3_day_shared_out(rng: random.Random) -> Trial:
    daily, reserve, price, runs = telling_day(rng, reserve=False)
    answer = yield call("day_file", daily, reserve, price, runs)
    return expect(
        same(a_day(daily, reserve, price, runs, lucys_rule), answer),
        "A day of ordinary runs stopped or spent otherwise than the money it had left allows.",
    )


@BOOK.exercise(
    3,
    points=2,
    section=S_MONEY,
    asks="Ordinary runs leave the day's reserve alone, and urgent runs may spend it too.",
    hint="Over a day mixing ordinary and urgent runs, an ordinary run spent money kept for urgent "
    "ones, or an urgent run was held back from the reserve.",
)
def ex3_reserve_for_urgent(rng: random.Random) -> Trial:
    daily, reserve, price, runs = telling_day(rng, reserve=True)
    answer = yield call("day_file", daily, reserve, price, runs)
    return expect(
        same(a_day(daily, reserve, price, runs, lucys_rule), answer),
        "A day mixing ordinary and urgent runs stopped or spent otherwise than its reserve allows.",
    )
