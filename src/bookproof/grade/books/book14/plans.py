"""Exercise Book 14, Unit C (an open design task): `next_step` (exercise 3), what to do after a run.

Lucy's question may need more than one run: a program that ran out of time
may finish with more. The unit gives `next_step(attempts, budget)` and what
Lucy needs; the design is the learner's. The grader never runs a program
here: it simulates questions (a program that needs some seconds, then ends
some named way), asks the plan one step at a time, and judges only what
each step does against Lucy's rules:

- a run that ended any way but `time_limit` ends the question, with its
  outcome as the reason: the same program over the same file ends the same
  way again, and the memory, file and output limits are not Lucy's to raise;
- a run stopped by its clock is tried again with more time, while the
  budget has room for an attempt and for more seconds than the last had;
- no step ever goes past the budget (attempts, and the seconds given to all
  attempts together), and a budget that cannot pay for one second of one
  attempt stops before anything runs (`no_budget`).

Each check covers one rule, so a design that breaks one loses that check
only. Histories and budgets are whole numbers of seconds, chosen at random.
"""

from __future__ import annotations

import random
from typing import Any

from bookproof.grade.book import Trial
from bookproof.grade.books.book14.common import BOOK, S_OUTCOMES
from bookproof.grade.questions import call

TIMED_OUT = "time_limit"
NO_BUDGET = "no_budget"
# How an attempt can end, as the plan is told: a printed run read by Unit B's
# rule (`answered` or `unreadable_output`), or run_python's other outcomes.
FINAL = (
    "answered",
    "unreadable_output",
    "raised",
    "memory_limit",
    "file_limit",
    "output_limit",
    "killed",
    "no_sandbox",
)

Attempt = dict[str, Any]
Budget = dict[str, int]


def _step(answer: Any) -> tuple[str, Any] | None:
    """The plan's answer as ("run", seconds) or ("stop", reason); None for any other shape."""
    if not isinstance(answer, dict) or len(answer) != 1:
        return None
    ((kind, value),) = answer.items()
    if kind == "run" and isinstance(value, int) and not isinstance(value, bool):
        return kind, value
    if kind == "stop" and isinstance(value, str):
        return kind, value
    return None


SHAPE = 'A step should be {"run": whole seconds} or {"stop": a reason}, and nothing else.'


def _left(attempts: list[Attempt], budget: Budget) -> tuple[int, int]:
    """Attempts and seconds the budget still has: each attempt costs its whole time limit."""
    return (
        budget["attempts"] - len(attempts),
        budget["seconds"] - sum(attempt["seconds"] for attempt in attempts),
    )


def _timeouts(rng: random.Random, count: int) -> list[Attempt]:
    """`count` attempts stopped by their clock, each given more seconds than the one before."""
    seconds, attempts = rng.randint(1, 8), []
    for _ in range(count):
        attempts.append({"seconds": seconds, "outcome": TIMED_OUT})
        seconds += rng.randint(1, 2 * seconds)
    return attempts


def _ask(attempts: list[Attempt], budget: Budget) -> Any:
    return call("next_step", [dict(attempt) for attempt in attempts], dict(budget))


# --- rule 1: what a retry cannot fix ends the question --------------------------------------


@BOOK.exercise(
    3,
    points=2,
    section=S_OUTCOMES,
    asks="After an attempt that ended any way but time_limit, the plan stops, with that "
    "outcome as its reason, however much budget is left.",
    hint="An attempt that was answered, unreadable, raised, hit the memory, file or output "
    "limit, was killed or found no sandbox was tried again, or the plan stopped with another "
    "reason than that outcome: a retry ends the same way.",
)
def ex3_stops_what_a_retry_cannot_fix(rng: random.Random) -> Trial:
    for outcome in ["answered", *rng.sample(FINAL[1:], 4)]:
        attempts = _timeouts(rng, rng.randint(0, 2))
        attempts.append({"seconds": rng.randint(1, 30), "outcome": outcome})
        used = sum(attempt["seconds"] for attempt in attempts)
        budget = {"attempts": len(attempts) + rng.randint(2, 4), "seconds": used + 200}
        step = _step((yield _ask(attempts, budget)))
        if step is None:
            return SHAPE
        if step != ("stop", outcome):
            return (
                f"After an attempt that ended {outcome}, with budget to spare, the plan should "
                f"stop with {outcome} as its reason: another run ends the same way."
            )
    return None


# --- rule 2: a timeout is tried again with more time --------------------------------------


