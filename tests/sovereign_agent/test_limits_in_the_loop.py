"""Chapter 13's limits inside a real run: named stops, and a turn's reads side by side.

Every run here goes through `run_task` with a `RunLimits` on a
`VirtualTimeLoop`, so the times asserted are the run's own clock, exact. The
trace of each stop is written to a real file and read back by `trace summary`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from morning_plan import SHOP
from pydantic import BaseModel, ConfigDict
from strength import examples

import sovereign_agent.limits as limits_package
from sovereign_agent.effects import Effect
from sovereign_agent.limits import (
    Limits,
    Price,
    RateLimit,
    RunLimitReached,
    RunLimits,
    VirtualTimeLoop,
)
from sovereign_agent.loop import RunRecord, StopReason, TurnDispatcher, run_task
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelReply,
    ScriptedModel,
    ToolMessage,
    Usage,
)
from sovereign_agent.shop import build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool, Narrow, ToolCall, ToolOutcome
from sovereign_agent.trace import JsonLinesFile, Recorder, read_trace
from sovereign_agent.trace.format import RunFinishedEvent
from sovereign_agent.trace.replay import replay_run
from sovereign_agent.trace.summary import format_summary, summarize

READ = frozenset({Effect.READ})
WRITE = frozenset({Effect.WRITE})


class Wait(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = 0.0
    tag: str = ""


class Freezer:
    """Tools that wait on the run's clock and log when each call started and ended."""

    def __init__(self) -> None:
        self.clock: Callable[[], float] = lambda: 0.0
        self.log: list[tuple[str, str, float]] = []
        self.running: set[str] = set()
        # For every call: the other calls running at some moment while it ran.
        self.beside: dict[str, set[str]] = {}

    async def wait(self, arguments: Wait) -> dict[str, str]:
        tag = arguments.tag
        self.beside[tag] = set(self.running)
        for other in self.running:
            self.beside[other].add(tag)
        self.running.add(tag)
        self.log.append(("start", tag, self.clock()))
        try:
            await asyncio.sleep(arguments.seconds)
        finally:
            self.running.discard(tag)
        self.log.append(("end", tag, self.clock()))
        return {"tag": tag}

    def dispatcher(self, *extra: ExecutableTool[Any]) -> Dispatcher:
        tools = [
            ExecutableTool("look", "Read the freezer.", Wait, self.wait, effects=READ),
            ExecutableTool("count", "Read the tubs.", Wait, self.wait, effects=READ),
            ExecutableTool("restock", "Write the stock.", Wait, self.wait, effects=WRITE),
            *extra,
        ]
        return Dispatcher(
            tools, allowed=[tool.name for tool in tools], before_write=lambda call: None
        )


def ask(call_id: str, name: str, seconds: float = 0.0, tag: str | None = None) -> AssistantToolCall:
    arguments = f'{{"seconds": {seconds!r}, "tag": "{call_id if tag is None else tag}"}}'
    return AssistantToolCall(id=call_id, name=name, arguments_json=arguments)


class Metered:
    """Asks to look in the freezer every turn, reporting the usage it was given per reply."""

    label = "metered"

    def __init__(self, usages: Sequence[tuple[int, int]], seconds: float = 0.0) -> None:
        self.usages = list(usages)
        self.seconds = seconds
        self.requests = 0

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        given, produced = self.usages[self.requests]
        self.requests += 1
        look = ask(f"c{self.requests}", "look", self.seconds)
        return ModelReply(
            message=AssistantMessage(tool_calls=(look,)),
            model="shop-model",
            usage=Usage(input_tokens=given, output_tokens=produced),
        )


def limited_run(
    model: Any, limits: Limits, trace: Path, freezer: Freezer
) -> tuple[RunRecord, RunLimits]:
    run = RunLimits(limits, loop_factory=VirtualTimeLoop)
    freezer.clock = run.clock
    record = run_task(
        run.model(model),
        run.dispatcher(freezer.dispatcher()),
        "plan the week",
        max_steps=10,
        max_tool_calls=10,
        recorder=Recorder(JsonLinesFile(trace)),
    )
    return record, run


