"""A real HTTP server on 127.0.0.1 that speaks just enough of both providers' APIs.

Tests give it a queue of scripted responses per route and read back every
request it received, headers and JSON body included:

    with ProviderStub() as stub:
        stub.enqueue(OPENAI_ROUTE, openai_text("hello"))
        client = OpenAICompatibleClient("test-model", base_url=stub.openai_base_url)
        client.complete([UserMessage(content="hi")])
        assert stub.requests[0].json["model"] == "test-model"

A request with nothing left in its route's queue gets a 404 in that provider's
error shape, whose message says so (404 because the clients do not retry it,
so one missing response costs one request, not a burst). Builders below write
each provider's reply and error shapes exactly as the provider sends them (a
test validates every one against the providers' official SDK models), so a
test states what the provider said, not how it is spelled. `raw_reply` and a
`StubResponse` with a hand-written body are for what no provider sends.
"""

from __future__ import annotations

import contextlib
import http
import json
import socket
import ssl
import struct
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "ANTHROPIC_ROUTE",
    "OPENAI_ROUTE",
    "ProviderStub",
    "RecordedRequest",
    "StubResponse",
    "anthropic_error",
    "anthropic_stream",
    "anthropic_stream_events",
    "anthropic_text",
    "anthropic_tool_use",
    "openai_error",
    "openai_stream",
    "openai_stream_events",
    "openai_text",
    "openai_tool_calls",
    "raw_reply",
    "server_events",
]

OPENAI_ROUTE = "/v1/chat/completions"
ANTHROPIC_ROUTE = "/v1/messages"


@dataclass(frozen=True)
class StubResponse:
    """One scripted answer. `body` may be a JSON value, or bytes sent as they are.

    `delay_s` holds the answer back (to outlast a client's timeout); `drip_s`
    sends the whole answer, status line included, one byte at a time with that
    pause between bytes (a server that trickles). The stub cuts both short
    when it shuts down, so a slow answer never slows a test's exit.
    """

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    # Announce a Content-Length other than the body's, to send a cut-off reply.
    declared_length: int | None = None
    drip_s: float = 0.0
    # Reset the connection (TCP RST) instead of answering.
    reset: bool = False


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]  # lower-cased names
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class ProviderStub:
    """Start with `with ProviderStub() as stub:`; every address it uses is 127.0.0.1.

    With a server-side `tls` context it speaks HTTPS, and its URLs say so.
    """

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._queues: dict[str, deque[StubResponse]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[RecordedRequest] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                stub._answer(self)

            def do_GET(self) -> None:
                stub._answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output for test failures

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._scheme = "http"
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
            self._scheme = "https"
        # A short poll interval: shutdown() waits for the next poll, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- lifecycle -------------------------------------------------------
    def __enter__(self) -> ProviderStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # -- addresses -------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"{self._scheme}://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """What OPENAI_BASE_URL is set to: the client appends /chat/completions."""
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """What ANTHROPIC_BASE_URL is set to: the client appends /v1/messages."""
        return self.base_url

    # -- scripting and reading back -------------------------------------
    def enqueue(self, route: str, *responses: StubResponse) -> None:
        with self._lock:
            self._queues.setdefault(route, deque()).extend(responses)

    def pending(self, route: str) -> int:
        """Responses not yet used: a test can assert its whole script was consumed."""
        with self._lock:
            return len(self._queues.get(route, ()))

    def requests_to(self, route: str) -> list[RecordedRequest]:
        with self._lock:
            return [request for request in self.requests if request.path == route]

    # -- serving ---------------------------------------------------------
    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        recorded = RecordedRequest(
            method=handler.command,
            path=handler.path,
            headers={name.lower(): value for name, value in handler.headers.items()},
            body=body,
        )
        with self._lock:
            self.requests.append(recorded)
            queue = self._queues.get(handler.path)
            response = queue.popleft() if queue else None
        if response is None:
            unscripted = f"provider stub: no scripted response for {handler.path}"
            if handler.path == ANTHROPIC_ROUTE:
                response = anthropic_error(404, unscripted, kind="not_found_error")
            else:
                response = openai_error(404, unscripted)
        if response.delay_s and self._stopping.wait(response.delay_s):
            return
        handler.close_connection = True
        if response.reset:
            # Linger 0: closing sends a reset, not an orderly end of stream.
            handler.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )
            handler.connection.close()
            return
        # The client may have given up first (a timeout test): nothing is listening.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._send(handler, response)

    def _send(self, handler: BaseHTTPRequestHandler, response: StubResponse) -> None:
        payload = (
            response.body
            if isinstance(response.body, bytes)
            else json.dumps(response.body).encode("utf-8")
        )
        length = len(payload) if response.declared_length is None else response.declared_length
        try:
            reason = http.HTTPStatus(response.status).phrase
        except ValueError:
            reason = "Unknown"
        headers = {
            "Content-Type": "application/json",
            **response.headers,
            "Content-Length": str(length),
            "Connection": "close",
        }
        head = f"HTTP/1.1 {response.status} {reason}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers.items()
        )
        wire = head.encode("latin-1") + b"\r\n" + payload
        if response.drip_s:
            for position in range(len(wire)):
                handler.wfile.write(wire[position : position + 1])
                handler.wfile.flush()
                if self._stopping.wait(response.drip_s):
                    return
        else:
            handler.wfile.write(wire)
            handler.wfile.flush()
        if response.declared_length is not None:
            # Close now, so the client sees the reply end short instead of waiting.
            handler.connection.shutdown(socket.SHUT_RDWR)


