"""The bounded loop through the real HTTP clients, against the provider stub on 127.0.0.1."""

from __future__ import annotations

import json
import runpy
from typing import Any

import pytest
from provider_stub import (
    ANTHROPIC_ROUTE,
    OPENAI_ROUTE,
    ProviderStub,
    anthropic_error,
    anthropic_text,
    anthropic_tool_use,
    openai_error,
    openai_text,
    openai_tool_calls,
)

from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import AnthropicClient, OpenAICompatibleClient
from sovereign_agent.shop import build_tools

SHOP = runpy.run_path(
    "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
)["SHOP"]
VANILLA = {"sku": "SKU-VANILLA", "quantity": 6}
STRAWBERRY = {"sku": "SKU-STRAWBERRY", "quantity": 4}
SECRET = "secret-token-loop-7"


def no_sleep(seconds: float) -> None:
    pass


def openai_client(stub: ProviderStub) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(
        "test-model", api_key=SECRET, base_url=stub.openai_base_url, sleep=no_sleep
    )


def anthropic_client(stub: ProviderStub) -> AnthropicClient:
    return AnthropicClient(
        "test-model", api_key=SECRET, base_url=stub.anthropic_base_url, sleep=no_sleep
    )


def test_openai_several_calls_in_one_turn_are_answered_in_order_under_their_ids() -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls([("call_a", "list_stock", "{}")]),
            openai_tool_calls(
                [
                    ("call_b", "draft_order", json.dumps(VANILLA)),
                    ("call_c", "draft_order", json.dumps(STRAWBERRY)),
                    ("call_d", "run_shell", '{"command": "ls"}'),
                ]
            ),
            openai_text("Planned: 2,600 pence."),
        )
        tools = build_tools(SHOP)
        record = run_task(
            openai_client(stub), tools, "Plan.", max_steps=5, max_tool_calls=8, system="Be exact."
        )
        requests = [r.json for r in stub.requests_to(OPENAI_ROUTE)]

    assert record.stop_reason is StopReason.FINAL_ANSWER
    assert record.answer == "Planned: 2,600 pence."
    assert record.executed == ("list_stock", "draft_order", "draft_order")
    assert record.refused == (("run_shell", "tool_not_allowed"),)
    assert len(requests) == 3
    # Tool schemas in the Chat Completions format, sent on every request.
    for body in requests:
        assert body["tools"] == tools.schemas()
        assert all(t["type"] == "function" for t in body["tools"])
    third = requests[2]["messages"]
    assert [m["role"] for m in third] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "tool",
    ]
    assert [c["id"] for c in third[4]["tool_calls"]] == ["call_b", "call_c", "call_d"]
    answers = [(m["tool_call_id"], json.loads(m["content"])) for m in third[5:]]
    assert [call_id for call_id, _ in answers] == ["call_b", "call_c", "call_d"]
    assert answers[0][1]["value"]["total_pence"] == 1500
    assert answers[1][1]["value"]["total_pence"] == 1100
    assert answers[2][1] == {"ok": False, "error": "tool_not_allowed"}


def test_anthropic_tool_results_travel_in_one_user_turn_in_the_models_order() -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            ANTHROPIC_ROUTE,
            anthropic_tool_use([("toolu_a", "list_stock", {})], text="Reading the stock."),
            anthropic_tool_use(
                [("toolu_b", "draft_order", VANILLA), ("toolu_c", "draft_order", STRAWBERRY)]
            ),
            anthropic_text("Planned: 2,600 pence."),
        )
        tools = build_tools(SHOP)
        record = run_task(anthropic_client(stub), tools, "Plan.", max_steps=5, max_tool_calls=8)
        requests = [r.json for r in stub.requests_to(ANTHROPIC_ROUTE)]

    assert record.stop_reason is StopReason.FINAL_ANSWER
    assert record.executed == ("list_stock", "draft_order", "draft_order")
    # Tool schemas in Anthropic's format: name, description, input_schema.
    first_tools: list[dict[str, Any]] = requests[0]["tools"]
    assert [t["name"] for t in first_tools] == ["draft_order", "list_stock", "supplier"]
    assert set(first_tools[0]) == {"name", "description", "input_schema"}
    assert first_tools[0]["input_schema"]["required"] == ["sku", "quantity"]
    turns = requests[2]["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["id"] for b in turns[3]["content"]] == ["toolu_b", "toolu_c"]
    results = turns[4]["content"]
    assert [b["tool_use_id"] for b in results] == ["toolu_b", "toolu_c"]
    assert json.loads(results[0]["content"])["value"]["quantity"] == 6
    assert json.loads(results[1]["content"])["value"]["quantity"] == 4


def test_a_malformed_call_from_the_provider_is_refused_and_the_run_goes_on() -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls(
                [("call_a", "draft_order", '{"sku": "SKU-VAN'), ("", "list_stock", "{}")]
            ),
            openai_text("Sorry."),
        )
        record = run_task(
            openai_client(stub), build_tools(SHOP), "Plan.", max_steps=3, max_tool_calls=3
        )
        second = stub.requests_to(OPENAI_ROUTE)[1].json["messages"]
    assert record.stop_reason is StopReason.FINAL_ANSWER
    tool_answers = [m for m in second if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_answers] == ["call_a", ""]
    assert all(
        json.loads(m["content"]) == {"ok": False, "error": "malformed_tool_call"}
        for m in tool_answers
    )
    assert "SKU-VAN" not in json.dumps(tool_answers)


