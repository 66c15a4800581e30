"""Replay: a recorded run replays against an unchanged runtime, and diverges at the right event."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from morning_plan import CHAPTER_3, PLAN, ROOT, SHOP, ask, turn
from strength import examples

from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import build_tools
from sovereign_agent.tools import Dispatcher
from sovereign_agent.trace import JsonLinesFile, Recorder, read_trace
from sovereign_agent.trace.replay import (
    ReplaySetupError,
    load_factory,
    replay_run,
    schema_difference,
)

# Setups a replay may be told to use instead of the recorded one: the shop as
# it was, with draft_order's schema changed, or with its description changed.
SETUPS = """
import dataclasses
from pydantic import Field
from sovereign_agent.shop import DraftArguments, NoArguments, build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool


class SmallDraft(DraftArguments):
    quantity: int = Field(gt=0, le=5)


def _changed(recorded, **change):
    tools = build_tools(**recorded)
    return Dispatcher(
        [dataclasses.replace(t, **change) if t.name == "draft_order" else t
         for t in tools.tools.values()],
        allowed=tools.allowed,
    )


def smaller_drafts(**arguments):
    return _changed(arguments, arguments=SmallDraft)


def new_words(**arguments):
    return _changed(arguments, description="Draft a re-order.")


def _one_tool(handler):
    return Dispatcher(
        [ExecutableTool("count", "Counts.", NoArguments, handler)], allowed=["count"]
    )


def counting():
    return _one_tool(lambda args: 1)


def dividing():
    def handler(args):
        raise ZeroDivisionError("the new version divides by zero")

    return _one_tool(handler)


def strict_stock(**arguments):
    shop = arguments["shop"]
    shop["products"][0]["on_hand"] = 9
    return build_tools(**arguments)
