"""The one HTTP door every provider client goes through.

Built on the standard library's `urllib` on purpose: the runtime's required
dependencies stay Pydantic alone, so a reader who installed the book installs
nothing more to talk to a real model. The price is a few lines we write
ourselves: timeouts, a bounded retry, readable errors, and keys kept out of
every message.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import math
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sovereign_agent.models.base import (
    ModelConfigurationError,
    ModelHTTPError,
    ModelResponseError,
    ModelUnavailableError,
)

__all__ = [
    "HTTPSettings",
    "Secret",
    "check_base_url",
    "display_url",
    "parse_retry_after",
    "post_json",
    "read_api_key",
]

logger = logging.getLogger("sovereign_agent.models")

# A reply larger than this is not a chat reply; reading it whole would let a
# broken or hostile server fill our memory.
MAX_REPLY_BYTES = 8 * 1024 * 1024
# Error text from a server is shown to a reader on one line; past this length
# it is noise, and the status already says what kind of failure it was.
MAX_ERROR_CHARS = 300


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


@dataclass(frozen=True)
class HTTPSettings:
    """How long to wait, and how often to try again, for one model call.

    `timeout_s` bounds every socket operation (connecting, and each wait for
    bytes), so a server that stops answering cannot hold the caller forever.
    Only 429 and 5xx are retried: they say "try later"; a 4xx says "your
    request is wrong" and would fail the same way again.
    """

    timeout_s: float = 60.0
    max_retries: int = 2
    max_retry_wait_s: float = 30.0

    def __post_init__(self) -> None:
        if not (isinstance(self.timeout_s, int | float) and 0 < self.timeout_s <= 600):
            raise ValueError("timeout_s must be a number of seconds in (0, 600]")
        if isinstance(self.max_retries, bool) or not 0 <= self.max_retries <= 10:
            raise ValueError("max_retries must be an int from 0 to 10")
        if not (
            isinstance(self.max_retry_wait_s, int | float) and 0 <= self.max_retry_wait_s <= 600
        ):
            raise ValueError("max_retry_wait_s must be a number of seconds in [0, 600]")


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


def _one_line(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret:
            # A server may echo the key back ("invalid key sk-..."); it never reaches a reader.
            text = text.replace(secret, "***")
    text = " ".join(text.split())
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 3] + "..."
    return text


def _provider_message(raw: bytes) -> str:
    """The human part of an error body, in either provider's shape, or its first bytes."""
    text = raw[:4096].decode("utf-8", errors="replace")
    try:
        payload = json.loads(text)
    except ValueError:
        return text.strip() or "no error message"
    # OpenAI and Anthropic both nest it as {"error": {"message": ...}}; some
    # local servers put a plain string under "error".
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
        if isinstance(payload.get("message"), str):
            return payload["message"]
    return text.strip() or "no error message"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: `urllib` would resend our headers, key included, to the new host."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


def _reason(error: BaseException) -> str:
    # Stable words instead of errno text, which differs between operating systems.
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return "host name not found"
    if isinstance(error, ConnectionResetError):
        return "connection reset"
    return str(error) or type(error).__name__


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
    naming the URL (without query or credentials) and never a key in `secrets`.
    `sleep` is a parameter so a test can record the waits instead of waiting.
    """
    secrets = tuple(secrets)
    shown = display_url(url)
    data = json.dumps(body).encode("utf-8")
    request_headers = {"Content-Type": "application/json", **headers}
    attempts = settings.max_retries + 1
    for attempt in range(1, attempts + 1):
        request = urllib.request.Request(url, data=data, headers=request_headers, method="POST")
        try:
            with _OPENER.open(request, timeout=settings.timeout_s) as response:
                raw = response.read(MAX_REPLY_BYTES + 1)
                # A read with a size returns short, without complaint, when the
                # server hangs up early; what it still owed is left in `length`.
                cut_off = bool(response.length) and len(raw) <= MAX_REPLY_BYTES
        except urllib.error.HTTPError as error:
            status = error.code
            try:
                error_body = error.read(MAX_REPLY_BYTES)
            except (OSError, ValueError):
                error_body = b""
            finally:
                error.close()
            message = _one_line(_provider_message(error_body), secrets)
            retryable = status == 429 or 500 <= status <= 599
            if retryable and attempt < attempts:
                wait = parse_retry_after(
                    error.headers.get("Retry-After") if error.headers else None,
                    cap=settings.max_retry_wait_s,
                )
                if wait is None:
                    wait = min(2.0 ** (attempt - 1), settings.max_retry_wait_s)
                logger.info(
                    "HTTP %d from %s; retrying in %.1f s (attempt %d of %d)",
                    status,
                    shown,
                    wait,
                    attempt,
                    attempts,
                )
                sleep(wait)
                continue
            if 300 <= status <= 399:
                message = "redirects are not followed (the key would travel with them)"
            tried = f" (gave up after {attempt} attempts)" if attempt > 1 else ""
            raise ModelHTTPError(
                f"HTTP {status} from {shown}: {message}{tried}", status=status
            ) from None
        except urllib.error.URLError as error:
            if isinstance(error.reason, TimeoutError | socket.timeout):
                raise ModelUnavailableError(
                    f"no reply from {shown} within {settings.timeout_s:g} s"
                ) from None
            reason = error.reason if isinstance(error.reason, BaseException) else None
            text = _reason(reason) if reason else _one_line(str(error.reason), secrets)
            raise ModelUnavailableError(f"cannot reach {shown}: {text}") from None
        except TimeoutError:
            raise ModelUnavailableError(
                f"no reply from {shown} within {settings.timeout_s:g} s"
            ) from None
        except OSError as error:
            # A connection dropped half-way through the reply.
            raise ModelUnavailableError(f"cannot reach {shown}: {_reason(error)}") from None
        except http.client.HTTPException as error:
            # Not HTTP at all, or a body shorter than its Content-Length said.
            kind = type(error).__name__
            raise ModelResponseError(f"the reply from {shown} is broken HTTP ({kind})") from None
        break
    if cut_off:
        raise ModelResponseError(f"the reply from {shown} ended before its announced length")
    if len(raw) > MAX_REPLY_BYTES:
        raise ModelResponseError(f"the reply from {shown} is larger than {MAX_REPLY_BYTES} bytes")
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ModelResponseError(f"the reply from {shown} is not JSON") from None
    if not isinstance(payload, dict):
        raise ModelResponseError(f"the reply from {shown} is JSON but not an object")
    return payload
