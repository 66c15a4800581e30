"""Support the book does not print: the shop's side of the supplier's order desk, over HTTP.

Chapter 1's transport discipline, applied to a request that spends money:
every attempt ends by a deadline (`open_before`), the whole send ends by a
total deadline, and a lost connection, a 5xx or a 409 (the supplier still
working on this key) is tried again after a jittered pause, always with the
same `Idempotency-Key`. That key is what makes a retry safe: the supplier
answers a key it has seen with the order it made for it, and makes no other.

A 4xx other than 409 and 429 is the supplier saying no to this request, and
trying again cannot change its mind: it is a `PurchaseRejected`, and nothing
here ever sends the purchase again under a new key.
"""

from __future__ import annotations

import http.client
import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from sovereign_agent.models._transport import open_before

__all__ = [
    "Attempt",
    "DeskSettings",
    "PlacedOrder",
    "PurchaseFailed",
    "PurchaseRejected",
    "Sent",
    "SupplierDesk",
    "SupplierUnreachable",
]

# An order is a few hundred bytes; anything much bigger is not the desk's answer.
MAX_ANSWER_BYTES = 64 * 1024
# Statuses that say "not now" rather than "no": tried again with the same key.
RETRY_STATUSES = frozenset({409, 429})


class PlacedOrder(BaseModel):
    """The supplier's record of one order, as its desk answers it."""

    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)

    order_id: str = Field(min_length=1, max_length=100)
    sku: str
    quantity: int = Field(gt=0)
    unit_price_pence: int = Field(gt=0)
    total_pence: int = Field(gt=0)


class PurchaseFailed(Exception):
    """A send that ended without an order; `code` names why in one word."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class PurchaseRejected(PurchaseFailed):
    """The supplier refused this request (400, 422, ...): sending it again cannot help."""


class SupplierUnreachable(PurchaseFailed):
    """No answer in time or attempts: the purchase may or may not exist at the supplier."""


@dataclass(frozen=True)
class Attempt:
    """One try, as an observer sees it: which, for which key, and how it ended."""

    number: int
    key: str
    outcome: str
    status: int | None = None
    replayed: bool = False
    order_id: str | None = None


@dataclass(frozen=True)
class Sent:
    """The supplier's order for a key, whether this send made it or replayed it."""

    order: PlacedOrder
    replayed: bool
    attempts: int


@dataclass(frozen=True)
class DeskSettings:
    """How long to try: a whole send, one attempt, how many attempts, how long to pause."""

    total_deadline_s: float = 15.0
    attempt_timeout_s: float = 3.0
    max_attempts: int = 8
    first_pause_s: float = 0.05
    max_pause_s: float = 1.0


class _Retry(Exception):
    """An attempt that may be tried again: the line an observer is told."""


