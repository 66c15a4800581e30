"""Exercise Book 10: chapter 10's Friday, three rules for approvals, and one tool's classes.

The starter: it runs, and does none of the exercises yet. Chapter 10's
definitions are here unchanged (`SHOP`, `friday_store`,
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
from sovereign_agent.approvals.ledger import decide, read_approval, seconds, utc_now
from sovereign_agent.effects import kept_after_untrusted_text
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

    Exercise 1: for now this ignores `caps` and approves as chapter 10 does.
    Refuse an approval above the deciding operator's cap with
    `ApprovalRefused("over_cap", ...)`, changing nothing (Unit A).
    """
    decide(connection, approval_id, operator, "approve")


# --- Exercise 2: a finished run gives its money back ----------------------------------


def release_run(connection: sqlite3.Connection, run_id: str, operator: str) -> list[int]:
    """Revoke every approved, unused approval `run_id` asked for; the ids, in order.

    Exercise 2: for now this releases nothing. Revoke, as `operator`, each of
    the run's approvals that is still APPROVED, and answer their ids (Unit B).
    """
    return []


# --- Exercise 3: what holding tubs can do ---------------------------------------------


def hold_tubs_tool(connection: sqlite3.Connection) -> ExecutableTool[DraftArguments]:
    """`hold_tubs`: a run holds tubs of one sku for a customer (chapter 6's reserve).

    Exercise 3: this is declared the chapter 2 way, as consequential, so under
    approvals it meets the approval authority, which has no price for it and
    refuses it. Declare instead what it can do, with section 10.11's effect
    classes (Unit B).
    """
    return ExecutableTool(
        name="hold_tubs",
        description="Hold tubs of one sku for a customer. It orders and spends nothing.",
        arguments=DraftArguments,
        handler=lambda args: reserve(connection, args.sku, args.quantity),
        consequential=True,
    )


# --- Exercise 4: while Lucy is away (an open design task) ------------------------------


def approve_while_away(
    connection: sqlite3.Connection, approval_id: int, operator: str, away: Mapping[str, Any]
) -> None:
    """Approve while the owner is away, as Lucy's needs in Unit C say.

    `away` is the shop's policy for one absence: `owner`, `deputy` and
    `up_to`, the most pence the deputy's approvals may come to.

    Exercise 4: for now this ignores `away` and approves as chapter 10 does.
    The design is yours (Unit C); refuse with `ApprovalRefused`, a code of
    your choosing, and change nothing when you refuse.
    """
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
