"""Streamed replies are assembled whole before anything runs, in both dialects.

The stub's stream events are validated against the official SDKs' stream
event types; any split of a valid stream into chunks assembles to exactly the
calls of the same reply unstreamed; any truncation is a `ModelResponseError`,
and a run over a cut stream executes nothing.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provider_sdk import ProviderSdk, provider_sdk
from provider_stub import (
    ANTHROPIC_ROUTE,
    OPENAI_ROUTE,
    ProviderStub,
    anthropic_error,
    anthropic_stream,
    anthropic_stream_events,
    anthropic_tool_use,
    openai_stream,
    openai_stream_events,
    openai_tool_calls,
    server_events,
)
from pydantic import ValidationError
from strength import examples

from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import (
    AnthropicClient,
    HTTPSettings,
    ModelHTTPError,
    ModelResponseError,
    ModelUnavailableError,
    OpenAICompatibleClient,
    UserMessage,
)
from sovereign_agent.models.anthropic import parse_message
from sovereign_agent.models.openai_compat import parse_chat_completion
from sovereign_agent.models.streaming import (
    ChatCompletionAssembler,
    MessagesAssembler,
    ServerEvent,
    ServerEventDecoder,
    StreamingModel,
    assemble,
)
from sovereign_agent.shop import ProductArguments
from sovereign_agent.tools import Dispatcher, ExecutableTool


@pytest.fixture(scope="module")
def sdk() -> ProviderSdk:
    return provider_sdk()


names = st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
ids = st.from_regex(r"call_[A-Za-z0-9]{1,8}", fullmatch=True)
texts = st.text(max_size=30)
# Arguments as JSON objects with text that needs escaping and non-ASCII letters,
# so a fragment boundary can fall inside an escape or a multi-byte character.
argument_objects = st.dictionaries(
    st.text(max_size=6), st.none() | st.integers() | st.text(max_size=10), max_size=3
)
calls_strategy = st.lists(st.tuples(ids, names, argument_objects), max_size=3).filter(
    lambda calls: len({call_id for call_id, _, _ in calls}) == len(calls)
)
pieces = st.integers(min_value=1, max_value=12)


def split(wire: bytes, cuts: list[int]) -> list[bytes]:
    """The bytes cut at the given offsets (taken modulo the length), in order."""
    points = sorted({cut % (len(wire) + 1) for cut in cuts} | {0, len(wire)})
    return [wire[a:b] for a, b in itertools.pairwise(points)]


def openai_wire(
    text: str | None, calls: list[tuple[str, str, dict[str, Any]]], piece: int
) -> bytes:
    raw = [(call_id, name, json.dumps(arguments)) for call_id, name, arguments in calls]
    return server_events(openai_stream_events(text, raw, piece=piece), named=False)


def anthropic_wire(
    text: str | None, calls: list[tuple[str, str, dict[str, Any]]], piece: int
) -> bytes:
    return server_events(anthropic_stream_events(text, calls, piece=piece), named=True)


@given(texts | st.none(), calls_strategy, pieces)
def test_every_chat_completion_stream_event_is_a_valid_sdk_chunk(
    sdk: ProviderSdk, text: str | None, calls: list[tuple[str, str, dict[str, Any]]], piece: int
) -> None:
    raw = [(call_id, name, json.dumps(arguments)) for call_id, name, arguments in calls]
    for event in openai_stream_events(text, raw, piece=piece):
        sdk.chat_completion_chunk.model_validate(event)


@given(texts | st.none(), calls_strategy, pieces)
def test_every_messages_stream_event_is_a_valid_sdk_stream_event(
    sdk: ProviderSdk, text: str | None, calls: list[tuple[str, str, dict[str, Any]]], piece: int
) -> None:
    for event in anthropic_stream_events(text, calls, piece=piece):
        sdk.anthropic_event.validate_python(event)


def test_the_sdk_stream_types_do_refuse_an_event_out_of_shape(sdk: ProviderSdk) -> None:
    # Proof that the checks above can fail.
    chunk = openai_stream_events("hi")[0]
    del chunk["created"]
    with pytest.raises(ValidationError, match="created"):
        sdk.chat_completion_chunk.model_validate(chunk)
    delta = anthropic_stream_events(None, [("call_1", "f", {})])[2]
    assert delta["type"] == "content_block_delta"
    delta["delta"]["type"] = "arguments_delta"
    with pytest.raises(ValidationError):
        sdk.anthropic_event.validate_python(delta)


@settings(max_examples=examples(200), deadline=None)
@given(texts | st.none(), calls_strategy, pieces, st.lists(st.integers(0, 10_000), max_size=12))
def test_any_split_of_a_chat_completion_stream_assembles_to_the_unstreamed_reply(
    text: str | None, calls: list[tuple[str, str, dict[str, Any]]], piece: int, cuts: list[int]
) -> None:
    raw = [(call_id, name, json.dumps(arguments)) for call_id, name, arguments in calls]
    wire = openai_wire(text, calls, piece)
    shown: list[str] = []
    streamed = assemble(split(wire, cuts), ChatCompletionAssembler(model="m"), on_text=shown.append)
    if raw:
        body = openai_tool_calls(raw, content=text or None).body
    else:
        body = openai_tool_calls([], content=text or None).body
        body["choices"][0]["message"]["tool_calls"] = None
    whole = parse_chat_completion(body, source="stub", model="m")
    assert streamed.message.tool_calls == whole.message.tool_calls
    assert streamed.message.content == whole.message.content
    assert streamed.usage == whole.usage
    assert "".join(shown) == (text or "")


@settings(max_examples=examples(200), deadline=None)
@given(texts | st.none(), calls_strategy, pieces, st.lists(st.integers(0, 10_000), max_size=12))
def test_any_split_of_a_messages_stream_assembles_to_the_unstreamed_reply(
    text: str | None, calls: list[tuple[str, str, dict[str, Any]]], piece: int, cuts: list[int]
) -> None:
    wire = anthropic_wire(text, calls, piece)
    shown: list[str] = []
    streamed = assemble(split(wire, cuts), MessagesAssembler(model="m"), on_text=shown.append)
    whole = parse_message(anthropic_tool_use(calls, text=text).body, source="stub", model="m")
    assert streamed.message == whole.message
    assert streamed.usage == whole.usage
    assert streamed.finish_reason == ("tool_use" if calls else "end_turn")
    assert "".join(shown) == (text or "")


@settings(max_examples=examples(200), deadline=None)
@given(st.booleans(), texts | st.none(), calls_strategy, pieces, st.data())
def test_any_truncation_of_a_stream_is_a_model_response_error(
    anthropic: bool,
    text: str | None,
    calls: list[tuple[str, str, dict[str, Any]]],
    piece: int,
    data: st.DataObject,
) -> None:
    wire = anthropic_wire(text, calls, piece) if anthropic else openai_wire(text, calls, piece)
    cut = data.draw(st.integers(0, len(wire) - 1))
    assembler = MessagesAssembler(model="m") if anthropic else ChatCompletionAssembler(model="m")
    with pytest.raises(ModelResponseError, match=r"cut|not JSON"):
        assemble([wire[:cut]], assembler)


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([{"type": "content_block_start", "index": 0}], "before message_start"),
        ([{"type": "message_start", "message": {}}, {"type": "message_start"}], "second"),
        (
            [
                {"type": "message_start", "message": {}},
                {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta"}},
            ],
            "never started",
        ),
        (
            [
                {"type": "message_start", "message": {}},
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": "c", "name": "f", "input": {}},
                },
                {"type": "message_stop"},
            ],
            "before every block had stopped",
        ),
        ([{"type": "message_start", "message": {}}, {"type": "error", "error": {}}], "error"),
    ],
)
def test_a_messages_stream_out_of_order_is_refused(
    events: list[dict[str, Any]], message: str
) -> None:
    assembler = MessagesAssembler(model="m")
    with pytest.raises(ModelResponseError, match=message):
        for event in events:
            assembler.add(ServerEvent(event["type"], json.dumps(event)))


def test_a_tool_use_whose_fragments_are_not_an_object_is_refused() -> None:
    events = anthropic_stream_events(None, [("call_1", "list_stock", {})])
    events[2]["delta"]["partial_json"] = "[1, 2"
    with pytest.raises(ModelResponseError, match="not JSON"):
        assemble([server_events(events, named=True)], MessagesAssembler(model="m"))


def test_a_chat_completion_fragment_for_a_call_never_named_is_refused() -> None:
    events = openai_stream_events(None, [("call_1", "list_stock", "{}")])
    del events[1]["choices"][0]["delta"]["tool_calls"][0]["id"]
    with pytest.raises(ModelResponseError, match="no id or name"):
        assemble([server_events(events, named=False)], ChatCompletionAssembler(model="m"))


def test_the_decoder_keeps_a_character_cut_in_two_and_drops_an_unfinished_event() -> None:
    wire = 'data: {"t": "é"}\n\ndata: {"t": 1}'.encode()
    cut = wire.index("é".encode()) + 1  # inside the two bytes of é
    decoder = ServerEventDecoder()
    events = decoder.feed(wire[:cut]) + decoder.feed(wire[cut:])
    assert events == [ServerEvent("", '{"t": "é"}')]


def test_a_stream_larger_than_its_bound_is_refused() -> None:
    decoder = ServerEventDecoder(limit=64)
    with pytest.raises(ModelResponseError, match="larger than 64 bytes"):
        decoder.feed(b": keep-alive\n" * 10)


# -- Over HTTP, against the stub ------------------------------------------


def stock_tools() -> Dispatcher:
    tool = ExecutableTool(
        name="stock_level",
        description="Tubs in the freezer for one product.",
        arguments=ProductArguments,
        handler=lambda arguments: {"tubs": 4},
    )
    return Dispatcher([tool], allowed={"stock_level"})


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_both_clients_stream_a_turn_from_the_stub_and_show_text_as_it_comes(dialect: str) -> None:
    calls = [("call_1", "stock_level", {"sku": "VANILLA"})]
    with ProviderStub() as stub:
        if dialect == "openai":
            raw = [(call_id, name, json.dumps(args)) for call_id, name, args in calls]
            stub.enqueue(OPENAI_ROUTE, openai_stream("Checking the freezer.", raw, piece=5))
            client: OpenAICompatibleClient | AnthropicClient = OpenAICompatibleClient(
                "stub-model", base_url=stub.openai_base_url
            )
        else:
            stub.enqueue(ANTHROPIC_ROUTE, anthropic_stream("Checking the freezer.", calls, piece=5))
            client = AnthropicClient(
                "stub-model", api_key="secret-token-stream", base_url=stub.anthropic_base_url
            )
        shown: list[str] = []
        reply = client.stream([UserMessage(content="How much vanilla?")], on_text=shown.append)
        sent = stub.requests[0].json
    assert sent["stream"] is True
    if dialect == "openai":
        assert sent["stream_options"] == {"include_usage": True}
    assert shown == ["Check", "ing t", "he fr", "eezer", "."]
    assert [(c.id, c.name, json.loads(c.arguments_json)) for c in reply.message.tool_calls] == calls
    assert reply.usage is not None


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_a_stream_cut_part_way_runs_nothing(dialect: str) -> None:
    calls = [("call_1", "stock_level", {"sku": "VANILLA"})]
    with ProviderStub() as stub:
        if dialect == "openai":
            raw = [(call_id, name, json.dumps(args)) for call_id, name, args in calls]
            whole = openai_stream(None, raw)
            stub.enqueue(OPENAI_ROUTE, openai_stream(None, raw, cut_at=len(whole.body) - 20))
            client: OpenAICompatibleClient | AnthropicClient = OpenAICompatibleClient(
                "stub-model", base_url=stub.openai_base_url
            )
        else:
            whole = anthropic_stream(None, calls)
            stub.enqueue(
                ANTHROPIC_ROUTE, anthropic_stream(None, calls, cut_at=len(whole.body) - 20)
            )
            client = AnthropicClient(
                "stub-model", api_key="secret-token-stream", base_url=stub.anthropic_base_url
            )
        record = run_task(
            StreamingModel(client),
            stock_tools(),
            "How much vanilla?",
            max_steps=3,
            max_tool_calls=3,
        )
    assert record.stop_reason is StopReason.MODEL_ERROR
    assert record.error is not None and "ended before its announced length" in record.error
    assert record.requested == () and record.executed == ()
    assert "secret-token-stream" not in record.error


def test_a_stream_refused_with_an_http_error_is_asked_for_once_and_names_no_key() -> None:
    with ProviderStub() as stub:
        stub.enqueue(ANTHROPIC_ROUTE, anthropic_error(429, "slow down", kind="rate_limit_error"))
        client = AnthropicClient(
            "stub-model", api_key="secret-token-stream", base_url=stub.anthropic_base_url
        )
        with pytest.raises(ModelHTTPError) as raised:
            client.stream([UserMessage(content="hi")])
        assert len(stub.requests) == 1  # text shown once must never be shown twice
    assert raised.value.status == 429
    assert "secret-token-stream" not in str(raised.value)


def test_a_stream_that_trickles_past_the_timeout_is_unavailable() -> None:
    slow = replace(openai_stream("Checking the freezer."), drip_s=0.02)
    with ProviderStub() as stub:
        stub.enqueue(OPENAI_ROUTE, slow)
        client = OpenAICompatibleClient(
            "stub-model", base_url=stub.openai_base_url, settings=HTTPSettings(timeout_s=0.3)
        )
        shown: list[str] = []
        with pytest.raises(ModelUnavailableError, match=r"within 0\.3 s"):
            client.stream([UserMessage(content="hi")], on_text=shown.append)