def recorded_stop(trace: Path) -> tuple[str, str | None, list[str]]:
    """The trace's run_finished stop reason and error class, and what `trace summary` prints."""
    runs = read_trace(trace)
    finished = runs[0].events[-1]
    assert isinstance(finished, RunFinishedEvent)
    return finished.stop_reason, finished.error_type, format_summary(summarize(runs))


def test_every_limit_the_package_raises_is_a_stop_reason_of_the_loop() -> None:
    # A RunLimitReached whose limit the loop could not name would crash the run
    # (StopReason(limit) raises): every one the package defines must be named.
    found: list[type[RunLimitReached]] = []
    pending = [RunLimitReached]
    while pending:
        kind = pending.pop()
        found.extend(kind.__subclasses__())
        pending.extend(kind.__subclasses__())
    exported = {
        value
        for value in vars(limits_package).values()
        if isinstance(value, type) and issubclass(value, RunLimitReached)
    }
    assert set(found) >= exported - {RunLimitReached}
    assert {kind.limit for kind in found} == {"token_budget", "money_budget", "deadline"}
    assert all(StopReason(kind.limit).value == kind.limit for kind in found)


def test_a_token_budget_stops_the_run_by_name_and_nothing_after_it_runs(tmp_path: Path) -> None:
    freezer, trace = Freezer(), tmp_path / "trace.jsonl"
    model = Metered([(30, 10), (50, 10), (70, 10), (90, 10)])
    record, run = limited_run(model, Limits(max_tokens=150), trace, freezer)
    assert run.close() == 0
    # 40 + 60 spent; the third request would read at least 60 more: 160 > 150.
    assert model.requests == 2
    assert record.stop_reason is StopReason.TOKEN_BUDGET
    assert record.error is not None and record.error.startswith("TokenBudgetSpent: token_budget:")
    assert record.executed == ("look", "look")
    assert [tag for kind, tag, _ in freezer.log if kind == "start"] == ["c1", "c2"]
    reason, error_type, summary = recorded_stop(trace)
    assert (reason, error_type) == ("token_budget", "TokenBudgetSpent")
    assert "stops: token_budget 1" in summary
    assert "limits: token_budget 1" in summary


def test_a_money_budget_stops_the_run_by_name_and_nothing_after_it_runs(tmp_path: Path) -> None:
    freezer, trace = Freezer(), tmp_path / "trace.jsonl"
    price = Price(input_pence_per_million=250, output_pence_per_million=1_000)
    model = Metered([(400 * n, 50) for n in range(1, 10)])
    limits = Limits(max_pence=1, prices={"shop-model": price})
    record, run = limited_run(model, limits, trace, freezer)
    assert run.close() == 0
    assert model.requests == 3
    assert record.stop_reason is StopReason.MONEY_BUDGET
    assert record.error is not None and record.error.startswith("MoneyBudgetSpent: money_budget:")
    assert len(freezer.log) == 2 * 3  # three looks, each started and ended; no fourth
    reason, _, summary = recorded_stop(trace)
    assert reason == "money_budget"
    assert "stops: money_budget 1" in summary
    assert "limits: money_budget 1" in summary


def test_a_deadline_stops_the_run_by_name_and_nothing_after_it_runs(tmp_path: Path) -> None:
    freezer, trace = Freezer(), tmp_path / "trace.jsonl"
    # Each turn's look takes 2 s: requests at 0, 2 and 4 s go out; at 6 s the
    # deadline of 5 s has passed, and the fourth request is never sent.
    model = Metered([(1, 1)] * 10, seconds=2.0)
    record, run = limited_run(model, Limits(deadline_s=5.0), trace, freezer)
    assert run.close() == 0
    assert model.requests == 3
    assert record.stop_reason is StopReason.DEADLINE
    assert record.error == "DeadlinePassed: deadline: 6.0 s of 5 s gone"
    assert [time for kind, _, time in freezer.log if kind == "end"][-1] == 6.0
    reason, _, summary = recorded_stop(trace)
    assert reason == "deadline"
    assert "stops: deadline 1" in summary
    assert "limits: deadline 1" in summary


