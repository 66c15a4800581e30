"""Support the book does not print: each order's purchase, recorded before and after it is sent.

A purchase is the shop's side of one order at the supplier. Its steps, in
the order that makes every crash recoverable:

1. prepare: a `PREPARED` row with the purchase's operation id commits in the
   store before any byte leaves. A process that dies after this line has left
   a note saying "this may have been sent, under this key".
2. send: the operation id travels as the `Idempotency-Key`, on every attempt.
3. confirm: the supplier's order id commits in the same row (`CONFIRMED`).

The operation id is derived from the approval the order used, never drawn at
random, so every process that ever handles this purchase, before or after a
crash, sends the same key. A purchase left `PREPARED` is resolved by asking
the supplier for that key, and sending it again under the same key if the
supplier has none; a `REJECTED` one waits for a person.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from sovereign_agent.approvals.ledger import Clock, read_approval, seconds, utc_now
from sovereign_agent.purchasing.desk import (
    PlacedOrder,
    PurchaseFailed,
    PurchaseRejected,
    SupplierDesk,
)
from sovereign_agent.store import transaction

__all__ = [
    "Purchase",
    "confirm",
    "list_purchases",
    "operation_id",
    "prepare",
    "purchase",
    "reject",
    "resolve_purchase",
    "resolve_purchases",
    "unfinished_orders",
]

# Where a purchase is, for an observer (tests kill the process at each of these).
Step = Callable[[str, int], None]


@dataclass(frozen=True)
class Purchase:
    order_id: int
    operation_id: str
    sku: str
    quantity: int
    status: str
    supplier_order_id: str | None
    failure: str | None


def operation_id(connection: sqlite3.Connection, order_id: int) -> str:
    """The purchase's idempotency key: the same for this order in every process, ever.

    Made from the store's own random name and the approval the order used
    (its number and everything it bound): two stores, or one rebuilt from
    scratch, never send the same key for different purchases.
    """
    row = connection.execute("SELECT approval_id FROM orders WHERE id = ?", (order_id,)).fetchone()
    if row is None:
        raise LookupError(f"no order {order_id}")
    approval = read_approval(connection, row[0])
    (store,) = connection.execute("SELECT name FROM store_identity").fetchone()
    bound = "\n".join(
        str(part)
        for part in (
            store,
            approval.id,
            approval.tool,
            approval.arguments,
            approval.run_id,
            approval.requested_at,
        )
    )
    return f"approval-{approval.id}-{hashlib.sha256(bound.encode()).hexdigest()[:16]}"


_COLUMNS = "p.order_id, p.operation_id, o.sku, o.quantity, p.status, p.supplier_order_id, p.failure"


def _read(connection: sqlite3.Connection, order_id: int) -> Purchase | None:
    row = connection.execute(
        f"SELECT {_COLUMNS} FROM purchases p JOIN orders o ON o.id = p.order_id"
        " WHERE p.order_id = ?",
        (order_id,),
    ).fetchone()
    return None if row is None else Purchase(*tuple(row))


def list_purchases(connection: sqlite3.Connection) -> list[Purchase]:
    rows = connection.execute(
        f"SELECT {_COLUMNS} FROM purchases p JOIN orders o ON o.id = p.order_id ORDER BY p.order_id"
    )
    return [Purchase(*tuple(row)) for row in rows]


def unfinished_orders(connection: sqlite3.Connection) -> list[int]:
    """Orders with no purchase yet, or one still PREPARED: the ones a crash may have left."""
    return [
        row[0]
        for row in connection.execute(
            "SELECT o.id FROM orders o LEFT JOIN purchases p ON p.order_id = o.id"
            " WHERE p.order_id IS NULL OR p.status = 'PREPARED' ORDER BY o.id"
        )
    ]


def prepare(connection: sqlite3.Connection, order_id: int, *, clock: Clock = utc_now) -> Purchase:
    """Write the PREPARED row, once: a second caller finds the first one's row, key and all."""
    key = operation_id(connection, order_id)
    with transaction(connection):
        connection.execute(
            "INSERT INTO purchases (order_id, operation_id, status, prepared_at)"
            " VALUES (?, ?, 'PREPARED', ?) ON CONFLICT (order_id) DO NOTHING",
            (order_id, key, seconds(clock)),
        )
    found = _read(connection, order_id)
    assert found is not None
    return found


