"""Unit A: next_move survives a delivery in the middle of a run.

Every expected number was worked out by hand from the shop's data (target
minus stock, times the unit price), never computed by the code under test.
"""

from agent_loop import TASK, ScriptedModel, delivery_tools, drafts_in, next_move, run_task

SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
PRICES = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}


def run(delivery, shop=SHOP):
    model = ScriptedModel([next_move] * 6)
    tools = delivery_tools(shop, PRICES, delivery)
    return run_task(model, tools, TASK, max_steps=6, max_tool_calls=12)


def drafted(record):
    return sorted((d["sku"], d["quantity"], d["total_pence"]) for d in drafts_in(record))


def test_without_a_delivery_the_plan_is_chapter_3s_2600_pence():
    record = run({})
    assert record.stop_reason == "final_answer"
    assert drafted(record) == [("SKU-STRAWBERRY", 4, 1100), ("SKU-VANILLA", 6, 1500)]
    assert "2,600 pence" in record.answer
    assert record.refused == ()


def test_three_delivered_tubs_make_the_vanilla_draft_3_tubs_and_the_total_1850():
    record = run({"SKU-VANILLA": 3})
    assert record.stop_reason == "final_answer"
    assert drafted(record) == [("SKU-STRAWBERRY", 4, 1100), ("SKU-VANILLA", 3, 750)]
    # The stale 6-tub vanilla draft ran and was refused by the shop inside its
    # handler: it is executed (three drafts ran), and nothing was refused.
    assert record.refused == ()
    assert record.executed.count("draft_order") == 3
    assert record.executed.count("list_stock") == 2
    assert "1,850 pence" in record.answer


def test_a_delivery_that_fills_vanilla_leaves_only_strawberry():
    record = run({"SKU-VANILLA": 6})
    assert drafted(record) == [("SKU-STRAWBERRY", 4, 1100)]
    assert record.executed.count("list_stock") == 2
    assert "1,100 pence" in record.answer


def test_a_shop_that_needs_nothing_gets_an_answer_of_0_pence():
    full = {"products": [dict(row, on_hand=row["reorder_point"]) for row in SHOP["products"]]}
    record = run({}, shop=full)
    assert record.stop_reason == "final_answer"
    assert record.executed == ("list_stock",)
    assert drafted(record) == []
    assert "0 pence" in record.answer
