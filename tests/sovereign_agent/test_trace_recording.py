"""Recording: every event kind, in the loop's order, with what the operator needs and no more."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from morning_plan import CHAPTER_3, PLAN, SHOP, TASK, ask, turn

from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelReply,
    Usage,
)
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import NoArguments, build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool, Setup, ToolCall
from sovereign_agent.trace import (
    JsonLinesFile,
    Recorder,
    TraceWriteError,
    parse_trace,
    read_trace,
    schema_fingerprint,
)
from sovereign_agent.trace.format import parse_event
from sovereign_agent.trace.recorder import WRITE_EVERY_S


def ticking() -> Any:
    """A clock that moves 1,000 ns each time it is read."""
    state = {"now": 0}

    def clock() -> int:
        state["now"] += 1_000
        return state["now"]

    return clock


def record(
    script: Sequence[Any],
    dispatcher: Dispatcher | None = None,
    *,
    max_steps: int = 6,
    max_tool_calls: int = 8,
    system: str | None = None,
) -> tuple[list[dict[str, Any]], Any]:
    events: list[dict[str, Any]] = []
    recorder = Recorder(
        events.append,
        clock=ticking(),
        wall_clock=lambda: 1_748_849_400_000_000_000,
        new_run_id=lambda: "run-1",
    )
    run = run_task(
        ScriptedModel(script),
        build_tools(SHOP) if dispatcher is None else dispatcher,
        TASK,
        max_steps=max_steps,
        max_tool_calls=max_tool_calls,
        system=system,
        recorder=recorder,
    )
    return events, run


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [event["event"] for event in events]


def test_the_morning_plan_is_recorded_in_the_loops_order() -> None:
    events, _ = record(PLAN)
    assert kinds(events) == [
        "run_started",
        "model_request",
        "model_reply",
        "tool_call",
        "tool_outcome",
        "model_request",
        "model_reply",
        "tool_call",
        "tool_outcome",
        "tool_call",
        "tool_outcome",
        "model_request",
        "model_reply",
        "run_finished",
    ]
    assert [event["seq"] for event in events] == list(range(1, 15))
    assert {event["run"] for event in events} == {"run-1"}
    assert {event["v"] for event in events} == {1}


def test_every_event_validates_against_the_format() -> None:
    events, _ = record(PLAN)
    runs = parse_trace(json.dumps(event) + "\n" for event in events)
    assert len(runs) == 1 and runs[0].complete


def test_run_started_records_the_task_the_bounds_the_model_and_how_to_rebuild_the_tools() -> None:
    events, _ = record(PLAN, system="Be brief.")
    started = events[0]
    assert started["gen_ai.operation.name"] == "invoke_agent"
    assert started["time_unix_nano"] == 1_748_849_400_000_000_000
    assert started["task"] == TASK
    assert started["gen_ai.system_instructions"] == "Be brief."
    assert (started["max_steps"], started["max_tool_calls"]) == (6, 8)
    assert started["model"] == "offline (scripted)"
    assert started["hints"] is False
    assert started["setup"]["factory"] == "sovereign_agent.shop:build_tools"
    assert started["setup"]["arguments"]["shop"]["products"] == SHOP["products"]


def test_model_request_records_the_offered_tools_by_fingerprint_and_defines_each_once() -> None:
    events, _ = record(PLAN)
    requests = [event for event in events if event["event"] == "model_request"]
    schemas = build_tools(SHOP).schemas()
    expected = {schema["function"]["name"]: schema_fingerprint(schema) for schema in schemas}
    assert [request["step"] for request in requests] == [1, 2, 3]
    assert [request["messages"] for request in requests] == [1, 3, 6]
    assert all(request["tools"] == expected for request in requests)
    assert requests[0]["gen_ai.tool.definitions"] == schemas
    assert requests[1]["gen_ai.tool.definitions"] == []


def test_model_reply_records_the_models_words_calls_usage_and_latency() -> None:
    class Counted(ScriptedModel):
        def complete(self, messages: Sequence[Message], *, tools: Any = ()) -> ModelReply:
            reply = super().complete(messages, tools=tools)
            return reply.model_copy(update={"usage": Usage(input_tokens=40, output_tokens=9)})

    events: list[dict[str, Any]] = []
    run_task(
        Counted(PLAN),
        build_tools(SHOP),
        TASK,
        max_steps=6,
        max_tool_calls=8,
        recorder=Recorder(events.append, clock=ticking()),
    )
    replies = [event for event in events if event["event"] == "model_reply"]
    assert replies[1]["tool_calls"] == [
        {"id": "c2", "name": "draft_order", "arguments": '{"sku": "SKU-VANILLA", "quantity": 6}'},
        {
            "id": "c3",
            "name": "draft_order",
            "arguments": '{"sku": "SKU-STRAWBERRY", "quantity": 4}',
        },
    ]
    assert replies[2]["content"] == "Draft 6 vanilla and 4 strawberry: 2,600 pence."
    assert replies[0]["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert replies[0]["gen_ai.usage.input_tokens"] == 40
    assert replies[0]["duration_ns"] == 1_000
    assert events[-1]["gen_ai.usage.input_tokens"] == 120
    assert events[-1]["gen_ai.usage.output_tokens"] == 27


def test_tool_call_records_the_request_as_the_model_wrote_it() -> None:
    events, _ = record(PLAN)
    call = next(event for event in events if event["event"] == "tool_call")
    assert call["gen_ai.operation.name"] == "execute_tool"
    assert call["gen_ai.tool.name"] == "list_stock"
    assert call["gen_ai.tool.call.id"] == "c1"
    assert call["gen_ai.tool.call.arguments"] == "{}"


def test_tool_outcome_records_code_handler_duration_fingerprint_and_observation() -> None:
    events, run = record(PLAN)
    outcome = next(event for event in events if event["event"] == "tool_outcome")
    list_stock = build_tools(SHOP).tools["list_stock"].schema()
    assert outcome["code"] == "ok"
    assert outcome["handler_ran"] is True
    assert outcome["duration_ns"] == 1_000
    assert outcome["schema_fingerprint"] == schema_fingerprint(list_stock)
    assert json.dumps(outcome["gen_ai.tool.call.result"], sort_keys=True) == run.messages[2].content
    assert outcome["failure_stage"] is None and outcome["exception.type"] is None


def test_a_failed_tool_records_for_the_operator_what_the_model_is_never_told() -> None:
    events, run = record([turn(ask("c1", "supplier", sku="SKU-PISTACHIO")), PLAN[2]])
    outcome = next(event for event in events if event["event"] == "tool_outcome")
    assert outcome["code"] == "tool_failed"
    assert (outcome["failure_stage"], outcome["exception.type"]) == ("handler", "KeyError")
    assert outcome["exception.message"] == "'SKU-PISTACHIO'"
    assert "PISTACHIO" not in run.messages[2].content


def test_invalid_arguments_record_where_and_which_rule_never_the_value() -> None:
    events, _ = record(
        [turn(ask("c1", "draft_order", sku="SKU-VANILLA", quantity="secret-6")), PLAN[2]]
    )
    outcome = next(event for event in events if event["event"] == "tool_outcome")
    assert outcome["code"] == "invalid_arguments"
    assert outcome["argument_problems"] == [{"location": ["quantity"], "kind": "int_type"}]
    assert "secret-6" not in json.dumps(outcome)


def test_calls_the_loop_refuses_are_recorded_with_their_code_and_no_handler() -> None:
    malformed = AssistantToolCall(id="c1", name="draft_order", arguments_json='{"sku": ')
    events, _ = record(
        [turn(malformed, ask("c2", "run_shell", command="ls")), turn(ask("c3", "list_stock"))],
        max_steps=2,
    )
    outcomes = [event for event in events if event["event"] == "tool_outcome"]
    assert [(o["code"], o["handler_ran"]) for o in outcomes] == [
        ("malformed_tool_call", False),
        ("tool_not_allowed", False),
        ("step_limit", False),
    ]
    # A tool nobody offered has no fingerprint; an offered one keeps its own.
    assert outcomes[1]["schema_fingerprint"] is None
    assert outcomes[2]["schema_fingerprint"] is not None
    assert events[-1]["stop_reason"] == "step_limit"


def test_a_reply_reusing_an_id_is_recorded_whole_and_no_call_is_taken_up() -> None:
    events, _ = record([turn(ask("c1", "list_stock"), ask("c1", "supplier", sku="SKU-VANILLA"))])
    assert kinds(events) == ["run_started", "model_request", "model_reply", "run_finished"]
    assert len(events[2]["tool_calls"]) == 2
    assert events[-1]["refused"] == [
        ["list_stock", "duplicate_call_id"],
        ["supplier", "duplicate_call_id"],
    ]


def test_run_finished_records_the_record_and_a_model_errors_class_only() -> None:
    events, run = record([turn(ask("c1", "list_stock"))])
    finished = events[-1]
    assert run.stop_reason is StopReason.MODEL_ERROR
    assert finished["stop_reason"] == "model_error"
    assert finished["error.type"] == "ModelResponseError"
    assert "script" not in json.dumps(finished)
    assert finished["requested"] == ["list_stock"]
    assert finished["executed"] == ["list_stock"]
    assert finished["answer"] is None


def test_a_run_without_a_recorder_or_variable_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOVEREIGN_TRACE", raising=False)
    monkeypatch.chdir(tmp_path)
    run_task(ScriptedModel(PLAN), build_tools(SHOP), TASK, max_steps=6, max_tool_calls=8)
    assert list(tmp_path.iterdir()) == []


def test_the_variable_makes_every_run_append_to_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "t.jsonl"
    monkeypatch.setenv("SOVEREIGN_TRACE", str(trace))
    for _ in range(2):
        run_task(ScriptedModel(PLAN), build_tools(SHOP), TASK, max_steps=6, max_tool_calls=8)
    runs = read_trace(trace)
    assert len(runs) == 2
    assert runs[0].run_id != runs[1].run_id
    assert all(run.complete and len(run.events) == 14 for run in runs)


def test_the_chapter_3_checkpoint_writes_a_trace_under_the_variable(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    result = subprocess.run(
        [sys.executable, str(CHAPTER_3)],
        env={**env, "SOVEREIGN_TRACE": str(trace)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (run,) = read_trace(trace)
    assert run.complete
    assert run.started.setup is not None
    assert run.events[-1].event == "run_finished"


def test_a_trace_that_cannot_be_written_stops_the_run_before_the_model_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOVEREIGN_TRACE", str(tmp_path / "missing" / "t.jsonl"))
    model = ScriptedModel(PLAN)
    with pytest.raises(TraceWriteError, match=r"cannot append to .*missing"):
        run_task(model, build_tools(SHOP), TASK, max_steps=6, max_tool_calls=8)
    assert model.calls == []


def test_lines_are_on_disk_when_run_task_returns(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    run_task(
        ScriptedModel(PLAN),
        build_tools(SHOP),
        TASK,
        max_steps=6,
        max_tool_calls=8,
        recorder=Recorder(JsonLinesFile(trace)),
    )
    assert len(trace.read_text(encoding="utf-8").splitlines()) == 14


def test_a_run_that_crashes_leaves_every_event_before_the_crash(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    script = """
import json, runpy
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import NoArguments
from sovereign_agent.tools import Dispatcher, ExecutableTool
broken = ExecutableTool("broken", "A bug.", NoArguments, lambda args: 1 // 0)
call = AssistantToolCall(id="c1", name="broken", arguments_json="{}")
run_task(ScriptedModel([AssistantMessage(tool_calls=(call,))]),
         Dispatcher([broken], allowed=["broken"]), "t", max_steps=3, max_tool_calls=3)
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "SOVEREIGN_TRACE": str(trace)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "ZeroDivisionError" in result.stderr
    (run,) = read_trace(trace)
    assert not run.complete
    assert [event.event for event in run.events][-1] == "tool_call"


def test_a_dispatcher_without_setup_records_none_and_one_with_authority_has_none() -> None:
    probe = ExecutableTool("probe", "A probe.", NoArguments, lambda args: "ok")
    events, _ = record([turn(ask("c1", "probe")), PLAN[2]], Dispatcher([probe], allowed=["probe"]))
    assert events[0]["setup"] is None
    assert build_tools(SHOP, before_write=lambda call: None).setup is None


def test_build_tools_setup_rebuilds_an_equal_dispatcher() -> None:
    tools = build_tools(
        SHOP, {"SKU-VANILLA": 260}, allowed=["list_stock", "draft_order"], hints=True
    )
    setup = tools.setup
    assert isinstance(setup, Setup)
    rebuilt = build_tools(**json.loads(json.dumps(setup.arguments)))
    assert rebuilt.schemas() == tools.schemas()
    assert rebuilt.hints is True
    request = ToolCall(id="c1", name="list_stock", arguments={})
    assert rebuilt.invoke(request) == tools.invoke(request)


def test_a_setup_holding_something_that_is_not_json_is_a_loud_error() -> None:
    tools = build_tools(SHOP)
    dispatcher = Dispatcher(
        tools.tools.values(),
        allowed=tools.allowed,
        setup=Setup("sovereign_agent.shop:build_tools", {"shop": object()}),
    )
    with pytest.raises(TraceWriteError, match="not JSON"):
        run_task(
            ScriptedModel(PLAN),
            dispatcher,
            TASK,
            max_steps=6,
            max_tool_calls=8,
            recorder=Recorder(JsonLinesFile(Path(os.devnull))),
        )


def test_a_reply_with_a_lone_surrogate_is_still_written_as_json(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    odd = AssistantMessage(content=json.loads('"half \\ud800 a pair"'))
    run_task(
        ScriptedModel([odd]),
        build_tools(SHOP),
        TASK,
        max_steps=2,
        max_tool_calls=2,
        recorder=Recorder(JsonLinesFile(trace)),
    )
    (run,) = read_trace(trace)
    reply = run.events[2]
    assert parse_event(trace.read_text().splitlines()[2]) == reply


def test_a_trace_file_deleted_between_runs_is_opened_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "t.jsonl"
    monkeypatch.setenv("SOVEREIGN_TRACE", str(trace))
    run_task(ScriptedModel(PLAN), build_tools(SHOP), TASK, max_steps=6, max_tool_calls=8)
    trace.unlink()
    # The process still holds the old file open; the check that the path names
    # it is made at most once a second, so wait that second out.
    time.sleep(WRITE_EVERY_S)
    run_task(ScriptedModel(PLAN), build_tools(SHOP), TASK, max_steps=6, max_tool_calls=8)
    (run,) = read_trace(trace)
    assert run.complete


def test_two_processes_appending_at_once_leave_every_run_whole(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    script = f"""
import json
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import build_tools
shop = {SHOP!r}
for _ in range(30):
    replies = [AssistantMessage(tool_calls=(AssistantToolCall(id="c1", name="list_stock",
               arguments_json="{{}}"),)), AssistantMessage(content="done")]
    run_task(ScriptedModel(replies), build_tools(shop), "t", max_steps=3, max_tool_calls=3)
"""
    env = {**os.environ, "SOVEREIGN_TRACE": str(trace)}
    writers = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    for writer in writers:
        _, errors = writer.communicate(timeout=120)
        assert writer.returncode == 0, errors
    runs = read_trace(trace)
    assert len(runs) == 60
    assert all(run.complete and len(run.events) == 8 for run in runs)


@pytest.fixture
def eager_thread_switches() -> Iterator[None]:
    """Switch threads as often as the interpreter allows, so a race shows within a test's time."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.mark.usefixtures("eager_thread_switches")
def test_threads_appending_to_one_trace_lose_no_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "t.jsonl"
    monkeypatch.setenv("SOVEREIGN_TRACE", str(trace))

    def plans() -> None:
        for _ in range(30):
            run_task(ScriptedModel(PLAN), build_tools(SHOP), TASK, max_steps=6, max_tool_calls=8)

    with ThreadPoolExecutor(max_workers=6) as pool:
        for done in [pool.submit(plans) for _ in range(6)]:
            done.result()
    runs = read_trace(trace)
    assert len(runs) == 180
    assert all(run.complete and len(run.events) == 14 for run in runs)


def test_a_relative_path_names_a_file_in_the_directory_each_run_starts_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.setenv("SOVEREIGN_TRACE", "t.jsonl")

    def wander(args: NoArguments) -> str:
        os.chdir(second)
        return "moved"

    shop = build_tools(SHOP)
    wanderer = ExecutableTool("wander", "Changes directory.", NoArguments, wander)
    dispatcher = Dispatcher([*shop.tools.values(), wanderer], allowed=[*shop.allowed, "wander"])
    script = [turn(ask("c1", "wander")), turn(ask("c2", "list_stock")), AssistantMessage()]
    monkeypatch.chdir(first)
    # The run moves to the second directory halfway; its trace stays where it began.
    run_task(ScriptedModel(script), dispatcher, TASK, max_steps=6, max_tool_calls=8)
    run_task(ScriptedModel(PLAN), build_tools(SHOP), TASK, max_steps=6, max_tool_calls=8)
    (wandered,) = read_trace(first / "t.jsonl")
    assert wandered.complete and wandered.started.task == TASK
    assert [event.event for event in wandered.events].count("tool_outcome") == 2
    (planned,) = read_trace(second / "t.jsonl")
    assert planned.complete and len(planned.events) == 14
