"""Exercise Book 10's baseline: what chapter 10's approvals, as the starter has them, already do.

No caps are given in these checks (`caps` is `{}`): a submission that added
Exercise 1's rule is judged on the chapter's behaviour like one that did not.
"""

from __future__ import annotations

import random

from bookproof.grade.book import Trial
from bookproof.grade.books.book10.common import (
    BOOK,
    S_BUDGET,
    S_ORDERS,
    S_WAITS,
    amount,
    ask,
    decide,
    friday,
    money,
    operator_names,
    orders,
    run_view,
)
from bookproof.grade.questions import call, expect, same


@BOOK.baseline(
    points=1,
    section=S_WAITS,
    asks="A run asking for orders stops awaiting_approval, with one PENDING approval per call, "
    "for the shop's price times the tubs, and orders nothing.",
    hint="Leave chapter 10's authority as it is: a call with no approval asks for one, and the "
    "run stops after that turn.",
)
def ch10_run_waits(rng: random.Random) -> Trial:
    names = operator_names(rng, rng.randint(2, 3))
    path = yield from friday(names, rng.randint(20_000, 40_000))
    asked = orders(rng, rng.randint(1, 3))
    run_id = f"run-{rng.randint(100, 999)}"
    ids = list(range(1, len(asked) + 1))
    if not same(run_view("awaiting_approval", ids), (yield ask(path, run_id, asked))):
        return "The run should stop awaiting_approval, waiting for one new approval per call."
    rows = yield call("approvals_file", path)
    wanted = [
        [i, "PENDING", None, amount(order), run_id] for i, order in zip(ids, asked, strict=True)
    ]
    if not same(wanted, rows):
        return "Each call should have one PENDING approval for its tubs at the shop's price."
    return expect(same([], (yield call("orders_file", path))), "A run awaiting approval ordered.")


@BOOK.baseline(
    points=2,
    section=S_ORDERS,
    asks="Once approved, the next run orders each call once, reserved money becomes spent, and "
    "a third run must ask again.",
    hint="Leave chapter 10's place_order as it is: it uses an approval once, in the transaction "
    "that records the order.",
)
def ch10_approved_orders_once(rng: random.Random) -> Trial:
    names = operator_names(rng, rng.randint(2, 3))
    limit = rng.randint(20_000, 40_000)
    path = yield from friday(names, limit)
    asked = orders(rng, rng.randint(1, 3))
    yield ask(path, "first", asked)
    for approval in range(1, len(asked) + 1):
        if (yield decide(path, "approve", approval, rng.choice(names), {})) != "APPROVED":
            return "An operator approving a pending approval within the budget was refused."
    total = sum(amount(order) for order in asked)
    if not same(money(total, 0, limit), (yield call("budget_file", path))):
        return "Approved approvals should reserve their amounts, and nothing be spent yet."
    if not same(run_view("final_answer"), (yield ask(path, "second", asked))):
        return "With every call approved, the next run should order and finish."
    placed = [[sku, tubs, i] for i, (sku, tubs) in enumerate(asked, start=1)]
    if not same(placed, (yield call("orders_file", path))):
        return "The next run should record one order per approved call, naming its approval."
    if not same(money(0, total, limit), (yield call("budget_file", path))):
        return "Using an approval should turn its reserved money into spent money."
    again = list(range(len(asked) + 1, 2 * len(asked) + 1))
    return expect(
        same(run_view("awaiting_approval", again), (yield ask(path, "third", asked))),
        "A used approval should never pay for a second order: the third run must ask again.",
    )


@BOOK.baseline(
    points=1,
    section=S_BUDGET,
    asks="An approval beyond what is left this week is refused over_budget; an unknown name "
    "cannot decide; a denial stops the next run denied.",
    hint="Leave chapter 10's decide as it is: the operator, the status, then the money left.",
)
def ch10_budget_and_denial(rng: random.Random) -> Trial:
    names = operator_names(rng, 2)
    asked = [["SKU-STRAWBERRY", rng.randint(8, 12)]]
    limit = amount(asked[0]) - rng.randint(1, 500)
    path = yield from friday(names, limit)
    yield ask(path, "cafe", asked)
    if (yield decide(path, "approve", 1, rng.choice(names), {})) != "refused: over_budget":
        return "An approval for more than is left this week should be refused over_budget."
    if (yield decide(path, "deny", 1, "mallory", {})) != "refused: unknown_operator":
        return "Only an operator in the store may decide."
    if (yield decide(path, "deny", 1, rng.choice(names), {})) != "DENIED":
        return "An operator should be able to deny a pending approval."
    return expect(
        same(run_view("denied", denied=[1]), (yield ask(path, "cafe-again", asked))),
        "A run asking for a denied call should stop denied, without asking again.",
    )
