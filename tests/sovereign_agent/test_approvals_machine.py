"""A stateful property test: random approvals, decisions, expiries, uses and budgets on a real file.

Hypothesis asks for orders through the real dispatcher (which creates a
pending approval, is refused, or uses an approved one), has operators and
strangers approve, deny and revoke any id, moves the injectable clock
forward, and changes the weekly limit. A model written out here says what
each step must do. After every step:

- every row of the approvals table says what the model says (an approval
  past its expiry counts as expired, whether or not a transaction marked it);
- every order used exactly one approval, for exactly its call, which was
  approved and unexpired just before; an approval was used at most once;
- reserved plus spent money never exceeds the weekly limit;
- a refused decision or budget change left the whole file as it was.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from approvals_fixture import FRIDAY_MORNING, Clock, friday_store
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from scratch import memory_folder
from shop_store import PRICES, contents
from strength import examples

from sovereign_agent.approvals import (
    ApprovalRefused,
    budget,
    build_approved_store_tools,
    list_approvals,
    set_weekly_limit,
)
from sovereign_agent.approvals.ledger import decide, seconds
from sovereign_agent.store import open_store
from sovereign_agent.tools import ToolCall

SKUS = st.sampled_from(sorted(PRICES))
QUANTITIES = st.integers(1, 20)
OPERATORS = st.sampled_from(["lucy", "sam", "mallory"])
DAY = 24 * 3600


def monday(now: int) -> int:
    day = datetime.fromtimestamp(now, UTC)
    start = datetime(day.year, day.month, day.day, tzinfo=UTC) - timedelta(days=day.weekday())
    return int(start.timestamp())


@dataclass
class Modelled:
    sku: str
    quantity: int
    amount: int
    expires: int
    status: str = "PENDING"
    used_at: int | None = None

    def effective(self, now: int) -> str:
        if self.status in ("PENDING", "APPROVED") and self.expires <= now:
            return "EXPIRED"
        return self.status


class ApprovalsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.TemporaryDirectory(prefix="lucy-", dir=memory_folder())
        self.path = friday_store(Path(self.folder.name) / "lucy.db")
        self.connection = open_store(self.path)
        self.clock = Clock()
        self.limit = 5000
        self.model: dict[int, Modelled] = {}
        self.orders = 0

    def teardown(self) -> None:
        self.connection.close()
        self.folder.cleanup()

    @property
    def now(self) -> int:
        return seconds(self.clock)

    def left(self) -> int:
        now = self.now
        reserved = sum(a.amount for a in self.model.values() if a.effective(now) == "APPROVED")
        spent = sum(
            a.amount
            for a in self.model.values()
            if a.status == "USED" and a.used_at is not None and a.used_at >= monday(now)
        )
        return self.limit - reserved - spent

    @rule(sku=SKUS, quantity=QUANTITIES)
    def order(self, sku: str, quantity: int) -> None:
        now = self.now
        current = max(
            (
                number
                for number, a in self.model.items()
                if (a.sku, a.quantity) == (sku, quantity)
                # A denial answers the call until its expiry, as a pending or
                # approved request does; after it, the call asks again.
                and (
                    a.effective(now) in ("PENDING", "APPROVED")
                    or (a.status == "DENIED" and a.expires > now)
                )
            ),
            default=None,
        )
        dispatcher, _ = build_approved_store_tools(self.connection, clock=self.clock)
        arguments = {"sku": sku, "quantity": quantity}
        outcome = dispatcher.attempt(ToolCall(id="c", name="place_order", arguments=arguments))
        for a in self.model.values():
            if a.effective(now) == "EXPIRED":
                a.status = "EXPIRED"
        if current is not None and self.model[current].status == "APPROVED":
            assert outcome.observation["ok"] is True, outcome
            assert outcome.observation["value"]["approval_id"] == current
            self.model[current].status = "USED"
            self.model[current].used_at = now
            self.orders += 1
            return
        # Nothing consequential ran without an approval.
        assert outcome.handler_ran is False
        assert outcome.observation == {"ok": False, "error": "tool_failed"}
        if current is None:
            number = len(self.model) + 1
            self.model[number] = Modelled(sku, quantity, quantity * PRICES[sku], expires=now + DAY)

    def expected_refusal(self, number: int, operator: str, decision: str) -> str | None:
        if operator not in ("lucy", "sam"):
            return "unknown_operator"
        if number not in self.model:
            return "unknown_approval"
        status = self.model[number].effective(self.now)
        if status == "EXPIRED":
            return "expired"
        if status == "USED":
            return "used"
        allowed = ("PENDING", "APPROVED") if decision == "revoke" else ("PENDING",)
        if status not in allowed:
            return "already_decided"
        if decision == "approve" and self.model[number].amount > self.left():
            return "over_budget"
        return None

    @rule(
        number=st.integers(1, 6),
        operator=OPERATORS,
        decision=st.sampled_from(["approve", "deny", "revoke"]),
    )
    def decide(self, number: int, operator: str, decision: str) -> None:
        expected = self.expected_refusal(number, operator, decision)
        before = contents(self.path)
        try:
            decided = decide(self.connection, number, operator, decision, clock=self.clock)  # type: ignore[arg-type]
        except ApprovalRefused as refused:
            assert refused.code == expected, (refused, expected)
            # A refused action changes nothing: not even the expiry sweep stays.
            assert contents(self.path) == before
            return
        assert expected is None
        status = {"approve": "APPROVED", "deny": "DENIED", "revoke": "REVOKED"}[decision]
        assert (decided.status, decided.decided_by) == (status, operator)
        for a in self.model.values():
            if a.effective(self.now) == "EXPIRED":
                a.status = "EXPIRED"
        self.model[number].status = status

    @rule(hours=st.integers(1, 60))
    def advance(self, hours: int) -> None:
        self.clock.advance(timedelta(hours=hours))

    @rule(pence=st.integers(0, 8000))
    def set_limit(self, pence: int) -> None:
        committed = self.limit - self.left()
        before = contents(self.path)
        try:
            set_weekly_limit(self.connection, pence, clock=self.clock)
        except ApprovalRefused as refused:
            assert refused.code == "over_budget"
            assert pence < committed
            assert contents(self.path) == before
            return
        assert pence >= committed
        self.limit = pence

    @invariant()
    def the_store_says_what_the_model_says(self) -> None:
        now = self.now
        found = {
            a.id: (json.loads(a.arguments), a.amount_pence, a.status, a.expires_at)
            for a in list_approvals(self.connection)
        }
        expected = {
            n: ({"quantity": a.quantity, "sku": a.sku}, a.amount, a.status, a.expires)
            for n, a in self.model.items()
        }
        effective = {
            n: (args, amount, Modelled("", 0, 0, expires, status).effective(now), expires)
            for n, (args, amount, status, expires) in found.items()
        }
        assert effective == {
            n: (args, amount, self.model[n].effective(now), expires)
            for n, (args, amount, _, expires) in expected.items()
        }

    @invariant()
    def every_order_used_exactly_one_matching_approval_once(self) -> None:
        rows = self.connection.execute(
            "SELECT o.sku, o.quantity, o.approval_id, a.arguments, a.status, a.tool"
            " FROM orders o JOIN approvals a ON a.id = o.approval_id"
        ).fetchall()
        assert len(rows) == self.orders
        assert len({row[2] for row in rows}) == len(rows)
        for sku, quantity, _, arguments, status, tool in rows:
            assert (tool, status) == ("place_order", "USED")
            assert json.loads(arguments) == {"quantity": quantity, "sku": sku}
        used = [a for a in list_approvals(self.connection) if a.status == "USED"]
        assert len(used) == self.orders

    @invariant()
    def reserved_and_spent_never_exceed_the_limit(self) -> None:
        week = budget(self.connection, self.now)
        assert week.limit_pence == self.limit
        assert week.reserved_pence + week.spent_pence <= week.limit_pence
        assert week.left_pence == self.left()

    @invariant()
    def no_transaction_is_left_open(self) -> None:
        assert not self.connection.in_transaction
        assert isinstance(self.connection, sqlite3.Connection)
        assert self.clock.now >= FRIDAY_MORNING


ApprovalsMachine.TestCase.settings = settings(
    max_examples=examples(60),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_random_approvals_keep_every_invariant = ApprovalsMachine.TestCase
