"""A turn's reads run side by side, traced as a batch: each call timed to its own answer.

The runs here go through `run_task` with a `RunLimits` dispatcher, whose
`attempt_turn` runs a turn's reads at once. The first tests sleep for real
(threads and coroutines on a real event loop) and read the recorder's own
clock; the property runs on a `VirtualTimeLoop` whose clock the recorder
reads too, so every duration is exact. Every trace is written to a real
file, read back with `read_trace`, replayed, summarised and exported.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict
from strength import examples

from sovereign_agent.effects import Effect
from sovereign_agent.limits import Limits, RateLimit, RunLimits, VirtualTimeLoop
from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall, ScriptedModel
from sovereign_agent.tools import Dispatcher, ExecutableTool, Narrow
from sovereign_agent.trace import JsonLinesFile, Recorder, read_trace
from sovereign_agent.trace.format import (
    ModelReplyEvent,
    RecordedRun,
    RunFinishedEvent,
    ScopeNarrowedEvent,
    ToolCallEvent,
    ToolOutcomeEvent,
    TraceFormatError,
    parse_trace,
)
from sovereign_agent.trace.otlp import export_runs
from sovereign_agent.trace.replay import replay_run
from sovereign_agent.trace.summary import format_summary, summarize
from sovereign_agent.trace.timeline import format_timeline, timeline

READ = frozenset({Effect.READ})
WRITE = frozenset({Effect.WRITE})
NS = 1_000_000_000


class Wait(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = 0.0
    tag: str = ""


def sleep_in_thread(arguments: Wait) -> dict[str, str]:
    time.sleep(arguments.seconds)
    return {"tag": arguments.tag}


async def sleep_on_loop(arguments: Wait) -> dict[str, str]:
    await asyncio.sleep(arguments.seconds)
    return {"tag": arguments.tag}


def instant(arguments: Wait) -> dict[str, str]:
    """What a replay runs: the same answer, at once (a replay compares outcomes, not times)."""
    return {"tag": arguments.tag}


def shop(handler: Callable[[Wait], Any], looks: frozenset[Effect] = READ) -> Dispatcher:
    tools = [
        ExecutableTool("look", "Read the freezer.", Wait, handler, effects=looks),
        ExecutableTool("restock", "Write the stock.", Wait, handler, effects=WRITE),
    ]
    return Dispatcher(tools, allowed=[tool.name for tool in tools], before_write=lambda call: None)


def ask(call_id: str, name: str, seconds: float) -> AssistantToolCall:
    arguments = json.dumps({"seconds": seconds, "tag": call_id})
    return AssistantToolCall(id=call_id, name=name, arguments_json=arguments)


def one_turn(calls: list[AssistantToolCall]) -> ScriptedModel:
    return ScriptedModel(
        [AssistantMessage(tool_calls=tuple(calls)), AssistantMessage(content="done")]
    )


def traced_run(
    trace: Path,
    calls: list[AssistantToolCall],
    handler: Callable[[Wait], Any],
    *,
    virtual: bool = False,
    limits: Limits | None = None,
    tools: Dispatcher | None = None,
) -> None:
    loop_factory = VirtualTimeLoop if virtual else asyncio.new_event_loop
    with RunLimits(limits or Limits(), loop_factory=loop_factory) as run:
        # On virtual time the recorder reads the run's own clock: exact durations.
        clock = (lambda: round(run.clock() * NS)) if virtual else time.perf_counter_ns
        record = run_task(
            run.model(one_turn(calls)),
            run.dispatcher(shop(handler) if tools is None else tools),
            "look three times",
            max_steps=2,
            max_tool_calls=len(calls),
            recorder=Recorder(JsonLinesFile(trace), clock=clock),
        )
    assert record.stop_reason is StopReason.FINAL_ANSWER


def tool_events(run: RecordedRun) -> list[ToolCallEvent | ToolOutcomeEvent]:
    return [event for event in run.events if isinstance(event, ToolCallEvent | ToolOutcomeEvent)]


def spans_by_name(run: RecordedRun) -> list[dict[str, Any]]:
    export = export_runs([run])
    return list(export["resourceSpans"][0]["scopeSpans"][0]["spans"])


# -- real time: three reads of 0.4, 0.1 and 0.7 s --------------------------------
THREE = [("c1", 0.4), ("c2", 0.1), ("c3", 0.7)]
# Real sleeps on a shared machine (two test workers on two cores): a call may
# end late, never early. Late by less than the 0.3 s between any two reads, a
# duration is still its own call's and no other's.
LATE_BY_AT_MOST_S = 0.25


@pytest.mark.parametrize(
    "handler", [sleep_in_thread, sleep_on_loop], ids=["in threads", "on the loop"]
)
def test_each_read_of_a_batch_is_timed_to_its_own_answer(
    tmp_path: Path, handler: Callable[[Wait], Any]
) -> None:
    trace = tmp_path / "trace.jsonl"
    traced_run(trace, [ask(call_id, "look", seconds) for call_id, seconds in THREE], handler)
    (run,) = read_trace(trace)
    events = tool_events(run)
    # Taken up together, then answered in the model's order.
    assert [event.event for event in events] == ["tool_call"] * 3 + ["tool_outcome"] * 3
    outcomes = [event for event in events if isinstance(event, ToolOutcomeEvent)]
    assert [event.call_id for event in outcomes] == ["c1", "c2", "c3"]
    for event, (_, seconds) in zip(outcomes, THREE, strict=True):
        took = event.duration_ns / NS
        assert seconds - 0.002 <= took < seconds + LATE_BY_AT_MOST_S, (event.call_id, took)
    # The batch took as long as its longest read, not the sum of the three.
    longest = max(event.duration_ns for event in outcomes) / NS
    finished = run.events[-1]
    assert isinstance(finished, RunFinishedEvent)
    assert 0.7 <= longest < 0.7 + LATE_BY_AT_MOST_S
    assert finished.duration_ns / NS < 1.2 - 0.2


def test_the_export_lays_a_batch_side_by_side_and_the_next_span_after_its_longest(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.jsonl"
    traced_run(trace, [ask(call_id, "look", seconds) for call_id, seconds in THREE], sleep_on_loop)
    (run,) = read_trace(trace)
    spans = spans_by_name(run)
    tools = [span for span in spans if span["name"] == "execute_tool look"]
    chats = [span for span in spans if span["name"].startswith("chat")]
    assert len(tools) == 3 and len(chats) == 2
    starts = {int(span["startTimeUnixNano"]) for span in tools}
    assert len(starts) == 1
    ends = [int(span["endTimeUnixNano"]) for span in tools]
    outcomes = [e for e in tool_events(run) if isinstance(e, ToolOutcomeEvent)]
    start = int(tools[0]["startTimeUnixNano"])
    assert [end - start for end in ends] == [event.duration_ns for event in outcomes]
    # The second request starts where the longest call ended.
    assert int(chats[1]["startTimeUnixNano"]) == max(ends)
    assert int(chats[0]["endTimeUnixNano"]) == start


def test_a_traced_batch_replays_without_divergence_and_shows_as_one(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    calls = [ask("c1", "look", 0.2), ask("c2", "look", 0.1), ask("w", "restock", 0.0)]
    calls.append(ask("c3", "look", 0.3))
    traced_run(trace, calls, sleep_in_thread)
    (run,) = read_trace(trace)
    kinds = [event.event for event in tool_events(run)]
    assert kinds == [*["tool_call"] * 2, *["tool_outcome"] * 2, *["tool_call", "tool_outcome"] * 2]
    report = replay_run(run, setup=lambda **_: shop(instant))
    assert report.divergence is None
    assert report.matched == len(run.events)
    assert any(note.startswith("1 batch(es) of calls ran side by side") for note in report.notes)
    shown = "\n".join(format_timeline(timeline(run)))
    assert "side by side  " in shown and "2 calls: [c1], [c2]" in shown
    summary = format_summary(summarize([run]))
    assert "stops: final_answer 1" in summary
    # A look that now writes too may no longer run beside another: the replay
    # answers it alone, and diverges where the recorded batch took up its second call.
    changed = replay_run(run, setup=lambda **_: shop(instant, looks=READ | WRITE))
    assert changed.divergence is not None
    assert (changed.divergence.kind, changed.divergence.what) == ("tool_call", "event")
    assert changed.divergence.now == "tool_outcome"


def old_order(run: RecordedRun, source: Path, target: Path) -> None:
    """The run's lines as a runtime before batches wrote them: each call just before its outcome."""
    lines = source.read_text(encoding="utf-8").splitlines()
    events = [json.loads(lines[number - 1]) for number in run.lines]
    calls = {e["gen_ai.tool.call.id"]: e for e in events if e["event"] == "tool_call"}
    ordered = []
    for event in events:
        if event["event"] == "tool_outcome":
            ordered.append(calls[event["gen_ai.tool.call.id"]])
        if event["event"] != "tool_call":
            ordered.append(event)
    for seq, event in enumerate(ordered, start=1):
        event["seq"] = seq
    target.write_text("".join(json.dumps(e) + "\n" for e in ordered), encoding="utf-8")


