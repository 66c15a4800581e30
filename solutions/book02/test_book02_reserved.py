"""Exercise 2 (Unit B): reserved tubs count in the need, in the report and in the draft check.

Independent expected numbers: vanilla has 2 on hand, a target of 8 and 3
reserved, so it needs 8 - 2 + 3 = 9 tubs, worked out by hand here.
"""

from __future__ import annotations

from shop_tools import SHOP, ToolCall, build_tools, replenishment_need

PRICES = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}


def reserved_shop() -> dict:
    rows = [dict(row) for row in SHOP["products"]]
    rows[0]["reserved"] = 3  # SKU-VANILLA
    return {**SHOP, "products": rows}


def ask(dispatcher, name: str, **arguments) -> dict:
    return dispatcher.invoke(ToolCall(id="call-1", name=name, arguments=arguments))


def test_need_counts_reserved_tubs() -> None:
    row = {"sku": "SKU-VANILLA", "on_hand": 2, "reorder_point": 8, "reserved": 3}
    assert replenishment_need(row) == 9


def test_absent_reserved_counts_as_zero() -> None:
    assert replenishment_need({"sku": "SKU-VANILLA", "on_hand": 2, "reorder_point": 8}) == 6


def test_above_target_needs_zero_never_a_negative() -> None:
    assert replenishment_need({"sku": "SKU-CHOCOLATE", "on_hand": 7, "reorder_point": 6}) == 0
    row = {"sku": "SKU-VANILLA", "on_hand": 12, "reorder_point": 8, "reserved": 2}
    assert replenishment_need(row) == 0


def test_stock_report_shows_the_reserved_need() -> None:
    report = ask(build_tools(reserved_shop(), PRICES), "list_stock")["value"]
    assert [(row["sku"], row["needed"]) for row in report] == [
        ("SKU-CHOCOLATE", 0),
        ("SKU-STRAWBERRY", 4),
        ("SKU-VANILLA", 9),
    ]


def test_draft_check_uses_the_reserved_need() -> None:
    tools = build_tools(reserved_shop(), PRICES)
    nine = ask(tools, "draft_order", sku="SKU-VANILLA", quantity=9)
    assert nine["ok"] is True
    assert nine["value"]["total_pence"] == 2250
    six = ask(tools, "draft_order", sku="SKU-VANILLA", quantity=6)
    assert six == {"ok": False, "error": "tool_failed"}
