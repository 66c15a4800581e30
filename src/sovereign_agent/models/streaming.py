"""Support the book does not print: streamed replies, assembled whole before anything runs.

A provider can send its reply as it writes it: server-sent events, each a
small piece. Chat Completions sends chunks whose `delta.tool_calls[index]`
carry a call's id and name once and its arguments in fragments, then
`data: [DONE]`; Anthropic's Messages API sends `message_start`, a
`content_block_start` per block, `input_json_delta` fragments of a tool's
input, and `message_stop`. Either way, a fragment of arguments is not a
request anyone may act on. The assemblers here collect the pieces and give
back one `ModelReply` only when the stream has said it is over; a stream that
stops early, or sends a piece out of its dialect's order, is a
`ModelResponseError`, so the loop stops with `model_error` and nothing runs.

Text deltas are different: text is only shown, never run, so each one can be
handed to `on_text` as it arrives.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sovereign_agent.models.base import ModelResponseError
from sovereign_agent.models.messages import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelReply,
    Usage,
)

__all__ = [
    "MAX_STREAM_BYTES",
    "ChatCompletionAssembler",
    "MessagesAssembler",
    "ServerEvent",
    "ServerEventDecoder",
    "StreamAssembler",
    "StreamingModel",
    "assemble",
]

# A streamed reply is bounded like a whole one: past this many bytes it is not
# a chat reply, and holding it would let a broken server fill our memory.
MAX_STREAM_BYTES = 8 * 1024 * 1024
# One event's data; the largest real one is a single text or argument fragment.
MAX_EVENT_BYTES = 1024 * 1024
# No stream event nests this deep (the arguments travel as text inside them).
MAX_EVENT_DEPTH = 32
# More calls than this in one reply is not a turn any shop tool set asks for.
MAX_STREAMED_CALLS = 128


@dataclass(frozen=True)
class ServerEvent:
    """One server-sent event: its `event:` name (empty when none was sent) and its data."""

    name: str
    data: str


class ServerEventDecoder:
    """Turns bytes, cut anywhere (even inside a UTF-8 character), into whole events.

    An event is whole only at the blank line that ends it; what is left over
    when the bytes stop is an event the server never finished, and is dropped.
    """

    def __init__(self, *, limit: int = MAX_STREAM_BYTES) -> None:
        self._pending = b""
        self._name = ""
        self._data: list[str] = []
        self._size = 0
        self._limit = limit

    def feed(self, chunk: bytes) -> list[ServerEvent]:
        self._size += len(chunk)
        if self._size > self._limit:
            raise ModelResponseError(f"the stream is larger than {self._limit} bytes")
        self._pending += chunk
        events: list[ServerEvent] = []
        while True:
            end = self._pending.find(b"\n")
            if end < 0:
                if len(self._pending) > MAX_EVENT_BYTES:
                    raise ModelResponseError("a stream line is longer than the limit")
                return events
            raw, self._pending = self._pending[:end], self._pending[end + 1 :]
            try:
                line = raw.removesuffix(b"\r").decode("utf-8")
            except UnicodeDecodeError:
                raise ModelResponseError("a stream line is not UTF-8") from None
            event = self._line(line)
            if event is not None:
                events.append(event)

    def _line(self, line: str) -> ServerEvent | None:
        if not line:
            # A blank line ends an event; one without data is only a keep-alive.
            name, data = self._name, self._data
            self._name, self._data = "", []
            return ServerEvent(name, "\n".join(data)) if data else None
        if line.startswith(":"):
            return None  # a comment, which servers send to keep a connection open
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "event":
            self._name = value
        elif key == "data":
            self._data.append(value)
        # `id:` and `retry:` are for browsers reconnecting; a reply is asked for once.
        return None


def _object(data: str) -> dict[str, Any]:
    """One event's data as a JSON object of bounded depth, or a `ModelResponseError`."""
    try:
        value = json.loads(data, parse_constant=_not_json)
    except (ValueError, RecursionError):
        raise ModelResponseError("a stream event is not JSON") from None
    if not isinstance(value, dict):
        raise ModelResponseError("a stream event is JSON but not an object")
    level: list[Any] = [value]
    for _ in range(MAX_EVENT_DEPTH):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]
        if not level:
            return value
    raise ModelResponseError("a stream event is nested too deeply")


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise ModelResponseError(f"{what} is not text")
    return value