def test_a_trace_written_before_batches_still_reads_replays_and_exports(tmp_path: Path) -> None:
    trace, old = tmp_path / "trace.jsonl", tmp_path / "old.jsonl"
    traced_run(trace, [ask(call_id, "look", seconds) for call_id, seconds in THREE], instant)
    (run,) = read_trace(trace)
    old_order(run, trace, old)
    (before,) = read_trace(old)
    assert [event.event for event in tool_events(before)] == ["tool_call", "tool_outcome"] * 3
    report = replay_run(before, setup=lambda **_: shop(instant))
    # Replayed with a dispatcher that answers one call at a time, as it was recorded.
    assert report.divergence is None
    assert not any("batch" in note for note in report.notes)
    tools = [span for span in spans_by_name(before) if span["name"] == "execute_tool look"]
    # Laid end to end, as before: no call of the old trace says it ran beside another.
    assert [int(a["endTimeUnixNano"]) for a in tools[:-1]] == [
        int(b["startTimeUnixNano"]) for b in tools[1:]
    ]


def skill_shop() -> Dispatcher:
    """A read that narrows the run to itself and look, beside look, count and restock."""

    def skill(arguments: Wait) -> Narrow:
        return Narrow({"tag": arguments.tag}, keep=frozenset({"skill", "look"}), reason="skill")

    tools = [
        ExecutableTool("skill", "Narrows to look.", Wait, skill, effects=READ),
        ExecutableTool("look", "Read the freezer.", Wait, instant, effects=READ),
        ExecutableTool("count", "Read the tubs.", Wait, instant, effects=READ),
        ExecutableTool("restock", "Write the stock.", Wait, instant, effects=WRITE),
    ]
    return Dispatcher(tools, allowed=[tool.name for tool in tools], before_write=lambda call: None)


