"""The shop's tools through the dispatcher: chapter 2's results and refusals, in literal numbers."""

from __future__ import annotations

import copy
import runpy
from typing import Any

import pytest

from bookproof.layout import REPO_ROOT
from sovereign_agent.shop import build_tools, replenishment_need
from sovereign_agent.tools import ToolCall

ROOT = REPO_ROOT
CHAPTER_1 = (
    ROOT / "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
)


@pytest.fixture
def shop() -> dict[str, Any]:
    return runpy.run_path(str(CHAPTER_1))["SHOP"]


def invoke(tools: Any, name: str, **arguments: Any) -> dict[str, Any]:
    return tools.invoke(ToolCall(id="call-1", name=name, arguments=arguments))


def test_fixture_holds_the_three_products_of_chapter_1(shop: dict[str, Any]) -> None:
    rows = {row["sku"]: (row["on_hand"], row["reorder_point"]) for row in shop["products"]}
    assert rows == {"SKU-VANILLA": (2, 8), "SKU-CHOCOLATE": (7, 6), "SKU-STRAWBERRY": (1, 5)}


def test_stock_report_lists_every_row_with_its_need_sorted_by_sku(shop: dict[str, Any]) -> None:
    report = invoke(build_tools(shop), "list_stock")
    assert report["ok"] is True
    assert [(row["sku"], row["needed"], row["on_hand"]) for row in report["value"]] == [
        ("SKU-CHOCOLATE", 0, 7),
        ("SKU-STRAWBERRY", 4, 1),
        ("SKU-VANILLA", 6, 2),
    ]


@pytest.mark.parametrize(
    ("on_hand", "reorder_point", "need"), [(2, 8, 6), (7, 6, 0), (1, 5, 4), (8, 8, 0), (0, 0, 0)]
)
def test_replenishment_need_is_never_negative(on_hand: int, reorder_point: int, need: int) -> None:
    assert replenishment_need({"on_hand": on_hand, "reorder_point": reorder_point}) == need


@pytest.mark.parametrize(
    ("sku", "unit"), [("SKU-VANILLA", 250), ("SKU-CHOCOLATE", 300), ("SKU-STRAWBERRY", 275)]
)
def test_supplier_quotes_the_shops_price(shop: dict[str, Any], sku: str, unit: int) -> None:
    assert invoke(build_tools(shop), "supplier", sku=sku) == {
        "ok": True,
        "value": {"sku": sku, "supplier": "lucy-local", "currency": "GBP", "unit_cost_pence": unit},
    }


def test_vanilla_draft_costs_1500_pence_and_changes_no_stock(shop: dict[str, Any]) -> None:
    tools = build_tools(shop)
    draft = invoke(tools, "draft_order", sku="SKU-VANILLA", quantity=6)
    assert draft == {
        "ok": True,
        "value": {
            "sku": "SKU-VANILLA",
            "supplier": "lucy-local",
            "currency": "GBP",
            "unit_cost_pence": 250,
            "quantity": 6,
            "total_pence": 1500,
            "status": "DRAFT",
        },
    }
    report = invoke(tools, "list_stock")["value"]
    assert [row["on_hand"] for row in report if row["sku"] == "SKU-VANILLA"] == [2]
    assert shop["products"][0]["on_hand"] == 2


def test_strawberry_draft_costs_1100_pence(shop: dict[str, Any]) -> None:
    draft = invoke(build_tools(shop), "draft_order", sku="SKU-STRAWBERRY", quantity=4)
    assert draft["value"]["total_pence"] == 1100


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("draft_order", {"sku": "SKU-VANILLA", "quantity": True}, "invalid_arguments"),
        ("run_shell", {"command": "ls"}, "tool_not_allowed"),
        (
            "draft_order",
            {"sku": "SKU-VANILLA", "quantity": 6, "approved": True},
            "invalid_arguments",
        ),
        ("supplier", {"sku": "SKU-PISTACHIO"}, "tool_failed"),
        ("draft_order", {"sku": "SKU-PISTACHIO", "quantity": 1}, "tool_failed"),
        ("draft_order", {"sku": "SKU-VANILLA", "quantity": 8}, "tool_failed"),
        ("draft_order", {"sku": "SKU-CHOCOLATE", "quantity": 1}, "tool_failed"),
        ("list_stock", {"sku": "SKU-VANILLA"}, "invalid_arguments"),
    ],
)
def test_each_refusal_of_the_chapter(
    shop: dict[str, Any], name: str, arguments: dict[str, Any], error: str
) -> None:
    assert invoke(build_tools(shop), name, **arguments) == {"ok": False, "error": error}


def test_read_only_dispatcher_hides_and_refuses_draft_order(shop: dict[str, Any]) -> None:
    reader = build_tools(shop, allowed=("list_stock", "supplier"))
    assert [s["function"]["name"] for s in reader.schemas()] == ["list_stock", "supplier"]
    assert invoke(reader, "draft_order", sku="SKU-VANILLA", quantity=6) == {
        "ok": False,
        "error": "tool_not_allowed",
    }


def test_delivery_to_nine_makes_the_old_request_fail(shop: dict[str, Any]) -> None:
    delivered = copy.deepcopy(shop)
    delivered["products"][0]["on_hand"] = 9
    tools = build_tools(delivered)
    assert invoke(tools, "draft_order", sku="SKU-VANILLA", quantity=6)["error"] == "tool_failed"
    needs = {row["sku"]: row["needed"] for row in invoke(tools, "list_stock")["value"]}
    assert needs["SKU-VANILLA"] == 0


def test_two_dispatchers_do_not_share_stock(shop: dict[str, Any]) -> None:
    first, second = build_tools(shop), build_tools(shop)
    first_rows = invoke(first, "list_stock")["value"]
    first_rows[0]["on_hand"] = 999  # a caller mutating a returned report
    shop["products"][2]["on_hand"] = 500  # and the source fixture changing afterwards
    second_rows = invoke(second, "list_stock")["value"]
    assert [row["on_hand"] for row in second_rows] == [7, 1, 2]
    first_again = invoke(first, "list_stock")["value"]
    assert [row["on_hand"] for row in first_again] == [7, 1, 2]


def test_prices_are_copied_at_construction(shop: dict[str, Any]) -> None:
    prices = {"SKU-VANILLA": 250}
    tools = build_tools(shop, prices)
    prices["SKU-VANILLA"] = 1
    assert (
        invoke(tools, "draft_order", sku="SKU-VANILLA", quantity=6)["value"]["total_pence"] == 1500
    )


def test_a_price_missing_from_the_list_fails_visibly(shop: dict[str, Any]) -> None:
    tools = build_tools(shop, {"SKU-CHOCOLATE": 300})
    assert invoke(tools, "draft_order", sku="SKU-VANILLA", quantity=6) == {
        "ok": False,
        "error": "tool_failed",
    }
