"""Support the book does not print: an event loop whose clock jumps instead of waiting.

Timeouts, rate limits and deadlines are about time, and a test or a
checkpoint that waited for real time would print different numbers on a
busy machine. On this loop `time()` starts at 0.0 and moves only when every
task is waiting for a timer: it then jumps to the earliest one. So three
reads that each sleep 0.2 s finish together at exactly 0.2, and a call
stopped after 2.0 s is stopped at exactly 2.0, in no time at all.

Real work stops the clock: while a job the loop handed to a thread is
running (`run_in_executor`, `asyncio.to_thread`), time stands still, so a
synchronous handler takes no virtual time however long it really takes. A
thread that only waits for the loop says so (`worker_waits`, `worker_resumes`).
"""

from __future__ import annotations

import asyncio
import selectors
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar, TypeVarTuple, Unpack

__all__ = ["VirtualTimeLoop", "worker_resumes", "worker_waits"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

# How long the loop polls, in real time, while a thread works and the virtual
# clock stands still: short enough to notice the thread finish at once.
_POLL_S = 0.001


class _JumpingSelector(selectors.DefaultSelector):
    """Waits for I/O without waiting for time: a wait for a timer becomes a jump."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None or timeout <= 0:
            return list(super().select(timeout))
        if self._loop.working:
            # A thread is doing real work: let it, and keep the clock still.
            return list(super().select(min(timeout, _POLL_S)))
        self._loop.advance(timeout)
        return list(super().select(0))


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An asyncio loop on virtual time; run with `asyncio.Runner(loop_factory=VirtualTimeLoop)`."""

    def __init__(self) -> None:
        self._now = 0.0
        self._working = 0
        self._lock = threading.Lock()
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds

    @property
    def working(self) -> bool:
        with self._lock:
            return self._working > 0

    def _work(self, change: int) -> None:
        with self._lock:
            self._working += change

    def run_in_executor(
        self, executor: Executor | None, func: Callable[[Unpack[Ts]], T], *args: *Ts
    ) -> asyncio.Future[T]:
        self._work(+1)

        def tracked() -> T:
            try:
                return func(*args)
            finally:
                self._work(-1)

        return super().run_in_executor(executor, tracked)

    def waiting(self, change: int) -> None:
        """A thread of `run_in_executor` waits for this loop (-1), or works again (+1)."""
        self._work(-change)


def worker_waits(loop: asyncio.AbstractEventLoop) -> None:
    """Called by a worker thread about to wait for `loop`: time may move meanwhile."""
    if isinstance(loop, VirtualTimeLoop):
        loop.waiting(+1)


def worker_resumes(loop: asyncio.AbstractEventLoop) -> None:
    """Called on `loop` just before it hands a waiting worker its answer.

    From the loop's own thread, before the answer is handed over: were the
    worker to say it itself, once awake, the loop could jump ahead of it in
    the instant between.
    """
    if isinstance(loop, VirtualTimeLoop):
        loop.waiting(-1)
