"""Printed in chapters 2, 6 and 10: the shop's argument models, its functions and tools over them.

The numbers a re-order depends on (stock, targets, prices) live here, in the
shop's own data. The model may ask for a draft; it never supplies a price and
never changes stock.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sovereign_agent.effects import Effect
from sovereign_agent.tools import Dispatcher, ExecutableTool, Setup, ToolCall

__all__ = [
    "CURRENCY",
    "PRICES_PENCE",
    "SHOP_TOOL_NAMES",
    "SUPPLIER",
    "DraftArguments",
    "NoArguments",
    "ProductArguments",
    "build_tools",
    "draft_order",
    "replenishment_need",
    "stock_report",
    "supplier_quote",
]

SUPPLIER = "lucy-local"
CURRENCY = "GBP"
# Integer pence: money is never a float, and never the model's to choose.
PRICES_PENCE: Mapping[str, int] = {
    "SKU-VANILLA": 250,
    "SKU-CHOCOLATE": 300,
    "SKU-STRAWBERRY": 275,
}
SHOP_TOOL_NAMES = ("draft_order", "list_stock", "supplier")


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ProductArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    sku: str = Field(min_length=1, max_length=100)


class DraftArguments(ProductArguments):
    quantity: int = Field(gt=0, le=1000)


def replenishment_need(row: Mapping[str, Any]) -> int:
    """Tubs to order so that, once every promise is kept and the van is in, stock is at target.

    Reserved tubs will leave the freezer and incoming tubs will arrive. A row
    without those counts (chapters 1 to 5 wrote none) has none of either. A
    shop above target needs 0, never a negative.
    """
    reserved = row.get("reserved", 0)
    incoming = row.get("incoming", 0)
    shortfall: int = row["reorder_point"] + reserved - row["on_hand"] - incoming
    return max(0, shortfall)


def stock_report(products: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every row plus its need, sorted by sku so the report reads the same every time."""
    rows = [{**row, "needed": replenishment_need(row)} for row in products]
    return sorted(rows, key=lambda row: row["sku"])


def find_product(products: Iterable[Mapping[str, Any]], sku: str) -> Mapping[str, Any]:
    for row in products:
        if row["sku"] == sku:
            return row
    raise KeyError(sku)


def supplier_quote(prices: Mapping[str, int], sku: str) -> dict[str, Any]:
    """The shop's own price for one sku; an unknown sku fails instead of borrowing a price."""
    if sku not in prices:
        raise KeyError(sku)
    return {
        "sku": sku,
        "supplier": SUPPLIER,
        "currency": CURRENCY,
        "unit_cost_pence": prices[sku],
    }


def draft_order(
    products: Iterable[Mapping[str, Any]], prices: Mapping[str, int], sku: str, quantity: int
) -> dict[str, Any]:
    """A draft for exactly the current need. It buys nothing and changes no stock."""
    need = replenishment_need(find_product(products, sku))
    if quantity != need:
        raise ValueError(f"quantity {quantity} does not match the need of {need}")
    quote = supplier_quote(prices, sku)
    return {
        **quote,
        "quantity": quantity,
        "total_pence": quantity * quote["unit_cost_pence"],
        "status": "DRAFT",
    }


def build_tools(
    shop: Mapping[str, Any],
    prices: Mapping[str, int] | None = None,
    *,
    allowed: Iterable[str] = SHOP_TOOL_NAMES,
    before_write: Callable[[ToolCall], None] | None = None,
    hints: bool = False,
) -> Dispatcher:
    """A dispatcher over its own copy of the shop, so no two runs share stock."""
    products = copy.deepcopy(list(shop["products"]))
    price_list = dict(PRICES_PENCE if prices is None else prices)
    names = sorted(allowed)
    tools = (
        ExecutableTool(
            name="list_stock",
            description="Every product with its stock, its target and the tubs needed.",
            arguments=NoArguments,
            effects=frozenset({Effect.READ}),
            handler=lambda _: stock_report(products),
        ),
        ExecutableTool(
            name="supplier",
            description="The supplier's quote for one sku, in integer pence.",
            arguments=ProductArguments,
            effects=frozenset({Effect.READ}),
            handler=lambda args: supplier_quote(price_list, args.sku),
        ),
        ExecutableTool(
            name="draft_order",
            description="Draft (never place) a re-order for exactly the tubs needed.",
            arguments=DraftArguments,
            effects=frozenset({Effect.WRITE}),
            handler=lambda args: draft_order(products, price_list, args.sku, args.quantity),
        ),
    )
    # The rows are this dispatcher's own, so a trace that writes them when a run
    # starts records the stock that run began with. An authority is code, not
    # data: a dispatcher with one has no setup a replay could rebuild.
    setup = Setup(
        "sovereign_agent.shop:build_tools",
        {"shop": {"products": products}, "prices": price_list, "allowed": names, "hints": hints},
    )
    return Dispatcher(
        tools,
        allowed=names,
        before_write=before_write,
        hints=hints,
        setup=setup if before_write is None else None,
    )
