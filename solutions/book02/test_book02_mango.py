"""Exercise 1 (Unit A): a fourth product is data, and a missing price fails visibly.

The expected numbers are written out (1300, 1400, 4, 1): they come from the
exercise, never from the code under test.
"""

from __future__ import annotations

import pytest
from shop_tools import SHOP, ToolCall, build_tools

PRICES = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}
MANGO = {"sku": "SKU-MANGO", "name": "Mango", "on_hand": 1, "reorder_point": 5}


def shop_with_mango() -> dict:
    return {**SHOP, "products": [*SHOP["products"], dict(MANGO)]}


def ask(dispatcher, name: str, **arguments) -> dict:
    return dispatcher.invoke(ToolCall(id="call-1", name=name, arguments=arguments))


def mango_row(dispatcher) -> dict:
    report = ask(dispatcher, "list_stock")["value"]
    return next(row for row in report if row["sku"] == "SKU-MANGO")


def test_mango_at_325_drafts_4_tubs_for_1300_pence_and_keeps_stock_at_1() -> None:
    tools = build_tools(shop_with_mango(), PRICES | {"SKU-MANGO": 325})
    draft = ask(tools, "draft_order", sku="SKU-MANGO", quantity=4)
    assert draft == {
        "ok": True,
        "value": {
            "sku": "SKU-MANGO",
            "supplier": "lucy-local",
            "currency": "GBP",
            "unit_cost_pence": 325,
            "quantity": 4,
            "total_pence": 1300,
            "status": "DRAFT",
        },
    }
    assert mango_row(tools)["on_hand"] == 1
    assert mango_row(tools)["needed"] == 4


def test_mango_at_350_costs_1400_with_the_same_schemas() -> None:
    before = build_tools(shop_with_mango(), PRICES | {"SKU-MANGO": 325})
    after = build_tools(shop_with_mango(), PRICES | {"SKU-MANGO": 350})
    draft = ask(after, "draft_order", sku="SKU-MANGO", quantity=4)
    assert draft["value"]["total_pence"] == 1400
    # A price is data: changing it must not change what the model is told.
    assert after.schemas() == before.schemas()


def test_mango_without_a_price_fails_instead_of_borrowing_one() -> None:
    tools = build_tools(shop_with_mango(), PRICES)
    assert ask(tools, "supplier", sku="SKU-MANGO") == {"ok": False, "error": "tool_failed"}
    assert ask(tools, "draft_order", sku="SKU-MANGO", quantity=4) == {
        "ok": False,
        "error": "tool_failed",
    }
    # The other products are untouched by the gap.
    assert ask(tools, "draft_order", sku="SKU-VANILLA", quantity=6)["value"]["total_pence"] == 1500


def test_two_rows_under_one_sku_are_refused_at_construction() -> None:
    twin = {"sku": "SKU-MANGO", "name": "Mango again", "on_hand": 3, "reorder_point": 5}
    shop = {**SHOP, "products": [*SHOP["products"], dict(MANGO), twin]}
    with pytest.raises(ValueError):
        build_tools(shop, PRICES | {"SKU-MANGO": 325})
