"""A stateful property test: random sequences of operator actions on a real store file.

Hypothesis picks actions (reserve, collect, cancel, expect a delivery, receive
it expected or unannounced, draft the need), skus (the shop's three and one it
does not sell) and numbers of tubs (zero, negative and not an int included).
After every step:

- a refused action has changed nothing: the whole file, every row of every
  table, reads as it did before;
- an accepted one did exactly what chapter 6's table says, per tub, to the
  counts of its product and to nothing else;
- collecting and receiving an expected delivery changed no need;
- no count is below zero, and every open draft is for its sku's current need.

The model of the counts is written out from the chapter's table, never
computed by the code under test.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from scratch import memory_folder
from shop_store import PRICES, SHOP, contents
from strength import examples

from sovereign_agent.store import (
    cancel_reservation,
    collect,
    expect_delivery,
    open_store,
    read_drafts,
    read_products,
    receive_delivery,
    reserve,
    save_draft,
    seed_store,
)

TARGETS = {row["sku"]: row["reorder_point"] for row in SHOP["products"]}
SKUS = st.sampled_from(sorted(TARGETS))
ANY_SKU = st.one_of(SKUS, SKUS, SKUS, st.just("SKU-PISTACHIO"))
TUBS: st.SearchStrategy[Any] = st.one_of(
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(-2, 0),
    st.sampled_from([True, 2.0, "3", None]),
)

# What one tub does to (on_hand, reserved, incoming): the chapter's table, written out.
PER_TUB = {
    "reserve": (0, 1, 0),
    "collect": (-1, -1, 0),
    "cancel_reservation": (0, -1, 0),
    "expect_delivery": (0, 0, 1),
    "receive_expected": (1, 0, -1),
    "receive_unannounced": (1, 0, 0),
}
ACTIONS = {
    "reserve": reserve,
    "collect": collect,
    "cancel_reservation": cancel_reservation,
    "expect_delivery": expect_delivery,
    "receive_expected": lambda c, sku, tubs: receive_delivery(c, sku, tubs, expected=True),
    "receive_unannounced": receive_delivery,
}
# The two moves that leave the shortfall, and so every need, as it was.
KEEPS_EVERY_NEED = {"collect", "receive_expected"}


def need(counts: tuple[int, int, int], target: int) -> int:
    on_hand, reserved, incoming = counts
    return max(0, target + reserved - on_hand - incoming)


class ReservationsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.folder = tempfile.TemporaryDirectory(prefix="lucy-", dir=memory_folder())
        self.path = Path(self.folder.name) / "lucy.db"
        self.connection = open_store(self.path)
        seed_store(self.connection, SHOP, PRICES)
        self.model = {row["sku"]: (row["on_hand"], 0, 0) for row in SHOP["products"]}
        self.refusals = 0

    def teardown(self) -> None:
        self.connection.close()
        self.folder.cleanup()

    def counts(self) -> dict[str, tuple[int, int, int]]:
        return {
            row["sku"]: (row["on_hand"], row["reserved"], row["incoming"])
            for row in read_products(self.connection)
        }

    def needs(self) -> dict[str, int]:
        return {sku: need(counts, TARGETS[sku]) for sku, counts in self.counts().items()}

    def refusal(self, action: str, sku: str, tubs: Any) -> type[Exception] | None:
        """The error the action must raise, from its inputs and the model; None if possible."""
        if isinstance(tubs, bool) or not isinstance(tubs, int):
            return TypeError
        if tubs < 1:
            return ValueError
        if sku not in self.model:
            # Chapter 5's unannounced delivery meets the foreign key first.
            return sqlite3.IntegrityError if action == "receive_unannounced" else KeyError
        after = [c + p * tubs for c, p in zip(self.model[sku], PER_TUB[action], strict=True)]
        return ValueError if min(after) < 0 else None

    @rule(action=st.sampled_from(sorted(ACTIONS)), sku=ANY_SKU, tubs=TUBS)
    def act(self, action: str, sku: str, tubs: Any) -> None:
        before = contents(self.path)
        needs_before = self.needs()
        expected_refusal = self.refusal(action, sku, tubs)
        try:
            ACTIONS[action](self.connection, sku, tubs)
        except (ValueError, TypeError, KeyError, sqlite3.IntegrityError) as error:
            assert expected_refusal is not None, f"{action} of {tubs!r} {sku} refused: {error}"
            assert type(error) is expected_refusal, f"{action} of {tubs!r} {sku}: {error!r}"
            assert not self.connection.in_transaction
            assert contents(self.path) == before, f"refused {action} changed the file"
            self.refusals += 1
            return
        assert expected_refusal is None, f"{action} of {tubs!r} {sku} was impossible, and accepted"
        on_hand, reserved, incoming = self.model[sku]
        per_on_hand, per_reserved, per_incoming = PER_TUB[action]
        self.model[sku] = (
            on_hand + per_on_hand * tubs,
            reserved + per_reserved * tubs,
            incoming + per_incoming * tubs,
        )
        assert self.counts() == self.model
        if action in KEEPS_EVERY_NEED:
            assert self.needs() == needs_before, f"{action} changed a need"

    def draft(self, sku: str) -> None:
        quantity = need(self.model[sku], TARGETS[sku])
        if quantity > 0:
            assert save_draft(self.connection, sku, quantity)["quantity"] == quantity

    @initialize()
    def draft_every_need(self) -> None:
        # Open drafts from the start, so that every sequence can make one stale.
        for sku in sorted(self.model):
            self.draft(sku)

    @rule(sku=SKUS)
    def draft_the_need(self, sku: str) -> None:
        self.draft(sku)

    @precondition(lambda self: self.refusals > 0)
    @rule()
    def a_refusal_left_no_transaction_open(self) -> None:
        # The next writer is not blocked by a refused action's lock.
        with sqlite3.connect(self.path, timeout=0.1, isolation_level=None) as other:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")

    @invariant()
    def no_count_is_below_zero(self) -> None:
        assert all(min(counts) >= 0 for counts in self.counts().values())

    @invariant()
    def every_open_draft_is_for_its_skus_current_need(self) -> None:
        needs = self.needs()
        for draft in read_drafts(self.connection):
            if draft["status"] == "DRAFT":
                assert draft["quantity"] == needs[draft["sku"]], draft


ReservationsMachine.TestCase.settings = settings(
    max_examples=examples(80),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_random_operator_actions_keep_every_invariant = ReservationsMachine.TestCase
