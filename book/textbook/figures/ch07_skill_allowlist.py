"""Figure 7.1: what a run keeps when it loads a skill, for the two skills of sections 7.8 and 7.9.

Drawn from the runs themselves: chapter 7's checkpoint supplies the scripted
models and the skills folder, `build_skill_tools` the run's allowlist,
`discover_skills` each skill's `allowed-tools`, and the run record's
narrowing what was kept, removed and ignored.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

from bookproof.figures.diagrams import ACCENT, INK, MUTED, WARN, Canvas
from sovereign_agent.loop import run_task
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import NoArguments
from sovereign_agent.skills import build_skill_tools, discover_skills
from sovereign_agent.tools import Dispatcher, ExecutableTool, Narrowing

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
CHAPTER_1 = CHECKPOINTS / "profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
CHAPTER_7 = CHECKPOINTS / "profrod_sovereign_agent_ch07_skills_checkpoint.py"


def skill_runs() -> list[tuple[str, frozenset[str], frozenset[str], Narrowing]]:
    """For each skill: its name, the run's allowlist, the skill's allowed-tools, the narrowing."""
    chapter = runpy.run_path(str(CHAPTER_7))
    shop = runpy.run_path(str(CHAPTER_1))["SHOP"]
    skills = {skill.name: skill for skill in discover_skills(chapter["SKILLS"])}
    morning_tools = build_skill_tools(shop, skills_root=str(chapter["SKILLS"]), provenance="shop")
    # Section 7.9: place_order registered, consequential, and not allowed.
    place_order = ExecutableTool(
        name="place_order",
        description="Place a real order with the supplier.",
        arguments=NoArguments,
        handler=lambda args: None,
        consequential=True,
    )
    skill_tools = build_skill_tools(shop, skills_root=str(chapter["SKILLS"]), provenance="shop")
    bulk_tools = Dispatcher([*skill_tools.tools.values(), place_order], allowed=skill_tools.allowed)
    runs = []
    for name, script, tools, task in (
        ("morning-reorder", chapter["MORNING_SCRIPT"], morning_tools, chapter["MORNING_TASK"]),
        ("bulk-buyer", chapter["BULK_SCRIPT"], bulk_tools, chapter["BULK_TASK"]),
    ):
        allowed = tools.allowed
        record = run_task(ScriptedModel(script), tools, task, max_steps=6, max_tool_calls=8)
        (narrowing,) = record.narrowings
        listed = skills[name].allowed_tools
        assert listed is not None, f"{name} lists no allowed-tools"
        runs.append((name, allowed, listed, narrowing))
    return runs


COLUMNS = (1.45, 1.0, 1.0, 1.05)  # tool name, run allows, skill lists, after loading
ROW = 0.24


def _panel(
    canvas: Canvas,
    left: float,
    top: float,
    name: str,
    allowed: frozenset[str],
    listed: frozenset[str],
    narrowing: Narrowing,
) -> None:
    names = sorted(allowed | listed)
    width = sum(COLUMNS)
    canvas.text(left, top, f"load_skill: {name}", ha="left", fontweight="bold")
    header_y = top - 0.3
    x = left
    for title, column in zip(
        ("tool", "the run allows", "the skill lists", "after loading"), COLUMNS, strict=True
    ):
        canvas.text(x + 0.06, header_y, title, ha="left", fontsize=7.5, color=MUTED)
        x += column
    canvas.line([left, left + width], [header_y - 0.13] * 2)
    verdicts = {
        **{tool: ("kept", ACCENT) for tool in narrowing.kept},
        **{tool: ("removed", MUTED) for tool in narrowing.removed},
        **{tool: ("ignored", WARN) for tool in narrowing.ignored},
    }
    for index, tool in enumerate(names):
        y = header_y - ROW * (index + 1)
        verdict, colour = verdicts[tool]
        if verdict == "kept":
            canvas.box(left, y - ROW / 2 + 0.02, width, ROW - 0.04, fill="#dbe7f0", edge="#dbe7f0")
        cells = (
            (tool, INK),
            ("yes" if tool in allowed else "no", INK if tool in allowed else WARN),
            ("yes" if tool in listed else "no", INK if tool in listed else MUTED),
            (verdict, colour),
        )
        x = left
        for (words, cell_colour), column in zip(cells, COLUMNS, strict=True):
            canvas.text(
                x + 0.06,
                y,
                words,
                ha="left",
                fontsize=8,
                color=cell_colour,
                fontweight="bold" if verdict == "kept" and column is COLUMNS[-1] else "normal",
            )
            x += column


def draw() -> Any:
    runs = skill_runs()
    rows = max(len(allowed | listed) for _, allowed, listed, _ in runs)
    height = 0.3 + 0.3 + ROW * (rows + 1) + 0.35
    canvas = Canvas(2 * sum(COLUMNS) + 0.8, height)
    for index, (name, allowed, listed, narrowing) in enumerate(runs):
        left = 0.2 + index * (sum(COLUMNS) + 0.4)
        _panel(canvas, left, height - 0.25, name, allowed, listed, narrowing)
    canvas.text(
        0.2,
        0.2,
        "kept = the run allows it AND the skill lists it; a name only the skill lists is ignored",
        ha="left",
        fontsize=7.5,
        color=MUTED,
    )
    return canvas.figure