def test_a_turns_reads_run_together_inside_a_run_and_a_write_runs_alone() -> None:
    freezer = Freezer()
    run = RunLimits(Limits(), loop_factory=VirtualTimeLoop)
    freezer.clock = run.clock
    turn = AssistantMessage(
        tool_calls=(
            ask("c1", "look", 0.2),
            ask("c2", "count", 0.3),
            ask("c3", "look", 0.1),
            ask("c4", "restock", 0.5),
            ask("c5", "count", 0.2),
        )
    )
    model = ScriptedModel([turn, AssistantMessage(content="planned")])
    record = run_task(
        run.model(model), run.dispatcher(freezer.dispatcher()), "t", max_steps=3, max_tool_calls=9
    )
    assert record.stop_reason is StopReason.FINAL_ANSWER
    # c1..c3 together (0.3 s, the longest), then c4 alone (0.5 s), then c5 (0.2 s).
    assert run.elapsed_s() == pytest.approx(1.0)
    assert freezer.beside["c1"] == {"c2", "c3"}
    assert freezer.beside["c4"] == set()
    answers = [m for m in record.messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in answers] == ["c1", "c2", "c3", "c4", "c5"]
    assert all(f'"tag": "{m.tool_call_id}"' in m.content for m in answers)
    run.close()


def test_without_limits_the_loop_still_answers_one_call_at_a_time() -> None:
    # A plain Dispatcher has no attempt_turn: chapter 3's loop, call by call.
    attempted: list[str] = []

    class Counting(Dispatcher):
        def attempt(self, call: ToolCall) -> ToolOutcome:
            attempted.append(call.id)
            return super().attempt(call)

    look = ExecutableTool("look", "Read the freezer.", Wait, lambda _: {}, effects=READ)
    turn = AssistantMessage(tool_calls=(ask("c1", "look"), ask("c2", "look")))
    model = ScriptedModel([turn, AssistantMessage(content="done")])
    dispatcher = Counting([look], allowed=["look"])
    assert not isinstance(dispatcher, TurnDispatcher)
    record = run_task(model, dispatcher, "t", max_steps=2, max_tool_calls=2)
    assert record.executed == ("look", "look")
    assert attempted == ["c1", "c2"]


def test_a_read_run_beside_one_that_narrowed_the_run_away_from_it_is_not_shown() -> None:
    freezer = Freezer()

    async def skill(arguments: Wait) -> Narrow:
        await asyncio.sleep(arguments.seconds)
        return Narrow("loaded", keep=frozenset({"skill", "look"}), reason="skill")

    narrowing = ExecutableTool("skill", "Narrows to look.", Wait, skill, effects=READ)
    run = RunLimits(Limits(), loop_factory=VirtualTimeLoop)
    freezer.clock = run.clock
    turn = AssistantMessage(
        tool_calls=(
            ask("c1", "skill", 0.1),
            ask("c2", "count", 0.1),
            ask("c3", "look", 0.1),
            ask("c4", "restock", 0.1),
        )
    )
    model = ScriptedModel([turn, AssistantMessage(content="done")])
    record = run_task(
        run.model(model),
        run.dispatcher(freezer.dispatcher(narrowing)),
        "t",
        max_steps=3,
        max_tool_calls=9,
    )
    answers = {m.tool_call_id: m.content for m in record.messages if isinstance(m, ToolMessage)}
    # count ran beside the skill, before the narrowing was known: it ran, and
    # the model is not shown what it read; look was kept; restock, alone after
    # the narrowing, is refused without running.
    assert answers["c2"] == '{"error": "tool_not_allowed", "ok": false}'
    assert '"tag": "c3"' in answers["c3"]
    assert answers["c4"] == '{"error": "tool_not_allowed", "ok": false}'
    assert record.executed == ("skill", "count", "look")
    assert record.refused == (("restock", "tool_not_allowed"),)
    assert "c4" not in freezer.beside
    run.close()


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["look", "count", "restock"]), st.integers(1, 9)),
        min_size=1,
        max_size=8,
    )
)
def test_any_turn_keeps_the_models_order_and_runs_only_reads_together(
    turn: list[tuple[str, int]],
) -> None:
    freezer = Freezer()
    run = RunLimits(Limits(), loop_factory=VirtualTimeLoop)
    freezer.clock = run.clock
    calls = [ask(f"c{n}", name, tenths / 10) for n, (name, tenths) in enumerate(turn)]
    model = ScriptedModel([AssistantMessage(tool_calls=tuple(calls)), AssistantMessage(content="")])
    record = run_task(
        run.model(model), run.dispatcher(freezer.dispatcher()), "t", max_steps=2, max_tool_calls=8
    )
    answers = [m for m in record.messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in answers] == [c.id for c in calls]
    assert all(f'"tag": "{m.tool_call_id}"' in m.content for m in answers)
    writes = {c.id for c in calls if c.name == "restock"}
    expected, batch = 0.0, 0.0
    for n, (_, tenths) in enumerate(turn):
        call_id = f"c{n}"
        if call_id in writes:
            assert freezer.beside[call_id] == set()
            expected += batch + tenths / 10
            batch = 0.0
        else:
            # A read runs beside exactly the reads next to it, up to the nearest write.
            assert not freezer.beside[call_id] & writes
            batch = max(batch, tenths / 10)
    assert run.elapsed_s() == pytest.approx(expected + batch)
    run.close()


