"""Support the book does not print: purchasing exactly once at the supplier's desk (chapter 11).

`desk` talks to the supplier over HTTP, retrying under one idempotency key;
`records` keeps each order's purchase in the store, PREPARED before it is
sent and CONFIRMED after, and resolves what a crash left; `tools` makes
chapter 10's `place_order` purchase what it orders; `python -m
sovereign_agent.purchasing` is the operator's command.
"""

from sovereign_agent.purchasing.desk import (
    Attempt,
    DeskSettings,
    PlacedOrder,
    PurchaseFailed,
    PurchaseRejected,
    Sent,
    SupplierDesk,
    SupplierUnreachable,
)
from sovereign_agent.purchasing.records import (
    Purchase,
    confirm,
    list_purchases,
    operation_id,
    prepare,
    purchase,
    reject,
    resolve_purchase,
    resolve_purchases,
    unfinished_orders,
)
from sovereign_agent.purchasing.tools import (
    PURCHASE_EFFECTS,
    SPENDING_TOOLS,
    build_purchasing_tools,
    order_and_purchase,
    purchase_result,
    spending_prices,
)

__all__ = [
    "PURCHASE_EFFECTS",
    "SPENDING_TOOLS",
    "Attempt",
    "DeskSettings",
    "PlacedOrder",
    "Purchase",
    "PurchaseFailed",
    "PurchaseRejected",
    "Sent",
    "SupplierDesk",
    "SupplierUnreachable",
    "build_purchasing_tools",
    "confirm",
    "list_purchases",
    "operation_id",
    "order_and_purchase",
    "prepare",
    "purchase",
    "purchase_result",
    "reject",
    "resolve_purchase",
    "resolve_purchases",
    "spending_prices",
    "unfinished_orders",
]
