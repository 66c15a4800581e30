"""Figure 13.1: one turn's three supplier reads on the run's clock, one after another and together.

Measured, not drawn from numbers written here: each read records when it
started and ended on a `VirtualTimeLoop`, through `LimitedDispatcher.attempt_turn`,
once with the reads undeclared (they run one after another) and once declared
read-only (they run side by side). A bar is one read, from its start to its end.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict

from bookproof.figures.diagrams import ACCENT, MUTED, Canvas
from sovereign_agent.limits import Limits, RunLimits, VirtualTimeLoop
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall

SKUS = ("VANILLA", "CHOCOLATE", "STRAWBERRY")
READ_S = 0.2


class SkuArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: str


def timeline(read_only: frozenset[str]) -> tuple[list[tuple[str, float, float]], list[str]]:
    """(sku, start, end) of each read, and the order of the answers the model gets."""
    run = RunLimits(Limits(read_only=read_only), loop_factory=VirtualTimeLoop)
    spans: list[tuple[str, float, float]] = []

    async def check_availability(arguments: SkuArguments) -> str:
        started = run.elapsed_s()
        await asyncio.sleep(READ_S)
        spans.append((arguments.sku, started, run.elapsed_s()))
        return arguments.sku

    tool = ExecutableTool("check_availability", "A read.", SkuArguments, check_availability)
    dispatcher = run.dispatcher(Dispatcher([tool], allowed=["check_availability"]))
    calls = [
        ToolCall(id=f"call_{n}", name="check_availability", arguments={"sku": sku})
        for n, sku in enumerate(SKUS, start=1)
    ]
    answers = [outcome.observation["value"] for outcome in dispatcher.attempt_turn(calls)]
    run.close()
    return spans, answers


LEFT, SCALE, ROW = 1.6, 7.0, 0.28  # inches: where 0 s sits, inches per second, row height


def draw() -> Any:
    canvas = Canvas(7.2, 3.3)
    for panel, (title, read_only) in enumerate(
        (("one after another", frozenset()), ("side by side", frozenset({"check_availability"})))
    ):
        spans, answers = timeline(read_only)
        top = 3.0 - panel * 1.45
        canvas.text(0.15, top, title, ha="left", fontweight="bold", fontsize=8.5)
        for row, sku in enumerate(SKUS):
            _, start, end = next(span for span in spans if span[0] == sku)
            y = top - 0.38 - row * ROW
            canvas.text(LEFT - 0.1, y, sku, ha="right", fontsize=7.5)
            canvas.box(LEFT + start * SCALE, y - 0.1, (end - start) * SCALE, 0.2, fill="#dbe7f0")
        finished = max(end for _, _, end in spans)
        x = LEFT + finished * SCALE
        canvas.line([x, x], [top - 0.2, top - 0.38 - 2 * ROW - 0.15], color=ACCENT, linestyle="--")
        canvas.text(
            x + 0.08,
            top - 0.2,
            f"turn done at {finished:.1f} s",
            ha="left",
            fontsize=7,
            color=ACCENT,
        )
        canvas.text(
            LEFT,
            top - 0.38 - 3 * ROW + 0.05,
            "answered in order: " + ", ".join(answers),
            ha="left",
            fontsize=7,
            color=MUTED,
        )
    for tick in (0.0, 0.2, 0.4, 0.6):
        canvas.text(LEFT + tick * SCALE, 0.12, f"{tick:.1f} s", fontsize=7, color=MUTED)
    return canvas.figure