@pytest.mark.parametrize("tool_input", [[1, 2], "list", 7, None])
def test_an_anthropic_tool_use_whose_input_is_not_an_object_ends_the_run_cleanly(
    tool_input: Any,
) -> None:
    # Such a call could never be sent back in the next request's history: the
    # reply is unreadable, and the run must end with a named reason, not a crash.
    with ProviderStub() as stub:
        stub.enqueue(
            ANTHROPIC_ROUTE,
            anthropic_tool_use([("toolu_a", "list_stock", tool_input)]),
            anthropic_text("never read"),
        )
        record = run_task(
            anthropic_client(stub), build_tools(SHOP), "Plan.", max_steps=3, max_tool_calls=3
        )
        asked = len(stub.requests_to(ANTHROPIC_ROUTE))
    assert record.stop_reason is StopReason.MODEL_ERROR
    assert record.error is not None and "not an object" in record.error
    assert record.requested == ()
    assert asked == 1


def test_the_step_limit_holds_against_a_provider_that_never_stops() -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            *[openai_tool_calls([(f"call_{i}", "list_stock", "{}")]) for i in range(6)],
        )
        record = run_task(
            openai_client(stub), build_tools(SHOP), "Plan.", max_steps=4, max_tool_calls=10
        )
        asked = len(stub.requests_to(OPENAI_ROUTE))
        left = stub.pending(OPENAI_ROUTE)
    assert record.stop_reason is StopReason.STEP_LIMIT
    assert asked == 4 and left == 2
    assert record.refused == (("list_stock", "step_limit"),)


def test_a_provider_http_error_is_a_model_error_on_one_line_without_the_key() -> None:
    for route, error, client in (
        (OPENAI_ROUTE, openai_error(400, f"bad request\nkey {SECRET}"), openai_client),
        (ANTHROPIC_ROUTE, anthropic_error(400, "bad\nrequest"), anthropic_client),
    ):
        with ProviderStub() as stub:
            stub.enqueue(route, error)
            record = run_task(
                client(stub), build_tools(SHOP), "Plan.", max_steps=3, max_tool_calls=3
            )
        assert record.stop_reason is StopReason.MODEL_ERROR
        assert record.error is not None
        assert record.error.startswith("ModelHTTPError: ")
        assert "\n" not in record.error
        assert SECRET not in record.error
        assert record.steps == 1


def test_openai_reply_repeating_an_id_runs_nothing_and_sends_nothing_more() -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls(
                [("call_a", "draft_order", json.dumps(VANILLA)), ("call_a", "list_stock", "{}")]
            ),
            openai_text("never read"),
        )
        record = run_task(
            openai_client(stub), build_tools(SHOP), "Plan.", max_steps=3, max_tool_calls=3
        )
        asked = len(stub.requests_to(OPENAI_ROUTE))
    assert record.stop_reason is StopReason.DUPLICATE_CALL_ID
    assert asked == 1
    assert record.executed == ()
    assert record.refused == (
        ("draft_order", "duplicate_call_id"),
        ("list_stock", "duplicate_call_id"),
    )


def test_anthropic_reply_reusing_an_earlier_id_runs_nothing_and_sends_nothing_more() -> None:
    tools = build_tools(SHOP)
    with ProviderStub() as stub:
        stub.enqueue(
            ANTHROPIC_ROUTE,
            anthropic_tool_use([("toolu_a", "list_stock", {})]),
            anthropic_tool_use(
                [("toolu_b", "draft_order", VANILLA), ("toolu_a", "list_stock", {})]
            ),
            anthropic_text("never read"),
        )
        record = run_task(anthropic_client(stub), tools, "Plan.", max_steps=5, max_tool_calls=5)
        requests = [r.json for r in stub.requests_to(ANTHROPIC_ROUTE)]
    assert record.stop_reason is StopReason.DUPLICATE_CALL_ID
    assert len(requests) == 2
    # Only the first turn ran; the draft in the unreadable reply did not.
    assert record.executed == ("list_stock",)
    assert record.refused == (
        ("draft_order", "duplicate_call_id"),
        ("list_stock", "duplicate_call_id"),
    )
    # Every request the provider did receive held each tool_use id once, answered once.
    for body in requests:
        uses = [b["id"] for t in body["messages"] for b in t["content"] if b["type"] == "tool_use"]
        results = [
            b["tool_use_id"]
            for t in body["messages"]
            for b in t["content"]
            if b["type"] == "tool_result"
        ]
        assert len(uses) == len(set(uses)) and uses == results
