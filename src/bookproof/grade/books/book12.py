"""Exercise Book 12: the checks for a submission's `recovery_rules.py`.

The graded interface is "the grader's door" at the end of the starter
(`exercises/book12/recovery_rules.py`): functions that take plain JSON and a
store file in the check's own scratch folder. Each store is a real SQLite
file, migrated by the book's runtime; runs are claimed with the book's
`claim_next`, journaled with its `Journal`, and written behind its fence. No
process is started: the sandbox allows none, and none is needed, since the
clock is a number each check chooses.

Every check draws its scenario at random for this run: how many steps a run
got through, where its last step stopped, which worker holds which lease and
for how long, and when each question is asked. What it expects (each call's
answer, each decision) is worked out here by hand from the scenario, never
computed with the book's code; where the book's runtime can be asked the same
question (may this worker claim, would the fence let it write), the check
asks it too and holds the exercise to agree.
"""

from __future__ import annotations

import random
from typing import Any

from bookproof.grade.book import Book, Trial
from bookproof.grade.questions import Asks, call, expect, same, scratch_path

__all__ = ["BOOK"]

BOOK = Book(
    12,
    "Exercise Book 12: recovering unfinished work",
    module="recovery_rules",
    chapter="Chapter 12",
)

S_LEASES = BOOK.section("12.5 Leases, and why a lease is not enough")
S_UNIT_A = BOOK.section("12.9 Exercises") + " (Exercise Book 12, Unit A)"
S_UNIT_B = BOOK.section("12.9 Exercises") + " (Exercise Book 12, Unit B)"
S_POISON = BOOK.section("12.5 Leases, and why a lease is not enough") + (
    " (Exercise Book 12, Unit C)"
)

WORKERS = ("worker-a", "worker-b", "worker-c", "laptop", "night-shift")
TOOLS = ("list_stock", "place_order", "list_orders")


def random_journal(rng: random.Random, *, cut: str) -> list[list[list[str]]]:
    """Whole steps, then a last one cut as `cut` says: "started", "finished" or "between".

    "started": the last step's calls are DONE, then one STARTED, then some
    that never began. "finished": the last step is a final answer with no
    calls. "between": every call of every step is DONE (the worker died
    before asking for the next step).
    """
    steps: list[list[list[str]]] = []
    number = 0

    def calls(count: int, state: str) -> list[list[str]]:
        nonlocal number
        made = []
        for _ in range(count):
            number += 1
            made.append([f"call-{number}-{rng.randint(100, 999)}", rng.choice(TOOLS), state])
        return made

    for _ in range(rng.randint(0, 3)):
        steps.append(calls(rng.randint(1, 3), "DONE"))
    if cut == "started":
        steps.append(
            [*calls(rng.randint(0, 2), "DONE"), *calls(1, "STARTED"), *calls(rng.randint(0, 2), "")]
        )
    elif cut == "finished":
        steps.append([])
    else:
        steps.append(calls(rng.randint(1, 3), "DONE"))
    return steps


def expected_plan(steps: list[list[list[str]]]) -> list[dict[str, Any]]:
    """The plan, written out: replies and DONE calls from the journal, the rest to do."""
    answers = {"DONE": "journal", "STARTED": "settle", "": "run"}
    plan: list[dict[str, Any]] = []
    for number, calls in enumerate(steps, start=1):
        plan.append({"step": number, "call": None, "answer": "journal"})
        plan += [{"step": number, "call": c, "answer": answers[state]} for c, _, state in calls]
    if not steps or steps[-1]:
        plan.append({"step": len(steps) + 1, "call": None, "answer": "ask"})
    return plan


def journaled(
    rng: random.Random, cut: str
) -> Asks[tuple[dict[str, Any], int, list[dict[str, Any]], int]]:
    """A store of queued runs, the first one journaled: (store, its id, its plan, how many)."""
    path = scratch_path("lucy.db")
    count = rng.randint(2, 4)
    yield call("queue_file", path, count)
    steps = random_journal(rng, cut=cut)
    run_id = yield call("journal_file", path, rng.choice(WORKERS), steps)
    return path, run_id, expected_plan(steps), count


