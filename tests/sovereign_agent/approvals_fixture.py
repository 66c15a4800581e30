"""What the approvals tests share: chapter 6's Friday in a store file, a clock, a morning run.

Expected numbers in the tests are written out (9 and 1 tubs, 2,250 and 300
pence, a 5,000 pence week), never computed by the code under test.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from shop_store import seeded_store

from sovereign_agent.approvals import (
    GatedRun,
    add_operator,
    build_approved_store_tools,
    run_with_approvals,
    set_weekly_limit,
)
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.store import expect_delivery, open_store, reserve

__all__ = ["FRIDAY_MORNING", "Clock", "friday_store", "morning_run", "order_call"]

# Friday 7 August 2026, 08:00 UTC: a fixed morning, so expiries are exact.
FRIDAY_MORNING = datetime(2026, 8, 7, 8, 0, tzinfo=UTC)


class Clock:
    """A clock a test moves by hand: the injectable clock of the ledger."""

    def __init__(self, now: datetime = FRIDAY_MORNING) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


def friday_store(path: Path, *, limit: int = 5000) -> Path:
    """Chapter 6's Friday (two promises and a van), operators lucy and sam, a weekly limit."""
    seeded_store(path)
    connection = open_store(path)
    try:
        reserve(connection, "SKU-VANILLA", 3)
        reserve(connection, "SKU-CHOCOLATE", 2)
        expect_delivery(connection, "SKU-STRAWBERRY", 4)
        add_operator(connection, "lucy")
        add_operator(connection, "sam")
        set_weekly_limit(connection, limit, clock=lambda: FRIDAY_MORNING)
    finally:
        connection.close()
    return path


def order_call(call_id: str, sku: str, quantity: int) -> AssistantToolCall:
    return AssistantToolCall(
        id=call_id,
        name="place_order",
        arguments_json=json.dumps({"sku": sku, "quantity": quantity}),
    )


def order_what_is_needed(messages: Sequence[Message]) -> AssistantMessage:
    """The model's second step: an order for every sku the report says is needed, most first."""
    report = json.loads(str(messages[-1].content))["value"]
    needed = sorted((row for row in report if row["needed"] > 0), key=lambda r: -r["needed"])
    calls = tuple(order_call(f"order-{row['sku']}", row["sku"], row["needed"]) for row in needed)
    return AssistantMessage(tool_calls=calls)


def morning_run(connection: sqlite3.Connection, clock: Clock, run_id: str) -> GatedRun:
    """Read the stock, order what is needed, then answer: the run each test starts."""
    dispatcher, authority = build_approved_store_tools(connection, run_id=run_id, clock=clock)
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(AssistantToolCall(id="stock", name="list_stock", arguments_json="{}"),)
            ),
            order_what_is_needed,
            AssistantMessage(content="Ordered what was needed."),
        ]
    )
    return run_with_approvals(
        model, dispatcher, authority, "Order what the shop needs.", max_steps=5, max_tool_calls=5
    )
