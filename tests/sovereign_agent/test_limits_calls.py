"""Calls held to a timeout, a rate and a deadline; reads side by side, answered in order.

Most tests run on a `VirtualTimeLoop`, where a sleep of 2 s takes no real
time and every clock reading is exact. The synchronous handler's timeout is
shown on a real loop, because what it proves (a thread runs on past its
timeout) is about real time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict
from strength import examples

from sovereign_agent.effects import Effect
from sovereign_agent.limits import (
    DeadlinePassed,
    LimitedDispatcher,
    Limits,
    RateLimit,
    RunLimits,
    VirtualTimeLoop,
    may_run_concurrently,
)
from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall, ScriptedModel
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall

READS = frozenset({Effect.READ})


class Wait(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float
    tag: str = ""


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


class Shop:
    """Tools that wait, and a record of when each started and ended on the run's clock."""

    def __init__(self) -> None:
        self.clock: Callable[[], float] = time.monotonic
        self.log: list[tuple[str, str, float]] = []
        self.running = 0
        self.most_at_once: dict[str, int] = {}
        self.cancelled: list[str] = []
        self.writing: set[str] = set()

    async def read(self, arguments: Wait) -> dict[str, Any]:
        self.running += 1
        self.log.append(("start", arguments.tag, self.clock()))
        try:
            for name in self.writing:
                self.most_at_once[name] = max(self.most_at_once[name], self.running)
            await asyncio.sleep(arguments.seconds)
        except asyncio.CancelledError:
            self.cancelled.append(arguments.tag)
            raise
        finally:
            self.running -= 1
        self.log.append(("end", arguments.tag, self.clock()))
        return {"tag": arguments.tag}

    async def write(self, arguments: Wait) -> dict[str, Any]:
        # Anyone else running while a write runs is what must never happen.
        self.most_at_once[arguments.tag] = self.running + 1
        self.running += 1
        self.writing.add(arguments.tag)
        try:
            await asyncio.sleep(arguments.seconds)
        finally:
            self.running -= 1
            self.writing.discard(arguments.tag)
        return {"written": arguments.tag}

    def tools(
        self, *, read_classes: frozenset[Effect] = READS, **extra: ExecutableTool[Any]
    ) -> Dispatcher:
        tools = [
            ExecutableTool("read_a", "A slow read.", Wait, self.read, effects=read_classes),
            ExecutableTool("read_b", "Another slow read.", Wait, self.read, effects=read_classes),
            ExecutableTool(
                "write", "A slow write.", Wait, self.write, effects=frozenset({Effect.WRITE})
            ),
            *extra.values(),
        ]
        return Dispatcher(
            tools, allowed=[tool.name for tool in tools], before_write=lambda call: None
        )


def limited(
    shop: Shop,
    limits: Limits,
    *,
    read_classes: frozenset[Effect] = READS,
    **extra: ExecutableTool[Any],
) -> tuple[RunLimits, LimitedDispatcher]:
    run = RunLimits(limits, loop_factory=VirtualTimeLoop)
    shop.clock = run.clock
    return run, run.dispatcher(shop.tools(read_classes=read_classes, **extra))


def test_an_async_handler_past_its_timeout_is_cancelled_at_the_bound() -> None:
    shop = Shop()
    run, dispatcher = limited(shop, Limits(tool_timeout_s=2.0))
    outcome = dispatcher.attempt(call("c1", "read_a", seconds=30.0, tag="supplier"))
    assert outcome.observation == {"ok": False, "error": "tool_timeout"}
    assert outcome.handler_ran is True
    assert run.elapsed_s() == 2.0
    assert shop.cancelled == ["supplier"]
    assert ("end", "supplier", 30.0) not in shop.log
    assert run.close() == 0


def test_a_handler_within_its_timeout_answers_as_usual() -> None:
    shop = Shop()
    run, dispatcher = limited(shop, Limits(tool_timeout_s=2.0, tool_timeouts_s={"read_b": 0.5}))
    assert dispatcher.attempt(call("c1", "read_a", seconds=1.5, tag="a")).observation == {
        "ok": True,
        "value": {"tag": "a"},
    }
    assert dispatcher.attempt(call("c2", "read_b", seconds=1.5, tag="b")).observation == {
        "ok": False,
        "error": "tool_timeout",
    }
    assert run.elapsed_s() == 2.0
    run.close()


