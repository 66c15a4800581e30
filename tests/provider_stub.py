"""A real HTTP server on 127.0.0.1 that speaks just enough of both providers' APIs.

Tests give it a queue of scripted responses per route and read back every
request it received, headers and JSON body included:

    with ProviderStub() as stub:
        stub.enqueue(OPENAI_ROUTE, openai_text("hello"))
        client = OpenAICompatibleClient("test-model", base_url=stub.openai_base_url)
        client.complete([UserMessage(content="hi")])
        assert stub.requests[0].json["model"] == "test-model"

A request with nothing left in its route's queue gets a 404 whose message says
so (404 because the clients do not retry it, so one missing response costs one
request, not a burst). Builders below write each provider's reply and error
shapes, so a test states what the provider said, not how it is spelled.
"""

from __future__ import annotations

import json
import socket
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
    "anthropic_text",
    "anthropic_tool_use",
    "openai_error",
    "openai_text",
    "openai_tool_calls",
    "raw_reply",
]

OPENAI_ROUTE = "/v1/chat/completions"
ANTHROPIC_ROUTE = "/v1/messages"


@dataclass(frozen=True)
class StubResponse:
    """One scripted answer. `body` may be a JSON value, or bytes sent as they are.

    `delay_s` holds the answer back (to outlast a client's timeout); the stub
    cuts the wait short when it shuts down, so a slow answer never slows a test's exit.
    """

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    # Announce a Content-Length other than the body's, to send a cut-off reply.
    declared_length: int | None = None


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
    """Start with `with ProviderStub() as stub:`; every address it uses is 127.0.0.1."""

    def __init__(self) -> None:
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
        return f"http://127.0.0.1:{self.port}"

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
            response = StubResponse(
                404,
                {"error": {"message": f"provider stub: no scripted response for {handler.path}"}},
            )
        if response.delay_s and self._stopping.wait(response.delay_s):
            return
        payload = (
            response.body
            if isinstance(response.body, bytes)
            else json.dumps(response.body).encode("utf-8")
        )
        try:
            handler.send_response(response.status)
            headers = {"Content-Type": "application/json", **response.headers}
            for name, value in headers.items():
                handler.send_header(name, value)
            length = len(payload) if response.declared_length is None else response.declared_length
            handler.send_header("Content-Length", str(length))
            handler.end_headers()
            handler.wfile.write(payload)
            if response.declared_length is not None:
                # Close now, so the client sees the reply end short instead of waiting.
                handler.close_connection = True
                handler.wfile.flush()
                handler.connection.shutdown(socket.SHUT_RDWR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first (a timeout test); nothing is listening


# -- OpenAI Chat Completions shapes -------------------------------------
def openai_text(
    text: str | None,
    *,
    model: str = "stub-model",
    finish_reason: str = "stop",
    usage: tuple[int, int] | None = (11, 7),
) -> StubResponse:
    return _openai_reply({"role": "assistant", "content": text}, model, finish_reason, usage)


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
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
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
    return StubResponse(status, {"error": {"message": message, "type": kind}}, headers)


# -- Anthropic Messages shapes ------------------------------------------
def anthropic_text(
    text: str,
    *,
    model: str = "stub-model",
    stop_reason: str = "end_turn",
    usage: tuple[int, int] | None = (13, 5),
) -> StubResponse:
    return _anthropic_reply([{"type": "text", "text": text}], model, stop_reason, usage)


def anthropic_tool_use(
    calls: Iterable[tuple[str, str, Any]],
    *,
    text: str | None = None,
    model: str = "stub-model",
    usage: tuple[int, int] | None = (29, 12),
) -> StubResponse:
    """`calls` are (id, name, input object), as the API sends them."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [
        {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
        for call_id, name, arguments in calls
    ]
    return _anthropic_reply(blocks, model, "tool_use", usage)


def _anthropic_reply(
    blocks: list[dict[str, Any]], model: str, stop_reason: str, usage: tuple[int, int] | None
) -> StubResponse:
    body: dict[str, Any] = {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
    }
    if usage is not None:
        body["usage"] = {"input_tokens": usage[0], "output_tokens": usage[1]}
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
    body: bytes, *, status: int = 200, delay_s: float = 0.0, content_type: str = "application/json"
) -> StubResponse:
    """Bytes sent as they are: malformed JSON, HTML from a proxy, an empty body."""
    return StubResponse(status, body, {"Content-Type": content_type}, delay_s)