# -- OpenAI Chat Completions shapes -------------------------------------
# What api.openai.com sends: every field the official SDK's `ChatCompletion`
# requires, and the nulls the API writes out rather than leaving out.
def openai_text(
    text: str | None,
    *,
    model: str = "stub-model",
    finish_reason: str = "stop",
    usage: tuple[int, int] | None = (11, 7),
) -> StubResponse:
    message = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
    return _openai_reply(message, model, finish_reason, usage)


def openai_tool_calls(
    calls: Sequence[tuple[str, str, str]],
    *,
    content: str | None = None,
    model: str = "stub-model",
    usage: tuple[int, int] | None = (23, 9),
) -> StubResponse:
    """`calls` are (id, name, arguments as JSON text), as the API sends them."""
    message = {
        "role": "assistant",
        "content": content,
        "refusal": None,
        "annotations": [],
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in calls
        ],
    }
    return _openai_reply(message, model, "tool_calls", usage)


def _openai_reply(
    message: dict[str, Any], model: str, finish_reason: str, usage: tuple[int, int] | None
) -> StubResponse:
    body: dict[str, Any] = {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 1767225600,  # 2026-01-01T00:00:00Z
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "service_tier": "default",
        "system_fingerprint": None,
    }
    # Usage is optional in the API's schema: local servers may leave it out.
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return StubResponse(200, body)


def openai_error(
    status: int,
    message: str,
    *,
    retry_after: str | None = None,
    kind: str = "invalid_request_error",
) -> StubResponse:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    error = {"message": message, "type": kind, "param": None, "code": None}
    return StubResponse(status, {"error": error}, headers)


# -- Anthropic Messages shapes ------------------------------------------
# What api.anthropic.com sends: every field the official SDK's `Message` requires.
def anthropic_text(
    text: str,
    *,
    model: str = "stub-model",
    stop_reason: str = "end_turn",
    usage: tuple[int, int] = (13, 5),
) -> StubResponse:
    return _anthropic_reply([{"type": "text", "text": text}], model, stop_reason, usage)