def test_a_handler_that_ignores_cancellation_is_answered_at_the_bound_and_reported_running() -> (
    None
):
    finished: list[float] = []
    run_holder: list[RunLimits] = []

    async def stubborn(arguments: Wait) -> str:
        try:
            await asyncio.sleep(arguments.seconds)
        except asyncio.CancelledError:
            # Swallows the request to stop, and carries on regardless.
            await asyncio.sleep(arguments.seconds)
        finished.append(run_holder[0].clock())
        return "done"

    shop = Shop()
    tool = ExecutableTool("stubborn", "Ignores cancellation.", Wait, stubborn)
    run, dispatcher = limited(shop, Limits(tool_timeout_s=1.0), stubborn=tool)
    run_holder.append(run)
    outcome = dispatcher.attempt(call("c1", "stubborn", seconds=5.0))
    assert outcome.observation["error"] == "tool_timeout"
    assert run.elapsed_s() == 1.0  # the runtime did not wait for it
    assert finished == [] and run.still_running() == 1
    # Given time, it stops by itself, long after it was answered for.
    assert run.close(grace_s=10.0) == 0
    assert finished == [6.0]


def test_a_handler_that_never_stops_is_still_running_when_the_run_closes() -> None:
    released: list[bool] = []

    async def forever(arguments: Wait) -> str:
        while not released:
            try:
                await asyncio.sleep(arguments.seconds)
            except asyncio.CancelledError:
                continue
        return "released"

    shop = Shop()
    tool = ExecutableTool("forever", "Never stops.", Wait, forever)
    run, dispatcher = limited(shop, Limits(tool_timeout_s=1.0), forever=tool)
    assert dispatcher.attempt(call("c1", "forever", seconds=1.0)).observation["error"] == (
        "tool_timeout"
    )
    assert run.close(grace_s=5.0) == 1
    assert not run.loop.is_closed()  # closing it would hide a task that never stopped
    released.append(True)
    assert run.close(grace_s=5.0) == 0 and run.loop.is_closed()


def test_a_synchronous_handler_is_answered_at_the_bound_but_runs_on_to_its_end() -> None:
    went_on = threading.Event()

    def slow_sync(arguments: Wait) -> str:
        time.sleep(arguments.seconds)
        went_on.set()  # what a timeout cannot prevent: this line still runs
        return "late"

    tool = ExecutableTool("slow_sync", "Blocks a thread.", Wait, slow_sync)
    with RunLimits(Limits(tool_timeout_s=0.05)) as run:  # a real clock: threads are real
        dispatcher = run.dispatcher(Dispatcher([tool], allowed=["slow_sync"]))
        started = time.monotonic()
        outcome = dispatcher.attempt(call("c1", "slow_sync", seconds=1.0))
        answered_after = time.monotonic() - started
        assert outcome.observation == {"ok": False, "error": "tool_timeout"}
        assert answered_after < 0.9
        assert not went_on.is_set()
        assert went_on.wait(5.0)


def test_the_third_call_within_a_second_is_rate_limited_with_the_wait() -> None:
    shop = Shop()
    limits = Limits(tool_rates={"read_a": RateLimit(calls=2, per_s=1.0)})
    run, dispatcher = limited(shop, limits)
    answers = [
        dispatcher.attempt(call(f"c{n}", "read_a", seconds=0.1, tag=str(n))).observation
        for n in range(3)
    ]
    # At 0.0 and 0.1 s two tokens went; by 0.2 s 0.4 of one grew back: 0.3 s to go.
    assert answers[2] == {"ok": False, "error": "rate_limited", "retry_after_s": 0.3}
    # Other tools have no limit of their own.
    assert dispatcher.attempt(call("c4", "read_b", seconds=0.1)).observation["ok"] is True
    run.close()


def test_the_run_rate_counts_every_tool_and_a_refused_call_spends_no_token() -> None:
    shop = Shop()
    limits = Limits(
        run_rate=RateLimit(calls=3, per_s=1.0), tool_rates={"read_a": RateLimit(calls=1, per_s=1.0)}
    )
    run, dispatcher = limited(shop, limits)
    codes = [
        dispatcher.attempt(call(f"c{n}", name, seconds=0.0)).observation.get("error", "ok")
        for n, name in enumerate(["read_a", "read_a", "read_b", "read_b", "read_b"])
    ]
    # read_a's second call is refused by read_a's bucket and leaves the run's
    # token for read_b; the run's three tokens go to read_a, read_b, read_b.
    assert codes == ["ok", "rate_limited", "ok", "ok", "rate_limited"]
    run.close()


