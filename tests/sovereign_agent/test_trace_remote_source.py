"""Traces of runs with remote tools: the source of every call, replay without the server.

The run is recorded against the book's real supplier server over stdio
(`book/textbook/servers/supplier_mcp.py`), then replayed after the server is
closed: local tools run again, remote calls are answered from the trace.
"""

from __future__ import annotations

import dataclasses
import json
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from otlp_json import attributes, parse_otlp, spans_of
from strength import examples

from bookproof.layout import REPO_ROOT
from sovereign_agent.loop import run_task
from sovereign_agent.mcp.remote import connect, dispatcher_with_remote
from sovereign_agent.mcp.supplier import SUPPLIER_DECLARATIONS, SUPPLIER_SOURCE
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import build_tools
from sovereign_agent.toolsets import SourcedTools
from sovereign_agent.trace.format import (
    ToolCallEvent,
    ToolOutcomeEvent,
    parse_trace,
    read_trace,
)
from sovereign_agent.trace.inputs import printable
from sovereign_agent.trace.otlp import export_runs
from sovereign_agent.trace.recorder import JsonLinesFile, Recorder
from sovereign_agent.trace.replay import replay_run
from sovereign_agent.trace.summary import format_summary, summarize
from sovereign_agent.trace.timeline import format_timeline, timeline

ROOT = REPO_ROOT
SUPPLIER = [sys.executable, str(ROOT / "book/textbook/servers/supplier_mcp.py")]
SHOP = runpy.run_path(
    str(
        ROOT
        / "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
    )
)["SHOP"]


def ask(call_id: str, tool: str, /, **arguments: Any) -> AssistantToolCall:
    return AssistantToolCall(id=call_id, name=tool, arguments_json=json.dumps(arguments))


def record_run(trace: Path) -> None:
    local = build_tools(SHOP, allowed=["list_stock"])
    with connect(SUPPLIER, SUPPLIER_DECLARATIONS, source=SUPPLIER_SOURCE) as supplier:
        dispatcher, joined = dispatcher_with_remote(
            [SourcedTools("shop", local.tools), supplier],
            allowed=["list_stock", "check_availability", "next_delivery"],
            setup=local.setup,
        )
        model = ScriptedModel(
            [
                AssistantMessage(
                    tool_calls=(
                        ask("r0", "check_availability", sku="vanilla"),
                        ask("r1", "check_availability", sku="VANILLA"),
                    )
                ),
                AssistantMessage(
                    tool_calls=(
                        ask("r2", "next_delivery"),
                        ask("r3", "list_stock"),
                        ask("r4", "check_availability", sku="CHOCOLATE"),
                    )
                ),
                AssistantMessage(content="Vanilla can come on the next delivery."),
            ]
        )
        record = run_task(
            model,
            dispatcher,
            "Can the supplier deliver vanilla?",
            max_steps=5,
            max_tool_calls=8,
            recorder=Recorder(JsonLinesFile(trace), sources=joined.sources),
        )
    assert record.stop_reason == "final_answer"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    trace = tmp_path_factory.mktemp("remote") / "trace.jsonl"
    record_run(trace)
    return trace


def test_every_call_and_outcome_names_the_source_it_went_to(recorded: Path) -> None:
    (run,) = read_trace(recorded)
    tool_events = [e for e in run.events if isinstance(e, ToolCallEvent | ToolOutcomeEvent)]
    assert len(tool_events) == 10
    for event in tool_events:
        expected = "shop" if event.tool_name == "list_stock" else SUPPLIER_SOURCE
        assert event.source == expected, event
    outcomes = {e.call_id: e for e in tool_events if isinstance(e, ToolOutcomeEvent)}
    # Refused by the shop's own declaration before the server was asked.
    assert outcomes["r0"].code == "invalid_arguments" and not outcomes["r0"].handler_ran
    assert outcomes["r1"].code == "ok" and outcomes["r1"].handler_ran
    # The supplier changes check_availability after its first call (chapter 9's
    # rug pull): the run narrowed, and the later call is refused as not allowed.
    assert outcomes["r4"].code == "tool_not_allowed" and not outcomes["r4"].handler_ran


