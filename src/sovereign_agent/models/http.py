"""Support the book does not print: the one HTTP door every provider client goes through.

Built on the standard library's `urllib` on purpose: the runtime's required
dependencies stay Pydantic alone, so a reader who installed the book installs
nothing more to talk to a real model. The price is a few lines we write
ourselves: deadlines, a bounded retry, readable errors, and keys kept out of
every message. Whatever a server sends, a call ends in a reply or in one of
the `ModelError`s of `base.py`, within its deadline.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import math
import random
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sovereign_agent.models._transport import open_before
from sovereign_agent.models.base import (
    ModelConfigurationError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelUnavailableError,
)
from sovereign_agent.redaction import printable_line

__all__ = ["HTTPSettings"]

logger = logging.getLogger("sovereign_agent.models")

# A reply larger than this is not a chat reply; reading it whole would let a
# broken or hostile server fill our memory.
MAX_REPLY_BYTES = 8 * 1024 * 1024
# An error body is read only for its message.
MAX_ERROR_BODY_BYTES = 16 * 1024
# No chat reply nests this deep; past it a reply is refused before anything
# walks it, so no later step can hit the interpreter's recursion limit.
MAX_JSON_DEPTH = 64
# How much of a stream is read at once: small enough that text is shown as it
# comes, large enough that a long reply is not read a few bytes at a time.
STREAM_READ_BYTES = 16 * 1024
# Error text from a server is shown to a reader on one line; past this length
# it is noise, and the status already says what kind of failure it was.
MAX_ERROR_CHARS = 300

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Secret:
    """An API key that cannot be printed by accident.

    `repr`, `str` and f-strings all show a mask; only `reveal()` gives the
    value, and the only caller of `reveal()` is the code building a header.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __format__(self, spec: str) -> str:
        return "***"

    def __reduce__(self) -> Any:
        # Pickling would write the key into whatever file or queue receives it.
        raise TypeError("a Secret cannot be pickled")


def read_api_key(value: str | None, *, variable: str) -> Secret | None:
    """A key from the environment, trimmed, or None when it is unset or blank.

    A key with a space, a newline or a non-ASCII character would either be
    rejected deep inside `http.client`, with the header value (the key) in the
    exception text, or smuggle a second header in; both are refused here with
    a message that names the variable, never the value.
    """
    if value is None or not value.strip():
        return None
    key = value.strip()
    if not all("!" <= char <= "~" for char in key):
        raise ModelConfigurationError(
            f"{variable} contains a space, line break or non-ASCII character; keys never do"
        )
    return Secret(key)


class HTTPSettings(BaseModel):
    """How long to wait, and how often to try again, for one model call.

    Two clocks bound a call. `timeout_s` is the most one attempt may take, from
    connecting to the last byte of the reply: a deadline, not a per-read
    timeout, so a server that trickles its answer cannot stretch it.
    `deadline_s` is the most the whole call may take, retries and the waits
    between them included. Only failures that say "try later" are retried: a
    429, a 5xx, a connection reset, an attempt that ran out of time. A 4xx
    says "your request is wrong" and would fail the same way again.

    Validated when built: a fractional retry count, a Boolean or a string
    where seconds belong, an unknown field, all raise a `ValidationError`
    (a `ValueError`) at construction instead of surprising a later call.
    """

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid", allow_inf_nan=False)

    timeout_s: float = Field(default=60.0, gt=0, le=600)
    max_retries: int = Field(default=2, ge=0, le=10)
    max_retry_wait_s: float = Field(default=30.0, ge=0, le=600)
    deadline_s: float = Field(default=180.0, gt=0, le=3600)


def check_base_url(base_url: str, *, variable: str) -> str:
    """Accept only an http(s) URL with a host; `urllib` would also open `file:` URLs."""
    try:
        parsed = urllib.parse.urlsplit(base_url)
        valid = (
            parsed.scheme in ("http", "https")
            and bool(parsed.hostname)
            and (parsed.port is None or parsed.port > 0)
        )
    except ValueError:
        valid = False
    if not valid:
        shown = display_url(base_url)
        raise ModelConfigurationError(
            f"{variable} must be an http:// or https:// URL with a host, got {shown!r}"
        )
    return base_url.rstrip("/")


