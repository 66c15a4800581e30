"""Figure 4.1: the morning plan's trace, event by event, and four replays held against it.

The trace is recorded the way chapter 4's checkpoint records it: chapter 3's
offline script and bounds, chapter 1's shop, `run_task` told to a
`Recorder` writing a JSON Lines file (with fixed clocks and run id, so the
drawing never varies). The four replays are `replay_run`'s own reports: with
today's tools, with the checkpoint's `reworded` and `smaller_drafts` setups,
and of a copy of the trace whose vanilla draft was edited from 6 tubs to 7.
"""

from __future__ import annotations

import json
import runpy
import tempfile
from pathlib import Path
from typing import Any

from bookproof.figures.diagrams import ACCENT, INK, MUTED, WARN, Canvas
from sovereign_agent.loop import run_task
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import build_tools
from sovereign_agent.trace import JsonLinesFile, Recorder, read_trace
from sovereign_agent.trace.format import RecordedRun
from sovereign_agent.trace.replay import ReplayReport, replay_run

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
CHAPTER_1 = CHECKPOINTS / "profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
CHAPTER_3 = CHECKPOINTS / "profrod_sovereign_agent_ch03_bounded_agent_loop_checkpoint.py"
CHAPTER_4 = CHECKPOINTS / "profrod_sovereign_agent_ch04_traces_and_evaluation_checkpoint.py"


def recorded_and_replayed() -> tuple[RecordedRun, list[tuple[str, ReplayReport]]]:
    """The morning plan's recorded run, and each replay's label and report."""
    shop = runpy.run_path(str(CHAPTER_1))["SHOP"]
    chapter_3 = runpy.run_path(str(CHAPTER_3))
    chapter_4 = runpy.run_path(str(CHAPTER_4))
    with tempfile.TemporaryDirectory(prefix="figure-") as scratch:
        morning = Path(scratch) / "morning.jsonl"
        run_task(
            ScriptedModel(chapter_3["SHOP_SCRIPT"]),
            build_tools(shop),
            chapter_3["TASK"],
            max_steps=6,
            max_tool_calls=8,
            system=chapter_3["SYSTEM"],
            recorder=Recorder(
                JsonLinesFile(morning),
                clock=lambda: 0,
                wall_clock=lambda: 0,
                new_run_id=lambda: "5eed" * 8,
            ),
        )
        (recorded,) = read_trace(morning)
        # Section 4.7's hand edit: the model's first draft asks for 7 tubs, not 6.
        rows = [json.loads(line) for line in morning.read_text(encoding="utf-8").splitlines()]
        first_draft = rows[6]["tool_calls"][0]
        first_draft["arguments"] = first_draft["arguments"].replace("6", "7")
        edited = Path(scratch) / "edited.jsonl"
        edited.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        (edited_run,) = read_trace(edited)
    return recorded, [
        ("today's code, unchanged", replay_run(recorded)),
        ("draft_order reworded", replay_run(recorded, setup=chapter_4["reworded"])),
        ("the trace edited: 7 tubs, not 6", replay_run(edited_run)),
        ("draft_order at most 5 tubs", replay_run(recorded, setup=chapter_4["smaller_drafts"])),
    ]


CELL, LABEL_WIDTH, ROW = 0.4, 2.25, 0.42


def draw() -> Any:
    recorded, replays = recorded_and_replayed()
    lines = list(recorded.lines)
    kinds = [event.event for event in recorded.events]
    width = LABEL_WIDTH + CELL * len(lines) + 0.3
    height = 1.55 + ROW * (len(replays) + 1) + 0.55
    canvas = Canvas(width, height)
    x0 = LABEL_WIDTH
    top = height - 0.25
    canvas.text(x0, top, "the recorded trace: one event per line", ha="left", fontweight="bold")
    # Each recorded event, its line number and its kind, written upward.
    kind_y = top - 0.2
    for index, kind in enumerate(kinds):
        x = x0 + CELL * index + CELL / 2
        canvas.text(x, kind_y, kind, rotation=90, va="top", fontsize=7, color=INK)
    row_top = kind_y - 1.05
    canvas.text(x0 - 0.1, row_top, "line", ha="right", fontsize=7.5, color=MUTED)
    for index, line in enumerate(lines):
        x = x0 + CELL * index
        canvas.box(x + 0.03, row_top - 0.14, CELL - 0.06, 0.28, fill="#eef4f8")
        canvas.text(x + CELL / 2, row_top, str(line), fontsize=7.5)
    canvas.text(0.2, row_top - 0.42, "replayed against", ha="left", fontweight="bold")
    for number, (label, report) in enumerate(replays, start=1):
        y = row_top - 0.42 - ROW * number
        divergence = report.divergence
        verdict = (
            f"{report.matched} match" + (f", {len(report.notes)} note" if report.notes else "")
            if divergence is None
            else f"diverged at line {divergence.line} ({divergence.kind})"
        )
        canvas.text(0.2, y + 0.07, label, ha="left", fontsize=8)
        canvas.text(
            0.2,
            y - 0.1,
            verdict,
            ha="left",
            fontsize=7,
            color=MUTED if divergence is None else WARN,
        )
        for index, line in enumerate(lines):
            x = x0 + CELL * index
            if divergence is not None and line == divergence.line:
                canvas.box(x + 0.03, y - 0.14, CELL - 0.06, 0.28, fill="#fbe9e7", edge=WARN)
                canvas.text(x + CELL / 2, y, "≠", color=WARN, fontweight="bold")
            elif divergence is not None and line > divergence.line:
                canvas.box(
                    x + 0.03, y - 0.14, CELL - 0.06, 0.28, fill="white", edge=MUTED, dashed=True
                )
            else:
                canvas.box(x + 0.03, y - 0.14, CELL - 0.06, 0.28, fill="#dbe7f0", edge=ACCENT)
                canvas.text(x + CELL / 2, y, "=", color=ACCENT, fontweight="bold")
    canvas.text(
        0.2,
        0.22,
        "=  today's runtime wrote the same event    ≠  the first that differs: replay stops"
        "    dashed: never compared",
        ha="left",
        fontsize=7,
        color=MUTED,
    )
    return canvas.figure
