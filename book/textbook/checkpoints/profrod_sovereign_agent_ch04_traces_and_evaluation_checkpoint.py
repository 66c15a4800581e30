"""Chapter 4 checkpoint: Lucy's morning plan recorded, replayed three ways, counted and measured.

The morning plan is recorded as a trace, with chapter 3's offline model unless
SOVEREIGN_MODEL names a provider; the replays are offline whichever it was,
since a replay answers with the recorded replies. A careless run is counted by
failure class, and chapter 4's suite runs a short evaluation with the offline
stand-in. Every file it writes goes to a temporary folder, removed at the end.
"""

import dataclasses
import runpy
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from sovereign_agent.evaluate import load_suite, run_suite
from sovereign_agent.evaluate.report import format_report
from sovereign_agent.loop import run_task
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    ModelError,
    model_from_env,
)
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import DraftArguments, NoArguments, ProductArguments, build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall
from sovereign_agent.trace import JsonLinesFile, Recorder, read_trace
from sovereign_agent.trace.replay import ReplayReport, replay_run
from sovereign_agent.trace.summary import FailureClass, summarize

# Located beside this file, so the checkpoint runs from any working directory.
HERE = Path(__file__).resolve().parent
CHAPTER_1 = HERE / "profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
CHAPTER_3 = HERE / "profrod_sovereign_agent_ch03_bounded_agent_loop_checkpoint.py"
SUITE = HERE.parent / "suites" / "morning_reorder.toml"
SEED, REPEAT = 4, 10


# The functions below are chapter 4's listings, unchanged (the verifier compares them).
def with_draft_order(recorded: Mapping[str, Any], **change: Any) -> Dispatcher:
    """The shop's tools as recorded, with draft_order changed."""
    tools = build_tools(**recorded)
    changed = [
        dataclasses.replace(tool, **change) if tool.name == "draft_order" else tool
        for tool in tools.tools.values()
    ]
    return Dispatcher(changed, allowed=tools.allowed)


class SmallDraft(DraftArguments):
    quantity: int = Field(gt=0, le=5)


def reworded(**recorded: Any) -> Dispatcher:
    return with_draft_order(recorded, description="Draft a re-order; it buys nothing.")


def smaller_drafts(**recorded: Any) -> Dispatcher:
    return with_draft_order(recorded, arguments=SmallDraft)


def lucy_has_not_approved(call: ToolCall) -> None:
    raise PermissionError("Lucy has not approved it")


def call(call_id: str, name: str, arguments: str = "{}") -> AssistantToolCall:
    return AssistantToolCall(id=call_id, name=name, arguments_json=arguments)


def outcome(report: ReplayReport) -> str:
    """One line for a replay: how many events matched, or where and what diverged."""
    divergence = report.divergence
    if divergence is None:
        notes = f", {len(report.notes)} note" if report.notes else ""
        return f"{report.matched} events match{notes}"
    return (
        f"diverged at line {divergence.line}, event {divergence.seq} ({divergence.kind}): "
        f"{divergence.what}"
    )


def careless_runs(shop: Mapping[str, Any], trace: Path) -> None:
    """Chapter 4's careless model: one run that meets every call class, two that stop early."""
    tools = build_tools(shop)
    careless_shop = Dispatcher(
        [
            *tools.tools.values(),
            ExecutableTool(
                name="place_order",
                description="Place an order.",
                arguments=ProductArguments,
                handler=lambda a: "ok",
                consequential=True,
            ),
            ExecutableTool(
                name="huge",
                description="A long report.",
                arguments=NoArguments,
                handler=lambda a: ["tubs"] * 5_000,
            ),
        ],
        allowed=[*tools.allowed, "place_order", "huge"],
        before_write=lucy_has_not_approved,
    )
    careless = [
        AssistantMessage(
            tool_calls=(
                call("c1", "run_shell", '{"command": "ls"}'),
                call("c2", "draft_order", '{"sku": "SKU-VANILLA", "quantity": "6"}'),
                call("c3", "draft_order", '{"sku": '),
            )
        ),
        AssistantMessage(
            tool_calls=(
                call("c4", "supplier", '{"sku": "SKU-PISTACHIO"}'),
                call("c5", "place_order", '{"sku": "SKU-VANILLA"}'),
                call("c6", "huge"),
            )
        ),
        AssistantMessage(tool_calls=(call("c7", "list_stock"), call("c8", "list_stock"))),
    ]
    duplicate = [AssistantMessage(tool_calls=(call("d1", "list_stock"), call("d1", "huge")))]
    for script, dispatcher in ((careless, careless_shop), (duplicate, tools), ([], tools)):
        run_task(
            ScriptedModel(script),
            dispatcher,
            "Plan this morning's re-order.",
            max_steps=3,
            max_tool_calls=8,
            recorder=Recorder(JsonLinesFile(trace)),
        )


def main() -> int:
    shop = runpy.run_path(str(CHAPTER_1))["SHOP"]
    chapter_3 = runpy.run_path(str(CHAPTER_3))
    try:
        model = model_from_env(offline_script=chapter_3["SHOP_SCRIPT"])
    except ModelError as error:
        # A provider named but not configured: say so, and run nothing.
        print(f"cannot start: {error}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        morning = Path(scratch) / "morning.jsonl"
        record = run_task(
            model,
            build_tools(shop),
            chapter_3["TASK"],
            max_steps=6,
            max_tool_calls=8,
            system=chapter_3["SYSTEM"],
            recorder=Recorder(JsonLinesFile(morning)),
        )
        (recorded,) = read_trace(morning)
        print("model:", model.label)
        ended = f"{record.stop_reason} after {record.steps} steps"
        print(f"recorded: {len(recorded.events)} events, {ended}")
        print("replay, unchanged:", outcome(replay_run(recorded)))
        print("replay, draft_order reworded:", outcome(replay_run(recorded, setup=reworded)))
        print("replay, draft_order at most 5:", outcome(replay_run(recorded, setup=smaller_drafts)))

        careless = Path(scratch) / "careless.jsonl"
        careless_runs(shop, careless)
        summary = summarize(read_trace(careless))
        calls = ", ".join(
            f"{kind.value} {summary.calls_by_class[kind]}"
            for kind in FailureClass
            if summary.calls_by_class[kind]
        )
        stops = ", ".join(
            f"{kind.value} {summary.stops_by_class[kind]}"
            for kind in FailureClass
            if summary.stops_by_class[kind]
        )
        print(f"careless calls by class: {calls}")
        print(f"careless stops by class: {stops}")

    results = run_suite(load_suite(SUITE), repeat=REPEAT, seed=SEED)
    print(f"evaluation of {SUITE.name}, seed {SEED}, {REPEAT} repeats, offline stand-in:")
    for line in format_report(results):
        if not line:
            break
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