@BOOK.exercise(
    3,
    points=2,
    section=S_OUTCOMES,
    asks="After an attempt stopped by its clock, the plan runs again with more seconds than "
    "that attempt had, while the budget has an attempt and more seconds than that left.",
    hint="After a time_limit, with an attempt and more seconds than the last attempt had still "
    "in the budget, the plan stopped, or ran again with no more time than before.",
)
def ex3_more_time_for_a_timeout(rng: random.Random) -> Trial:
    for tight in (False, True, False, True):
        attempts = _timeouts(rng, rng.randint(1, 3))
        last, used = attempts[-1]["seconds"], sum(attempt["seconds"] for attempt in attempts)
        # Room for more than the last: plenty, or less than twice the last had.
        room = rng.randint(last + 1, 2 * last) if tight else rng.randint(4 * last, 8 * last)
        budget = {"attempts": len(attempts) + rng.randint(1, 3), "seconds": used + room}
        step = _step((yield _ask(attempts, budget)))
        if step is None:
            return SHAPE
        kind, value = step
        if kind != "run":
            return (
                f"After a time_limit with {room} seconds and an attempt left, the plan stopped: "
                f"a run given more than the last attempt's {last} seconds may finish."
            )
        if value <= last:
            return (
                f"After a time_limit at {last} seconds, the plan ran again with {value}: "
                "no more time, so it would end the same way."
            )
    return None


# --- rule 3: never past the budget -------------------------------------------------------


def _judge_in_budget(step: tuple[str, Any], attempts: list[Attempt], budget: Budget) -> str | None:
    """Whatever the plan chose, a run it starts fits in the budget left."""
    kind, value = step
    attempts_left, seconds_left = _left(attempts, budget)
    if kind == "run" and attempts_left < 1:
        return f"The plan started attempt {len(attempts) + 1} of a budget of {budget['attempts']}."
    if kind == "run" and not 1 <= value <= seconds_left:
        return (
            f"The plan gave a run {value} seconds with {seconds_left} left in the budget: a run "
            "is given at least 1 second and never more than the budget has left."
        )
    return None


def _question(rng: random.Random) -> Trial:
    """One question played out: a program that needs `needs` seconds, then answers."""
    budget = {"attempts": rng.randint(1, 4), "seconds": rng.randint(3, 40)}
    needs = rng.randint(1, 30)
    attempts: list[Attempt] = []
    for _ in range(budget["attempts"] + 1):
        step = _step((yield _ask(attempts, budget)))
        if step is None:
            return SHAPE
        if (problem := _judge_in_budget(step, attempts, budget)) is not None:
            return problem
        kind, value = step
        if kind == "stop":
            wanted = attempts[-1]["outcome"] if attempts else NO_BUDGET
            if value != wanted:
                return f"The plan stopped with {value!r} after an attempt that ended {wanted}."
            return None
        attempts.append({"seconds": value, "outcome": TIMED_OUT if value < needs else "answered"})
    return "The plan did not stop once its budget of attempts was spent."


@BOOK.exercise(
    3,
    points=2,
    section=S_OUTCOMES,
    asks="The plan never goes past Lucy's budget: attempts, and seconds given to all attempts "
    "together; it stops time_limit when no attempt with more time fits, and no_budget before "
    "anything runs when the budget cannot pay for one second.",
    hint="A run was started past the budget's attempts or given more seconds than the budget "
    "had left (or less than 1), or the plan ran again when no attempt with more time fitted, "
    "or did not stop no_budget for a budget with no attempt or no second in it.",
)
def ex3_within_the_budget(rng: random.Random) -> Trial:
    # A first attempt under a budget smaller than any usual time limit.
    budget = {"attempts": rng.randint(1, 3), "seconds": rng.randint(1, 4)}
    step = _step((yield _ask([], budget)))
    if step is None:
        return SHAPE
    if step[0] != "run":
        return f"With {budget['seconds']} seconds and no attempt yet, the plan should run once."
    if (problem := _judge_in_budget(step, [], budget)) is not None:
        return problem
    # Budgets that cannot pay for anything.
    for budget in ({"attempts": 0, "seconds": rng.randint(5, 60)}, {"attempts": 3, "seconds": 0}):
        if _step((yield _ask([], budget))) != ("stop", NO_BUDGET):
            return (
                f"A budget of {budget['attempts']} attempts and {budget['seconds']} seconds "
                "should stop no_budget before anything runs."
            )
    # Room in seconds for more, but not for more than the last had; or no attempt left.
    attempts = _timeouts(rng, rng.randint(1, 3))
    last, used = attempts[-1]["seconds"], sum(attempt["seconds"] for attempt in attempts)
    for budget in (
        {"attempts": len(attempts) + 1, "seconds": used + rng.randint(0, last)},
        {"attempts": len(attempts), "seconds": used + 10 * last},
    ):
        if _step((yield _ask(attempts, budget))) != ("stop", TIMED_OUT):
            attempts_left, seconds_left = _left(attempts, budget)
            return (
                f"After a time_limit at {last} seconds, with {attempts_left} attempts and "
                f"{seconds_left} seconds left, the plan should stop time_limit: no attempt "
                "with more time fits."
            )
    # A room that more time fits in only part-way: whatever the plan does, it stays inside.
    room = rng.randint(last + 1, 2 * last)
    budget = {"attempts": len(attempts) + 2, "seconds": used + room}
    step = _step((yield _ask(attempts, budget)))
    if step is None:
        return SHAPE
    if (problem := _judge_in_budget(step, attempts, budget)) is not None:
        return problem
    for _ in range(3):
        if (problem := (yield from _question(rng))) is not None:
            return problem
    return None
