"""Support the book does not print: a consequential call that may have run when its worker died.

The journal writes STARTED before a consequential handler runs and DONE with
its outcome after; a worker killed between the two leaves the call in doubt.
Running it again could buy twice; skipping it could buy never. So the next
worker asks the only witness there is, the place where the effect would be.
For chapter 10's orders that is the store itself: an order and the use of its
approval commit in one transaction, so either both are there or neither is.

`note_before` writes down, with STARTED, what the witness looked like before
the call (the highest order id), so that an older order for the same sku and
quantity, from another day, is never mistaken for this call's.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from pydantic import ValidationError

from sovereign_agent.approvals import OrderArguments, canonical_arguments
from sovereign_agent.tools import ToolCall, ToolOutcome

__all__ = ["InDoubt", "note_before", "resolve_in_doubt", "resolve_prepared_purchase"]


class InDoubt(Exception):
    """A call that may or may not have had its effect, and nothing can tell which: an operator's."""


def note_before(connection: sqlite3.Connection, call: ToolCall) -> dict[str, Any]:
    """What the witness of `call` looks like before its handler runs, kept with STARTED."""
    if call.name == "place_order":
        row = connection.execute("SELECT coalesce(max(id), 0) FROM orders").fetchone()
        return {"orders_before": int(row[0])}
    return {}


def resolve_in_doubt(
    connection: sqlite3.Connection, call: ToolCall, note: dict[str, Any]
) -> ToolOutcome | None:
    """The outcome of a call that did happen; None when it surely did not (run it then).

    Raises InDoubt for a consequential tool with no witness to ask: guessing
    either way could buy twice or never.
    """
    if call.name == "place_order":
        return resolve_prepared_purchase(connection, call, note)
    raise InDoubt(f"call {call.id} of {call.name} may have run, and nothing can say whether")


def resolve_prepared_purchase(
    connection: sqlite3.Connection, call: ToolCall, note: dict[str, Any]
) -> ToolOutcome | None:
    """Chapter 10's order, recorded in the store: the order row is the witness.

    This is the seam chapter 11 widens: there a purchase is PREPARED in the
    store before it is sent, and one left PREPARED is resolved by asking the
    supplier for the order with the purchase's idempotency key (or sending it
    again with that same key), never by sending it with a new one.
    """
    try:
        arguments = OrderArguments.model_validate(call.arguments, strict=True)
    except ValidationError:
        return None  # the dispatcher refuses these before any handler: nothing ran
    row = connection.execute(
        "SELECT o.id, o.sku, o.quantity, o.unit_cost_pence, a.amount_pence, a.id"
        " FROM orders AS o JOIN approvals AS a ON a.id = o.approval_id"
        " WHERE o.id > ? AND a.tool = 'place_order' AND a.arguments = ? AND a.status = 'USED'"
        " ORDER BY o.id LIMIT 1",
        (int(note.get("orders_before", 0)), canonical_arguments(arguments)),
    ).fetchone()
    if row is None:
        return None
    order_id, sku, quantity, unit_cost, total, approval_id = (row[i] for i in range(6))
    # The value place_order returns, rebuilt from what it wrote.
    value = {
        "order_id": order_id,
        "sku": sku,
        "quantity": quantity,
        "unit_cost_pence": unit_cost,
        "total_pence": total,
        "approval_id": approval_id,
        "status": "ORDERED",
    }
    return ToolOutcome({"ok": True, "value": value}, handler_ran=True)