def confirm(
    connection: sqlite3.Connection, order_id: int, order: PlacedOrder, *, clock: Clock = utc_now
) -> Purchase:
    """Record the supplier's order for this purchase; a second confirmation must agree with it."""
    with transaction(connection):
        current = _read(connection, order_id)
        if current is None:
            raise LookupError(f"order {order_id} was never prepared")
        if current.status == "PREPARED":
            if (order.sku, order.quantity) != (current.sku, current.quantity):
                # The supplier's order under our key is not the order we sent: stop.
                raise PurchaseFailed(
                    "mismatch",
                    f"{order.order_id} is {order.sku} x{order.quantity};"
                    f" order {order_id} is {current.sku} x{current.quantity}",
                )
            connection.execute(
                "UPDATE purchases SET status = 'CONFIRMED', supplier_order_id = ?, settled_at = ?"
                " WHERE order_id = ? AND status = 'PREPARED'",
                (order.order_id, seconds(clock), order_id),
            )
        elif current.supplier_order_id != order.order_id:
            # Another process confirmed first; both must have heard the same order.
            raise PurchaseFailed(
                "mismatch",
                f"order {order_id} is {current.status} ({current.supplier_order_id}),"
                f" not {order.order_id}",
            )
    found = _read(connection, order_id)
    assert found is not None
    return found


def reject(
    connection: sqlite3.Connection, order_id: int, failure: str, *, clock: Clock = utc_now
) -> Purchase:
    """The supplier refused the request: recorded, and never sent again by itself."""
    with transaction(connection):
        connection.execute(
            "UPDATE purchases SET status = 'REJECTED', failure = ?, settled_at = ?"
            " WHERE order_id = ? AND status = 'PREPARED'",
            (failure[:300], seconds(clock), order_id),
        )
    found = _read(connection, order_id)
    assert found is not None
    return found


def _noop(step: str, order_id: int) -> None:
    return None


def purchase(
    connection: sqlite3.Connection,
    order_id: int,
    desk: SupplierDesk,
    *,
    clock: Clock = utc_now,
    step: Step = _noop,
) -> Purchase:
    """Prepare, send under the operation id, confirm. Settled purchases are returned as they are.

    Raises `SupplierUnreachable` with the purchase left PREPARED (resolve it
    later), and `PurchaseRejected` once the refusal is recorded (REJECTED).
    """
    prepared = prepare(connection, order_id, clock=clock)
    if prepared.status != "PREPARED":
        return prepared
    step("prepared", order_id)
    try:
        sent = desk.send(prepared.operation_id, prepared.sku, prepared.quantity)
    except PurchaseRejected as refused:
        reject(connection, order_id, f"{refused.code}: {refused}", clock=clock)
        raise
    step("answered", order_id)
    confirmed = confirm(connection, order_id, sent.order, clock=clock)
    step("confirmed", order_id)
    return confirmed


def resolve_purchase(
    connection: sqlite3.Connection,
    order_id: int,
    desk: SupplierDesk,
    *,
    clock: Clock = utc_now,
    step: Step = _noop,
) -> Purchase:
    """Settle one order that may have been sent: ask the supplier by its key, then send under it.

    A purchase already settled is returned as it is, and nothing is sent.
    Otherwise the key is the one `prepare` wrote (or derives again, the same
    in every process), never a new one: a supplier that has it gives its
    order, one that has not is sent the order under it.
    """
    prepared = prepare(connection, order_id, clock=clock)
    if prepared.status != "PREPARED":
        return prepared
    found = desk.look_up(prepared.operation_id)
    if found is not None:
        return confirm(connection, order_id, found, clock=clock)
    return purchase(connection, order_id, desk, clock=clock, step=step)


def resolve_purchases(
    connection: sqlite3.Connection,
    desk: SupplierDesk,
    *,
    clock: Clock = utc_now,
    step: Step = _noop,
) -> list[Purchase]:
    """Settle every order a crash or a lost answer left unfinished; return what each became.

    Ask first: a supplier that has the key gives its order without being
    sent anything. Otherwise send again, under the same key, never a new one.
    A rejection is recorded and the others are still resolved.
    """
    settled = []
    for order_id in unfinished_orders(connection):
        try:
            settled.append(resolve_purchase(connection, order_id, desk, clock=clock, step=step))
        except PurchaseRejected:
            current = _read(connection, order_id)
            assert current is not None
            settled.append(current)
    return settled
