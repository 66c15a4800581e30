"""Support the book does not print: `place_order` that orders, then purchases at the supplier.

Chapter 10's tools, with one change: once `place_order` has recorded an
order and used its approval, the same call purchases it at the supplier's
desk (prepare, send under the operation id, confirm). A purchase that got
no answer stays PREPARED and the call says so; it is resolved later with the
same key, never placed again by the model.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any

from sovereign_agent.approvals import (
    APPROVED_TOOL_NAMES,
    DEFAULT_LIFETIME,
    ApprovalAuthority,
    OrderArguments,
    place_order,
)
from sovereign_agent.approvals.authority import Priced, order_amount
from sovereign_agent.approvals.ledger import Clock, utc_now
from sovereign_agent.effects import Effect
from sovereign_agent.purchasing.desk import PurchaseFailed, PurchaseRejected, SupplierDesk
from sovereign_agent.purchasing.records import Purchase, purchase
from sovereign_agent.shop import SHOP_TOOL_NAMES
from sovereign_agent.store import build_store_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool

__all__ = ["SPENDING_TOOLS", "build_purchasing_tools", "order_and_purchase", "purchase_result"]

# The one place that says which of these tools spend money, and so need an
# approval first, and what a call of each costs. Every other tool reads or
# drafts; none of them reaches the supplier.
SPENDING_TOOLS: Mapping[str, Priced] = {"place_order": Priced(OrderArguments, order_amount)}


def order_and_purchase(
    connection: sqlite3.Connection,
    desk: SupplierDesk,
    arguments: OrderArguments,
    *,
    clock: Clock = utc_now,
) -> dict[str, Any]:
    """Chapter 10's order, then its purchase; the result says where the purchase stands."""
    ordered = place_order(connection, arguments, clock=clock)
    return purchase_result(
        ordered, lambda: purchase(connection, ordered["order_id"], desk, clock=clock)
    )


def purchase_result(ordered: dict[str, Any], settle: Callable[[], Purchase]) -> dict[str, Any]:
    """What `place_order` tells the model: chapter 10's order, and where `settle` left its purchase.

    One function for the call that purchases and for the worker that resumes
    a call left in doubt (chapter 12), so the model is told the same either way.
    """
    try:
        bought = settle()
    except PurchaseRejected as refused:
        # Only the code travels to the model: the supplier's words are its own text.
        return {**ordered, "purchase": "REJECTED", "failure": refused.code}
    except PurchaseFailed as failed:
        return {**ordered, "purchase": "PREPARED", "failure": failed.code}
    if bought.status == "REJECTED":
        # Refused before, and recorded as "code: words": the code alone, as above.
        return {**ordered, "purchase": "REJECTED", "failure": (bought.failure or "").split(":")[0]}
    return {**ordered, "purchase": bought.status, "supplier_order_id": bought.supplier_order_id}


def build_purchasing_tools(
    connection: sqlite3.Connection,
    desk: SupplierDesk,
    *,
    allowed: Iterable[str] = APPROVED_TOOL_NAMES,
    run_id: str | None = None,
    clock: Clock = utc_now,
    lifetime: timedelta = DEFAULT_LIFETIME,
) -> tuple[Dispatcher, ApprovalAuthority]:
    """Chapter 10's store tools and authority; `place_order` also purchases at `desk`."""
    authority = ApprovalAuthority(
        connection, dict(SPENDING_TOOLS), run_id=run_id, clock=clock, lifetime=lifetime
    )
    names = frozenset(allowed)
    store_tools = build_store_tools(connection, allowed=names & set(SHOP_TOOL_NAMES))
    order = ExecutableTool(
        name="place_order",
        description="Order tubs from the supplier. It runs only with an operator's approval.",
        arguments=OrderArguments,
        handler=lambda args: order_and_purchase(connection, desk, args, clock=clock),
        # Chapter 10's order (write, money), and the order leaves the shop for the supplier.
        effects=frozenset({Effect.WRITE, Effect.MONEY, Effect.EGRESS}),
    )
    dispatcher = Dispatcher(
        (*store_tools.tools.values(), order), allowed=names, before_write=authority
    )
    return dispatcher, authority
