"""Exercise Book 10, Unit A: each operator's spending cap (exercise 1) and the tests that pin it.

`decide_file` takes the caps as plain JSON, operator to pence: the shop's
policy, handed in like the weekly limit. A check gives one operator a cap
this run chose, asks for an approval above it or at it, and reads what the
store holds afterwards.
"""

from __future__ import annotations

import random
from types import ModuleType
from typing import Any

from bookproof.grade.book import JSON, Surface, Trial
from bookproof.grade.books.book10.common import (
    BOOK,
    S_UNIT_A,
    amount,
    ask,
    decide,
    friday,
    money,
    operator_names,
    orders,
)
from bookproof.grade.questions import call, expect, same


def _capped_store(rng: random.Random) -> Any:
    """A store whose first run waits for one order; its operators, capped one first, the limit."""
    names = operator_names(rng, 3)
    limit = rng.randint(20_000, 40_000)
    path = yield from friday(names, limit)
    asked = orders(rng, 1)
    yield ask(path, "cafe", asked)
    return path, names, limit, amount(asked[0])


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="An operator approving more than their cap is refused over_cap, and nothing changes; "
    "an operator without a cap may still approve it.",
    hint="An approval larger than the deciding operator's cap was approved, or its refusal "
    "changed the store or came with a code other than over_cap.",
)
def ex1_over_cap_refused(rng: random.Random) -> Trial:
    path, names, limit, due = yield from _capped_store(rng)
    capped, free = names[0], names[1]
    caps = {capped: due - rng.randint(1, due)}
    if (yield decide(path, "approve", 1, capped, caps)) != "refused: over_cap":
        return "An approval above the deciding operator's cap should be refused over_cap."
    if not same(money(0, 0, limit), (yield call("budget_file", path))):
        return "A refusal over the cap should change nothing: no money reserved."
    return expect(
        (yield decide(path, "approve", 1, free, caps)) == "APPROVED",
        "An operator the caps do not name is limited by the week's budget alone.",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="A cap allows approvals up to and including it, and each operator's cap is their own.",
    hint="An approval of exactly the deciding operator's cap was refused, or another "
    "operator's cap decided it.",
    requires=ex1_over_cap_refused,
)
def ex1_cap_is_inclusive_and_own(rng: random.Random) -> Trial:
    path, names, _limit, due = yield from _capped_store(rng)
    # The deciding operator may approve exactly this; another's lower cap is not theirs.
    caps = {names[0]: due, names[1]: rng.randint(0, due - 1)}
    return expect(
        (yield decide(path, "approve", 1, names[0], caps)) == "APPROVED",
        "An approval for exactly the operator's cap, with another's lower cap beside it, "
        "should be approved.",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="A cap limits approving only: a capped operator may still deny or revoke.",
    hint="A denial or a revocation by an operator whose cap is below the amount was refused.",
    requires=ex1_over_cap_refused,
)
def ex1_no_is_never_capped(rng: random.Random) -> Trial:
    path, names, _limit, due = yield from _capped_store(rng)
    caps = {names[0]: rng.randint(0, due - 1)}
    if (yield decide(path, "approve", 1, names[1], caps)) != "APPROVED":
        return "An operator without a cap should be able to approve."
    return expect(
        (yield decide(path, "revoke", 1, names[0], caps)) == "REVOKED",
        "A capped operator should still be able to revoke an approval above their cap.",
    )


CAP_TESTS = BOOK.learner_tests(
    exercise=1,
    file="test_book10_caps.py",
    section=S_UNIT_A,
    surface=Surface(
        functions={
            "friday_file": JSON,
            "ask_file": JSON,
            "decide_file": JSON,
            "approvals_file": JSON,
            "budget_file": JSON,
        },
        paths=("friday_file", "ask_file", "decide_file", "approvals_file", "budget_file"),
    ),
)


def _with_approve(reference: ModuleType, approve: Any) -> dict[str, Any]:
    # The module's own namespace: the door looks the name up there at every call.
    vars(reference)["approve_within_cap"] = approve
    return {name: getattr(reference, name) for name in CAP_TESTS.surface.functions}


@CAP_TESTS.catches(points=1, behaviour="refuses an approval of exactly the operator's cap")
def ex1_tests_catch_cap_exclusive(reference: ModuleType, rng: random.Random) -> dict[str, Any]:
    def approve(connection: Any, approval_id: int, operator: str, caps: Any) -> None:
        cap = caps.get(operator)
        if cap is not None and reference.read_approval(connection, approval_id).amount_pence >= cap:
            raise reference.ApprovalRefused("over_cap", "over the cap")
        reference.decide(connection, approval_id, operator, "approve")

    return _with_approve(reference, approve)


@CAP_TESTS.catches(points=1, behaviour="holds every operator to the lowest cap given")
def ex1_tests_catch_lowest_cap(reference: ModuleType, rng: random.Random) -> dict[str, Any]:
    def approve(connection: Any, approval_id: int, operator: str, caps: Any) -> None:
        if caps and reference.read_approval(connection, approval_id).amount_pence > min(
            caps.values()
        ):
            raise reference.ApprovalRefused("over_cap", "over the cap")
        reference.decide(connection, approval_id, operator, "approve")

    return _with_approve(reference, approve)


@CAP_TESTS.catches(
    points=1,
    behaviour="approves first and refuses over the cap afterwards, leaving the money reserved",
    visibility="after_due_date",
)
def ex1_tests_catch_refusal_that_changed(
    reference: ModuleType, rng: random.Random
) -> dict[str, Any]:
    def approve(connection: Any, approval_id: int, operator: str, caps: Any) -> None:
        cap = caps.get(operator)
        reference.decide(connection, approval_id, operator, "approve")
        if cap is not None and reference.read_approval(connection, approval_id).amount_pence > cap:
            raise reference.ApprovalRefused("over_cap", "over the cap")

    return _with_approve(reference, approve)