def anthropic_tool_use(
    calls: Iterable[tuple[str, str, Any]],
    *,
    text: str | None = None,
    model: str = "stub-model",
    usage: tuple[int, int] = (29, 12),
) -> StubResponse:
    """`calls` are (id, name, input object), as the API sends them."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [
        {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
        for call_id, name, arguments in calls
    ]
    return _anthropic_reply(blocks, model, "tool_use", usage)


def _anthropic_reply(
    blocks: list[dict[str, Any]], model: str, stop_reason: str, usage: tuple[int, int]
) -> StubResponse:
    body: dict[str, Any] = {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }
    return StubResponse(200, body)


def anthropic_error(
    status: int,
    message: str,
    *,
    retry_after: str | None = None,
    kind: str = "invalid_request_error",
) -> StubResponse:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return StubResponse(status, body, headers)


def raw_reply(
    body: bytes,
    *,
    status: int = 200,
    delay_s: float = 0.0,
    drip_s: float = 0.0,
    content_type: str = "application/json",
) -> StubResponse:
    """Bytes sent as they are: malformed JSON, HTML from a proxy, an empty body."""
    return StubResponse(status, body, {"Content-Type": content_type}, delay_s, drip_s=drip_s)


# -- Streams --------------------------------------------------------------
# Both providers stream as server-sent events. The builders write each event
# exactly as the provider does (a test validates every one against the SDKs'
# stream event types), with text and arguments cut into `piece`-character
# fragments, so a test can put a fragment boundary anywhere.
def _pieces(text: str, piece: int) -> list[str]:
    return [text[start : start + piece] for start in range(0, len(text), piece)] or [""]


def openai_stream_events(
    text: str | None,
    calls: Sequence[tuple[str, str, str]] = (),
    *,
    model: str = "stub-model",
    usage: tuple[int, int] | None = (23, 9),
    piece: int = 8,
) -> list[dict[str, Any]]:
    """Chat Completions chunks: role, text pieces, each call's id and name then its arguments."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion.chunk",
            "created": 1767225600,
            "model": model,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
            "service_tier": "default",
            "system_fingerprint": None,
        }

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if text:
        events += [chunk({"content": part}) for part in _pieces(text, piece)]
    for index, (call_id, name, arguments) in enumerate(calls):
        opening = {"index": index, "id": call_id, "type": "function"}
        events.append(
            chunk({"tool_calls": [{**opening, "function": {"name": name, "arguments": ""}}]})
        )
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
            for part in _pieces(arguments, piece)
        ]
    events.append(chunk({}, "tool_calls" if calls else "stop"))
    if usage is not None:
        # Sent only when the request asked for it (stream_options.include_usage).
        last = chunk({})
        last["choices"] = []
        last["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
        events.append(last)
    return events


def anthropic_stream_events(
    text: str | None,
    calls: Iterable[tuple[str, str, Any]] = (),
    *,
    model: str = "stub-model",
    usage: tuple[int, int] = (29, 12),
    piece: int = 8,
) -> list[dict[str, Any]]:
    """Messages stream events: message_start, each block started, filled, stopped; message_stop."""
    calls = list(calls)
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_stub",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": usage[0], "output_tokens": 1},
            },
        }
    ]
    index = 0
    if text:
        events.append(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        )
        events += [
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": part},
            }
            for part in _pieces(text, piece)
        ]
        events.append({"type": "content_block_stop", "index": 0})
        index = 1
    for offset, (call_id, name, arguments) in enumerate(calls):
        block = index + offset
        start = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events.append({"type": "content_block_start", "index": block, "content_block": start})
        events += [
            {
                "type": "content_block_delta",
                "index": block,
                "delta": {"type": "input_json_delta", "partial_json": part},
            }
            for part in _pieces(json.dumps(arguments), piece)
        ]
        events.append({"type": "content_block_stop", "index": block})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": usage[1]},
        }
    )
    events.append({"type": "message_stop"})
    return events


def server_events(events: Iterable[dict[str, Any]], *, named: bool) -> bytes:
    """Events as the bytes on the wire: Anthropic names each event, OpenAI ends with [DONE]."""
    wire = b""
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        wire += (head + "data: " + json.dumps(event) + "\n\n").encode("utf-8")
    if not named:
        wire += b"data: [DONE]\n\n"
    return wire


def _stream_response(wire: bytes, declared_length: int | None) -> StubResponse:
    headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    return StubResponse(200, wire, headers, declared_length=declared_length)


def openai_stream(
    text: str | None,
    calls: Sequence[tuple[str, str, str]] = (),
    *,
    cut_at: int | None = None,
    **options: Any,
) -> StubResponse:
    """A streamed Chat Completions reply; `cut_at` sends only that many bytes, then hangs up."""
    wire = server_events(openai_stream_events(text, calls, **options), named=False)
    return _stream_response(wire[:cut_at], None if cut_at is None else len(wire))


def anthropic_stream(
    text: str | None,
    calls: Iterable[tuple[str, str, Any]] = (),
    *,
    cut_at: int | None = None,
    **options: Any,
) -> StubResponse:
    """A streamed Messages reply; `cut_at` sends only that many bytes, then hangs up."""
    wire = server_events(anthropic_stream_events(text, calls, **options), named=True)
    return _stream_response(wire[:cut_at], None if cut_at is None else len(wire))
