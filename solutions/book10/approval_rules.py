"""Exercise Book 10: chapter 10's Friday, three rules for approvals, and one tool's classes.

Chapter 10's definitions are here unchanged (`SHOP`, `friday_store`,
`order_what_is_needed`); the runtime for approvals is the book's package,
`sovereign_agent.approvals`. Exercise 1 gives each operator a spending cap;
Exercise 2 releases the money a finished run no longer needs; Exercise 3
says what a new tool, holding tubs, can do to the world; Exercise 4, an
open design task, says who may approve while Lucy is away. At the end,
the grader's door: plain JSON in and out, a store file at the path given.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from sovereign_agent.approvals import (
    ApprovalRefused,
    add_operator,
    budget,
    build_approved_store_tools,
    list_approvals,
    run_with_approvals,
    set_weekly_limit,
)
from sovereign_agent.approvals.ledger import decide, operators, read_approval, seconds, utc_now
from sovereign_agent.effects import Effect, kept_after_untrusted_text
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import PRICES_PENCE, DraftArguments
from sovereign_agent.store import expect_delivery, open_store, reserve, seed_store
from sovereign_agent.tools import Dispatcher, ExecutableTool

# --- Chapter 10: Friday's store and the morning's model, as the chapter prints them ----

SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}


def friday_store(path: Path) -> Path:
    """Chapter 6's Friday, then this chapter's fixture: two operators and a 5,000 pence week."""
    store = open_store(path)
    seed_store(store, SHOP, PRICES_PENCE)
    reserve(store, "SKU-VANILLA", 3)
    reserve(store, "SKU-CHOCOLATE", 2)
    expect_delivery(store, "SKU-STRAWBERRY", 4)
    add_operator(store, "lucy")
    add_operator(store, "sam")
    set_weekly_limit(store, 5000)
    store.close()
    return path


def order_what_is_needed(messages: Sequence[Message]) -> AssistantMessage:
    """A scripted model's second step: order every sku the stock report needs, most first."""
    report = json.loads(str(messages[-1].content))["value"]
    needed = sorted((row for row in report if row["needed"] > 0), key=lambda r: -r["needed"])
    return AssistantMessage(
        tool_calls=tuple(
            AssistantToolCall(
                id=f"order-{row['sku']}",
                name="place_order",
                arguments_json=json.dumps({"sku": row["sku"], "quantity": row["needed"]}),
            )
            for row in needed
        )
    )


# --- Exercise 1: each operator's spending cap ----------------------------------------


def approve_within_cap(
    connection: sqlite3.Connection, approval_id: int, operator: str, caps: Mapping[str, int]
) -> None:
    """Approve as chapter 10 does, unless the amount is more than `operator` may approve at once.

    `caps` maps an operator to the most pence one approval of theirs may be
    for; an operator it does not name is limited by the week's budget alone.
    The cap is the shop's policy, handed in like the weekly limit, not a new
    table: migration 3 fixes the store's tables. It is checked before the
    ledger decides, so a refusal changes nothing. Deny and revoke are never
    capped: saying no costs nothing.
    """
    cap = caps.get(operator)
    if cap is not None:
        amount = read_approval(connection, approval_id).amount_pence
        if amount > cap:
            raise ApprovalRefused(
                "over_cap",
                f"approval {approval_id} is for {amount:,} pence; {operator} may approve {cap:,}",
            )
    decide(connection, approval_id, operator, "approve")


# --- Exercise 2: a finished run gives its money back ----------------------------------


def release_run(connection: sqlite3.Connection, run_id: str, operator: str) -> list[int]:
    """Revoke every approved, unused approval `run_id` asked for; the ids, in order.

    Revoking frees the money the approvals reserved. Used approvals are spent
    and stay so; pending and denied ones reserve nothing and are left alone;
    other runs' approvals are not touched. The operator is checked first, so
    a name the store does not know is refused before anything changes.
    """
    if operator not in operators(connection):
        raise ApprovalRefused("unknown_operator", f"{operator!r} is not an operator")
    held = [
        approval.id
        for approval in list_approvals(connection)
        if approval.run_id == run_id and approval.status == "APPROVED"
    ]
    released = []
    for approval_id in held:
        try:
            decide(connection, approval_id, operator, "revoke")
        except ApprovalRefused as refused:
            # Expired or used since the list was read: it holds no money any more.
            if refused.code not in ("expired", "used"):
                raise
            continue
        released.append(approval_id)
    return released


