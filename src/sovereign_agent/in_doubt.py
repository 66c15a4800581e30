"""Support the book does not print: a consequential call that may have run when its worker died.

The journal writes STARTED before a consequential handler runs and DONE with
its outcome after; a worker killed between the two leaves the call in doubt.
Running it again could buy twice; skipping it could buy never. So the next
worker asks the only witnesses there are, the places where the effect would
be. For chapter 10's orders that is the store itself: an order and the use of
its approval commit in one transaction, so either both are there or neither
is. For chapter 11's purchases it is then the supplier: a purchase left
PREPARED (or never prepared) is settled by asking the supplier's desk for the
purchase's idempotency key, and sending it again under that same key if the
desk has none, never under a new one.

`note_before` writes down, with STARTED, what the witness looked like before
the call (the highest order id), so that an older order for the same sku and
quantity, from another day, is never mistaken for this call's.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from pydantic import ValidationError

from sovereign_agent.approvals import OrderArguments, canonical_arguments
from sovereign_agent.purchasing import SupplierDesk, purchase_result, resolve_purchase
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
    connection: sqlite3.Connection,
    call: ToolCall,
    note: dict[str, Any],
    *,
    supplier: SupplierDesk | None = None,
) -> ToolOutcome | None:
    """The outcome of a call that did happen; None when it surely did not (run it then).

    `supplier` is the desk the run's `place_order` purchases at (chapter 11),
    or None when it only records the order (chapter 10). Raises InDoubt for a
    consequential tool with no witness to ask: guessing either way could buy
    twice or never.
    """
    if call.name == "place_order":
        return resolve_prepared_purchase(connection, call, note, supplier=supplier)
    raise InDoubt(f"call {call.id} of {call.name} may have run, and nothing can say whether")


def resolve_prepared_purchase(
    connection: sqlite3.Connection,
    call: ToolCall,
    note: dict[str, Any],
    *,
    supplier: SupplierDesk | None = None,
) -> ToolOutcome | None:
    """The order the call made, found in the store, and its purchase settled at `supplier`.

    No order: the handler wrote nothing, so None (run the call). An order and
    no supplier: chapter 10's outcome, the order row rebuilt. An order and a
    supplier: the purchase is settled as chapter 11 settles one a crash left
    (asked for by its key, or sent again under it), and the outcome is what
    the call itself would have returned.
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
    ordered: dict[str, Any] = {
        "order_id": order_id,
        "sku": sku,
        "quantity": quantity,
        "unit_cost_pence": unit_cost,
        "total_pence": total,
        "approval_id": approval_id,
        "status": "ORDERED",
    }
    if supplier is not None:
        desk = supplier
        ordered = purchase_result(ordered, lambda: resolve_purchase(connection, order_id, desk))
    return ToolOutcome({"ok": True, "value": ordered}, handler_ran=True)
