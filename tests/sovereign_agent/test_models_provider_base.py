"""The provider clients' one base: a new dialect gets checks, retries, deadline, redaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from provider_stub import OPENAI_ROUTE, ProviderStub, openai_error, openai_text

from sovereign_agent.models import (
    AnthropicClient,
    HTTPSettings,
    Message,
    ModelConfigurationError,
    ModelHTTPError,
    ModelReply,
    OpenAICompatibleClient,
    UserMessage,
)
from sovereign_agent.models.openai_compat import openai_messages, parse_chat_completion
from sovereign_agent.models.provider import HTTPModelClient

KEY = "secret-token-dialect-93e1a7"


class Shouting(HTTPModelClient):
    """A made-up provider: Chat Completions on the wire, its key in a header of its own."""

    provider = "shouting"
    client_name = "the shouting client"
    key_variable = "SHOUTING_API_KEY"
    base_url_variable = "SHOUTING_BASE_URL"
    path = "/chat/completions"

    def key_needed(self) -> str | None:
        return "the shouting API needs a key"

    def request_body(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> dict[str, Any]:
        return {"model": self.model, "messages": openai_messages(messages)}

    def headers(self, key: str | None) -> dict[str, str]:
        return {"x-shout-key": key or ""}

    def parse_reply(self, payload: dict[str, Any], *, source: str) -> ModelReply:
        return parse_chat_completion(payload, source=source, model=self.model)


@pytest.fixture
def stub():
    with ProviderStub() as server:
        yield server


def test_both_clients_are_built_on_the_one_base() -> None:
    assert issubclass(OpenAICompatibleClient, HTTPModelClient)
    assert issubclass(AnthropicClient, HTTPModelClient)


def test_a_new_dialect_is_retried_within_its_deadline_and_sends_its_own_header(stub) -> None:
    waits: list[float] = []
    stub.enqueue(OPENAI_ROUTE, openai_error(503, "busy", retry_after="0"), openai_text("LOUD"))
    client = Shouting(
        "m", api_key=KEY, base_url=stub.openai_base_url, settings=None, sleep=waits.append
    )
    reply = client.complete([UserMessage(content="hi")])
    assert reply.message.content == "LOUD"
    assert waits == [0.0]
    _busy, second = stub.requests_to(OPENAI_ROUTE)
    assert second.headers["x-shout-key"] == KEY and "authorization" not in second.headers
    assert client.label == f"shouting:m at {stub.openai_base_url}"
    assert (
        repr(client) == f"Shouting(model='m', base_url='{stub.openai_base_url}', api_key=<hidden>)"
    )


def test_a_new_dialect_never_shows_its_key_in_an_error(stub) -> None:
    stub.enqueue(OPENAI_ROUTE, openai_error(401, f"bad key {KEY.upper()} (ends {KEY[-4:]})"))
    client = Shouting(
        "m", api_key=KEY, base_url=stub.openai_base_url, settings=HTTPSettings(max_retries=0)
    )
    with pytest.raises(ModelHTTPError) as caught:
        client.complete([UserMessage(content="hi")])
    assert str(caught.value).endswith("bad key *** (ends ***)")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model": " ", "api_key": KEY}, "the shouting client needs a model name"),
        (
            {"model": "m", "api_key": None},
            "SHOUTING_API_KEY is not set; the shouting API needs a key "
            "(or use SOVEREIGN_MODEL=offline)",
        ),
        (
            {"model": "m", "api_key": KEY, "base_url": "file:///etc/passwd"},
            "SHOUTING_BASE_URL must be an http:// or https:// URL with a host, "
            "got 'file:///etc/passwd'",
        ),
    ],
    ids=["no model", "no key", "not http"],
)
def test_a_new_dialect_is_checked_when_built(options: dict[str, Any], message: str) -> None:
    options = {"base_url": "http://127.0.0.1:9/v1", "settings": None, **options}
    with pytest.raises(ModelConfigurationError) as refused:
        Shouting(options.pop("model"), **options)
    assert str(refused.value) == message