@BOOK.baseline(
    points=2,
    section=S_LEASES,
    asks="A run is claimed by one worker at a time; once its lease has run out, the next "
    "claim takes it at the next generation, and the fence then refuses the first worker's "
    "write.",
    hint="Leave the chapter's runtime as it is: a claim bumps the generation, the fence checks it.",
)
def ch12_claim_and_fence(rng: random.Random) -> Trial:
    path = scratch_path("lucy.db")
    yield call("queue_file", path, 1)
    first, second = rng.sample(WORKERS, 2)
    lease_ms = rng.randint(1, 60) * 1000
    start = rng.randint(10, 10_000) * 1000
    if not same([1, 1, start + lease_ms], (yield call("claim_file", path, first, lease_ms, start))):
        return "The first claim of a queued run should take it at generation 1."
    early = start + rng.randint(0, lease_ms - 1)
    if (yield call("claim_file", path, second, lease_ms, early)) is not None:
        return "A run whose lease has not run out should not be claimed by another worker."
    if (yield call("write_file", path, 1, first, 1)) != "written":
        return "The fence should let the holder of the current generation write."
    late = start + lease_ms + rng.randint(0, 5000)
    if not same([1, 2, late + lease_ms], (yield call("claim_file", path, second, lease_ms, late))):
        return "A run whose lease ran out should be claimed again at the next generation."
    return expect(
        (yield call("write_file", path, 1, first, 1)) == "refused",
        "The fence should refuse a write from a generation that was taken over.",
    )


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="resume_plan takes every journaled reply and DONE call from the journal, settles the "
    "STARTED call, runs the calls that never began, and asks the model for the next step.",
    hint="A call written STARTED with no outcome may or may not have had its effect, so the "
    "journal cannot answer it; and a run whose last reply asked for calls still needs the "
    "step after it.",
)
def ex1_in_doubt(rng: random.Random) -> Trial:
    path, run_id, plan, _ = yield from journaled(rng, "started")
    return expect(
        same(plan, (yield call("plan_file", path, run_id))),
        "The plan for a run that died inside a step did not say, call by call, what the "
        "journal answers, what is in doubt and what never began.",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="resume_plan of a run that died between steps takes every step from the journal and "
    "asks for the next one; of a run never started, asks for step 1.",
    hint="A run with nothing journaled has one thing left to do: its first model step.",
)
def ex1_between_steps(rng: random.Random) -> Trial:
    path, run_id, plan, count = yield from journaled(rng, "between")
    if not same(plan, (yield call("plan_file", path, run_id))):
        return "The plan for a run that died between two steps was wrong."
    fresh = yield call("plan_file", path, rng.randint(run_id + 1, count))
    return expect(
        same([{"step": 1, "call": None, "answer": "ask"}], fresh),
        "The plan for a queued run with an empty journal was wrong.",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="resume_plan of a run whose last reply was a final answer asks the model for nothing "
    "more, and a run that does not exist raises KeyError.",
    hint="A final answer is a reply with no calls: after it the loop stops.",
)
def ex1_finished(rng: random.Random) -> Trial:
    path, run_id, plan, _ = yield from journaled(rng, "finished")
    if not same(plan, (yield call("plan_file", path, run_id))):
        return "The plan for a run whose last reply was its final answer was wrong."
    return expect(
        (yield call("plan_file", path, rng.randint(50, 500))) == "KeyError",
        "A run the store does not hold was given a plan.",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="resume_plan reads the store and changes nothing in it.",
    hint="Only a worker holding the lease writes to a run's journal or row.",
    requires=ex1_in_doubt,
)
def ex1_reads_only(rng: random.Random) -> Trial:
    path, run_id, _, _ = yield from journaled(rng, rng.choice(["started", "between", "finished"]))
    before = yield call("store_file", path)
    yield call("plan_file", path, run_id)
    return expect(
        same(before, (yield call("store_file", path))),
        "Planning a resume changed the runs or the journal.",
    )


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="lease_decision lets a worker with no token claim a run nobody holds or whose lease "
    "ran out (at or before now), and makes it wait otherwise, as the book's claim does.",
    hint="A lease that runs out at the very millisecond asked about has run out.",
)
def ex2_claim_or_wait(rng: random.Random) -> Trial:
    # Every kind of run once (nobody holds it; a lease that ends before, at or
    # after the moment asked about), then a few more drawn at random.
    kinds = ["queued", "ended before", "ends now", "ends after"]
    kinds += [rng.choice(kinds) for _ in range(rng.randint(0, 3))]
    rng.shuffle(kinds)
    for scenario, kind in enumerate(kinds):
        # A scratch name is one file for the whole check: one store per scenario.
        path = scratch_path(f"scenario-{scenario}.db")
        yield call("queue_file", path, 1)
        asker = rng.choice(WORKERS)
        now = rng.randint(40_000, 90_000)
        if kind != "queued":
            lease_ms = rng.randint(1, 30) * 1000
            ends = (
                now
                + {
                    "ended before": -rng.randint(1, 5000),
                    "ends now": 0,
                    "ends after": rng.randint(1, 5000),
                }[kind]
            )
            yield call("claim_file", path, rng.choice(WORKERS), lease_ms, ends - lease_ms)
        wanted = "wait" if kind == "ends after" else "claim"
        decision = yield call("decide_file", path, 1, asker, None, now)
        if decision != wanted:
            return f"A worker with no lease was told {decision!r} where the claim said otherwise."
        claimed = yield call("claim_file", path, asker, 1000, now)
        if (claimed is not None) != (wanted == "claim"):
            return "The book's claim disagreed with the check."
    return None


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="lease_decision lets a worker write only while the run's generation is its token, "
    "whatever the clock says; a taken-over worker has lost, even one under the same name.",
    hint="A paused worker wakes believing its lease is live; its name can be claimed again by "
    "a new process, but each claim gets a new generation.",
)
def ex2_fenced(rng: random.Random) -> Trial:
    for scenario in range(rng.randint(3, 5)):
        path = scratch_path(f"scenario-{scenario}.db")
        yield call("queue_file", path, 1)
        first = rng.choice(WORKERS)
        second = first if rng.random() < 0.5 else rng.choice([w for w in WORKERS if w != first])
        lease_ms = rng.randint(1, 30) * 1000
        start = rng.randint(10, 1000) * 1000
        yield call("claim_file", path, first, lease_ms, start)
        # Before anyone else claims, the first holds generation 1: within its
        # lease, and past its expiry too (the fence does not read the clock).
        for now in (start + rng.randint(0, lease_ms - 1), start + lease_ms + rng.randint(0, 9999)):
            if (yield call("decide_file", path, 1, first, 1, now)) != "write":
                return "The worker holding the current generation was not allowed to write."
        taken = start + lease_ms + rng.randint(0, 5000)
        yield call("claim_file", path, second, lease_ms, taken)
        when = taken + rng.randint(-lease_ms // 2, lease_ms)
        old, new = (
            (yield call("decide_file", path, 1, first, 1, when)),
            (yield call("decide_file", path, 1, second, 2, when)),
        )
        if old != "lost":
            return f"A worker whose generation was taken over was told {old!r}."
        if new != "write":
            return f"The worker holding the new generation was told {new!r}."
        if (yield call("write_file", path, 1, first, 1)) != "refused":
            return "The book's fence disagreed with the check."
        if (yield call("decide_file", path, 1, second, rng.choice([1, 3]), when)) != "lost":
            return "A token other than the run's generation was allowed to write."
    return None


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="lease_decision answers ended for a FINISHED or FAILED run, to every worker, token or "
    "not, and raises KeyError for a run that does not exist.",
    hint="A run that is over is nobody's to claim or to write.",
)
def ex2_ended(rng: random.Random) -> Trial:
    path = scratch_path("lucy.db")
    yield call("queue_file", path, 2)
    holder = rng.choice(WORKERS)
    yield call("claim_file", path, holder, 5000, 1000)
    yield call("end_file", path, 1, rng.choice(["FINISHED", "FAILED"]))
    yield call("end_file", path, 2, rng.choice(["FINISHED", "FAILED"]))
    for run_id, worker, token in (
        (1, holder, 1),
        (1, rng.choice(WORKERS), None),
        (2, holder, None),
    ):
        decision = yield call("decide_file", path, run_id, worker, token, rng.randint(0, 99_000))
        if decision != "ended":
            return f"A run that is over was answered {decision!r}."
    return expect(
        (yield call("decide_file", path, rng.randint(3, 300), holder, None, 0)) == "KeyError",
        "A run the store does not hold was given a decision.",
    )