def _count(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


class StreamAssembler(Protocol):
    """Collects one dialect's events; `reply` exists only once the stream said it ended."""

    def add(self, event: ServerEvent) -> str | None:
        """Take one event; the text it adds to the answer, if any, to show at once."""
        ...

    def reply(self) -> ModelReply: ...


@dataclass
class _PartialCall:
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)


class ChatCompletionAssembler:
    """Chat Completions chunks into one reply; complete only after `data: [DONE]`."""

    def __init__(self, *, model: str) -> None:
        self._model = model
        self._answered_by: str | None = None
        self._text: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._done = False

    def add(self, event: ServerEvent) -> str | None:
        if self._done:
            raise ModelResponseError("the stream went on after [DONE]")
        if event.data == "[DONE]":
            self._done = True
            return None
        chunk = _object(event.data)
        if chunk.get("object") == "error" or "error" in chunk:
            raise ModelResponseError("the stream ended with an error event")
        answered_by = chunk.get("model")
        if isinstance(answered_by, str) and answered_by:
            self._answered_by = answered_by
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            given, produced = (
                _count(usage.get("prompt_tokens")),
                _count(usage.get("completion_tokens")),
            )
            if given is not None and produced is not None:
                self._usage = Usage(input_tokens=given, output_tokens=produced)
        choices = chunk.get("choices", [])
        if not isinstance(choices, list):
            raise ModelResponseError("a chunk's choices is not a list")
        shown: list[str] = []
        for choice in choices:
            if not isinstance(choice, dict):
                raise ModelResponseError("a chunk's choice is not an object")
            if choice.get("index", 0) != 0:
                continue  # only the first choice is the reply, as unstreamed
            shown.extend(self._delta(choice))
        return "".join(shown) or None

    def _delta(self, choice: dict[str, Any]) -> list[str]:
        finish_reason = choice.get("finish_reason")
        if isinstance(finish_reason, str):
            self._finish_reason = finish_reason
        delta = choice.get("delta", {})
        if not isinstance(delta, dict):
            raise ModelResponseError("a chunk's delta is not an object")
        shown: list[str] = []
        content = delta.get("content")
        if content is not None:
            shown.append(_text(content, "a content delta"))
            self._text.append(content)
        for fragment in delta.get("tool_calls") or []:
            self._call_fragment(fragment)
        return shown

    def _call_fragment(self, fragment: object) -> None:
        if not isinstance(fragment, dict):
            raise ModelResponseError("a tool call fragment is not an object")
        index = _count(fragment.get("index"))
        if index is None:
            raise ModelResponseError("a tool call fragment has no index")
        function = fragment.get("function") or {}
        if not isinstance(function, dict):
            raise ModelResponseError("a tool call fragment's function is not an object")
        call = self._calls.get(index)
        if call is None:
            # The first fragment of a call names it; without that, the pieces
            # after it would belong to nobody.
            if "id" not in fragment or "name" not in function:
                raise ModelResponseError("a tool call's first fragment has no id or name")
            if len(self._calls) == MAX_STREAMED_CALLS:
                raise ModelResponseError(f"more than {MAX_STREAMED_CALLS} calls in one reply")
            call = _PartialCall(
                _text(fragment["id"], "a tool call id"), _text(function["name"], "a tool name")
            )
            self._calls[index] = call
        elif fragment.get("id") not in (None, call.id):
            raise ModelResponseError("a tool call fragment changes its call's id")
        arguments = function.get("arguments")
        if arguments is not None:
            call.arguments.append(_text(arguments, "a tool call's arguments"))

    def reply(self) -> ModelReply:
        if not self._done:
            raise ModelResponseError("the stream was cut before [DONE]")
        calls = tuple(
            AssistantToolCall(id=call.id, name=call.name, arguments_json="".join(call.arguments))
            for _, call in sorted(self._calls.items())
        )
        # Chat Completions opens every stream with an empty content delta; a
        # reply that said nothing has no content, as when it is not streamed.
        text = "".join(self._text)
        return ModelReply(
            message=AssistantMessage(content=text or None, tool_calls=calls),
            model=self._answered_by or self._model,
            finish_reason=self._finish_reason,
            usage=self._usage,
        )