def display_url(url: str) -> str:
    """The URL as a reader may see it: no user:password part, no query string.

    Some gateways put a key in the query (`?api-key=...`) or in the userinfo;
    neither belongs in an error message.
    """
    try:
        parsed = urllib.parse.urlsplit(url)
        host = parsed.hostname or ""
        port = parsed.port
    except ValueError:
        return "<unparseable URL>"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    return urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path, "", ""))


def parse_retry_after(
    value: str | None, *, cap: float, now: datetime | None = None
) -> float | None:
    """Seconds to wait from a `Retry-After` header (delay-seconds or an HTTP-date), capped.

    None when the header is absent or unreadable, so the caller falls back to
    its own backoff. A date in the past means "now": 0 seconds.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if math.isnan(seconds):
        return None
    return min(max(seconds, 0.0), cap)


def _provider_message(raw: bytes) -> str:
    """The human part of an error body, in either provider's shape, or its first bytes."""
    text = raw.decode("utf-8", errors="replace")
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError):
        return text.strip() or "no error message"
    # OpenAI and Anthropic both nest it as {"error": {"message": ...}}; some
    # local servers put a plain string under "error".
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(payload.get("message"), str):
            return str(payload["message"])
    return text.strip() or "no error message"


# A connection the server (or the network) dropped: worth another attempt.
_DROPPED = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


def _reason(error: BaseException, secrets: tuple[str, ...]) -> str:
    # Stable words instead of errno text, which differs between operating systems.
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return "host name not found"
    if isinstance(error, http.client.RemoteDisconnected):
        return "the server closed the connection without a reply"
    if isinstance(error, _DROPPED):
        return "connection reset"
    return printable_line(str(error) or type(error).__name__, secrets, limit=MAX_ERROR_CHARS)


@dataclass(frozen=True)
class _Failed:
    """One attempt that failed: the error to raise if it is the last, and whether to retry."""

    message: str
    kind: type[ModelError]
    retryable: bool
    status: int | None = None
    retry_after: float | None = None

    def error(self, attempts: int) -> ModelError:
        tried = f" (gave up after {attempts} attempts)" if attempts > 1 else ""
        if self.status is not None:
            return ModelHTTPError(self.message + tried, status=self.status)
        return self.kind(self.message + tried)


def _http_failure(
    error: urllib.error.HTTPError, shown: str, secrets: tuple[str, ...], settings: HTTPSettings
) -> _Failed:
    status = error.code
    try:
        body = error.read(MAX_ERROR_BODY_BYTES)
    except (OSError, ValueError, http.client.HTTPException):
        body = b""  # the status alone still says what happened
    finally:
        error.close()
    if 300 <= status <= 399:
        message = "redirects are not followed (the key would travel with them)"
    else:
        message = printable_line(_provider_message(body), secrets, limit=MAX_ERROR_CHARS)
    retry_after = parse_retry_after(
        error.headers.get("Retry-After") if error.headers else None,
        cap=settings.max_retry_wait_s,
    )
    return _Failed(
        f"HTTP {status} from {shown}: {message}",
        ModelHTTPError,
        retryable=status == 429 or 500 <= status <= 599,
        status=status,
        retry_after=retry_after,
    )


def _attempt(
    request: urllib.request.Request,
    *,
    deadline: float,
    limit_s: float,
    shown: str,
    secrets: tuple[str, ...],
    settings: HTTPSettings,
    consume: Callable[[http.client.HTTPResponse], bytes] | None = None,
) -> bytes | _Failed:
    """One request and its whole reply, or why it failed; nothing here raises but `consume`."""
    timed_out = _Failed(f"no reply from {shown} within {limit_s:g} s", ModelUnavailableError, True)
    outcome = _exchange(request, deadline, shown, secrets, settings, timed_out, consume)
    late = time.monotonic() >= deadline
    if late and isinstance(outcome, _Failed) and outcome.kind is not ModelHTTPError:
        # Whatever broke once the deadline had passed (a socket shut under a
        # TLS handshake, a read cut short) broke because time ran out.
        return timed_out
    return outcome


