"""Figure 3.1: who talks to whom in one run of Lucy's morning plan.

Drawn from the trace that the runtime records of the chapter's own run: the
checkpoint's offline script, chapter 1's shop, `run_task` with its bounds of
section 3.9. Every arrow is one trace event, in the order the trace holds them.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

from bookproof.figures.diagrams import Message, sequence_diagram
from sovereign_agent.loop import run_task
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import build_tools
from sovereign_agent.trace import Recorder

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
CHAPTER_1 = CHECKPOINTS / "profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
CHAPTER_3 = CHECKPOINTS / "profrod_sovereign_agent_ch03_bounded_agent_loop_checkpoint.py"
LANES = ("model", "loop (run_task)", "dispatcher", "handler")


def recorded_trace() -> list[dict[str, Any]]:
    """The trace of section 3.9's run; fixed clocks and run id, so it never varies."""
    shop = runpy.run_path(str(CHAPTER_1))["SHOP"]
    script = runpy.run_path(str(CHAPTER_3))["SHOP_SCRIPT"]
    events: list[dict[str, Any]] = []
    recorder = Recorder(
        events.append, clock=lambda: 0, wall_clock=lambda: 0, new_run_id=lambda: "0" * 32
    )
    run_task(
        ScriptedModel(script),
        build_tools(shop),
        "Plan this morning's re-order.",
        max_steps=6,
        max_tool_calls=8,
        recorder=recorder,
    )
    return events


def _short(text: str, limit: int = 46) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def messages(events: list[dict[str, Any]]) -> list[Message]:
    """One arrow per event: requests and replies, calls, the handler's work, outcomes."""
    drawn: list[Message] = []
    for event in events:
        kind = event["event"]
        if kind == "model_request":
            drawn.append(
                Message(
                    "loop (run_task)",
                    "model",
                    f"step {event['step']}: {event['messages']} message"
                    + ("s" if event["messages"] != 1 else ""),
                )
            )
        elif kind == "model_reply":
            calls = event["tool_calls"]
            label = (
                ", ".join(f"{call['name']} [{call['id']}]" for call in calls)
                if calls
                else "answer: " + _short(event["content"] or "")
            )
            drawn.append(Message("model", "loop (run_task)", _short(label, 60), reply=True))
        elif kind == "tool_call":
            arguments = json.loads(event["gen_ai.tool.call.arguments"])
            shown = ", ".join(f"{key}={value}" for key, value in arguments.items())
            drawn.append(
                Message(
                    "loop (run_task)",
                    "dispatcher",
                    f"{event['gen_ai.tool.call.id']}: {event['gen_ai.tool.name']}({shown})",
                )
            )
        elif kind == "tool_outcome":
            if event["handler_ran"]:
                name = event["gen_ai.tool.name"]
                drawn.append(Message("dispatcher", "handler", f"{name}(validated arguments)"))
                drawn.append(Message("handler", "dispatcher", "value", reply=True))
            result = event["gen_ai.tool.call.result"]
            code = event["code"]
            label = f"{event['gen_ai.tool.call.id']}: ok" if code == "ok" else f"refused: {code}"
            if code == "ok" and isinstance(result.get("value"), dict):
                value = result["value"]
                if "total_pence" in value:
                    label += f", {value['quantity']} tubs, {value['total_pence']:,} pence"
            drawn.append(
                Message("dispatcher", "loop (run_task)", label, reply=True, refused=code != "ok")
            )
        elif kind == "run_finished":
            drawn.append(
                Message(
                    "loop (run_task)",
                    "loop (run_task)",
                    f"stop: {event['stop_reason']} after {event['steps']} steps",
                )
            )
    return drawn


def draw() -> Any:
    return sequence_diagram(LANES, messages(recorded_trace()), width=7.2)
