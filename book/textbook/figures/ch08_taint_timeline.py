"""Figure 8.1: one run, call by call, and the read that narrows it.

Drawn from the run record of section 8.8's scripted model: chapter 8's
checkpoint supplies the shop, the documents folder and the call helpers, the
document tools of `sovereign_agent.documents` run it with `run_task`, and
every box, colour and allowlist below is read from the record it returns.
"""

from __future__ import annotations

import json
import runpy
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookproof.figures.diagrams import ACCENT, INK, MUTED, WARN, Canvas
from sovereign_agent.documents import build_document_tools
from sovereign_agent.loop import RunRecord, run_task
from sovereign_agent.models import AssistantMessage, ToolMessage
from sovereign_agent.models.offline import ScriptedModel

CHAPTER_8 = (
    Path(__file__).resolve().parent.parent
    / "checkpoints"
    / "profrod_sovereign_agent_ch08_untrusted_text_checkpoint.py"
)


@dataclass(frozen=True)
class Call:
    step: int
    id: str
    name: str
    arguments: dict[str, Any]
    outcome: str  # "ok", or the code the model was answered with


def before_and_after() -> tuple[list[str], RunRecord]:
    """Section 8.8's run: the allowlist it started with, and its record."""
    chapter = runpy.run_path(str(CHAPTER_8))
    tool_call, read_call = chapter["tool_call"], chapter["read_call"]
    script = (
        AssistantMessage(tool_calls=(tool_call("call-1", "list_stock"),)),
        AssistantMessage(
            tool_calls=(
                tool_call("call-2", "draft_order", sku="SKU-VANILLA", quantity=6),
                read_call("call-3", "../private.txt"),
                tool_call("call-4", "draft_order", sku="SKU-STRAWBERRY", quantity=4),
            )
        ),
        AssistantMessage(
            tool_calls=(
                read_call("call-5", "strawberry-price.md"),
                tool_call("call-6", "draft_order", sku="SKU-VANILLA", quantity=6),
            )
        ),
        AssistantMessage(content="Drafted vanilla and strawberry; read the strawberry note."),
    )
    tools = build_document_tools(chapter["SHOP"], documents_root=str(chapter["DOCUMENTS"]))
    record = run_task(ScriptedModel(script), tools, chapter["TASK"], max_steps=6, max_tool_calls=8)
    return sorted(tools.allowed), record


def calls_of(record: RunRecord) -> list[Call]:
    """Every call the model asked for, with its step and the answer it was given."""
    answers = {
        message.tool_call_id: json.loads(message.content)
        for message in record.messages
        if isinstance(message, ToolMessage)
    }
    calls: list[Call] = []
    step = 0
    for message in record.messages:
        if not isinstance(message, AssistantMessage):
            continue
        step += 1
        for call in message.tool_calls:
            answer = answers[call.id]
            calls.append(
                Call(
                    step,
                    call.id,
                    call.name,
                    json.loads(call.arguments_json),
                    "ok" if answer["ok"] else answer["error"],
                )
            )
    return calls


def _describe(call: Call) -> str:
    if call.name == "read_document":
        return call.arguments["name"]
    if call.name == "draft_order":
        return (
            f"{call.arguments['sku'].removeprefix('SKU-').lower()} x {call.arguments['quantity']}"
        )
    return ""


WIDTH, HEIGHT, GAP, STEP_GAP, LEFT = 1.1, 0.95, 0.1, 0.32, 0.25
CANVAS_WIDTH = 9.0


def draw() -> Any:
    allowed, record = before_and_after()
    calls = calls_of(record)
    (narrowing,) = record.narrowings
    canvas = Canvas(CANVAS_WIDTH, 3.3)
    box_y = 1.45
    x = LEFT
    lefts: dict[str, float] = {}
    steps: dict[int, list[float]] = {}
    previous_step = calls[0].step
    for call in calls:
        if call.step != previous_step:
            x += STEP_GAP - GAP
            previous_step = call.step
        lefts[call.id] = x
        steps.setdefault(call.step, []).append(x)
        refused = call.outcome != "ok"
        by_runtime = call.outcome == "tool_not_allowed"
        canvas.box(
            x,
            box_y,
            WIDTH,
            HEIGHT,
            fill="#fbe9e7" if by_runtime else ("white" if refused else "#eef4f8"),
            edge=WARN if by_runtime else (MUTED if refused else INK),
            dashed=refused and not by_runtime,
        )
        canvas.text(x + WIDTH / 2, box_y + HEIGHT - 0.15, call.id, fontsize=7.5, color=MUTED)
        canvas.text(x + WIDTH / 2, box_y + HEIGHT - 0.36, call.name, fontsize=8, fontweight="bold")
        canvas.text(x + WIDTH / 2, box_y + HEIGHT - 0.55, _describe(call), fontsize=7)
        verdict = (
            "ran: ok"
            if not refused
            else f"{'refused' if by_runtime else 'failed'}:\n{call.outcome}"
        )
        canvas.text(
            x + WIDTH / 2,
            box_y + 0.17,
            verdict,
            fontsize=7,
            color=WARN if by_runtime else (MUTED if refused else ACCENT),
        )
        x += WIDTH + GAP
    # The steps (model turns) the calls came in, as brackets above them.
    for step, xs in steps.items():
        start, end = xs[0], xs[-1] + WIDTH
        top = box_y + HEIGHT + 0.15
        canvas.line([start, start, end, end], [top - 0.06, top, top, top - 0.06], color=MUTED)
        canvas.text(start + 0.05, top + 0.14, f"step {step}", fontsize=7.5, color=MUTED, ha="left")
    # The narrowing takes effect right after the call that read the note.
    cut = lefts[narrowing.call_id] + WIDTH + GAP / 2
    canvas.line([cut, cut], [0.25, box_y + HEIGHT + 0.5], color=WARN, linestyle="--", linewidth=1.2)
    canvas.text(
        cut - 0.06,
        box_y + HEIGHT + 0.62,
        f"narrowed by {narrowing.tool} [{narrowing.call_id}]: {narrowing.reason}",
        fontsize=7.5,
        color=WARN,
        ha="right",
    )
    # The run's allowlist before and after, as bands under the calls.
    band_y = 0.5
    canvas.box(LEFT, band_y, cut - LEFT - 0.06, 0.78, fill="#eef4f8")
    canvas.text(
        (LEFT + cut) / 2,
        band_y + 0.39,
        "untainted, allowed: " + ", ".join(allowed),
        fontsize=7.5,
    )
    end = CANVAS_WIDTH - LEFT  # the rest of the run, however long
    canvas.box(cut + 0.06, band_y, end - cut - 0.06, 0.78, fill="#fbe9e7", edge=WARN)
    canvas.text(
        (cut + end) / 2,
        band_y + 0.39,
        "tainted to the end of the run\n"
        + textwrap.fill("allowed: " + ", ".join(narrowing.kept), 32)
        + "\nremoved: "
        + ", ".join(narrowing.removed),
        fontsize=7,
        color=WARN,
    )
    canvas.text(
        LEFT,
        0.22,
        "solid box: the handler ran    dashed: the handler ran and refused    "
        "red: the runtime refused, nothing ran",
        ha="left",
        fontsize=7,
        color=MUTED,
    )
    return canvas.figure
