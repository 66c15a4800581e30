"""Support the book does not print: what every provider client shares, leaving each its dialect.

A client for a provider's API does two kinds of work. The shared kind is here,
once: the model name, the base URL and the key checked when the client is
built, the key kept as a `Secret`, the label and `repr` a reader sees (never
the key), and one `complete` that posts through `http.post_json` (the deadline,
the bounded retry, the errors of `base.py`, every message free of the key).
The provider's own kind is what a subclass writes: the path it posts to, the
headers that carry the key, the request body in its dialect, and how its
reply becomes a neutral `ModelReply`.

A client can also ask for its reply as a stream (`stream`): the same request
with the dialect's streaming switch, read piece by piece through
`http.post_stream`, and handed back only once the dialect's assembler says the
stream is whole (`models.streaming`).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from sovereign_agent.models.base import ModelConfigurationError
from sovereign_agent.models.http import (
    HTTPSettings,
    Secret,
    check_base_url,
    display_url,
    post_json,
    post_stream,
    read_api_key,
)
from sovereign_agent.models.messages import Message, ModelReply
from sovereign_agent.models.streaming import ServerEventDecoder, StreamAssembler

__all__ = ["HTTPModelClient"]


class HTTPModelClient(ABC):
    """The base of a client that speaks one provider's HTTP API.

    A subclass names its provider (`provider`, the label's prefix; `client_name`,
    for messages), the variables its key and base URL come from, the `path`
    it posts to, and writes the four methods of its dialect.
    """

    provider: ClassVar[str]
    client_name: ClassVar[str]
    key_variable: ClassVar[str]
    base_url_variable: ClassVar[str]
    path: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str,
        settings: HTTPSettings | None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model.strip():
            raise ModelConfigurationError(f"{self.client_name} needs a model name")
        self._check_options()
        self.model = model
        self.base_url = check_base_url(base_url, variable=self.base_url_variable)
        self._key: Secret | None = read_api_key(api_key, variable=self.key_variable)
        if self._key is None:
            needed = self.key_needed()
            if needed is not None:
                raise ModelConfigurationError(
                    f"{self.key_variable} is not set; {needed} (or use SOVEREIGN_MODEL=offline)"
                )
        self.settings = settings or HTTPSettings()
        self._sleep = sleep

    def _check_options(self) -> None:
        """Refuse a provider's own option that is wrong; called after the model name is checked."""
        return None

    def key_needed(self) -> str | None:
        """Why this client cannot work without a key, or None when it can."""
        return None

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model} at {display_url(self.base_url)}"

    def __repr__(self) -> str:
        key = "<hidden>" if self._key else "<none>"
        return (
            f"{type(self).__name__}(model={self.model!r}, "
            f"base_url={display_url(self.base_url)!r}, api_key={key})"
        )

    @abstractmethod
    def request_body(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> dict[str, Any]:
        """Exactly the JSON `complete` would send, so a reader can look before paying."""

    @abstractmethod
    def headers(self, key: str | None) -> Mapping[str, str]:
        """The headers of one request; `key` is the revealed key, or None when there is none."""

    @abstractmethod
    def parse_reply(self, payload: dict[str, Any], *, source: str) -> ModelReply:
        """The provider's reply in neutral form; anything unreadable is a `ModelResponseError`."""

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        url = f"{self.base_url}{self.path}"
        key = None if self._key is None else self._key.reveal()
        payload = post_json(
            url,
            self.request_body(messages, tools=tools),
            headers=self.headers(key),
            settings=self.settings,
            # Every message a failure raises is searched for the key it sent.
            secrets=() if key is None else (key,),
            sleep=self._sleep,
        )
        return self.parse_reply(payload, source=display_url(url))

    def stream_body(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> dict[str, Any]:
        """The request `stream` sends: `request_body` with the dialect's streaming switch on."""
        return {**self.request_body(messages, tools=tools), "stream": True}

    def stream_assembler(self) -> StreamAssembler:
        """The assembler for this dialect's stream events; a dialect that streams overrides it."""
        raise NotImplementedError(f"{self.client_name} does not stream")

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] = (),
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        """One reply asked for as a stream; returned only whole, text shown as it arrives.

        A stream cut or malformed part-way raises a `ModelResponseError`, so
        no call of a half-received reply ever reaches the loop.
        """
        url = f"{self.base_url}{self.path}"
        key = None if self._key is None else self._key.reveal()
        decoder = ServerEventDecoder()
        assembler = self.stream_assembler()

        def receive(chunk: bytes) -> None:
            for event in decoder.feed(chunk):
                shown = assembler.add(event)
                if shown is not None and on_text is not None:
                    on_text(shown)

        post_stream(
            url,
            self.stream_body(messages, tools=tools),
            headers=self.headers(key),
            settings=self.settings,
            receive=receive,
            secrets=() if key is None else (key,),
        )
        return assembler.reply()