def test_a_batch_its_first_call_narrowed_is_read_back_and_replayed(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    calls = [ask("c1", "skill", 0), ask("c2", "count", 0), ask("c3", "look", 0)]
    calls.append(ask("c4", "restock", 0))
    traced_run(trace, calls, instant, tools=skill_shop())
    (run,) = read_trace(trace)
    said = [
        (event.event, event.call_id)
        for event in run.events
        if isinstance(event, ToolCallEvent | ToolOutcomeEvent | ScopeNarrowedEvent)
    ]
    # The narrowing follows the outcome that made it, inside the batch.
    assert said == [
        ("tool_call", "c1"),
        ("tool_call", "c2"),
        ("tool_call", "c3"),
        ("tool_outcome", "c1"),
        ("scope_narrowed", "c1"),
        ("tool_outcome", "c2"),
        ("tool_outcome", "c3"),
        ("tool_call", "c4"),
        ("tool_outcome", "c4"),
    ]
    codes = [e.code for e in tool_events(run) if isinstance(e, ToolOutcomeEvent)]
    assert codes == ["ok", "tool_not_allowed", "ok", "tool_not_allowed"]
    report = replay_run(run, setup=lambda **_: skill_shop())
    assert report.divergence is None


def test_a_call_of_a_batch_a_limit_refused_is_timed_to_its_refusal_and_replayed(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.jsonl"
    calls = [ask("c1", "look", 0.2), ask("c2", "look", 0.1), ask("c3", "look", 0.3)]
    # Two calls a minute: the third is refused before anything of the batch runs.
    limits = Limits(run_rate=RateLimit(calls=2, per_s=60.0))
    traced_run(trace, calls, sleep_on_loop, virtual=True, limits=limits)
    (run,) = read_trace(trace)
    outcomes = {e.call_id: e for e in tool_events(run) if isinstance(e, ToolOutcomeEvent)}
    assert outcomes["c3"].code == "rate_limited"
    assert [outcomes[c].duration_ns for c in ("c1", "c2", "c3")] == [NS // 5, NS // 10, 0]
    report = replay_run(run, setup=lambda **_: shop(instant))
    assert report.divergence is None
    assert any(note.startswith("1 call(s) a limit answered") for note in report.notes)
    assert any(note.startswith("1 batch(es)") for note in report.notes)


# -- the reader holds every outcome to its call ----------------------------------
def batch_lines(tmp_path: Path) -> list[str]:
    trace = tmp_path / "trace.jsonl"
    traced_run(trace, [ask(f"c{n}", "look", 0.0) for n in (1, 2, 3)], instant)
    return trace.read_text(encoding="utf-8").splitlines(keepends=True)


def swapped(lines: list[str], first: int, second: int) -> list[str]:
    """Lines with two events swapped and every seq kept in order."""
    events = [json.loads(line) for line in lines]
    events[first], events[second] = events[second], events[first]
    for seq, event in enumerate(events, start=1):
        event["seq"] = seq
    return [json.dumps(event) + "\n" for event in events]


def test_the_reader_refuses_an_outcome_that_answers_the_wrong_call(tmp_path: Path) -> None:
    lines = batch_lines(tmp_path)
    kinds = [json.loads(line)["event"] for line in lines]
    first = kinds.index("tool_outcome")
    assert kinds[first - 3 : first + 3] == ["tool_call"] * 3 + ["tool_outcome"] * 3
    parse_trace(lines)
    with pytest.raises(TraceFormatError, match=r'answers "c2", but "c1" waits first'):
        parse_trace(swapped(lines, first, first + 1))
    # A call taken up between the outcomes of a batch: the loop never does that.
    with pytest.raises(TraceFormatError, match="tool_call while an earlier call still waits"):
        parse_trace(swapped(lines, first - 1, first))
    # The next request while a call of the batch was never answered.
    cut = lines[: first + 2] + lines[first + 3 :]
    cut = [json.dumps({**json.loads(line), "seq": seq}) + "\n" for seq, line in enumerate(cut, 1)]
    with pytest.raises(TraceFormatError, match="model_request while a call still waits"):
        parse_trace(cut)


# -- any turn, on virtual time: every duration exact -----------------------------
@settings(max_examples=examples(40), deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["look", "restock"]), st.integers(0, 9)), min_size=1, max_size=7
    )
)
def test_any_turn_is_traced_batch_by_batch_each_call_timed_exactly(
    tmp_path_factory: pytest.TempPathFactory, turn: list[tuple[str, int]]
) -> None:
    trace = tmp_path_factory.mktemp("batches") / "trace.jsonl"
    calls = [ask(f"c{n}", name, tenths / 10) for n, (name, tenths) in enumerate(turn)]
    traced_run(trace, calls, sleep_on_loop, virtual=True)
    (run,) = read_trace(trace)
    # The batches the trace should hold: runs of reads, every write alone.
    expected: list[list[int]] = []
    for n, (name, _) in enumerate(turn):
        if name == "look" and expected and turn[expected[-1][-1]][0] == "look":
            expected[-1].append(n)
        else:
            expected.append([n])
    kinds = []
    for batch in expected:
        kinds += ["tool_call"] * len(batch) + ["tool_outcome"] * len(batch)
    events = tool_events(run)
    assert [event.event for event in events] == kinds
    assert [event.call_id for event in events] == [f"c{n}" for batch in expected for n in batch * 2]
    outcomes = {e.call_id: e.duration_ns for e in events if isinstance(e, ToolOutcomeEvent)}
    for n, (_, tenths) in enumerate(turn):
        # Its own length, on the run's clock: not the batch's, not zero.
        assert outcomes[f"c{n}"] == pytest.approx(tenths * NS // 10, abs=2)
    finished = run.events[-1]
    assert isinstance(finished, RunFinishedEvent)
    longest = sum(max(turn[n][1] for n in batch) for batch in expected)
    assert finished.duration_ns == pytest.approx(longest * NS // 10, abs=2 * len(turn))
    # The export starts every call of a batch together, and each batch after the last.
    tools = [span for span in spans_by_name(run) if span["name"].startswith("execute_tool")]
    position = 0
    for batch in expected:
        members = tools[position : position + len(batch)]
        assert len({span["startTimeUnixNano"] for span in members}) == 1
        position += len(batch)
    reply = next(event for event in run.events if isinstance(event, ModelReplyEvent))
    assert len(reply.tool_calls) == len(turn)
    report = replay_run(run, setup=lambda **_: shop(instant))
    assert report.divergence is None
