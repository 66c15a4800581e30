"""Any reply body, from a real HTTP server on 127.0.0.1, ends well and in time.

Whatever a server sends (bytes that are not JSON, JSON that is not an object,
nesting past the interpreter's recursion limit, lone surrogates, a body too
large, an answer that trickles in a byte at a time), each client returns a
reply or raises a `ModelError`: one printable line, free of the key, raised
within the settings' deadline plus a margin for a busy machine.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_stub import (
    ANTHROPIC_ROUTE,
    OPENAI_ROUTE,
    ProviderStub,
    StubResponse,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_calls,
    raw_reply,
)
from strength import examples

from sovereign_agent.models import (
    AnthropicClient,
    HTTPSettings,
    ModelError,
    ModelReply,
    ModelResponseError,
    ModelUnavailableError,
    OpenAICompatibleClient,
    UserMessage,
)
from sovereign_agent.models.http import MAX_JSON_DEPTH, MAX_REPLY_BYTES

KEY = "secret-token-hostile-5b7e"
HI = [UserMessage(content="hi")]
# Short clocks, so that a trickling server costs a test one second, not sixty.
FAST = HTTPSettings(timeout_s=0.5, deadline_s=1.0, max_retries=1, max_retry_wait_s=0.1)
# Shorter still where every example may trickle until the deadline: what is
# proved (the call ends by its deadline, whatever arrives) does not depend on
# how long that deadline is, and each example costs half a second, not one.
TRICKLE = HTTPSettings(timeout_s=0.25, deadline_s=0.5, max_retries=1, max_retry_wait_s=0.1)
# A busy machine (two cores shared by several test runs) may be this late.
MARGIN_S = 2.0
ROUTES = {"openai": OPENAI_ROUTE, "anthropic": ANTHROPIC_ROUTE}


def client_of(provider: str, stub: ProviderStub, options: HTTPSettings = FAST) -> Any:
    if provider == "openai":
        return OpenAICompatibleClient(
            "m", api_key=KEY, base_url=stub.openai_base_url, settings=options, sleep=no_sleep
        )
    return AnthropicClient(
        "m", api_key=KEY, base_url=stub.anthropic_base_url, settings=options, sleep=no_sleep
    )


def no_sleep(seconds: float) -> None:
    pass


def outcome(
    provider: str, responses: list[StubResponse], options: HTTPSettings = FAST
) -> tuple[ModelReply | ModelError, float]:
    """What the client made of `responses` (served in order), and how long it took."""
    with ProviderStub() as stub:
        stub.enqueue(ROUTES[provider], *responses)
        started = time.monotonic()
        try:
            result: ModelReply | ModelError = client_of(provider, stub, options).complete(HI)
        except ModelError as error:
            result = error
        return result, time.monotonic() - started


def assert_well_formed(error: ModelError) -> None:
    text = str(error)
    assert text and "\n" not in text
    assert text.isprintable()
    text.encode("utf-8")  # no lone surrogate: printable on any UTF-8 terminal
    assert KEY.lower() not in text.lower()


def nested(depth: int, inner: bytes = b"1") -> bytes:
    return b'{"a": ' * depth + inner + b"}" * depth


def deep_tool_input(depth: int) -> bytes:
    body = anthropic_tool_use([("toolu_1", "list_stock", {})]).body
    text = json.dumps(body).replace('"input": {}', '"input": ' + nested(depth).decode())
    return text.encode()


def deep_arguments(depth: int) -> bytes:
    body = openai_tool_calls([("call_1", "list_stock", "{}")]).body
    message = body["choices"][0]["message"]
    message["tool_calls"][0]["function"]["arguments"] = "@@"
    return json.dumps(body).replace('"@@"', nested(depth).decode()).encode()


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
LIMIT = sys.getrecursionlimit()
bodies = st.one_of(
    st.binary(max_size=2_000),
    st.text(max_size=300).map(lambda text: text.encode("utf-8", "surrogatepass")),
    json_values.map(lambda value: json.dumps(value).encode()),
    # Nesting past the recursion limit, and just under it (json parses it,
    # then any later walk of it would fail).
    st.integers(1, 20 * LIMIT).map(lambda n: b"[" * n + b"]" * n),
    st.integers(LIMIT - 60, LIMIT + 60).map(nested),
    st.integers(1, 3 * LIMIT).map(deep_tool_input),
    st.integers(1, 3 * LIMIT).map(deep_arguments),
    st.sampled_from(
        [
            b"",
            b"NaN",
            b'{"content": [{"type": "text", "text": NaN}]}',
            b'{"choices": [{"message": {"content": "\\ud800 lone"}}]}',
            b'{"content": [{"type": "text", "text": "\\udfff"}], "\\ud800": 1}',
            b'{"error": {"message": "\\ud800 \\u001b[2J ' + KEY.upper().encode() + b'"}}',
            b"1" * 5_000,  # past int's digit limit
            json.dumps(openai_text("fine").body).encode(),
            json.dumps(anthropic_text("fine").body).encode(),
        ]
    ),
)
statuses = st.sampled_from([200, 200, 200, 400, 401, 404, 429, 500, 503])


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(ROUTES)), bodies, statuses)
def test_any_reply_body_gives_a_reply_or_a_one_line_model_error_in_time(
    provider: str, body: bytes, status: int
) -> None:
    response = raw_reply(body, status=status)
    result, seconds = outcome(provider, [response, response])
    if isinstance(result, ModelError):
        assert_well_formed(result)
    else:
        assert isinstance(result, ModelReply)
        for text in (result.message.content or "", result.model):
            text.encode("utf-8")
    assert seconds <= FAST.deadline_s + MARGIN_S


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(ROUTES)), bodies, st.floats(0.002, 0.2))
def test_a_reply_that_trickles_in_ends_within_the_deadline(
    provider: str, body: bytes, drip_s: float
) -> None:
    response = raw_reply(body, drip_s=drip_s)
    result, seconds = outcome(provider, [response, response], TRICKLE)
    assert isinstance(result, ModelReply | ModelError)
    if isinstance(result, ModelError):
        assert_well_formed(result)
    assert seconds <= TRICKLE.deadline_s + MARGIN_S


@pytest.mark.parametrize("provider", sorted(ROUTES))
def test_a_valid_reply_sent_a_byte_at_a_time_times_out_on_the_whole_call(provider: str) -> None:
    # Each byte arrives well within any per-read timeout; only a deadline on
    # the whole attempt stops it. The one retry trickles too, and the call's
    # deadline ends that.
    body = json.dumps((openai_text if provider == "openai" else anthropic_text)("x" * 500).body)
    response = StubResponse(200, body.encode(), drip_s=0.02)
    result, seconds = outcome(provider, [response, response])
    assert isinstance(result, ModelUnavailableError)
    assert str(result).endswith("(gave up after 2 attempts)")
    assert "within 0.5 s" in str(result) or "within 1 s" in str(result)
    assert seconds <= FAST.deadline_s + MARGIN_S


@pytest.mark.parametrize("provider", sorted(ROUTES))
def test_nesting_past_the_recursion_limit_is_a_response_error(provider: str) -> None:
    depth = 10 * LIMIT
    result, _ = outcome(provider, [raw_reply(b"[" * depth + b"]" * depth)])
    assert isinstance(result, ModelResponseError)
    assert str(result).endswith(f"is nested more than {MAX_JSON_DEPTH} levels deep")


@pytest.mark.parametrize("provider", sorted(ROUTES))
def test_a_tool_input_nested_just_under_the_recursion_limit_is_a_response_error(
    provider: str,
) -> None:
    body = deep_tool_input(LIMIT - 20) if provider == "anthropic" else deep_arguments(LIMIT - 20)
    result, _ = outcome(provider, [raw_reply(body)])
    assert isinstance(result, ModelResponseError)
    assert "nested more than" in str(result)


@pytest.mark.parametrize("provider", sorted(ROUTES))
def test_a_body_past_the_size_limit_is_refused_without_reading_it_all(provider: str) -> None:
    result, _ = outcome(provider, [raw_reply(b" " * (MAX_REPLY_BYTES + 10))])
    assert isinstance(result, ModelResponseError)
    assert str(result).endswith(f"is larger than {MAX_REPLY_BYTES} bytes")


@pytest.mark.parametrize("provider", sorted(ROUTES))
def test_nan_is_not_json(provider: str) -> None:
    result, _ = outcome(provider, [raw_reply(b'{"content": NaN, "choices": NaN}')])
    assert isinstance(result, ModelResponseError)
    assert str(result).endswith("is not JSON")


def test_lone_surrogates_in_reply_text_become_replacement_characters() -> None:
    body = openai_text("@@").body
    text = json.dumps(body).replace('"@@"', '"order \\ud800 six \\udc00"')
    result, _ = outcome("openai", [raw_reply(text.encode())])
    assert isinstance(result, ModelReply)
    assert result.message.content == "order \ufffd six \ufffd"


def test_lone_surrogates_in_a_tool_input_become_replacement_characters() -> None:
    text = json.dumps(anthropic_tool_use([("t", "supplier", {"sku": "@@"})]).body)
    text = text.replace('"@@"', '"SKU-\\ud83d"')
    result, _ = outcome("anthropic", [raw_reply(text.encode())])
    assert isinstance(result, ModelReply)
    (call,) = result.message.tool_calls
    assert json.loads(call.arguments_json) == {"sku": "SKU-\ufffd"}


def test_a_surrogate_pair_is_one_character_and_kept() -> None:
    text = json.dumps(openai_text("@@").body).replace('"@@"', '"ice \\ud83c\\udf66"')
    result, _ = outcome("openai", [raw_reply(text.encode())])
    assert isinstance(result, ModelReply)
    assert result.message.content == "ice \U0001f366"


def test_control_characters_and_surrogates_in_an_error_message_are_not_printed() -> None:
    body = b'{"error": {"message": "bad\\u001b[2J request \\ud800", "type": "x"}}'
    result, _ = outcome("openai", [raw_reply(body, status=400)])
    assert isinstance(result, ModelError)
    assert str(result).endswith("bad\ufffd[2J request \ufffd")
    assert_well_formed(result)