# --- Exercise 3 (Unit C, an open design task): a run that keeps losing its workers ------
#
# The unit gives `claim_patiently(connection, worker, max_claims, *,
# lease_seconds, clock)` and what Lucy needs; the design is the learner's.
# What is graded is the claims the door's `patient_file` answers and the
# runs' rows `store_file` reads, beside what chapter 12's own `claim_file`
# does on the same store or on a twin of it.

# Columns of a run's row, as `store_file` gives it.
STATUS, OWNER, GENERATION = 3, 7, 9


def poison(
    path: Any, workers: list[str], gaps: list[int], lease_ms: int, last_lease_ms: int
) -> Asks[int | str]:
    """Run 1 claimed once per worker by chapter 12's workers, each lease left to run out.

    Each claim comes its gap after the last lease ran out (the first at
    1,000 ms). Answers when the last lease runs out, or a feedback line if a
    claim was not what chapter 12's `claim_next` gives.
    """
    now, expires = 1000, 1000
    for generation, (worker, gap) in enumerate(zip(workers, gaps, strict=True), start=1):
        now = expires + gap
        lease = last_lease_ms if generation == len(workers) else lease_ms
        claimed = yield call("claim_file", path, worker, lease, now)
        if not same([1, generation, now + lease], claimed):
            return "A claim by chapter 12's workers did not claim the oldest run that ran out."
        expires = now + lease
    return expires