class SupplierDesk:
    """The supplier's desk at `base_url`: send an order under a key, or look a key up."""

    def __init__(
        self,
        base_url: str,
        *,
        settings: DeskSettings | None = None,
        observe: Callable[[Attempt], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: random.Random | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"the supplier's address must be an http(s) URL, not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.settings = settings or DeskSettings()
        self._observe = observe
        self._sleep = sleep
        self._jitter = jitter or random.Random()

    def send(self, key: str, sku: str, quantity: int) -> Sent:
        """POST the order under `key` until the supplier answers, refuses, or time runs out."""
        body = json.dumps({"sku": sku, "quantity": quantity}).encode()
        headers = {"Content-Type": "application/json", "Idempotency-Key": key}
        settings = self.settings
        deadline = time.monotonic() + settings.total_deadline_s
        last = "no attempt was made"
        for number in range(1, settings.max_attempts + 1):
            request = urllib.request.Request(
                f"{self.base_url}/orders", data=body, headers=headers, method="POST"
            )
            try:
                status, replayed, answer = self._exchange(request, deadline)
            except _Retry as retry:
                last = str(retry)
                self._tell(Attempt(number, key, last))
            else:
                if status in (200, 201):
                    order = _order(answer)
                    self._tell(Attempt(number, key, "answered", status, replayed, order.order_id))
                    return Sent(order, replayed, number)
                self._tell(Attempt(number, key, "refused", status))
                raise PurchaseRejected(
                    _code(answer), f"the supplier answered {status}: " + _why(answer)
                )
            pause = min(settings.max_pause_s, settings.first_pause_s * 2 ** (number - 1))
            # Half fixed, half random: two shops retrying after one outage do not
            # arrive together again, and the attempts still span the backoff, so
            # a key the supplier holds for a while (409) is not given up too soon.
            pause = pause / 2 + self._jitter.uniform(0, pause / 2)
            if time.monotonic() + pause >= deadline:
                break
            self._sleep(pause)
        raise SupplierUnreachable(
            "unreachable", f"no answer for {key} after {number} attempts: {last}"
        )

    def look_up(self, key: str) -> PlacedOrder | None:
        """The supplier's order under `key`, or None if it has none (one GET, deadline-bound)."""
        query = urllib.parse.urlencode({"idempotency_key": key})
        request = urllib.request.Request(f"{self.base_url}/orders?{query}", method="GET")
        deadline = time.monotonic() + self.settings.attempt_timeout_s
        try:
            status, _, answer = self._exchange(request, deadline)
        except _Retry as retry:
            raise SupplierUnreachable("unreachable", f"cannot look {key} up: {retry}") from None
        if status == 404:
            return None
        if status != 200:
            raise PurchaseFailed(
                _code(answer), f"looking {key} up answered {status}: {_why(answer)}"
            )
        return _order(answer)

    def _exchange(
        self, request: urllib.request.Request, deadline: float
    ) -> tuple[int, bool, bytes]:
        """(status, replayed, body) of one attempt; _Retry for what another attempt may fix."""
        attempt_deadline = min(deadline, time.monotonic() + self.settings.attempt_timeout_s)
        try:
            with open_before(request, attempt_deadline) as response:
                answer = response.read(MAX_ANSWER_BYTES + 1)
                status, replayed_header = (
                    response.status,
                    response.headers.get("Idempotent-Replayed"),
                )
        except urllib.error.HTTPError as error:
            with error:
                answer = error.read(MAX_ANSWER_BYTES + 1)
            if error.code >= 500 or error.code in RETRY_STATUSES:
                raise _Retry(f"the supplier answered {error.code}") from None
            status, replayed_header = error.code, error.headers.get("Idempotent-Replayed")
        except TimeoutError:
            raise _Retry("no answer in time") from None
        except urllib.error.URLError as error:
            raise _Retry(f"cannot reach the supplier: {error.reason}") from None
        except (http.client.HTTPException, ConnectionError) as error:
            # RemoteDisconnected, a reset: the request may have been committed
            # before the connection was lost. Only the same key can tell.
            raise _Retry(
                f"the connection was lost before the answer ({type(error).__name__})"
            ) from None
        if len(answer) > MAX_ANSWER_BYTES:
            raise PurchaseFailed("malformed", "the supplier's answer is too large")
        replayed = (replayed_header or "").lower() == "true"
        return status, replayed, answer

    def _tell(self, attempt: Attempt) -> None:
        if self._observe is not None:
            self._observe(attempt)


def _json(answer: bytes) -> object:
    try:
        return json.loads(answer)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None


def _order(answer: bytes) -> PlacedOrder:
    try:
        return PlacedOrder.model_validate_json(answer)
    except ValueError:
        # An answer we cannot read is not an order we can confirm; the
        # purchase stays prepared, and looking the key up later settles it.
        raise PurchaseFailed("malformed", "the supplier's answer is not an order") from None


def _code(answer: bytes) -> str:
    body = _json(answer)
    code = body.get("error") if isinstance(body, dict) else None
    return code if isinstance(code, str) and code.isidentifier() and len(code) <= 40 else "rejected"


def _why(answer: bytes) -> str:
    body = _json(answer)
    message = body.get("message") if isinstance(body, dict) else None
    text = message if isinstance(message, str) else answer[:200].decode("utf-8", "replace")
    # One line, bounded: the supplier's words go into our records and errors.
    return " ".join(text.split())[:200] or "(no reason given)"
