"""The failure taxonomy: every code and stop has one class, and the summary counts them exactly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from morning_plan import SHOP, ask, turn

from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import NoArguments, ProductArguments, build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall
from sovereign_agent.trace import JsonLinesFile, Recorder, read_trace
from sovereign_agent.trace.summary import (
    FAILURE_CLASSES,
    FailureClass,
    failure_class,
    format_summary,
    summarize,
)


def refuse(call: ToolCall) -> None:
    raise PermissionError("Lucy has not approved it")


def sloppy_shop() -> Dispatcher:
    """The shop's tools, a write that needs an authority that refuses, and a report too long."""
    shop = build_tools(SHOP)
    place = ExecutableTool(
        "place_order", "Place an order.", ProductArguments, lambda a: "placed", True
    )
    huge = ExecutableTool("huge", "Too long.", NoArguments, lambda a: ["x" * 100] * 400)
    return Dispatcher(
        [*shop.tools.values(), place, huge],
        allowed=[*shop.allowed, "place_order", "huge"],
        before_write=refuse,
    )


def test_every_code_the_runtime_gives_has_a_class() -> None:
    codes = {
        "tool_not_allowed",
        "invalid_arguments",
        "write_authority_required",
        "tool_failed",
        "result_too_large",
        "malformed_tool_call",
        "step_limit",
        "tool_call_limit",
        "duplicate_call_id",
        "rate_limited",
        "deadline",
        "tool_timeout",
    }
    stops = {str(reason) for reason in StopReason} - {"final_answer"}
    assert codes | stops == set(FAILURE_CLASSES)
    assert failure_class("ok") is None and failure_class("final_answer") is None


def test_an_authority_that_refuses_is_a_missing_authority_not_a_failed_tool() -> None:
    assert failure_class("tool_failed", "before_write") is FailureClass.MISSING_AUTHORITY
    assert failure_class("tool_failed", "handler") is FailureClass.TOOL_FAILED
    assert failure_class("tool_failed", "result") is FailureClass.TOOL_FAILED


def test_a_code_without_a_class_is_a_loud_error() -> None:
    with pytest.raises(ValueError, match="no failure class for the code 'supplier_sulks'"):
        failure_class("supplier_sulks")


def sloppy_trace(trace: Path) -> None:
    recorder = Recorder(JsonLinesFile(trace))
    script = [
        turn(
            ask("c1", "run_shell", command="ls"),
            ask("c2", "draft_order", sku="SKU-VANILLA", quantity="6"),
            AssistantToolCall(id="c3", name="draft_order", arguments_json='{"sku": '),
        ),
        turn(
            ask("c4", "supplier", sku="SKU-PISTACHIO"),
            ask("c5", "place_order", sku="SKU-VANILLA"),
            ask("c6", "huge"),
        ),
        turn(ask("c7", "list_stock"), ask("c8", "list_stock")),
    ]
    run_task(
        ScriptedModel(script), sloppy_shop(), "t", max_steps=3, max_tool_calls=8, recorder=recorder
    )
    # A second run: one id used twice; a third: the model cannot be reached.
    duplicate = [turn(ask("d1", "list_stock"), ask("d1", "supplier", sku="SKU-VANILLA"))]
    run_task(
        ScriptedModel(duplicate),
        build_tools(SHOP),
        "t",
        max_steps=3,
        max_tool_calls=3,
        recorder=recorder,
    )
    run_task(
        ScriptedModel([]), build_tools(SHOP), "t", max_steps=3, max_tool_calls=3, recorder=recorder
    )


def test_a_sloppy_run_is_counted_by_class_as_counted_by_hand(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    sloppy_trace(trace)
    summary = summarize(read_trace(trace))
    # By hand: run 1 has eight calls, c7 and c8 in its last step; run 2 two
    # calls in a reply that reuses an id; run 3 none.
    assert (summary.runs, summary.complete, summary.requests) == (3, 3, 5)
    assert summary.calls == 10
    assert summary.ran == 2  # supplier raised after running; huge ran and was too large
    assert summary.calls_by_class == {
        FailureClass.UNKNOWN_TOOL: 1,
        FailureClass.INVALID_ARGUMENTS: 1,
        FailureClass.MALFORMED_CALL: 1,
        FailureClass.TOOL_FAILED: 1,
        FailureClass.MISSING_AUTHORITY: 1,
        FailureClass.RESULT_TOO_LARGE: 1,
        FailureClass.BUDGET: 2,
        FailureClass.DUPLICATE_CALL_ID: 2,
    }
    assert summary.stops_by_class == {
        FailureClass.BUDGET: 1,
        FailureClass.DUPLICATE_CALL_ID: 1,
        FailureClass.MODEL_ERROR: 1,
    }
    assert summary.exceptions == {"KeyError": 1}


def test_the_command_prints_the_table_the_summary_describes(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    sloppy_trace(trace)
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    result = subprocess.run(
        [sys.executable, "-m", "sovereign_agent.trace", "summary", str(trace)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1:] == [
        "3 run(s) (3 complete), 5 model request(s), 10 tool call(s) (2 ran)",
        "class                     calls  stops",
        "unknown or hidden tool        1      -",
        "invalid arguments             1      -",
        "missing authority             1      -",
        "tool failed                   1      -",
        "result too large              1      -",
        "malformed call                1      -",
        "budget                        2      1",
        "duplicate call id             2      1",
        "model error                   -      1",
        "stops: duplicate_call_id 1, model_error 1, step_limit 1",
        "tool failed, by exception: KeyError 1",
    ]


def test_an_unfinished_run_is_counted_and_said_to_be_unfinished(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    sloppy_trace(trace)
    lines = trace.read_text(encoding="utf-8").splitlines(keepends=True)
    trace.write_text("".join(lines[:-1]), encoding="utf-8")
    text = format_summary(summarize(read_trace(trace)))
    assert text[0].startswith("3 run(s) (2 complete)")
    assert text[-1] == "1 run(s) without run_finished: cut off, or their process stopped"