def _exchange(
    request: urllib.request.Request,
    deadline: float,
    shown: str,
    secrets: tuple[str, ...],
    settings: HTTPSettings,
    timed_out: _Failed,
    consume: Callable[[http.client.HTTPResponse], bytes] | None = None,
) -> bytes | _Failed:
    """The request sent and its reply read whole (or by `consume`), or the failure, classified."""

    def unreachable(error: BaseException, *, retryable: bool) -> _Failed:
        reason = _reason(error, secrets)
        return _Failed(f"cannot reach {shown}: {reason}", ModelUnavailableError, retryable)

    def cut_off() -> _Failed:
        message = f"the reply from {shown} ended before its announced length"
        return _Failed(message, ModelResponseError, retryable=False)

    try:
        with open_before(request, deadline) as response:
            if consume is not None:
                return consume(response)
            raw = response.read(MAX_REPLY_BYTES + 1)
            # A read with a size returns short, without complaint, when the
            # server hangs up early; what it still owed is left in `length`.
            if response.length and len(raw) <= MAX_REPLY_BYTES:
                return cut_off()
            return raw
    except urllib.error.HTTPError as error:
        return _http_failure(error, shown, secrets, settings)
    except urllib.error.URLError as error:
        # Raised before any reply: connecting, or sending the request.
        reason = error.reason
        if isinstance(reason, TimeoutError):
            return timed_out
        if isinstance(reason, BaseException):
            return unreachable(reason, retryable=isinstance(reason, _DROPPED))
        text = printable_line(str(reason), secrets, limit=MAX_ERROR_CHARS)
        return _Failed(f"cannot reach {shown}: {text}", ModelUnavailableError, retryable=False)
    except TimeoutError:
        return timed_out
    except _DROPPED as error:
        # Dropped half-way: `RemoteDisconnected` (no reply at all) is one of these.
        return unreachable(error, retryable=True)
    except http.client.IncompleteRead:
        return cut_off()
    except http.client.HTTPException as error:
        # Not HTTP at all: a status line or headers no HTTP server sends.
        kind = type(error).__name__
        return _Failed(f"the reply from {shown} is broken HTTP ({kind})", ModelResponseError, False)
    except OSError as error:
        return unreachable(error, retryable=False)


def _backoff(attempt: int, settings: HTTPSettings) -> float:
    """Doubling waits, each drawn between half and all of its step, so that many
    clients failing together do not all come back at the same instant."""
    step = min(2.0 ** (attempt - 1), settings.max_retry_wait_s)
    return step * random.uniform(0.5, 1.0)


