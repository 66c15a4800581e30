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
from sovereign_agent.effects import NEEDS_APPROVAL, Effect
from sovereign_agent.purchasing.desk import PurchaseFailed, PurchaseRejected, SupplierDesk
from sovereign_agent.purchasing.records import Purchase, purchase
from sovereign_agent.shop import SHOP_TOOL_NAMES
from sovereign_agent.store import build_store_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool

__all__ = [
    "PURCHASE_EFFECTS",
    "SPENDING_TOOLS",
    "build_purchasing_tools",
    "order_and_purchase",
    "purchase_result",
    "spending_prices",
]

# What `place_order` can do once it purchases: it records an order (write),
# commits the shop to paying for it (money) and sends it to the supplier's
# desk (egress). Money is what makes the dispatcher ask the approval authority.
PURCHASE_EFFECTS = frozenset({Effect.WRITE, Effect.MONEY, Effect.EGRESS})

# What a call of each tool that can spend costs. Which tools wait for an
# approval is not this list: it is what each tool declares (`money`), and
# `spending_prices` keeps a rule only for a tool that declares it.
SPENDING_TOOLS: Mapping[str, Priced] = {"place_order": Priced(OrderArguments, order_amount)}


def spending_prices(
    tools: Iterable[ExecutableTool[Any]], prices: Mapping[str, Priced] = SPENDING_TOOLS
) -> dict[str, Priced]:
    """The amount rules an approval authority gets: one per tool whose classes can spend.

    Worked out from the classes, so only a call that can spend ever waits for
    an approval: a rule for a tool that cannot spend is dropped (the
    dispatcher would never ask about a draft, and a `code` call must not be
    approvable as if it were an order). A tool that can spend but has no rule
    is left out too, and the authority refuses it `unpriced_tool`: nobody can
    approve an amount nobody can work out.
    """
    return {
        tool.name: prices[tool.name]
        for tool in tools
        if tool.name in prices and not NEEDS_APPROVAL.isdisjoint(tool.effect_classes)
    }


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
    extra_tools: Iterable[ExecutableTool[Any]] = (),
    prices: Mapping[str, Priced] = SPENDING_TOOLS,
) -> tuple[Dispatcher, ApprovalAuthority]:
    """Chapter 10's store tools and authority; `place_order` also purchases at `desk`.

    `extra_tools` join the run (allowed only if `allowed` names them); each
    meets the authority by what it declares, priced from `prices`.
    """
    names = frozenset(allowed)
    store_tools = build_store_tools(connection, allowed=names & set(SHOP_TOOL_NAMES))
    order = ExecutableTool(
        name="place_order",
        description="Order tubs from the supplier. It runs only with an operator's approval.",
        arguments=OrderArguments,
        handler=lambda args: order_and_purchase(connection, desk, args, clock=clock),
        effects=PURCHASE_EFFECTS,
    )
    tools = (*store_tools.tools.values(), order, *extra_tools)
    authority = ApprovalAuthority(
        connection,
        spending_prices(tools, prices),
        run_id=run_id,
        clock=clock,
        lifetime=lifetime,
    )
    dispatcher = Dispatcher(tools, allowed=names, before_write=authority)
    return dispatcher, authority
