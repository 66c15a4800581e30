"""The provider stub answers only as the real providers do.

Every reply and error the stub's builders write is validated against the
official `openai` and `anthropic` SDKs' response models (dev dependencies
only, never imported by the runtime). A test that passes against the stub
then passes against a reply the provider could really have sent.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from provider_sdk import ProviderSdk, provider_sdk
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
from pydantic import ValidationError

texts = st.text(max_size=40)
counts = st.tuples(st.integers(0, 10**6), st.integers(0, 10**6))
json_objects = st.dictionaries(
    st.text(max_size=8), st.none() | st.booleans() | st.integers() | st.text(max_size=8), max_size=4
)
statuses = st.sampled_from([400, 401, 403, 404, 413, 429, 500, 502, 503, 529])


@pytest.fixture(scope="module")
def sdk() -> ProviderSdk:
    return provider_sdk()


def check_openai_error(sdk: ProviderSdk, body: Any) -> None:
    assert set(body) == {"error"}
    sdk.openai_error.model_validate(body["error"])


@given(
    texts | st.none(),
    texts,
    st.sampled_from(["stop", "length", "content_filter"]),
    counts | st.none(),
)
def test_every_chat_completion_text_reply_is_a_valid_sdk_chat_completion(
    sdk: ProviderSdk,
    text: str | None,
    model: str,
    finish_reason: str,
    usage: tuple[int, int] | None,
) -> None:
    body = openai_text(text, model=model, finish_reason=finish_reason, usage=usage).body
    completion = sdk.chat_completion.model_validate(body)
    assert completion.choices[0].message.content == text


@given(st.lists(st.tuples(texts, texts, texts), min_size=1, max_size=3), texts | st.none())
def test_every_chat_completion_tool_call_reply_is_a_valid_sdk_chat_completion(
    sdk: ProviderSdk, calls: list[tuple[str, str, str]], content: str | None
) -> None:
    completion = sdk.chat_completion.model_validate(openai_tool_calls(calls, content=content).body)
    tool_calls = completion.choices[0].message.tool_calls or []
    assert [(c.id, c.function.name, c.function.arguments) for c in tool_calls] == calls


@given(statuses, texts, st.sampled_from(["invalid_request_error", "rate_limit_exceeded"]))
def test_every_openai_error_is_a_valid_sdk_error_object(
    sdk: ProviderSdk, status: int, message: str, kind: str
) -> None:
    check_openai_error(sdk, openai_error(status, message, kind=kind).body)


@given(texts, texts, st.sampled_from(["end_turn", "max_tokens", "stop_sequence"]), counts)
def test_every_messages_text_reply_is_a_valid_sdk_message(
    sdk: ProviderSdk, text: str, model: str, stop_reason: str, usage: tuple[int, int]
) -> None:
    body = anthropic_text(text, model=model, stop_reason=stop_reason, usage=usage).body
    assert sdk.anthropic_message.model_validate(body).content[0].type == "text"


@given(st.lists(st.tuples(texts, texts, json_objects), min_size=1, max_size=3), texts | st.none())
def test_every_messages_tool_use_reply_is_a_valid_sdk_message(
    sdk: ProviderSdk, calls: list[tuple[str, str, dict[str, Any]]], text: str | None
) -> None:
    message = sdk.anthropic_message.model_validate(anthropic_tool_use(calls, text=text).body)
    assert message.stop_reason == "tool_use"


@given(
    statuses,
    texts,
    st.sampled_from(
        [
            "invalid_request_error",
            "authentication_error",
            "permission_error",
            "not_found_error",
            "rate_limit_error",
            "api_error",
            "overloaded_error",
        ]
    ),
)
def test_every_anthropic_error_is_a_valid_sdk_error_response(
    sdk: ProviderSdk, status: int, message: str, kind: str
) -> None:
    sdk.anthropic_error.model_validate(anthropic_error(status, message, kind=kind).body)


def test_the_sdk_models_do_refuse_a_reply_missing_a_required_field(
    sdk: ProviderSdk,
) -> None:
    # Proof that the checks above can fail: the stub's old Chat Completions
    # reply had no `created`, and Anthropic's always carries `usage`.
    completion = openai_text("hi").body
    del completion["created"]
    with pytest.raises(ValidationError, match="created"):
        sdk.chat_completion.model_validate(completion)
    message = anthropic_text("hi").body
    del message["usage"]
    with pytest.raises(ValidationError, match="usage"):
        sdk.anthropic_message.model_validate(message)


def test_an_unscripted_request_gets_the_routes_own_error_shape(
    sdk: ProviderSdk,
) -> None:
    def body_of(stub: ProviderStub, route: str) -> Any:
        request = urllib.request.Request(stub.base_url + route, data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=5)
        assert caught.value.code == 404
        return json.loads(caught.value.read())

    with ProviderStub() as stub:
        check_openai_error(sdk, body_of(stub, OPENAI_ROUTE))
        sdk.anthropic_error.model_validate(body_of(stub, ANTHROPIC_ROUTE))
