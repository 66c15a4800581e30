"""The Anthropic Messages client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from provider_stub import (
    ANTHROPIC_ROUTE,
    ProviderStub,
    StubResponse,
    anthropic_error,
    anthropic_text,
    anthropic_tool_use,
)

from sovereign_agent.models import (
    AnthropicClient,
    AssistantMessage,
    AssistantToolCall,
    ModelConfigurationError,
    ModelHTTPError,
    ModelResponseError,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)
from sovereign_agent.models.anthropic import ANTHROPIC_VERSION
from sovereign_agent.shop import build_tools

KEY = "secret-token-anthropic-9d2e"


@pytest.fixture
def stub():
    with ProviderStub() as server:
        yield server


def client_for(stub: ProviderStub, **options) -> AnthropicClient:
    return AnthropicClient("test-model", api_key=KEY, base_url=stub.anthropic_base_url, **options)


def test_text_reply_becomes_a_neutral_reply_with_usage(stub):
    stub.enqueue(ANTHROPIC_ROUTE, anthropic_text("Order 6 vanilla.", model="claude-test"))
    reply = client_for(stub).complete([UserMessage(content="brief please")])
    assert reply.message == AssistantMessage(content="Order 6 vanilla.")
    assert reply.model == "claude-test"
    assert reply.finish_reason == "end_turn"
    assert reply.usage == Usage(input_tokens=13, output_tokens=5)


def test_request_headers_system_field_and_max_tokens(stub):
    stub.enqueue(ANTHROPIC_ROUTE, anthropic_text("ok"))
    client_for(stub, max_tokens=300).complete(
        [
            SystemMessage(content="You write Lucy's brief."),
            SystemMessage(content="Use only the snapshot."),
            UserMessage(content="Snapshot: vanilla 2"),
        ]
    )
    [request] = stub.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == ANTHROPIC_VERSION
    assert "authorization" not in request.headers
    assert request.json == {
        "model": "test-model",
        "max_tokens": 300,
        "system": "You write Lucy's brief.\n\nUse only the snapshot.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Snapshot: vanilla 2"}]}
        ],
    }


def test_tool_history_becomes_tool_use_and_user_tool_result_blocks(stub):
    stub.enqueue(ANTHROPIC_ROUTE, anthropic_text("done"))
    tools = build_tools({"products": []}).schemas()
    client_for(stub).complete(
        [
            UserMessage(content="re-order"),
            AssistantMessage(
                content="Checking stock.",
                tool_calls=(
                    AssistantToolCall(id="toolu_1", name="list_stock", arguments_json="{}"),
                    AssistantToolCall(
                        id="toolu_2", name="supplier", arguments_json='{"sku": "SKU-VANILLA"}'
                    ),
                ),
            ),
            ToolMessage(tool_call_id="toolu_1", content='{"ok": true, "value": []}'),
            ToolMessage(tool_call_id="toolu_2", content='{"ok": false}'),
        ],
        tools=tools,
    )
    body = stub.requests[0].json
    assert "system" not in body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "re-order"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking stock."},
                {"type": "tool_use", "id": "toolu_1", "name": "list_stock", "input": {}},
                {
                    "type": "tool_use",
                    "id": "toolu_2",
                    "name": "supplier",
                    "input": {"sku": "SKU-VANILLA"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": '{"ok": true, "value": []}',
                },
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": '{"ok": false}'},
            ],
        },
    ]
    by_name = {tool["name"]: tool for tool in body["tools"]}
    assert sorted(by_name) == ["draft_order", "list_stock", "supplier"]
    for tool in tools:
        function = tool["function"]
        assert by_name[function["name"]] == {
            "name": function["name"],
            "description": function["description"],
            "input_schema": function["parameters"],
        }


def test_tool_use_input_is_serialized_as_json_text(stub):
    stub.enqueue(
        ANTHROPIC_ROUTE,
        anthropic_tool_use(
            [("toolu_9", "draft_order", {"sku": "SKU-VANILLA", "quantity": 6})],
            text="Drafting.",
        ),
    )
    reply = client_for(stub).complete([UserMessage(content="order")])
    assert reply.message.content == "Drafting."
    [call] = reply.message.tool_calls
    assert (call.id, call.name) == ("toolu_9", "draft_order")
    assert json.loads(call.arguments_json) == {"sku": "SKU-VANILLA", "quantity": 6}
    assert reply.finish_reason == "tool_use"
    assert reply.usage == Usage(input_tokens=29, output_tokens=12)


def test_a_missing_key_is_a_one_line_configuration_error():
    with pytest.raises(ModelConfigurationError) as caught:
        AnthropicClient("claude-test", api_key=None)
    assert str(caught.value) == (
        "ANTHROPIC_API_KEY is not set; the Anthropic API needs a key "
        "(or use SOVEREIGN_MODEL=offline)"
    )


def test_error_body_message_is_shown_and_the_echoed_key_is_masked(stub):
    stub.enqueue(
        ANTHROPIC_ROUTE,
        anthropic_error(400, f"max_tokens: too large for key {KEY}"),
    )
    with pytest.raises(ModelHTTPError) as caught:
        client_for(stub).complete([UserMessage(content="hi")])
    assert caught.value.status == 400
    assert str(caught.value) == (
        f"HTTP 400 from {stub.base_url}/v1/messages: max_tokens: too large for key ***"
    )


def test_overloaded_529_is_retried_then_reported_with_the_attempt_count(stub):
    waits: list[float] = []
    stub.enqueue(
        ANTHROPIC_ROUTE,
        *[anthropic_error(529, "Overloaded", kind="overloaded_error")] * 3,
    )
    with pytest.raises(ModelHTTPError) as caught:
        client_for(stub, sleep=waits.append).complete([UserMessage(content="hi")])
    assert str(caught.value).endswith("Overloaded (gave up after 3 attempts)")
    # No Retry-After: the client's own doubling backoff, each wait jittered
    # between half and all of its step.
    assert len(waits) == 2
    assert 0.5 <= waits[0] <= 1.0
    assert 1.0 <= waits[1] <= 2.0
    assert len(stub.requests) == 3


def test_a_reply_without_a_content_list_is_a_response_error(stub):
    stub.enqueue(ANTHROPIC_ROUTE, StubResponse(200, {"type": "message", "content": "hi"}))
    with pytest.raises(ModelResponseError, match="content is not a list"):
        client_for(stub).complete([UserMessage(content="hi")])


def test_unknown_block_kinds_are_left_out_of_the_reply(stub):
    body = anthropic_text("visible").body
    body["content"].insert(0, {"type": "thinking", "thinking": "hidden"})
    stub.enqueue(ANTHROPIC_ROUTE, StubResponse(200, body))
    assert client_for(stub).complete([UserMessage(content="q")]).message.content == "visible"


def test_history_arguments_that_are_not_an_object_are_refused_before_sending(stub):
    bad = AssistantMessage(
        tool_calls=(AssistantToolCall(id="t", name="list_stock", arguments_json="[1]"),)
    )
    with pytest.raises(ValueError, match="not a JSON object"):
        client_for(stub).complete([UserMessage(content="q"), bad])
    assert stub.requests == []


def test_repr_masks_the_key(stub):
    client = client_for(stub)
    assert repr(client) == (
        f"AnthropicClient(model='test-model', base_url='{stub.base_url}', api_key=<hidden>)"
    )
    assert KEY not in repr(vars(client))