def test_three_reads_at_once_finish_together_and_are_answered_in_order() -> None:
    shop = Shop()
    run, dispatcher = limited(shop, Limits())
    calls = [
        call("c1", "read_a", seconds=0.2, tag="vanilla"),
        call("c2", "read_b", seconds=0.2, tag="chocolate"),
        call("c3", "read_a", seconds=0.2, tag="strawberry"),
    ]
    outcomes = dispatcher.attempt_turn(calls)
    assert [o.observation["value"]["tag"] for o in outcomes] == [
        "vanilla",
        "chocolate",
        "strawberry",
    ]
    assert run.elapsed_s() == 0.2
    assert sorted(t for kind, _, t in shop.log if kind == "end") == [0.2, 0.2, 0.2]
    run.close()


@pytest.mark.parametrize(
    "classes",
    [frozenset(), frozenset({Effect.READ, Effect.EGRESS}), frozenset({Effect.WRITE})],
    ids=["declared the chapter 2 way", "a read that sends out", "a write"],
)
def test_calls_whose_classes_are_not_exactly_read_run_one_after_another(
    classes: frozenset[Effect],
) -> None:
    shop = Shop()
    run, dispatcher = limited(shop, Limits(), read_classes=classes)
    assert not may_run_concurrently(dispatcher.tools["read_a"])
    dispatcher.attempt_turn([call(f"c{n}", "read_a", seconds=0.2, tag=str(n)) for n in range(3)])
    assert run.elapsed_s() == pytest.approx(0.6)
    run.close()


def test_a_limits_file_cannot_name_tools_to_run_side_by_side() -> None:
    # The old list of names is refused loudly, not ignored: only a declaration decides.
    with pytest.raises(ValueError, match="read_only"):
        Limits.model_validate({"read_only": ["write"]})


def test_a_write_never_runs_concurrently_with_anything() -> None:
    shop = Shop()
    run, dispatcher = limited(shop, Limits())
    assert not may_run_concurrently(dispatcher.tools["write"])
    calls = [
        call("c1", "read_a", seconds=0.2, tag="r1"),
        call("c2", "write", seconds=0.1, tag="w1"),
        call("c3", "read_a", seconds=0.2, tag="r2"),
        call("c4", "read_b", seconds=0.2, tag="r3"),
        call("c5", "write", seconds=0.1, tag="w2"),
    ]
    outcomes = dispatcher.attempt_turn(calls)
    assert all(outcome.observation["ok"] for outcome in outcomes)
    assert shop.most_at_once["w1"] == 1 and shop.most_at_once["w2"] == 1
    # r1 | w1 | r2 with r3 | w2: 0.2 + 0.1 + 0.2 + 0.1
    assert run.elapsed_s() == pytest.approx(0.6)
    run.close()


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.integers(0, 50), min_size=1, max_size=6))
def test_concurrent_reads_keep_the_models_order_whatever_finishes_first(delays: list[int]) -> None:
    shop = Shop()
    run, dispatcher = limited(shop, Limits())
    calls = [
        call(f"c{n}", "read_a" if n % 2 else "read_b", seconds=delay / 100, tag=str(n))
        for n, delay in enumerate(delays)
    ]
    outcomes = dispatcher.attempt_turn(calls)
    assert [o.observation["value"]["tag"] for o in outcomes] == [str(n) for n in range(len(delays))]
    assert run.elapsed_s() == pytest.approx(max(delays) / 100)
    run.close()


def test_a_call_past_the_runs_deadline_is_refused_and_the_model_is_not_asked_again() -> None:
    shop = Shop()
    # No declared classes: the calls run one after another, so the third
    # starts past the deadline (reads side by side would all start at 0.0).
    run, dispatcher = limited(shop, Limits(deadline_s=5.0), read_classes=frozenset())
    asks = [
        AssistantMessage(
            tool_calls=(
                AssistantToolCall(id="c1", name="read_a", arguments_json='{"seconds": 3.0}'),
                AssistantToolCall(id="c2", name="read_a", arguments_json='{"seconds": 3.0}'),
                AssistantToolCall(id="c3", name="read_a", arguments_json='{"seconds": 3.0}'),
            )
        ),
        AssistantMessage(content="never asked"),
    ]
    model = ScriptedModel(asks)
    record = run_task(run.model(model), dispatcher, "count", max_steps=4, max_tool_calls=9)
    assert record.refused == (("read_a", "deadline"),)
    assert record.executed == ("read_a", "read_a")
    assert record.stop_reason is StopReason.DEADLINE
    assert record.error == "DeadlinePassed: deadline: 6.0 s of 5 s gone"
    assert len(model.calls) == 1
    with pytest.raises(DeadlinePassed):
        run.model(model).complete([])
    run.close()