def post_json(
    url: str,
    body: Mapping[str, Any],
    *,
    headers: Mapping[str, str],
    settings: HTTPSettings,
    secrets: Iterable[str] = (),
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """POST `body` as JSON and return the JSON object the server answered with.

    Every failure becomes one of the model errors from `base.py`, one line long,
    naming the URL (without query or credentials) and never a piece of a key
    in `secrets`, within `settings.deadline_s`. `sleep` is a parameter so a
    test can record the waits instead of waiting.
    """
    secrets = tuple(secrets)
    shown = display_url(url)
    data = json.dumps(body).encode("utf-8")
    request_headers = {"Content-Type": "application/json", **headers}
    attempts = settings.max_retries + 1
    call_deadline = time.monotonic() + settings.deadline_s
    for attempt in range(1, attempts + 1):
        request = urllib.request.Request(url, data=data, headers=request_headers, method="POST")
        started = time.monotonic()
        deadline = min(started + settings.timeout_s, call_deadline)
        outcome = _attempt(
            request,
            deadline=deadline,
            limit_s=settings.timeout_s if deadline < call_deadline else settings.deadline_s,
            shown=shown,
            secrets=secrets,
            settings=settings,
        )
        if isinstance(outcome, bytes):
            return _decode_reply(outcome, shown)
        if not outcome.retryable or attempt == attempts:
            raise outcome.error(attempt) from None
        wait = (
            outcome.retry_after if outcome.retry_after is not None else _backoff(attempt, settings)
        )
        if time.monotonic() + wait >= call_deadline:
            # Waiting would end past the call's deadline: this failure is the answer.
            raise outcome.error(attempt) from None
        logger.info(
            "%s; retrying in %.1f s (attempt %d of %d)",
            outcome.message,
            wait,
            attempt,
            attempts,
        )
        sleep(wait)
    raise AssertionError("unreachable: the last attempt returns or raises")


def post_stream(
    url: str,
    body: Mapping[str, Any],
    *,
    headers: Mapping[str, str],
    settings: HTTPSettings,
    receive: Callable[[bytes], None],
    secrets: Iterable[str] = (),
) -> None:
    """POST `body` as JSON and hand every piece of the streamed reply to `receive`, in order.

    The failures are `post_json`'s, one line each and free of the keys in
    `secrets`, within `settings.timeout_s` for the whole stream. A stream is
    asked for once, never retried: pieces already handed on (text a reader
    has seen) would be handed on twice. `receive` may raise a `ModelError`,
    which ends the stream there.
    """
    secrets = tuple(secrets)
    shown = display_url(url)
    data = json.dumps(body).encode("utf-8")
    request_headers = {"Content-Type": "application/json", **headers}
    request = urllib.request.Request(url, data=data, headers=request_headers, method="POST")

    def consume(response: http.client.HTTPResponse) -> bytes:
        while chunk := response.read1(STREAM_READ_BYTES):
            receive(chunk)
        # read1 ends quietly when a server hangs up early; what it still owed is left here.
        if response.length:
            raise ModelResponseError(f"the stream from {shown} ended before its announced length")
        return b""

    outcome = _attempt(
        request,
        deadline=time.monotonic() + settings.timeout_s,
        limit_s=settings.timeout_s,
        shown=shown,
        secrets=secrets,
        settings=settings,
        consume=consume,
    )
    if isinstance(outcome, _Failed):
        raise outcome.error(1) from None


def _decode_reply(raw: bytes, shown: str) -> dict[str, Any]:
    """The reply as a JSON object no deeper than `MAX_JSON_DEPTH`, with printable text.

    Standard JSON only: `NaN` and `Infinity` are not JSON, and a value nested
    past the interpreter's recursion limit is a `RecursionError` in `json`
    itself, which must not escape as anything but a `ModelResponseError`.
    """
    if len(raw) > MAX_REPLY_BYTES:
        raise ModelResponseError(f"the reply from {shown} is larger than {MAX_REPLY_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
        payload = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ModelResponseError(
            f"the reply from {shown} is nested more than {MAX_JSON_DEPTH} levels deep"
        ) from None
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ModelResponseError(f"the reply from {shown} is not JSON") from None
    if not isinstance(payload, dict):
        raise ModelResponseError(f"the reply from {shown} is JSON but not an object")
    if _depth_exceeds(payload, MAX_JSON_DEPTH):
        raise ModelResponseError(
            f"the reply from {shown} is nested more than {MAX_JSON_DEPTH} levels deep"
        )
    if _SURROGATE_ESCAPE.search(text):
        # `\ud800` alone is valid JSON, but its string is not text a terminal,
        # a file or the next request can encode; each becomes U+FFFD.
        cleaned = _without_surrogates(payload)
        assert isinstance(cleaned, dict)
        return cleaned
    return payload


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _depth_exceeds(value: object, limit: int) -> bool:
    """Whether containers nest deeper than `limit`; iterative, so any depth is safe."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children: Iterable[object] = current.values()
        elif isinstance(current, list):
            children = current
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _without_surrogates(value: object) -> object:
    # Recursion is safe here: the depth was checked first.
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {
            _LONE_SURROGATE.sub("\ufffd", key): _without_surrogates(item)
            for key, item in value.items()
        }
    return value