def deaths(rng: random.Random, claims: int) -> tuple[list[str], list[int]]:
    """Who claimed a run that lost them all, and how long after each lease ran out."""
    return [rng.choice(WORKERS) for _ in range(claims)], [
        rng.randint(0, 400) for _ in range(claims)
    ]


@BOOK.exercise(
    3,
    points=2,
    section=S_POISON,
    asks="A run whose lease was given out the most times Lucy allows, and ran out again, is "
    "ended FAILED; the next run is claimed instead, and no worker claims the first again.",
    hint="After a run had lost every worker it was allowed, a claim took it once more, or "
    "claimed nothing, or left it where chapter 12's workers still claimed it.",
)
def ex3_poison_run_given_up(rng: random.Random) -> Trial:
    path = scratch_path("lucy.db")
    runs = yield call("queue_file", path, rng.randint(3, 5))
    # At least two: a rule one claim off then reaches only the run it is about,
    # never the runs queued behind it at generation 0.
    max_claims, lease_ms = rng.randint(2, 4), rng.randint(500, 3000)
    expires = yield from poison(path, *deaths(rng, max_claims), lease_ms, lease_ms)
    if isinstance(expires, str):
        return expires
    now = expires + rng.randint(0, 1000)
    worker = rng.choice(WORKERS)
    claimed = yield call("patient_file", path, worker, max_claims, lease_ms, now)
    if not same([runs[1], 1, now + lease_ms], claimed):
        return "The claim after the poison run's last lease ran out did not take the next run."
    rows = (yield call("store_file", path))[0]
    if rows[0][STATUS] != "FAILED" or rows[0][OWNER] is not None:
        return "The run that lost every worker it was allowed is not ended FAILED."
    # Chapter 12's own worker, later: the second run is still held, the first is over.
    later = now + rng.randint(0, lease_ms - 1)
    return expect(
        same(
            [runs[2], 1, later + 1000], (yield call("claim_file", path, "night-shift", 1000, later))
        ),
        "A worker of chapter 12 claimed the run that had been given up on.",
    )