def test_a_narrowed_dispatcher_keeps_the_runs_limits() -> None:
    shop = Shop()
    limits = Limits(tool_rates={"read_a": RateLimit(calls=1, per_s=10.0)})
    run, dispatcher = limited(shop, limits)
    assert dispatcher.attempt(call("c1", "read_a", seconds=0.0)).observation["ok"] is True
    narrowed = dispatcher.scoped(["read_a"])
    assert isinstance(narrowed, LimitedDispatcher)
    assert narrowed.attempt(call("c2", "read_a", seconds=0.0)).observation["error"] == (
        "rate_limited"
    )
    assert narrowed.attempt(call("c3", "read_b", seconds=0.0)).observation["error"] == (
        "tool_not_allowed"
    )
    run.close()


def test_a_call_from_inside_a_running_loop_is_refused_in_one_clear_line() -> None:
    shop = Shop()
    run, dispatcher = limited(shop, Limits())

    async def inside() -> None:
        with pytest.raises(RuntimeError, match="no running loop"):
            dispatcher.attempt(call("c1", "read_a", seconds=0.1))
        with pytest.raises(RuntimeError, match="no running loop"):
            dispatcher.attempt_turn([call("c1", "read_a", seconds=0.1)])
        # From a thread of its own, the same call works.
        outcome = await asyncio.to_thread(dispatcher.attempt, call("c2", "read_a", seconds=0.1))
        assert outcome.observation["ok"] is True

    asyncio.run(inside())
    run.close()


class Overlaps:
    """Tools of random classes that note which calls ever ran while another was running."""

    def __init__(self) -> None:
        self.running: set[str] = set()
        self.overlapped: set[str] = set()

    async def wait(self, arguments: Wait) -> str:
        if self.running:
            self.overlapped |= self.running | {arguments.tag}
        self.running.add(arguments.tag)
        try:
            await asyncio.sleep(arguments.seconds)
        finally:
            self.running.discard(arguments.tag)
        return arguments.tag


@settings(max_examples=examples(100), deadline=None)
@given(
    classes=st.lists(st.frozensets(st.sampled_from(list(Effect))), min_size=1, max_size=4),
    turn=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 5)), min_size=1, max_size=8),
)
def test_a_call_that_does_more_than_read_never_runs_beside_another(
    classes: list[frozenset[Effect]], turn: list[tuple[int, int]]
) -> None:
    overlaps = Overlaps()
    tools = [
        ExecutableTool(f"tool_{n}", "Waits.", Wait, overlaps.wait, effects=effects)
        for n, effects in enumerate(classes)
    ]
    run = RunLimits(Limits(), loop_factory=VirtualTimeLoop)
    dispatcher = run.dispatcher(
        Dispatcher(tools, allowed=[t.name for t in tools], before_write=lambda call: None)
    )
    calls = [
        call(f"c{n}", f"tool_{which % len(classes)}", seconds=tenths / 10, tag=f"c{n}")
        for n, (which, tenths) in enumerate(turn)
    ]
    outcomes = dispatcher.attempt_turn(calls)
    assert [o.observation["value"] for o in outcomes] == [c.id for c in calls]
    only_reads = {c.id for c in calls if dispatcher.tools[c.name].effects == {Effect.READ}}
    # Nothing but a call declared exactly read ever ran beside another call.
    assert overlaps.overlapped <= only_reads
    # And reads next to each other did run together: the turn took the sum, over
    # each run of consecutive reads, of its longest call, plus every other call's own time.
    expected, batch = 0.0, 0.0
    for c in calls:
        if c.id in only_reads:
            batch = max(batch, c.arguments["seconds"])
        else:
            expected += batch + c.arguments["seconds"]
            batch = 0.0
    assert run.elapsed_s() == pytest.approx(expected + batch)
    run.close()
