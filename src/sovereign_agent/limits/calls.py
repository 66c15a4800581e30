"""Support the book does not print: calls held to a timeout and a rate, and reads run side by side.

`LimitedDispatcher` is a `Dispatcher` (so the loop of chapter 3 takes it as
it is) whose every call first meets the run's limits: past the deadline it
is refused `deadline`; with no token in its tool's bucket or the run's, it is
refused `rate_limited` with `retry_after_s`, the seconds until one grows
back. A call that passes goes through the dispatcher's own checks in their
own order, and its handler runs on the run's event loop under its timeout.

What a timeout can stop depends on the handler. An `async` handler is
cancelled: it gets `CancelledError` at its next `await`. A synchronous one
runs in a thread, and Python cannot stop a thread from outside: the model
is told `tool_timeout` at the bound, but the handler runs on to its end, and
whatever it does meanwhile is done. An async handler that catches the
cancellation and carries on is no better: the runtime answers at the bound
and does not wait for it, and it runs on until it stops by itself.

`attempt_turn` answers one turn's calls together: consecutive calls that
`may_run_concurrently` run at the same time, every other call alone and in
turn, and the outcomes come back in the model's order whatever finishes first.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any, Protocol

from sovereign_agent.effects import Effect
from sovereign_agent.limits.config import Limits
from sovereign_agent.limits.virtual_time import worker_resumes, worker_waits
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall, ToolOutcome

__all__ = ["CallTimedOut", "LimitedDispatcher", "may_run_concurrently"]

# The classes of a call that may run side by side with others of its turn.
RUNS_SIDE_BY_SIDE = frozenset({Effect.READ})


class RunLimits(Protocol):
    """What the calls of a run need of its `limits.run.RunLimits` (which imports this module)."""

    @property
    def limits(self) -> Limits: ...

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def workers(self) -> Executor: ...

    def admit(self, tool: str) -> ToolOutcome | None: ...

    def abandon(self, work: asyncio.Future[Any]) -> None: ...


class CallTimedOut(TimeoutError):
    """A handler outlasted its call's timeout; the model is told `tool_timeout`."""


def may_run_concurrently(tool: ExecutableTool[Any]) -> bool:
    """Whether a call may run alongside others of its turn: its declared classes are exactly read.

    Two writes at once could each see the shop as it was before the other,
    so anything beyond reading (a write, money, code, and a read that also
    sends its arguments out) runs alone. Only a declaration counts: a tool
    declared the chapter 2 way stands for a guess, not a promise to only read.
    """
    return tool.effects == RUNS_SIDE_BY_SIDE


