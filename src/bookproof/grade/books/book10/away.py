"""Exercise Book 10, Unit C: while Lucy is away, an open design task judged by what runs do.

The unit gives the function and what Lucy needs while she is away (her
deputy approves in their own name, within an allowance; nobody else says yes;
she still may) and leaves the design to the learner. What is graded is the
ledger's behaviour only: which decisions the door's `away_file` answers
with a status and which with a refusal (any code: the codes are the
learner's), and what `approvals_file` holds afterwards. The operators, who
is away and who deputises, the orders and the allowance are chosen here for
each grading.
"""

from __future__ import annotations

import random
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Trial
from bookproof.grade.books.book10.common import (
    BOOK,
    amount,
    ask,
    friday,
    operator_names,
    orders,
    run_view,
)
from bookproof.grade.questions import Question, call, same

S_WHO = BOOK.section("10.5 Lucy approves from another process") + " (Exercise Book 10, Unit C)"
S_ALLOWANCE = BOOK.section("10.7 The budget refuses STRAWBERRY 12") + " (Exercise Book 10, Unit C)"
# Large enough that the week's budget never decides a check of this unit.
_LIMIT = 100_000


def _away(path: Any, decision: str, approval: int, operator: str, away: dict[str, Any]) -> Question:
    return call("away_file", path, decision, approval, operator, away)


def _refused(answer: Any) -> bool:
    """A refusal with a code of the learner's choosing: the door answers `refused: CODE`."""
    return isinstance(answer, str) and answer.startswith("refused: ")


def _roles(rng: random.Random) -> tuple[list[str], str, str, str]:
    """This run's operators, and which of them is away, deputises, and only works the shop."""
    names = operator_names(rng, 4)
    owner, deputy, other = rng.sample(names, 3)
    return names, owner, deputy, other


@BOOK.exercise(
    4,
    points=2,
    section=S_WHO,
    asks="While the owner is away, her deputy approves in their own name and she still may; "
    "nobody else may approve, and anyone may still say no.",
    hint="While the owner was away, an approval was given by someone other than her or her "
    "deputy, or written in another operator's name, or a decision she or her deputy may make "
    "was refused.",
)
def ex4_deputy_approves_in_own_name(rng: random.Random) -> Trial:
    names, owner, deputy, other = _roles(rng)
    path = yield from friday(names, _LIMIT)
    asked = orders(rng, 3)
    run = fx.token(rng, 6).lower()
    if not same(run_view("awaiting_approval", [1, 2, 3]), (yield ask(path, run, asked))):
        return "A run asking for three orders should stop awaiting three approvals."
    # The allowance is more than every order together: only who decides matters here.
    up_to = sum(map(amount, asked)) + rng.randint(0, 900)
    away = {"owner": owner, "deputy": deputy, "up_to": up_to}
    stranger = fx.token(rng, 7).lower()
    while stranger in names:
        stranger = fx.token(rng, 7).lower()
    for name in (other, stranger):
        if not _refused((yield _away(path, "approve", 1, name, away))):
            return (
                "While the owner is away, an approval by someone who is neither she nor her "
                "deputy should be refused."
            )
    if (yield _away(path, "approve", 1, deputy, away)) != "APPROVED":
        return "While the owner is away, her deputy should be able to approve."
    if (yield _away(path, "approve", 2, owner, away)) != "APPROVED":
        return "The owner should still be able to approve while she is away."
    if (yield _away(path, "deny", 3, other, away)) != "DENIED":
        return "Any operator should still be able to deny while the owner is away."
    held = [
        [1, "APPROVED", deputy, amount(asked[0]), run],
        [2, "APPROVED", owner, amount(asked[1]), run],
        [3, "DENIED", other, amount(asked[2]), run],
    ]
    if not same(held, (yield call("approvals_file", path))):
        return (
            "The ledger should name who really decided each approval, and the refused "
            "attempts should have changed nothing."
        )
    return None


@BOOK.exercise(
    4,
    points=2,
    section=S_ALLOWANCE,
    asks="The deputy's approvals, reserved or spent, never come to more than their allowance; "
    "a revoked one gives its pence back, and the owner's own approvals are not theirs.",
    hint="While the owner was away, her deputy approved past their allowance, or was refused "
    "within it (counting what they no longer hold, or what she approved herself).",
    requires=ex4_deputy_approves_in_own_name,
)
def ex4_deputy_within_allowance(rng: random.Random) -> Trial:
    names, owner, deputy, _other = _roles(rng)
    path = yield from friday(names, _LIMIT)
    asked = orders(rng, 3)
    run = fx.token(rng, 6).lower()
    if not same(run_view("awaiting_approval", [1, 2, 3]), (yield ask(path, run, asked))):
        return "A run asking for three orders should stop awaiting three approvals."
    # The owner approves the largest; the deputy's allowance holds either of
    # the other two, never both. Counting her approval against it would
    # refuse the deputy's first.
    ids = sorted((1, 2, 3), key=lambda approval: amount(asked[approval - 1]))
    first, second = rng.sample(ids[:2], 2)
    hers = ids[2]
    due = {approval: amount(asked[approval - 1]) for approval in ids}
    up_to = rng.randint(max(due[first], due[second]), due[first] + due[second] - 1)
    away = {"owner": owner, "deputy": deputy, "up_to": up_to}
    steps: list[tuple[str, int, str, bool]] = [
        ("approve", hers, owner, True),
        ("approve", first, deputy, True),
        ("approve", second, deputy, False),
        ("revoke", first, deputy, True),
        ("approve", second, deputy, True),
    ]
    for decision, approval, name, allowed in steps:
        answer = yield _away(path, decision, approval, name, away)
        if allowed and _refused(answer):
            return (
                "The deputy was refused an approval their allowance still held (after one of "
                "theirs was revoked, or beside what the owner approved)."
            )
        if not allowed and not _refused(answer):
            return "The deputy approved past their allowance while the owner was away."
    # The run comes back: the two approved orders are placed, the revoked one
    # asks again. What the deputy approved and was spent still counts.
    if not same(run_view("awaiting_approval", [4]), (yield ask(path, run, asked))):
        return "The run should place the approved orders and ask again for the revoked one."
    if not _refused((yield _away(path, "approve", 4, deputy, away))):
        return "An approval of the deputy's counts once it is spent, not only while it waits."
    if (yield _away(path, "approve", 4, owner, away)) != "APPROVED":
        return "The owner should still be able to approve what her deputy may not."
    held = [
        [hers, "USED", owner, due[hers], run],
        [first, "REVOKED", deputy, due[first], run],
        [second, "USED", deputy, due[second], run],
        [4, "APPROVED", owner, due[first], run],
    ]
    if not same(sorted(held), (yield call("approvals_file", path))):
        return "A refused approval should change nothing in the ledger."
    return None