# --- Exercise 3: what holding tubs can do ---------------------------------------------


def hold_tubs_tool(connection: sqlite3.Connection) -> ExecutableTool[DraftArguments]:
    """`hold_tubs`: a run holds tubs of one sku for a customer (chapter 6's reserve).

    A hold changes the shop's own records (reserved tubs) and spends nothing,
    so it is a write: it runs without an approval, and a run that has read
    untrusted text no longer has it.
    """
    return ExecutableTool(
        name="hold_tubs",
        description="Hold tubs of one sku for a customer. It orders and spends nothing.",
        arguments=DraftArguments,
        handler=lambda args: reserve(connection, args.sku, args.quantity),
        effects=frozenset({Effect.WRITE}),
    )


# --- Exercise 4: while Lucy is away (an open design task) ------------------------------


def approve_while_away(
    connection: sqlite3.Connection, approval_id: int, operator: str, away: Mapping[str, Any]
) -> None:
    """Approve while the owner is away: she still may, her deputy may within an allowance.

    `away` is the shop's policy for one absence, handed in like the caps:
    `owner`, `deputy` and `up_to`, the most pence the deputy's approvals may
    come to. What counts is read from the ledger itself, where every decision
    already carries its operator's name: the deputy's approvals still
    reserving money and those already spent. A revoked or expired one spent
    nothing and counts for nothing; what the owner approves is hers. Every
    check comes before the ledger decides, so a refusal changes nothing, and
    the ledger writes the real decider's name: a deputy never signs as the
    owner.
    """
    if operator == away["owner"]:
        decide(connection, approval_id, operator, "approve")
        return
    if operator != away["deputy"]:
        # Only two people answer yes while she is away; the ledger still
        # refuses a name it does not know first, as chapter 10 does.
        if operator not in operators(connection):
            raise ApprovalRefused("unknown_operator", f"{operator!r} is not an operator")
        raise ApprovalRefused("owner_away", f"{operator} may not approve while the owner is away")
    now = seconds(utc_now)
    committed = sum(
        approval.amount_pence
        for approval in list_approvals(connection)
        if approval.decided_by == operator
        and (
            approval.status == "USED"
            or (approval.status == "APPROVED" and approval.expires_at > now)
        )
    )
    amount = read_approval(connection, approval_id).amount_pence
    if committed + amount > away["up_to"]:
        raise ApprovalRefused(
            "over_allowance",
            f"approval {approval_id} is for {amount:,} pence; {operator} has approved "
            f"{committed:,} of {away['up_to']:,} while the owner is away",
        )
    decide(connection, approval_id, operator, "approve")


# --- The grader's door: plain JSON in and out; leave it as it is ----------------------


def friday_file(path: str, operators: list[str], weekly_limit: int) -> None:
    """Chapter 6's Friday in a new store at `path`, with these operators and this week's limit."""
    with closing(open_store(path)) as store:
        seed_store(store, SHOP, PRICES_PENCE)
        reserve(store, "SKU-VANILLA", 3)
        reserve(store, "SKU-CHOCOLATE", 2)
        expect_delivery(store, "SKU-STRAWBERRY", 4)
        for name in operators:
            add_operator(store, name)
        set_weekly_limit(store, weekly_limit)


def ask_file(path: str, run_id: str, orders: list[list[Any]]) -> dict[str, Any]:
    """A run whose model asks, in one turn, for each [sku, quantity] of `orders`."""
    with closing(open_store(path)) as store:
        dispatcher, authority = build_approved_store_tools(store, run_id=run_id, clock=utc_now)
        calls = tuple(
            AssistantToolCall(
                id=f"o{index}",
                name="place_order",
                arguments_json=json.dumps({"sku": sku, "quantity": quantity}),
            )
            for index, (sku, quantity) in enumerate(orders)
        )
        model = ScriptedModel(
            [AssistantMessage(tool_calls=calls), AssistantMessage(content="Done.")]
        )
        run = run_with_approvals(
            model, dispatcher, authority, "Order.", max_steps=3, max_tool_calls=len(calls) + 1
        )
        return {"stop": run.stop_reason, "awaiting": list(run.awaiting), "denied": list(run.denied)}


