"""Support the book does not print: one run's limits, with the clock and the loop they share.

A `RunLimits` is made for one run and closed after it. It owns the event
loop the run's handlers run on, and reads every time from that loop's clock,
so a `VirtualTimeLoop` makes every timeout, wait and deadline exact. It hands
out the dispatcher and the model client the loop of chapter 3 is given:

    with RunLimits(limits) as run:
        record = run_task(run.model(model), run.dispatcher(dispatcher), task, ...)
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any

from sovereign_agent.limits.budget import LimitedModel, Spending
from sovereign_agent.limits.calls import LimitedDispatcher
from sovereign_agent.limits.config import Limits
from sovereign_agent.limits.rate import TokenBucket
from sovereign_agent.models import ModelClient
from sovereign_agent.tools import Dispatcher, ToolOutcome

__all__ = ["RunLimits"]

# Worker threads for the dispatcher's checks of one turn's calls; a turn with
# more calls than this waits for a free worker, it is never refused.
MAX_WORKERS = 16


class RunLimits:
    """The deadline, buckets, spending and event loop of one run."""

    def __init__(
        self,
        limits: Limits,
        *,
        loop_factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop,
    ) -> None:
        self.limits = limits
        self.loop = loop_factory()
        self.clock: Callable[[], float] = self.loop.time
        self.started = self.clock()
        self.workers = ThreadPoolExecutor(MAX_WORKERS, thread_name_prefix="limits")
        self.spending = Spending(limits)
        self._run_bucket = None if limits.run_rate is None else limits.run_rate.bucket(self.clock)
        self._tool_buckets = {
            name: rate.bucket(self.clock) for name, rate in limits.tool_rates.items()
        }
        self._abandoned: set[asyncio.Future[Any]] = set()

    def elapsed_s(self) -> float:
        return self.clock() - self.started

    def dispatcher(self, dispatcher: Dispatcher) -> LimitedDispatcher:
        return LimitedDispatcher(dispatcher, self)

    def model(self, model: ModelClient) -> LimitedModel:
        return LimitedModel(
            model, self.limits, clock=self.clock, started=self.started, spending=self.spending
        )

    def admit(self, tool: str) -> ToolOutcome | None:
        """None when a call to `tool` may go on; otherwise the refusal it gets."""
        deadline = self.limits.deadline_s
        if deadline is not None and self.elapsed_s() >= deadline:
            return ToolOutcome({"ok": False, "error": "deadline"}, handler_ran=False)
        buckets: list[TokenBucket] = [
            bucket
            for bucket in (self._run_bucket, self._tool_buckets.get(tool))
            if bucket is not None
        ]
        # Both buckets must have a token before either gives one: a call the
        # run's bucket refuses must not use up its tool's token, or the reverse.
        wait = max((bucket.wait_s() for bucket in buckets), default=0.0)
        if wait > 0:
            # Rounded up to the millisecond, so waiting what it says is enough;
            # the float's last bits first, so 0.30000000004 s reads 0.3 s.
            retry_after = math.ceil(round(wait * 1000, 6)) / 1000
            observation = {"ok": False, "error": "rate_limited", "retry_after_s": retry_after}
            return ToolOutcome(observation, handler_ran=False)
        for bucket in buckets:
            bucket.take()
        return None

    def abandon(self, work: asyncio.Future[Any]) -> None:
        """Keep track of a handler answered for but still running."""
        self._abandoned.add(work)
        work.add_done_callback(self._abandoned.discard)

    def still_running(self) -> int:
        """Handlers past their timeout that have not stopped yet."""
        return sum(not work.done() for work in self._abandoned)

    def close(self, *, grace_s: float = 1.0) -> int:
        """Give abandoned handlers `grace_s` to stop, then close; returns how many still run.

        The loop is closed only when none does: closing it under a running
        task would hide that the task never stopped.
        """
        pending = {work for work in self._abandoned if not work.done()}
        if pending:
            self.loop.run_until_complete(asyncio.wait(pending, timeout=grace_s))
        self.workers.shutdown(wait=False, cancel_futures=True)
        left = self.still_running()
        if not left:
            self.loop.close()
        return left

    def __enter__(self) -> RunLimits:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
