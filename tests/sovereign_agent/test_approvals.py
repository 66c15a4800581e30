"""Chapter 10 over real store files: approvals that live in the store, bound to one exact call."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest
from approvals_fixture import Clock, friday_store, morning_run, order_call
from shop_store import contents

from sovereign_agent.approvals import (
    ApprovalRefused,
    approve,
    budget,
    build_approved_store_tools,
    deny,
    list_approvals,
    revoke,
    run_with_approvals,
    set_weekly_limit,
)
from sovereign_agent.approvals.ledger import seconds
from sovereign_agent.models import AssistantMessage
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.store import open_store, set_price


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return friday_store(tmp_path / "lucy.db")


@pytest.fixture
def connection(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(open_store(path)) as connection:
        yield connection


@pytest.fixture
def clock() -> Clock:
    return Clock()


def calls(connection: sqlite3.Connection) -> list[tuple[int, str, str, int, str]]:
    return [
        (a.id, a.tool, a.arguments, a.amount_pence, a.status) for a in list_approvals(connection)
    ]


def orders(connection: sqlite3.Connection) -> list[tuple[str, int, int, int, str]]:
    return [
        tuple(row)
        for row in connection.execute(
            "SELECT sku, quantity, unit_cost_pence, approval_id, status FROM orders ORDER BY id"
        )
    ]


def money(connection: sqlite3.Connection, clock: Clock) -> tuple[int, int, int, int]:
    week = budget(connection, seconds(clock))
    return week.limit_pence, week.reserved_pence, week.spent_pence, week.left_pence


def test_fridays_morning_run_stops_awaiting_two_approvals(
    connection: sqlite3.Connection, clock: Clock
) -> None:
    run = morning_run(connection, clock, "friday-morning")
    assert run.stop_reason == "awaiting_approval"
    assert run.record is None
    assert run.awaiting == (1, 2)
    assert calls(connection) == [
        (1, "place_order", '{"quantity":9,"sku":"SKU-VANILLA"}', 2250, "PENDING"),
        (2, "place_order", '{"quantity":1,"sku":"SKU-CHOCOLATE"}', 300, "PENDING"),
    ]
    assert {a.run_id for a in list_approvals(connection)} == {"friday-morning"}
    # 24 hours to decide, by default.
    assert {a.expires_at - a.requested_at for a in list_approvals(connection)} == {86_400}
    assert orders(connection) == []
    # Both calls were answered, refused; the model was not asked a third time.
    answers = [json.loads(str(m.content)) for m in run.messages if m.role == "tool"]
    assert answers[1:] == [{"ok": False, "error": "tool_failed"}] * 2
    assert money(connection, clock) == (5000, 0, 0, 5000)


def test_lucy_approves_both_and_the_next_run_orders_both(
    connection: sqlite3.Connection, clock: Clock
) -> None:
    morning_run(connection, clock, "friday-morning")
    assert approve(connection, 1, "lucy", clock=clock).status == "APPROVED"
    assert approve(connection, 2, "lucy", clock=clock).decided_by == "lucy"
    assert money(connection, clock) == (5000, 2550, 0, 2450)
    clock.advance(timedelta(hours=1))
    run = morning_run(connection, clock, "friday-late-morning")
    assert run.stop_reason == "final_answer"
    assert run.record is not None
    assert run.record.executed == ("list_stock", "place_order", "place_order")
    assert orders(connection) == [
        ("SKU-VANILLA", 9, 250, 1, "ORDERED"),
        ("SKU-CHOCOLATE", 1, 300, 2, "ORDERED"),
    ]
    assert [a.status for a in list_approvals(connection)] == ["USED", "USED"]
    # Reserved money became spent money: the week's total is unchanged.
    assert money(connection, clock) == (5000, 0, 2550, 2450)


def test_strawberry_12_cannot_be_approved_over_the_budget(
    connection: sqlite3.Connection, clock: Clock
) -> None:
    morning_run(connection, clock, "friday-morning")
    approve(connection, 1, "lucy", clock=clock)
    approve(connection, 2, "lucy", clock=clock)
    dispatcher, authority = build_approved_store_tools(connection, run_id="cafe", clock=clock)
    model = ScriptedModel([AssistantMessage(tool_calls=(order_call("s", "SKU-STRAWBERRY", 12),))])
    run = run_with_approvals(
        model, dispatcher, authority, "Strawberry.", max_steps=3, max_tool_calls=3
    )
    assert run.stop_reason == "awaiting_approval"
    assert calls(connection)[-1] == (
        3,
        "place_order",
        '{"quantity":12,"sku":"SKU-STRAWBERRY"}',
        3300,
        "PENDING",
    )
    before = contents(Path(connection.execute("PRAGMA database_list").fetchone()[2]))
    with pytest.raises(ApprovalRefused, match="3,300 pence; only 2,450 pence are left") as refused:
        approve(connection, 3, "lucy", clock=clock)
    assert refused.value.code == "over_budget"
    assert contents(Path(connection.execute("PRAGMA database_list").fetchone()[2])) == before


def test_an_approval_binds_one_exact_call(connection: sqlite3.Connection, clock: Clock) -> None:
    morning_run(connection, clock, "friday-morning")
    approve(connection, 1, "lucy", clock=clock)
    dispatcher, authority = build_approved_store_tools(connection, run_id="eight", clock=clock)
    # Vanilla 8 differs from the approved vanilla 9 in one field: it needs its own approval.
    model = ScriptedModel([AssistantMessage(tool_calls=(order_call("v", "SKU-VANILLA", 8),))])
    run = run_with_approvals(
        model, dispatcher, authority, "Vanilla.", max_steps=3, max_tool_calls=3
    )
    assert run.stop_reason == "awaiting_approval"
    assert calls(connection)[-1][2:] == ('{"quantity":8,"sku":"SKU-VANILLA"}', 2000, "PENDING")
    assert orders(connection) == []
    assert list_approvals(connection)[0].status == "APPROVED"


def test_the_same_call_spelled_differently_is_the_same_call(
    connection: sqlite3.Connection, clock: Clock
) -> None:
    morning_run(connection, clock, "friday-morning")
    approve(connection, 1, "lucy", clock=clock)
    dispatcher, _ = build_approved_store_tools(connection, clock=clock)
    from sovereign_agent.tools import ToolCall

    spelled = ToolCall(id="x", name="place_order", arguments={"sku": "SKU-VANILLA", "quantity": 9})
    outcome = dispatcher.attempt(spelled)
    assert outcome.observation["ok"] is True
    assert outcome.observation["value"]["approval_id"] == 1


def test_a_denial_ends_the_run_and_is_never_retried(
    connection: sqlite3.Connection, clock: Clock
) -> None:
    morning_run(connection, clock, "friday-morning")
    deny(connection, 1, "sam", clock=clock)
    approve(connection, 2, "lucy", clock=clock)
    run = morning_run(connection, clock, "friday-noon")
    assert run.stop_reason == "denied"
    assert run.denied == (1,)
    # Chocolate was approved and ordered in the same turn; vanilla was not.
    assert orders(connection) == [("SKU-CHOCOLATE", 1, 300, 2, "ORDERED")]
    # No new approval was asked for vanilla 9: a denial is not a prompt to ask again.
    assert [a.status for a in list_approvals(connection)] == ["DENIED", "USED"]
    assert list_approvals(connection)[0].decided_by == "sam"


def test_an_expired_approval_is_refused(connection: sqlite3.Connection, clock: Clock) -> None:
    morning_run(connection, clock, "friday-morning")
    approve(connection, 1, "lucy", clock=clock)
    clock.advance(timedelta(hours=24))
    assert money(connection, clock) == (5000, 0, 0, 5000)
    with pytest.raises(ApprovalRefused, match="approval 2 has expired") as refused:
        approve(connection, 2, "lucy", clock=clock)
    assert refused.value.code == "expired"
    run = morning_run(connection, clock, "saturday")
    # The expired approvals buy nothing; the run asks again.
    assert run.stop_reason == "awaiting_approval"
    assert orders(connection) == []
    assert [a.status for a in list_approvals(connection)] == [
        "EXPIRED",
        "EXPIRED",
        "PENDING",
        "PENDING",
    ]


def test_revoking_works_until_the_approval_is_used(
    connection: sqlite3.Connection, clock: Clock
) -> None:
    morning_run(connection, clock, "friday-morning")
    approve(connection, 1, "lucy", clock=clock)
    approve(connection, 2, "lucy", clock=clock)
    assert revoke(connection, 1, "sam", clock=clock).status == "REVOKED"
    assert money(connection, clock) == (5000, 300, 0, 4700)
    morning_run(connection, clock, "friday-noon")
    assert orders(connection) == [("SKU-CHOCOLATE", 1, 300, 2, "ORDERED")]
    with pytest.raises(ApprovalRefused, match="approval 2 has already been used") as refused:
        revoke(connection, 2, "lucy", clock=clock)
    assert refused.value.code == "used"
    assert list_approvals(connection)[1].status == "USED"


def test_only_an_operator_decides_and_no_tool_can(
    connection: sqlite3.Connection, clock: Clock
) -> None:
    morning_run(connection, clock, "friday-morning")
    before = calls(connection)
    for name in ("mallory", "LUCY", ""):
        with pytest.raises(ApprovalRefused, match="is not an operator"):
            approve(connection, 1, name, clock=clock)
    with pytest.raises(ApprovalRefused, match="no approval 99"):
        approve(connection, 99, "lucy", clock=clock)
    assert calls(connection) == before
    dispatcher, _ = build_approved_store_tools(connection, clock=clock)
    names = [schema["function"]["name"] for schema in dispatcher.schemas()]
    assert names == ["draft_order", "list_stock", "place_order", "supplier"]


def test_a_price_rise_after_approval_spends_nothing(
    connection: sqlite3.Connection, clock: Clock
) -> None:
    morning_run(connection, clock, "friday-morning")
    approve(connection, 1, "lucy", clock=clock)
    set_price(connection, "SKU-VANILLA", 260)
    run = morning_run(connection, clock, "friday-noon")
    assert run.stop_reason == "awaiting_approval"
    assert orders(connection) == []
    assert list_approvals(connection)[0].status == "APPROVED"


def test_a_limit_below_what_is_committed_is_refused(
    connection: sqlite3.Connection, clock: Clock
) -> None:
    morning_run(connection, clock, "friday-morning")
    approve(connection, 1, "lucy", clock=clock)
    with pytest.raises(ApprovalRefused, match="below the 2,250 pence"):
        set_weekly_limit(connection, 2000, clock=clock)
    assert money(connection, clock) == (5000, 2250, 0, 2750)


def test_a_store_without_a_limit_approves_nothing(tmp_path: Path, clock: Clock) -> None:
    path = friday_store(tmp_path / "lucy.db", limit=0)
    with closing(open_store(path)) as connection:
        morning_run(connection, clock, "friday-morning")
        with pytest.raises(ApprovalRefused) as refused:
            approve(connection, 2, "lucy", clock=clock)
        assert refused.value.code == "over_budget"


def test_the_database_holds_the_rules_whoever_writes(
    connection: sqlite3.Connection, clock: Clock
) -> None:
    insert = (
        "INSERT INTO approvals (tool, arguments, amount_pence, run_id, requested_at,"
        " expires_at, status) VALUES ('place_order', ?, 1, 'r', 1, 2, ?)"
    )
    connection.execute(insert, ("{}", "PENDING"))
    # At most one open approval per call.
    with pytest.raises(sqlite3.IntegrityError, match=r"UNIQUE constraint failed: approvals\.tool"):
        connection.execute(insert, ("{}", "PENDING"))
    # Approved by nobody is not approved.
    with pytest.raises(sqlite3.IntegrityError, match="decided_by_someone"):
        connection.execute(insert, ("[]", "APPROVED"))
    # An order names the approval it used, once.
    morning_run(connection, clock, "friday-morning")
    approve(connection, 3, "lucy", clock=clock)
    morning_run(connection, clock, "friday-noon")
    with pytest.raises(
        sqlite3.IntegrityError, match=r"UNIQUE constraint failed: orders\.approval_id"
    ):
        connection.execute(
            "INSERT INTO orders (sku, quantity, unit_cost_pence, approval_id, status)"
            " VALUES ('SKU-CHOCOLATE', 1, 300, 3, 'ORDERED')"
        )