class ListsStock:
    """Asks for the stock list every turn, reporting growing usage; for a replayable run."""

    label = "lists-stock"

    def __init__(self) -> None:
        self.requests = 0

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        self.requests += 1
        call = AssistantToolCall(id=f"c{self.requests}", name="list_stock", arguments_json="{}")
        return ModelReply(
            message=AssistantMessage(tool_calls=(call,)),
            model="shop-model",
            usage=Usage(input_tokens=30 + 20 * self.requests, output_tokens=10),
        )


@pytest.mark.parametrize(
    ("limits", "refused"),
    [
        (Limits(max_tokens=150), 0),
        # One call a minute: every call after the first is refused rate_limited.
        (Limits(max_tokens=400, run_rate=RateLimit(calls=1, per_s=60.0)), 3),
        (Limits(max_tokens=400, tool_timeout_s=0.5), 0),
    ],
    ids=["a budget stop", "rate limited calls", "no limit met"],
)
def test_a_limited_run_replays_without_its_limits_taking_their_answers_from_the_trace(
    tmp_path: Path, limits: Limits, refused: int
) -> None:
    trace = tmp_path / "trace.jsonl"
    with RunLimits(limits, loop_factory=VirtualTimeLoop) as run:
        record = run_task(
            run.model(ListsStock()),
            run.dispatcher(build_tools(SHOP)),
            "what is in the freezer?",
            max_steps=9,
            max_tool_calls=9,
            recorder=Recorder(JsonLinesFile(trace)),
        )
    assert record.stop_reason is StopReason.TOKEN_BUDGET
    assert sum(code == "rate_limited" for _, code in record.refused) == refused
    report = replay_run(read_trace(trace)[0])
    assert report.divergence is None
    assert any("its stop was taken from the trace" in note for note in report.notes)
    answered = [note for note in report.notes if "answered from the trace" in note]
    if refused:
        assert len(answered) == 1 and answered[0].startswith(f"{refused} call(s) a limit answered")
    else:
        assert answered == []


def test_a_replay_still_diverges_where_a_tool_now_answers_differently(tmp_path: Path) -> None:
    # Answering a limit's refusals from the trace must not hide a real change:
    # the calls that ran are run again, and a changed shop diverges.
    trace = tmp_path / "trace.jsonl"
    limits = Limits(max_tokens=400, run_rate=RateLimit(calls=1, per_s=60.0))
    with RunLimits(limits, loop_factory=VirtualTimeLoop) as run:
        run_task(
            run.model(ListsStock()),
            run.dispatcher(build_tools(SHOP)),
            "what is in the freezer?",
            max_steps=9,
            max_tool_calls=9,
            recorder=Recorder(JsonLinesFile(trace)),
        )
    changed = {**SHOP, "products": [{**p, "on_hand": p["on_hand"] + 1} for p in SHOP["products"]]}
    report = replay_run(read_trace(trace)[0], setup=lambda **_: build_tools(changed))
    assert report.divergence is not None
    assert report.divergence.kind == "tool_outcome"
