"""Partly printed, in chapter 13: a token bucket, how often a tool (or a whole run) may be called.

A bucket holds up to `capacity` tokens and gains `refill_per_s` of them every
second, never more than it holds. A call takes one token; with none left it
is refused, and told how long until one has grown back. The clock is a
parameter: any function returning seconds that only go forward (the event
loop's, `time.monotonic`, or a test's), so a refusal's wait is exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RateLimit", "TokenBucket"]


class RateLimit(BaseModel):
    """At most `calls` calls in any `per_s` seconds, in a burst or spread out."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    calls: int = Field(ge=1, le=1_000_000)
    per_s: float = Field(gt=0, le=86_400)

    def bucket(self, clock: Callable[[], float]) -> TokenBucket:
        return TokenBucket(self.calls, self.calls / self.per_s, clock)


class TokenBucket:
    """Tokens that grow back at a steady rate; full when it is made."""

    def __init__(self, capacity: int, refill_per_s: float, clock: Callable[[], float]) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be a positive int, got {capacity!r}")
        if not (math.isfinite(refill_per_s) and refill_per_s > 0):
            raise ValueError(f"refill_per_s must be a positive number, got {refill_per_s!r}")
        self.capacity = capacity
        self.refill_per_s = refill_per_s
        self._clock = clock
        self._tokens = float(capacity)
        self._updated = clock()

    def _refill(self) -> float:
        now = self._clock()
        # A clock that stepped back (it should not) grows nothing, rather than
        # taking tokens away or handing out a wait in the past.
        elapsed = max(0.0, now - self._updated)
        self._tokens = min(float(self.capacity), self._tokens + elapsed * self.refill_per_s)
        self._updated = max(now, self._updated)
        return self._tokens

    def wait_s(self) -> float:
        """Seconds until one token is there; 0.0 when one is there now. Takes nothing."""
        tokens = self._refill()
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.refill_per_s

    def take(self) -> float:
        """Take one token and return 0.0, or take nothing and return the seconds to wait."""
        wait = self.wait_s()
        if wait == 0.0:
            self._tokens -= 1.0
        return wait
