"""Exercise Book 10, Unit B: a finished run gives back its money (exercise 2), and the tests.

Each check builds a small history in its store: one run whose approvals end
in every state (used, approved and unused, pending), and another run with an
approval of its own; then it releases the first run and reads every
approval's status and the week's money.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

from bookproof.grade.book import JSON, Surface, Trial
from bookproof.grade.books.book10.common import (
    BOOK,
    PRICES,
    S_UNIT_B,
    amount,
    ask,
    decide,
    friday,
    money,
    operator_names,
)
from bookproof.grade.questions import Asks, call, expect, same


def _history(rng: random.Random) -> Asks[tuple[Any, ...]]:
    """Run `morning` asks three orders: 1 is used, 2 approved and unused, 3 pending.

    Run `cafe` then asks for another quantity of 1's sku, approved (4). The
    answer: the path, the operators, the limit, and the four amounts.
    """
    names = operator_names(rng, 2)
    limit = rng.randint(20_000, 40_000)
    path = yield from friday(names, limit)
    skus = rng.sample(sorted(PRICES), 3)
    tubs = [rng.randint(1, 12) for _ in skus]
    asked: list[list[Any]] = [[sku, count] for sku, count in zip(skus, tubs, strict=True)]
    yield ask(path, "morning", asked)
    for approval in (1, 2):
        yield decide(path, "approve", approval, rng.choice(names), {})
    yield ask(path, "morning-again", asked[:1])
    other: list[Any] = [skus[0], tubs[0] % 12 + 1]
    yield ask(path, "cafe", [other])
    yield decide(path, "approve", 4, rng.choice(names), {})
    return path, names, limit, [*(amount(order) for order in asked), amount(other)]


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="Releasing a run revokes its approved, unused approvals, answers their ids and frees "
    "the money they reserved.",
    hint="Releasing a run left one of its approved, unused approvals in place, or answered "
    "other ids than the ones it revoked, or in another order.",
)
def ex2_release_frees_money(rng: random.Random) -> Trial:
    path, names, limit, amounts = yield from _history(rng)
    operator = rng.choice(names)
    if not same([2], (yield call("release_file", path, "morning", operator))):
        return "Releasing the run should answer the ids of the approvals it revoked."
    statuses = [row[1] for row in (yield call("approvals_file", path))]
    if not same(["USED", "REVOKED", "PENDING", "APPROVED"], statuses):
        return "Only the run's approved, unused approval should be revoked."
    return expect(
        same(money(amounts[3], amounts[0], limit), (yield call("budget_file", path))),
        "A released approval should reserve nothing: its money is left for the week.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="Releasing a run that holds nothing approved answers no ids and changes nothing.",
    hint="Releasing a run changed a used or a pending approval, or an approval of another run.",
    requires=ex2_release_frees_money,
)
def ex2_release_only_what_is_held(rng: random.Random) -> Trial:
    path, names, limit, amounts = yield from _history(rng)
    if not same([], (yield call("release_file", path, "morning-again", rng.choice(names)))):
        return "A run with no approval of its own should release nothing."
    statuses = [row[1] for row in (yield call("approvals_file", path))]
    if not same(["USED", "APPROVED", "PENDING", "APPROVED"], statuses):
        return "Releasing a run should touch no other run's approvals."
    return expect(
        same(money(amounts[1] + amounts[3], amounts[0], limit), (yield call("budget_file", path))),
        "Releasing a run with nothing approved should leave the week's money as it was.",
    )


RELEASE_TESTS = BOOK.learner_tests(
    exercise=2,
    file="test_book10_release.py",
    section=S_UNIT_B,
    surface=Surface(
        functions={
            "friday_file": JSON,
            "ask_file": JSON,
            "decide_file": JSON,
            "release_file": JSON,
            "approvals_file": JSON,
            "budget_file": JSON,
        },
        paths=(
            "friday_file",
            "ask_file",
            "decide_file",
            "release_file",
            "approvals_file",
            "budget_file",
        ),
    ),
)


def _with_release(reference: ModuleType, release: Any) -> dict[str, Any]:
    # The module's own namespace: the door looks the name up there at every call.
    vars(reference)["release_run"] = release
    return {name: getattr(reference, name) for name in RELEASE_TESTS.surface.functions}


@RELEASE_TESTS.catches(points=1, behaviour="releases every run's approved approvals")
def ex2_tests_catch_every_run(reference: ModuleType, rng: random.Random) -> dict[str, Any]:
    def release(connection: Any, run_id: str, operator: str) -> list[int]:
        held = [a.id for a in reference.list_approvals(connection) if a.status == "APPROVED"]
        for approval_id in held:
            reference.decide(connection, approval_id, operator, "revoke")
        return [
            a.id
            for a in reference.list_approvals(connection)
            if a.run_id == run_id and a.id in held
        ]

    return _with_release(reference, release)


@RELEASE_TESTS.catches(points=1, behaviour="revokes the run's pending approvals too")
def ex2_tests_catch_pending_revoked(reference: ModuleType, rng: random.Random) -> dict[str, Any]:
    def release(connection: Any, run_id: str, operator: str) -> list[int]:
        mine = [
            a
            for a in reference.list_approvals(connection)
            if a.run_id == run_id and a.status in ("APPROVED", "PENDING")
        ]
        for approval in mine:
            reference.decide(connection, approval.id, operator, "revoke")
        return [a.id for a in mine if a.status == "APPROVED"]

    return _with_release(reference, release)


@RELEASE_TESTS.catches(
    points=1,
    behaviour="answers the right ids but revokes nothing, so the money stays reserved",
    visibility="after_due_date",
)
def ex2_tests_catch_nothing_revoked(reference: ModuleType, rng: random.Random) -> dict[str, Any]:
    def release(connection: Any, run_id: str, operator: str) -> list[int]:
        return [
            a.id
            for a in reference.list_approvals(connection)
            if a.run_id == run_id and a.status == "APPROVED"
        ]

    return _with_release(reference, release)