@BOOK.exercise(
    3,
    points=2,
    section=S_POISON,
    asks="Below the most claims Lucy allows, every claim is chapter 12's: the oldest claimable "
    "run, its next generation and expiry, or nothing while every run is held.",
    hint="A run that had not yet lost every worker it was allowed was passed over or given up "
    "on, or a claim differed from a claim by chapter 12's workers on the same store.",
)
def ex3_claims_as_chapter(rng: random.Random) -> Trial:
    twins = [scratch_path("chapter.db"), scratch_path("patient.db")]
    count = rng.randint(2, 4)
    for path in twins:
        yield call("queue_file", path, count)
    max_claims, lease_ms = rng.randint(2, 4), rng.randint(500, 2000)
    # Run 1 is claimed one time fewer than the most, on both stores alike.
    workers, gaps = deaths(rng, max_claims - 1)
    ends = []
    for path in twins:
        made = yield from poison(path, workers, gaps, lease_ms, lease_ms)
        if isinstance(made, str):
            return made
        ends.append(made)
    before = yield call("store_file", twins[1])
    if (yield call("patient_file", twins[1], "laptop", 0, lease_ms, 0)) != "ValueError":
        return "A limit of no claims at all was not refused."
    if not same(before, (yield call("store_file", twins[1]))):
        return "A refused claim changed the store."
    # Run 1's last allowed claim comes first; every lease then holds past every
    # question below, so the claims run out of runs and answer nothing.
    now = max(ends) + rng.randint(0, 300)
    window = rng.randint(4000, 8000)
    for _ in range(count + rng.randint(1, 3)):
        worker, lease = rng.choice(WORKERS), window + rng.randint(0, 900)
        chapter = yield call("claim_file", twins[0], worker, lease, now)
        patient = yield call("patient_file", twins[1], worker, max_claims, lease, now)
        if not same(chapter, patient):
            return "A claim differed from what chapter 12's workers claim on the same store."
        now += rng.randint(0, window // 8)
    return expect(
        same((yield call("store_file", twins[0])), (yield call("store_file", twins[1]))),
        "The runs' rows differ from what chapter 12's workers leave on the same store.",
    )


@BOOK.exercise(
    3,
    points=1,
    section=S_POISON,
    asks="A run that has had every claim Lucy allows is left alone while its last lease holds, "
    "and only given up on once that lease runs out.",
    hint="A run whose last allowed worker still held a live lease was given up on, or changed, "
    "or was claimed again once that lease ran out.",
)
def ex3_held_run_left_alone(rng: random.Random) -> Trial:
    path = scratch_path("lucy.db")
    runs = yield call("queue_file", path, 3)
    # At least two: a rule one claim off then reaches only the run it is about,
    # never the runs queued behind it at generation 0.
    max_claims, lease_ms = rng.randint(2, 3), rng.randint(300, 900)
    held_for = rng.randint(5000, 9000)
    expires = yield from poison(path, *deaths(rng, max_claims), lease_ms, held_for)
    if isinstance(expires, str):
        return expires
    row = (yield call("store_file", path))[0][0]
    now = expires - rng.randint(1, held_for - 1)
    claimed = yield call("patient_file", path, "laptop", max_claims, 100, now)
    if not same([runs[1], 1, now + 100], claimed):
        return "While the last allowed lease held, the next run was not the one claimed."
    if not same(row, (yield call("store_file", path))[0][0]):
        return "The run was changed while its last allowed worker still held it."
    # Once it runs out: given up on, whatever else is claimed.
    after = yield call(
        "patient_file", path, "laptop", max_claims, 100, expires + rng.randint(0, 99)
    )
    return expect(
        isinstance(after, list) and after[:1] != [runs[0]],
        "Once the last allowed lease ran out, the run was claimed yet again.",
    )
