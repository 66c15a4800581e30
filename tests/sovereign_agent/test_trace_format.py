"""Reading a trace back: strict, and every refusal names the file and the line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from morning_plan import SHOP

from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import build_tools
from sovereign_agent.trace import (
    FORMAT_VERSION,
    JsonLinesFile,
    Recorder,
    TraceFormatError,
    read_trace,
    schema_fingerprint,
)
from sovereign_agent.trace.format import ModelReplyEvent, RunFinishedEvent

PLAN = [
    AssistantMessage(
        tool_calls=(AssistantToolCall(id="c1", name="list_stock", arguments_json="{}"),)
    ),
    AssistantMessage(content="Nothing to draft today."),
]


def write_run(trace: Path, run_id: str = "run-1") -> None:
    run_task(
        ScriptedModel(PLAN),
        build_tools(SHOP),
        "Plan.",
        max_steps=3,
        max_tool_calls=3,
        recorder=Recorder(JsonLinesFile(trace), new_run_id=lambda: run_id),
    )


def lines_of(trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]


def rewrite(trace: Path, events: list[dict[str, Any]]) -> None:
    trace.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")


def test_a_recorded_trace_reads_back_as_typed_events(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    write_run(trace)
    (run,) = read_trace(trace)
    assert run.run_id == "run-1"
    assert run.complete
    assert run.lines == tuple(range(1, 9))
    assert isinstance(run.events[2], ModelReplyEvent)
    assert isinstance(run.events[-1], RunFinishedEvent)
    assert run.events[-1].stop_reason == "final_answer"


def test_runs_interleaved_by_two_writers_are_grouped_by_run_id(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_run(first, "run-a")
    write_run(second, "run-b")
    mixed = [line for pair in zip(lines_of(first), lines_of(second), strict=True) for line in pair]
    trace = tmp_path / "t.jsonl"
    rewrite(trace, mixed)
    runs = read_trace(trace)
    assert [run.run_id for run in runs] == ["run-a", "run-b"]
    assert runs[1].lines == tuple(range(2, 17, 2))


def test_a_trace_from_a_future_version_is_refused_with_the_version(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    write_run(trace)
    events = lines_of(trace)
    events[3]["v"] = FORMAT_VERSION + 1
    rewrite(trace, events)
    with pytest.raises(TraceFormatError) as caught:
        read_trace(trace)
    assert caught.value.line == 4
    assert "version 2" in str(caught.value) and "reads version 1 only" in str(caught.value)


def test_a_cut_off_last_line_is_reported_as_a_truncated_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    write_run(trace)
    text = trace.read_text(encoding="utf-8")
    trace.write_text(text[: len(text) - 40], encoding="utf-8")
    with pytest.raises(TraceFormatError, match=r"line 8: not a complete JSON object .*cut off"):
        read_trace(trace)


def test_a_field_of_the_wrong_type_names_the_line_the_kind_and_the_field(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    write_run(trace)
    events = lines_of(trace)
    events[4]["handler_ran"] = "yes"
    rewrite(trace, events)
    with pytest.raises(TraceFormatError, match=r"line 5: tool_outcome: handler_ran: "):
        read_trace(trace)


def test_an_unknown_field_is_refused_not_ignored(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    write_run(trace)
    events = lines_of(trace)
    events[1]["priority"] = "urgent"
    rewrite(trace, events)
    with pytest.raises(TraceFormatError, match=r"line 2: model_request: priority"):
        read_trace(trace)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda events: events.pop(1), r"line 2: model_reply cannot follow run_started"),
        (lambda events: events[3].update(seq=9), r"line 4: event 9 of run run-1, expected 4"),
        (lambda events: events.pop(0), r"line 1: run run-1 starts with model_request"),
        (lambda events: events[2].update(event="model_poem"), r'unknown event kind "model_poem"'),
        (lambda events: events.append(events[1]), r"line 9: run run-1 has already finished"),
    ],
)
def test_events_out_of_order_are_refused_with_the_line(
    tmp_path: Path, change: Any, message: str
) -> None:
    trace = tmp_path / "t.jsonl"
    write_run(trace)
    events = lines_of(trace)
    change(events)
    rewrite(trace, events)
    with pytest.raises(TraceFormatError, match=message):
        read_trace(trace)


def test_an_empty_line_and_a_line_that_is_not_an_object_are_refused(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n", encoding="utf-8")
    with pytest.raises(TraceFormatError, match="line 1: an empty line"):
        read_trace(trace)
    trace.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(TraceFormatError, match="line 1: an event is a JSON object"):
        read_trace(trace)


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    write_run(trace)
    trace.write_bytes(trace.read_bytes() + b'{"v": 1, "x": "\xff"}\n')
    with pytest.raises(TraceFormatError, match="line 9: not UTF-8"):
        read_trace(trace)


def test_an_incomplete_run_reads_back_as_incomplete(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    write_run(trace)
    rewrite(trace, lines_of(trace)[:-1])
    (run,) = read_trace(trace)
    assert not run.complete


def test_a_fingerprint_changes_with_any_change_to_the_schema_and_never_with_key_order() -> None:
    schema = build_tools(SHOP).tools["draft_order"].schema()
    reordered = json.loads(json.dumps(schema, sort_keys=True))
    described = json.loads(json.dumps(schema))
    described["function"]["description"] += " "
    assert schema_fingerprint(reordered) == schema_fingerprint(schema)
    assert schema_fingerprint(described) != schema_fingerprint(schema)
    assert schema_fingerprint(schema).startswith("sha256:")
    assert len(schema_fingerprint(schema)) == len("sha256:") + 64


def test_a_definition_edited_in_the_trace_no_longer_matches_its_fingerprint(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "t.jsonl"
    write_run(trace)
    events = lines_of(trace)
    definition = events[1]["gen_ai.tool.definitions"][0]["function"]
    definition["parameters"]["properties"]["quantity"]["maximum"] = 2000
    rewrite(trace, events)
    with pytest.raises(TraceFormatError, match=r"line 2: model_request: a tool definition"):
        read_trace(trace)