class LimitedDispatcher(Dispatcher):
    """A dispatcher whose calls meet the run's deadline, rates and timeouts first."""

    def __init__(self, dispatcher: Dispatcher, run: RunLimits, *, wrapped: bool = False) -> None:
        tools: Iterable[ExecutableTool[Any]] = dispatcher.tools.values()
        if not wrapped:
            tools = [replace(tool, handler=guard(run, tool)) for tool in tools]
        super().__init__(
            tools,
            allowed=dispatcher.allowed,
            # The authority itself, unchanged: limits add refusals, never authority.
            before_write=dispatcher._before_write,
            max_result_bytes=dispatcher.max_result_bytes,
            hints=dispatcher.hints,
            setup=dispatcher.setup,
        )
        self._run = run

    def scoped(self, names: Iterable[str]) -> Dispatcher:
        # The same run's limits, buckets and loop, around the narrower dispatcher;
        # its tools are already guarded, so they are not guarded twice.
        return LimitedDispatcher(super().scoped(names), self._run, wrapped=True)

    def attempt(self, call: ToolCall) -> ToolOutcome:
        _outside_a_running_loop()
        refusal = self._run.admit(call.name)
        if refusal is not None:
            return refusal
        return self._run.loop.run_until_complete(self._attempt_in_thread(call))

    def attempt_turn(
        self, calls: Sequence[ToolCall], *, answered: Callable[[str], None] | None = None
    ) -> list[ToolOutcome]:
        """Every call of one turn answered, in the model's order; reads side by side.

        The limits are met in the model's order, before anything runs, so
        which call a rate limit refuses does not depend on which finished first.
        `answered` is told each call's id the moment its outcome is known, in
        the order they finish, on the thread that called: a recorder times
        each call of a batch by it, not by when the whole batch came back.
        """
        _outside_a_running_loop()
        answers: list[ToolOutcome | None] = [self._run.admit(call.name) for call in calls]
        if answered is not None:
            # A refusal by the limits is known at once: nothing of it ran.
            for call, answer in zip(calls, answers, strict=True):
                if answer is not None:
                    answered(call.id)
        # Runs of reads go together; any other call is a batch of its own.
        batches: list[tuple[bool, list[int]]] = []
        for index, call in enumerate(calls):
            if answers[index] is not None:
                continue
            together = self._concurrent(call)
            if together and batches and batches[-1][0]:
                batches[-1][1].append(index)
            else:
                batches.append((together, [index]))

        async def one(call: ToolCall) -> ToolOutcome:
            outcome = await self._attempt_in_thread(call)
            if answered is not None:
                answered(call.id)
            return outcome

        async def run_all() -> None:
            for _, members in batches:
                outcomes = await asyncio.gather(*(one(calls[index]) for index in members))
                for index, outcome in zip(members, outcomes, strict=True):
                    answers[index] = outcome

        self._run.loop.run_until_complete(run_all())
        done = [answer for answer in answers if answer is not None]
        assert len(done) == len(calls)
        return done

    def _concurrent(self, call: ToolCall) -> bool:
        tool = self.tools.get(call.name)
        return tool is not None and call.name in self.allowed and may_run_concurrently(tool)

    async def _attempt_in_thread(self, call: ToolCall) -> ToolOutcome:
        # The dispatcher's checks are synchronous; they run in a worker thread
        # so that the handler can run on this loop meanwhile (`guarded_handler`).
        attempt = functools.partial(Dispatcher.attempt, self, call)
        outcome = await self._run.loop.run_in_executor(self._run.workers, attempt)
        failure = outcome.failure
        if (
            failure is not None
            and failure.stage == "handler"
            and failure.error_type == CallTimedOut.__name__
        ):
            # The handler was entered (it may even still be running): it ran.
            return replace(outcome, observation={"ok": False, "error": "tool_timeout"})
        return outcome


def _outside_a_running_loop() -> None:
    """Refuse, in one clear line, a call from inside a running event loop.

    The run's handlers run on the run's own loop, driven from here; from a
    thread whose loop is already running, that cannot be done, and asyncio's
    own error would not say why.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        "a LimitedDispatcher runs its handlers on its run's own event loop: "
        "call it from a thread with no running loop (asyncio.to_thread, for one)"
    )


def guard(run: RunLimits, tool: ExecutableTool[Any]) -> Any:
    """The tool's handler as the dispatcher calls it (from a worker thread), run on the loop."""

    async def on_loop(arguments: Any) -> Any:
        try:
            return await guarded(run, tool.name, tool.handler, arguments)
        finally:
            worker_resumes(run.loop)

    def handler(arguments: Any) -> Any:
        future = asyncio.run_coroutine_threadsafe(on_loop(arguments), run.loop)
        worker_waits(run.loop)
        return future.result()

    return handler


async def guarded(run: RunLimits, name: str, handler: Any, arguments: Any) -> Any:
    """One handler's run under its timeout; a handler past it is cancelled and left behind."""
    timeout = run.limits.timeout_s(name)
    work: asyncio.Future[Any] = asyncio.ensure_future(
        handler(arguments)
        if inspect.iscoroutinefunction(handler)
        else asyncio.to_thread(handler, arguments)
    )
    if timeout is None:
        return await work
    done, _ = await asyncio.wait({work}, timeout=timeout)
    if work in done:
        return work.result()
    # A request to stop, not a stop: an async handler may ignore it, and a
    # thread never sees it. The call is answered now either way, and the work
    # is kept track of, so that closing the run can say what still runs.
    work.cancel()
    run.abandon(work)
    raise CallTimedOut(f"{name} took longer than {timeout:g} s")