@dataclass
class _Block:
    kind: str
    parts: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    stopped: bool = False


class MessagesAssembler:
    """Anthropic's stream events into one reply; complete only after `message_stop`."""

    def __init__(self, *, model: str) -> None:
        self._model = model
        self._answered_by: str | None = None
        self._started = False
        self._blocks: dict[int, _Block] = {}
        self._stop_reason: str | None = None
        self._input_tokens: int | None = None
        self._output_tokens: int | None = None
        self._stopped = False

    def add(self, event: ServerEvent) -> str | None:
        if self._stopped:
            raise ModelResponseError("the stream went on after message_stop")
        payload = _object(event.data)
        kind = payload.get("type")
        if event.name and event.name != kind:
            raise ModelResponseError("a stream event's name and type disagree")
        if kind == "ping":
            return None
        if kind == "error":
            raise ModelResponseError("the stream ended with an error event")
        if kind == "message_start":
            self._start(payload)
            return None
        if not self._started:
            raise ModelResponseError(f"{kind!r} came before message_start")
        if kind == "content_block_start":
            self._block_start(payload)
        elif kind == "content_block_delta":
            return self._block_delta(payload)
        elif kind == "content_block_stop":
            self._block(payload).stopped = True
        elif kind == "message_delta":
            self._message_delta(payload)
        elif kind == "message_stop":
            if not all(block.stopped for block in self._blocks.values()):
                raise ModelResponseError("message_stop came before every block had stopped")
            self._stopped = True
        else:
            raise ModelResponseError(f"an unknown stream event {kind!r}")
        return None

    def _start(self, payload: dict[str, Any]) -> None:
        if self._started:
            raise ModelResponseError("a second message_start")
        self._started = True
        message = payload.get("message")
        if not isinstance(message, dict):
            raise ModelResponseError("message_start has no message")
        answered_by = message.get("model")
        if isinstance(answered_by, str) and answered_by:
            self._answered_by = answered_by
        usage = message.get("usage")
        if isinstance(usage, dict):
            self._input_tokens = _count(usage.get("input_tokens"))
            self._output_tokens = _count(usage.get("output_tokens"))

    def _block(self, payload: dict[str, Any]) -> _Block:
        index = _count(payload.get("index"))
        if index is None or index not in self._blocks:
            raise ModelResponseError("an event for a block that never started")
        block = self._blocks[index]
        if block.stopped:
            raise ModelResponseError("an event for a block that had stopped")
        return block

    def _block_start(self, payload: dict[str, Any]) -> None:
        index = _count(payload.get("index"))
        if index is None or index in self._blocks:
            raise ModelResponseError("content_block_start without a new index")
        if len(self._blocks) == MAX_STREAMED_CALLS:
            raise ModelResponseError(f"more than {MAX_STREAMED_CALLS} blocks in one reply")
        started = payload.get("content_block")
        if not isinstance(started, dict):
            raise ModelResponseError("content_block_start has no block")
        kind = str(started.get("type"))
        block = _Block(kind)
        if kind == "text":
            block.parts.append(_text(started.get("text", ""), "a text block"))
        elif kind == "tool_use":
            block.call_id = _text(started.get("id"), "a tool_use id")
            block.name = _text(started.get("name"), "a tool_use name")
            if started.get("input") not in (None, {}):
                # The API starts every tool_use with an empty input and sends
                # the real one as fragments; anything else is not its stream.
                raise ModelResponseError("a tool_use block starts with a non-empty input")
        self._blocks[index] = block

    def _block_delta(self, payload: dict[str, Any]) -> str | None:
        block = self._block(payload)
        delta = payload.get("delta")
        if not isinstance(delta, dict):
            raise ModelResponseError("content_block_delta has no delta")
        kind = delta.get("type")
        if kind == "text_delta" and block.kind == "text":
            text = _text(delta.get("text"), "a text delta")
            block.parts.append(text)
            return text or None
        if kind == "input_json_delta" and block.kind == "tool_use":
            block.parts.append(_text(delta.get("partial_json"), "an input_json_delta"))
            return None
        if block.kind in ("text", "tool_use"):
            raise ModelResponseError(f"a {kind!r} delta inside a {block.kind} block")
        # Thinking and other block kinds are not part of the reply the
        # runtime acts on, as in a reply that was not streamed.
        return None

    def _message_delta(self, payload: dict[str, Any]) -> None:
        delta = payload.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
            self._stop_reason = delta["stop_reason"]
        usage = payload.get("usage")
        if isinstance(usage, dict):
            # The count in message_delta is the whole reply's so far, not an increment.
            produced = _count(usage.get("output_tokens"))
            if produced is not None:
                self._output_tokens = produced
            given = _count(usage.get("input_tokens"))
            if given is not None:
                self._input_tokens = given

    def reply(self) -> ModelReply:
        if not self._stopped:
            raise ModelResponseError("the stream was cut before message_stop")
        texts: list[str] = []
        calls: list[AssistantToolCall] = []
        for _, block in sorted(self._blocks.items()):
            if block.kind == "text":
                texts.append("".join(block.parts))
            elif block.kind == "tool_use":
                calls.append(self._call(block))
        usage = None
        if self._input_tokens is not None and self._output_tokens is not None:
            usage = Usage(input_tokens=self._input_tokens, output_tokens=self._output_tokens)
        return ModelReply(
            message=AssistantMessage(
                content="".join(texts) if texts else None, tool_calls=tuple(calls)
            ),
            model=self._answered_by or self._model,
            finish_reason=self._stop_reason,
            usage=usage,
        )

    @staticmethod
    def _call(block: _Block) -> AssistantToolCall:
        # The input arrives as fragments of JSON text; it is whole only now.
        # Written back as the unstreamed parser writes it, so both are equal.
        text = "".join(block.parts) or "{}"
        value = _object(text)
        return AssistantToolCall(
            id=block.call_id, name=block.name, arguments_json=json.dumps(value, allow_nan=False)
        )


def assemble(
    chunks: Iterable[bytes],
    assembler: StreamAssembler,
    *,
    on_text: Callable[[str], None] | None = None,
) -> ModelReply:
    """Bytes of a stream, cut anywhere, into the reply; text shown as it comes."""
    decoder = ServerEventDecoder()
    for chunk in chunks:
        for event in decoder.feed(chunk):
            shown = assembler.add(event)
            if shown is not None and on_text is not None:
                on_text(shown)
    return assembler.reply()


class Streams(Protocol):
    """A client that can ask for its reply as a stream (`HTTPModelClient` can)."""

    @property
    def label(self) -> str: ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] = (),
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply: ...


class StreamingModel:
    """A `ModelClient` that asks for every reply as a stream and hands the loop only whole ones.

    The loop needs no change: `complete` returns after the stream ended, or
    raises the `ModelError` that a cut or malformed stream is.
    """

    def __init__(self, client: Streams, *, on_text: Callable[[str], None] | None = None) -> None:
        self._client = client
        self._on_text = on_text

    @property
    def label(self) -> str:
        return f"{self._client.label}, streamed"

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        return self._client.stream(messages, tools=tools, on_text=self._on_text)
