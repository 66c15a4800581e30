"""Unit B: a request the dispatcher already refused is not sent a second time."""

import json

from agent_loop import (
    TASK,
    AssistantMessage,
    AssistantToolCall,
    ScriptedModel,
    StopReason,
    delivery_tools,
    run_task,
)

SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
PRICES = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}


def turn(*calls):
    return AssistantMessage(
        tool_calls=tuple(
            AssistantToolCall(id=call_id, name=name, arguments_json=arguments)
            for call_id, name, arguments in calls
        )
    )


def run(script, max_steps=6):
    tools = delivery_tools(SHOP, PRICES, {})
    return run_task(ScriptedModel(script), tools, TASK, max_steps=max_steps, max_tool_calls=8)


EIGHT = '{"sku": "SKU-VANILLA", "quantity": 8}'


def test_the_new_stop_reason_is_named_repeated_refusal():
    assert StopReason.REPEATED_REFUSAL == "repeated_refusal"


def test_a_stubborn_model_is_stopped_at_its_first_repeat():
    stubborn = [turn((f"c{i}", "draft_order", EIGHT)) for i in range(10)]
    record = run(stubborn)
    assert record.stop_reason == StopReason.REPEATED_REFUSAL
    assert record.steps == 2
    # The first 8-tub draft ran (the shop refused it inside the handler); the repeat never did.
    assert record.executed == ("draft_order",)
    assert record.refused == (("draft_order", "repeated_refusal"),)
    answer = record.messages[-1]
    assert answer.tool_call_id == "c1"
    assert json.loads(answer.content) == {"ok": False, "error": "repeated_refusal"}


def test_the_same_arguments_in_another_order_are_the_same_request():
    script = [
        turn(("c1", "draft_order", EIGHT)),
        turn(("c2", "draft_order", '{"quantity":8,"sku":"SKU-VANILLA"}')),
    ]
    assert run(script).stop_reason == StopReason.REPEATED_REFUSAL


def test_new_arguments_and_repeated_successes_are_not_repeats():
    script = [
        turn(("c1", "draft_order", EIGHT)),
        turn(("c2", "draft_order", '{"sku": "SKU-VANILLA", "quantity": 6}')),
        turn(("c3", "list_stock", "{}")),
        turn(("c4", "list_stock", "{}")),
        AssistantMessage(content="done"),
    ]
    record = run(script)
    assert record.stop_reason == StopReason.FINAL_ANSWER
    assert record.executed == ("draft_order", "draft_order", "list_stock", "list_stock")


def test_a_repeat_mid_turn_still_lets_every_call_of_the_turn_be_answered():
    script = [
        turn(("c1", "run_shell", '{"command": "ls"}')),
        turn(
            ("c2", "list_stock", "{}"),
            ("c3", "run_shell", '{"command": "ls"}'),
            ("c4", "supplier", '{"sku": "SKU-STRAWBERRY"}'),
        ),
        AssistantMessage(content="never asked"),
    ]
    record = run(script)
    assert record.stop_reason == StopReason.REPEATED_REFUSAL
    answers = [m.tool_call_id for m in record.messages if m.role == "tool"]
    assert answers == ["c1", "c2", "c3", "c4"]
    assert record.executed == ("list_stock", "supplier")