"""


def record(
    trace: Path, script: list[Any], dispatcher: Dispatcher | None = None, **bounds: int
) -> None:
    run_task(
        ScriptedModel(script),
        build_tools(SHOP) if dispatcher is None else dispatcher,
        "Plan this morning's re-order.",
        max_steps=bounds.get("max_steps", 6),
        max_tool_calls=bounds.get("max_tool_calls", 8),
        recorder=Recorder(JsonLinesFile(trace)),
    )


def cli(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    return subprocess.run(
        [sys.executable, "-m", "sovereign_agent.trace", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def edit(trace: Path, change: Any) -> None:
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    for event in events:
        change(event)
    trace.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")


@pytest.fixture
def setups(tmp_path: Path) -> Path:
    path = tmp_path / "setups.py"
    path.write_text(SETUPS, encoding="utf-8")
    return path


def test_a_recorded_run_replays_event_for_event(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    (run,) = read_trace(trace)
    report = replay_run(run)
    assert report.divergence is None
    assert report.matched == len(run.events) == 14
    assert report.notes == ()


def test_the_chapter_3_checkpoints_trace_replays_through_the_command_line(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    subprocess.run(
        [sys.executable, str(CHAPTER_3)],
        env={**env, "SOVEREIGN_TRACE": "t.jsonl"},
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=120,
    )
    result = cli("replay", "t.jsonl", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.endswith("replayed 1 run(s): 1 match, 0 diverged\n")
    assert "14 events match" in result.stdout


def test_a_changed_argument_in_the_trace_diverges_at_that_call(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)

    def seven_tubs(event: dict[str, Any]) -> None:
        if event["event"] == "model_reply" and event["step"] == 2:
            event["tool_calls"][0]["arguments"] = '{"sku": "SKU-VANILLA", "quantity": 7}'

    edit(trace, seven_tubs)
    result = cli("replay", str(trace))
    assert result.returncode == 1
    assert "diverged at line 8, event 8 (tool_call)" in result.stdout
    assert '    recorded: {"sku": "SKU-VANILLA", "quantity": 6}' in result.stdout
    assert '    now:      {"sku": "SKU-VANILLA", "quantity": 7}' in result.stdout


def test_a_changed_outcome_in_the_trace_diverges_at_that_outcome(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)

    def cheaper(event: dict[str, Any]) -> None:
        if event["event"] == "tool_outcome" and event["gen_ai.tool.call.id"] == "c3":
            event["gen_ai.tool.call.result"]["value"]["total_pence"] = 1000

    edit(trace, cheaper)
    (run,) = read_trace(trace)
    divergence = replay_run(run).divergence
    assert divergence is not None
    assert (divergence.line, divergence.kind) == (11, "tool_outcome")
    assert divergence.what == "gen_ai.tool.call.result"
    assert '"total_pence": 1000' in divergence.recorded
    assert '"total_pence": 1100' in divergence.now


def test_a_changed_schema_diverges_at_the_first_request_naming_what_changed(
    tmp_path: Path, setups: Path
) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    result = cli("replay", str(trace), "--setup", f"{setups}:smaller_drafts")
    assert result.returncode == 1
    assert "diverged at line 2, event 2 (model_request)" in result.stdout
    assert "schema of draft_order: function.parameters.properties.quantity.maximum" in result.stdout
    assert "    recorded: 1000\n    now:      5\n" in result.stdout
    assert "new version of the tool" in result.stdout


def test_a_changed_description_replays_with_a_note(tmp_path: Path, setups: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    result = cli("replay", str(trace), "--setup", f"{setups}:new_words")
    assert result.returncode == 0, result.stdout
    assert result.stdout.startswith("note: line 2: only the description of draft_order changed")
    assert "14 events match" in result.stdout


def test_changed_behaviour_of_a_tool_diverges_at_its_outcome(tmp_path: Path, setups: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    result = cli("replay", str(trace), "--setup", f"{setups}:strict_stock")
    assert result.returncode == 1
    assert "diverged at line 5, event 5 (tool_outcome)" in result.stdout


def test_a_run_that_ended_in_a_model_error_replays_to_the_same_stop(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN[:1])
    (run,) = read_trace(trace)
    assert run.events[-1].stop_reason == "model_error"  # type: ignore[union-attr]
    assert replay_run(run).divergence is None


def test_a_defect_in_todays_code_is_reported_as_a_divergence(tmp_path: Path, setups: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(
        trace,
        [turn(ask("c1", "count")), AssistantMessage(content="done")],
        load_factory(f"{setups}:counting")(),
    )
    (run,) = read_trace(trace)
    report = replay_run(run, setup=f"{setups}:dividing")
    assert report.divergence is not None
    assert (report.divergence.kind, report.divergence.what) == ("tool_outcome", "exception")
    assert report.divergence.now == "ZeroDivisionError: the new version divides by zero"


def test_a_setup_replay_does_not_know_is_not_called_on_the_traces_word(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    edit(trace, lambda e: e.get("setup") and e["setup"].update(factory="subprocess:run"))
    result = cli("replay", str(trace))
    assert result.returncode == 2
    assert "names the setup subprocess:run, which replay does not know" in result.stderr
    assert "--setup module:function" in result.stderr


def test_a_trace_without_a_setup_asks_for_one(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN, build_tools(SHOP, before_write=lambda call: None))
    (run,) = read_trace(trace)
    with pytest.raises(ReplaySetupError, match=r"records no setup.*pass --setup"):
        replay_run(run)


def test_an_unfinished_run_is_refused_with_its_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    lines = trace.read_text(encoding="utf-8").splitlines(keepends=True)
    trace.write_text("".join(lines[:-1]), encoding="utf-8")
    result = cli("replay", str(trace))
    assert result.returncode == 2
    assert "has no run_finished event" in result.stderr


def test_a_truncated_or_future_trace_is_a_usage_error(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    text = trace.read_text(encoding="utf-8")
    trace.write_text(text[:-30], encoding="utf-8")
    result = cli("replay", str(trace))
    assert (result.returncode, result.stdout) == (2, "")
    assert "line 14: not a complete JSON object" in result.stderr
    assert cli("replay", str(tmp_path / "nothing.jsonl")).returncode == 2


def test_one_run_of_several_is_chosen_by_id_prefix(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    record(trace, PLAN[:1])
    first, _ = read_trace(trace)
    result = cli("replay", str(trace), "--run", first.run_id[:6])
    assert result.returncode == 0
    assert "replayed 1 run(s)" in result.stdout
    assert cli("replay", str(trace), "--run", "zzz").returncode == 2


def test_help_describes_both_commands_and_the_exit_status() -> None:
    result = cli("--help")
    assert result.returncode == 0
    assert "replay" in result.stdout and "summary" in result.stdout
    assert "exit status: 0 all match, 1 a run diverged, 2 unusable trace" in result.stdout


def test_schema_difference_finds_the_first_changed_place() -> None:
    old = {"a": 1, "b": {"c": [1, 2], "d": "x"}}
    assert schema_difference(old, old) is None
    assert schema_difference(old, {"a": 1, "b": {"c": [1, 3], "d": "x"}}) == ("b.c[1]", 2, 3)
    assert schema_difference(old, {"a": 1, "b": {"c": [1, 2]}}) == ("b.d", "x", "(absent)")


names = st.sampled_from(["list_stock", "supplier", "draft_order", "run_shell", "", "bad name"])
ids = st.sampled_from(["c1", "c2", "c3", ""]) | st.text(max_size=8)
arguments = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "sku": st.sampled_from(["SKU-VANILLA", "SKU-STRAWBERRY", "SKU-X"]),
            "quantity": st.one_of(st.integers(-1, 8), st.text(max_size=3)),
        },
    ).map(json.dumps),
    st.sampled_from(["[]", "{", '{"a": NaN}', "null"]),
    st.text(max_size=20),
)
replies = st.builds(
    AssistantMessage,
    content=st.none() | st.text(max_size=30),
    tool_calls=st.lists(
        st.builds(AssistantToolCall, id=ids, name=names, arguments_json=arguments), max_size=4
    ).map(tuple),
)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(replies, max_size=6),
    max_steps=st.integers(1, 5),
    max_tool_calls=st.integers(1, 5),
    hints=st.booleans(),
)
def test_any_sequence_of_replies_yields_a_trace_that_replays(
    script: list[AssistantMessage], max_steps: int, max_tool_calls: int, hints: bool
) -> None:
    events: list[dict[str, Any]] = []
    run_task(
        ScriptedModel(script),
        build_tools(SHOP, hints=hints),
        "t",
        max_steps=max_steps,
        max_tool_calls=max_tool_calls,
        recorder=Recorder(events.append),
    )
    from sovereign_agent.trace import parse_trace
    from sovereign_agent.trace.recorder import encode_event

    (run,) = parse_trace(encode_event(event).decode("utf-8") for event in events)
    report = replay_run(run)
    assert report.divergence is None, report.divergence
    assert report.matched == len(run.events)