def test_the_otlp_export_names_the_source_of_every_call(recorded: Path, tmp_path: Path) -> None:
    # Through the command line an operator uses, then the official schema.
    target = tmp_path / "spans.json"
    command = ["export", str(recorded), "--otlp-json", str(target)]
    exported = subprocess.run(
        [sys.executable, "-m", "sovereign_agent.trace", *command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert exported.returncode == 0, exported.stderr
    spans = spans_of(parse_otlp(json.loads(target.read_text(encoding="utf-8"))))
    calls = {
        attributes(span)["gen_ai.tool.call.id"]: attributes(span)
        for span in spans
        if span.name.startswith("execute_tool ")
    }
    assert sorted(calls) == ["r0", "r1", "r2", "r3", "r4"]
    for call_id, found in calls.items():
        expected = "shop" if found["gen_ai.tool.name"] == "list_stock" else SUPPLIER_SOURCE
        assert found["sovereign_agent.source"] == expected, call_id
    # The source says where a call was headed, refused or not: r0 never left the shop.
    assert calls["r0"]["sovereign_agent.code"] == "invalid_arguments"
    assert calls["r0"]["sovereign_agent.source"] == SUPPLIER_SOURCE
    # The run and model spans belong to no one source.
    assert all(
        "sovereign_agent.source" not in attributes(span)
        for span in spans
        if not span.name.startswith("execute_tool ")
    )


def test_the_otlp_export_carries_any_source_text_as_it_was_recorded(recorded: Path) -> None:
    hostile = 'mcp:"quoted"\n\x1b[2J\u2028évil'
    lines = []
    for line in recorded.read_text().splitlines():
        event = json.loads(line)
        if event.get("source") == SUPPLIER_SOURCE:
            event["source"] = hostile
        lines.append(json.dumps(event) + "\n")
    spans = spans_of(parse_otlp(export_runs(parse_trace(lines))))
    sources = {
        attributes(span)["gen_ai.tool.name"]: attributes(span)["sovereign_agent.source"]
        for span in spans
        if span.name.startswith("execute_tool ")
    }
    assert sources == {
        "check_availability": hostile,
        "next_delivery": hostile,
        "list_stock": "shop",
    }


def test_a_run_without_sources_writes_no_source_field(tmp_path: Path) -> None:
    trace = tmp_path / "plain.jsonl"
    model = ScriptedModel(
        [AssistantMessage(tool_calls=(ask("p1", "list_stock"),)), AssistantMessage(content="ok")]
    )
    run_task(
        model,
        build_tools(SHOP),
        "stock?",
        max_steps=3,
        max_tool_calls=3,
        recorder=Recorder(JsonLinesFile(trace)),
    )
    assert '"source"' not in trace.read_text()


def test_replay_answers_remote_calls_from_the_trace_with_the_server_gone(recorded: Path) -> None:
    (run,) = read_trace(recorded)
    report = replay_run(run)
    assert report.divergence is None
    assert report.matched == len(run.events)
    assert any("answered from the trace" in note for note in report.notes)


def test_the_command_line_replays_it_and_shows_the_source(recorded: Path) -> None:
    replayed = subprocess.run(
        [sys.executable, "-m", "sovereign_agent.trace", "replay", str(recorded)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "sovereign_agent.trace", "show", str(recorded)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert '[r1] via "mcp:supplier"' in shown.stdout
    assert '[r3] via "shop"' in shown.stdout
    summary = subprocess.run(
        [sys.executable, "-m", "sovereign_agent.trace", "summary", str(recorded)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert 'calls by source: "mcp:supplier" 4, "shop" 1' in summary.stdout


def test_a_changed_declaration_diverges(recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import BaseModel, ConfigDict, Field

    class WiderAvailability(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        sku: str = Field(pattern=r"^[A-Za-z]{1,20}$")

    changed = tuple(
        dataclasses.replace(d, arguments=WiderAvailability) if d.name == "check_availability" else d
        for d in SUPPLIER_DECLARATIONS
    )
    monkeypatch.setattr("sovereign_agent.mcp.supplier.SUPPLIER_DECLARATIONS", changed)
    (run,) = read_trace(recorded)
    report = replay_run(run)
    assert report.divergence is not None
    assert report.divergence.what.startswith("schema of check_availability")


def test_a_hostile_source_is_displayed_escaped(recorded: Path, tmp_path: Path) -> None:
    hostile = "mcp:\x1b[2J\x1b]0;owned\x07evil\nshop"
    lines = []
    for line in recorded.read_text().splitlines():
        event = json.loads(line)
        if event.get("source") == SUPPLIER_SOURCE:
            event["source"] = hostile
        lines.append(json.dumps(event))
    trace = tmp_path / "hostile.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    for command in ("show", "summary"):
        shown = subprocess.run(
            [sys.executable, "-m", "sovereign_agent.trace", command, str(trace)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
        assert "owned" in shown.stdout and "evil" in shown.stdout
    replayed = subprocess.run(
        [sys.executable, "-m", "sovereign_agent.trace", "replay", str(trace)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # A source replay does not know is refused in one line, escaped, and nothing runs.
    assert replayed.returncode != 0
    assert "\x1b" not in replayed.stdout + replayed.stderr
    assert "does not know" in replayed.stdout + replayed.stderr


def test_a_recorded_remote_failure_is_repeated_from_the_trace(
    recorded: Path, tmp_path: Path
) -> None:
    # As if the supplier had not answered r2 in time: the replay, which never
    # asks the server, must fail that call the same way, from the record.
    lines = []
    for line in recorded.read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "tool_outcome" and event["gen_ai.tool.call.id"] == "r2":
            event.update(
                {
                    "code": "tool_failed",
                    "gen_ai.tool.call.result": {"ok": False, "error": "tool_failed"},
                    "failure_stage": "handler",
                    "exception.type": "RemoteFailure",
                    "exception.message": "no answer within 10.0 s",
                }
            )
        lines.append(json.dumps(event))
    trace = tmp_path / "failed.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    (run,) = read_trace(trace)
    report = replay_run(run)
    assert report.divergence is None, report.divergence
    assert not any("message changed" in note for note in report.notes)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(source=st.text(min_size=1, max_size=40))
def test_any_source_text_reaches_the_terminal_quoted_and_escaped(
    recorded: Path, source: str
) -> None:
    lines = []
    for line in recorded.read_text().splitlines():
        event = json.loads(line)
        if "source" in event:
            event["source"] = source
        lines.append(json.dumps(event) + "\n")
    (run,) = parse_trace(lines)
    assert all(
        event.source == source
        for event in run.events
        if isinstance(event, ToolCallEvent | ToolOutcomeEvent)
    )
    shown = [printable(line) for line in format_timeline(timeline(run))]
    shown += [printable(line) for line in format_summary(summarize([run]))]
    for line in shown:
        # Nothing a terminal could act on, and no line break a label could forge.
        assert line.isprintable(), line
    quoted = json.dumps(source, ensure_ascii=False)
    assert any(f"via {printable(quoted)}" in line for line in shown)