def decide_file(
    path: str, decision: str, approval_id: int, operator: str, caps: dict[str, int]
) -> str:
    """An operator's decision under these caps: the approval's new status, or `refused: CODE`."""
    with closing(open_store(path)) as store:
        try:
            if decision == "approve":
                approve_within_cap(store, approval_id, operator, caps)
            else:
                decide(store, approval_id, operator, "deny" if decision == "deny" else "revoke")
        except ApprovalRefused as refused:
            return f"refused: {refused.code}"
        return read_approval(store, approval_id).status


def away_file(
    path: str, decision: str, approval_id: int, operator: str, away: dict[str, Any]
) -> str:
    """A decision while the owner is away: the approval's new status, or `refused: CODE`."""
    with closing(open_store(path)) as store:
        try:
            if decision == "approve":
                approve_while_away(store, approval_id, operator, away)
            else:
                decide(store, approval_id, operator, "deny" if decision == "deny" else "revoke")
        except ApprovalRefused as refused:
            return f"refused: {refused.code}"
        return read_approval(store, approval_id).status


def release_file(path: str, run_id: str, operator: str) -> list[int]:
    with closing(open_store(path)) as store:
        return release_run(store, run_id, operator)


def approvals_file(path: str) -> list[list[Any]]:
    """Every approval as [id, status, decided_by, amount_pence, run_id], in id order."""
    with closing(open_store(path)) as store:
        return [
            [a.id, a.status, a.decided_by, a.amount_pence, a.run_id] for a in list_approvals(store)
        ]


def budget_file(path: str) -> dict[str, int]:
    with closing(open_store(path)) as store:
        week = budget(store, seconds(utc_now))
        return {
            "reserved": week.reserved_pence,
            "spent": week.spent_pence,
            "left": week.left_pence,
        }


def orders_file(path: str) -> list[list[Any]]:
    """Every order as [sku, quantity, approval_id], in id order."""
    with closing(open_store(path)) as store:
        rows = store.execute("SELECT sku, quantity, approval_id FROM orders ORDER BY id")
        return [[str(sku), int(quantity), int(approval)] for sku, quantity, approval in rows]


def hold_file(path: str, run_id: str, sku: str, tubs: int) -> dict[str, Any]:
    """A run under approvals whose model asks once to hold tubs: its stop, the sku's reserved tubs
    and how many approvals the store holds afterwards."""
    with closing(open_store(path)) as store:
        approved, authority = build_approved_store_tools(store, run_id=run_id, clock=utc_now)
        hold = hold_tubs_tool(store)
        dispatcher = Dispatcher(
            [*approved.tools.values(), hold],
            allowed=[*approved.allowed, hold.name],
            before_write=authority,
        )
        call = AssistantToolCall(
            id="h", name=hold.name, arguments_json=json.dumps({"sku": sku, "quantity": tubs})
        )
        model = ScriptedModel(
            [AssistantMessage(tool_calls=(call,)), AssistantMessage(content="Held.")]
        )
        run = run_with_approvals(
            model, dispatcher, authority, "Hold tubs.", max_steps=3, max_tool_calls=2
        )
        row = store.execute("SELECT reserved FROM products WHERE sku = ?", (sku,)).fetchone()
        return {
            "stop": run.stop_reason,
            "reserved": int(row[0]),
            "approvals": len(list_approvals(store)),
        }


def classes_file(path: str) -> dict[str, Any]:
    """Each tool's effect classes, and the tools a run keeps once it has read untrusted text."""
    with closing(open_store(path)) as store:
        approved, _ = build_approved_store_tools(store, clock=utc_now)
        tools = {**approved.tools, "hold_tubs": hold_tubs_tool(store)}
        return {
            "classes": {
                name: sorted(effect.value for effect in tool.effect_classes)
                for name, tool in tools.items()
            },
            "kept": sorted(kept_after_untrusted_text(tools)),
        }
