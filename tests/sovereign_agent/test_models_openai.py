"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from provider_stub import (
    OPENAI_ROUTE,
    ProviderStub,
    StubResponse,
    openai_error,
    openai_text,
    openai_tool_calls,
)

from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    HTTPSettings,
    ModelConfigurationError,
    ModelHTTPError,
    ModelResponseError,
    OpenAICompatibleClient,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)
from sovereign_agent.shop import build_tools

KEY = "secret-token-openai-4f1c"

CONVERSATION = [
    SystemMessage(content="You write Lucy's morning brief."),
    UserMessage(content="Snapshot: vanilla 2"),
    AssistantMessage(
        content=None,
        tool_calls=(AssistantToolCall(id="call_1", name="list_stock", arguments_json="{}"),),
    ),
    ToolMessage(tool_call_id="call_1", content='{"ok": true}'),
]


@pytest.fixture
def stub():
    with ProviderStub() as server:
        yield server


def client_for(stub: ProviderStub, **options) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(
        "test-model", api_key=KEY, base_url=stub.openai_base_url, **options
    )


def test_text_reply_becomes_a_neutral_reply_with_usage(stub):
    stub.enqueue(OPENAI_ROUTE, openai_text("Order 6 vanilla.", model="gpt-test-2024"))
    reply = client_for(stub).complete([UserMessage(content="brief please")])
    assert reply.message == AssistantMessage(content="Order 6 vanilla.")
    assert reply.model == "gpt-test-2024"
    assert reply.finish_reason == "stop"
    assert reply.usage == Usage(input_tokens=11, output_tokens=7)


def test_request_body_and_headers_arrive_field_by_field(stub):
    stub.enqueue(OPENAI_ROUTE, openai_text("ok"))
    tools = build_tools({"products": []}).schemas()
    client_for(stub).complete(CONVERSATION, tools=tools)
    [request] = stub.requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    body = request.json
    assert sorted(body) == ["messages", "model", "tools"]
    assert body["model"] == "test-model"
    assert body["messages"] == [
        {"role": "system", "content": "You write Lucy's morning brief."},
        {"role": "user", "content": "Snapshot: vanilla 2"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "list_stock", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": true}'},
    ]
    assert [tool["function"]["name"] for tool in body["tools"]] == [
        "draft_order",
        "list_stock",
        "supplier",
    ]
    assert body["tools"] == tools  # the neutral schema already is this provider's shape


def test_no_tools_means_no_tools_field(stub):
    stub.enqueue(OPENAI_ROUTE, openai_text("ok"))
    client_for(stub).complete([UserMessage(content="hi")])
    assert "tools" not in stub.requests[0].json


def test_tool_calls_come_back_with_their_raw_argument_text(stub):
    # Not valid JSON on purpose: the client keeps the text, the runtime judges it.
    stub.enqueue(
        OPENAI_ROUTE,
        openai_tool_calls(
            [
                ("call_a", "draft_order", '{"sku": "SKU-VANILLA", "quantity": 6}'),
                ("call_b", "list_stock", "{not json"),
            ]
        ),
    )
    reply = client_for(stub).complete([UserMessage(content="order")])
    assert reply.message.tool_calls == (
        AssistantToolCall(
            id="call_a", name="draft_order", arguments_json='{"sku": "SKU-VANILLA", "quantity": 6}'
        ),
        AssistantToolCall(id="call_b", name="list_stock", arguments_json="{not json"),
    )
    assert reply.message.content is None
    assert reply.finish_reason == "tool_calls"
    assert reply.usage == Usage(input_tokens=23, output_tokens=9)


def test_arguments_sent_as_an_object_are_kept_as_json_text(stub):
    reply = openai_text("x").body
    reply["choices"][0]["message"]["tool_calls"] = [
        {"id": "c", "type": "function", "function": {"name": "supplier", "arguments": {"sku": "S"}}}
    ]
    stub.enqueue(OPENAI_ROUTE, StubResponse(200, reply))
    [call] = client_for(stub).complete([UserMessage(content="q")]).message.tool_calls
    assert json.loads(call.arguments_json) == {"sku": "S"}


def test_a_local_server_needs_no_key_and_gets_no_authorization_header(stub):
    stub.enqueue(OPENAI_ROUTE, openai_text("local reply"))
    client = OpenAICompatibleClient("llama3.2", base_url=stub.openai_base_url)
    assert client.complete([UserMessage(content="hi")]).message.content == "local reply"
    assert "authorization" not in stub.requests[0].headers
    assert repr(client).endswith("api_key=<none>)")


def test_api_openai_com_without_a_key_is_refused_before_any_request():
    with pytest.raises(ModelConfigurationError) as caught:
        OpenAICompatibleClient("gpt-4o-mini")
    assert "OPENAI_API_KEY is not set" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_http_error_names_status_and_provider_message_but_not_the_key(stub):
    stub.enqueue(OPENAI_ROUTE, openai_error(401, f"Incorrect API key provided: {KEY}"))
    with pytest.raises(ModelHTTPError) as caught:
        client_for(stub).complete([UserMessage(content="hi")])
    text = str(caught.value)
    assert caught.value.status == 401
    assert text == (
        f"HTTP 401 from {stub.openai_base_url}/chat/completions: Incorrect API key provided: ***"
    )
    assert KEY not in text
    assert len(stub.requests) == 1  # a 4xx is not retried


def test_429_is_retried_after_the_servers_retry_after(stub):
    waits: list[float] = []
    stub.enqueue(
        OPENAI_ROUTE,
        openai_error(429, "slow down", retry_after="7"),
        openai_text("after the wait"),
    )
    client = client_for(stub, sleep=waits.append)
    assert client.complete([UserMessage(content="hi")]).message.content == "after the wait"
    assert waits == [7.0]
    assert len(stub.requests) == 2
    assert stub.requests[0].body == stub.requests[1].body


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"choices": []}, "no choices"),
        ({"choices": [{"message": "hi"}]}, "choices[0] has no message object"),
        ({"choices": [{"message": {"content": 5}}]}, "message content is not text"),
        ({"choices": [{"message": {"tool_calls": {"a": 1}}}]}, "tool_calls is not a list"),
    ],
)
def test_malformed_replies_are_named_response_errors(stub, content, problem):
    stub.enqueue(OPENAI_ROUTE, StubResponse(200, content))
    with pytest.raises(ModelResponseError) as caught:
        client_for(stub).complete([UserMessage(content="hi")])
    assert str(caught.value) == (
        f"the reply from {stub.openai_base_url}/chat/completions is malformed: {problem}"
    )


def test_repr_and_label_never_show_the_key(stub):
    client = client_for(stub)
    assert KEY not in repr(client)
    assert KEY not in client.label
    assert KEY not in repr(vars(client))
    assert client.label == f"openai:test-model at {stub.openai_base_url}"


def test_settings_are_bounded():
    with pytest.raises(ValueError):
        HTTPSettings(timeout_s=0)
    with pytest.raises(ValueError):
        HTTPSettings(max_retries=11)
