"""The few shapes the book's figures are made of: sequence lanes, boxes, labelled arrows.

Each figure script computes its data from the book's runtime, then lays it out
with these, in inches on a blank canvas (no axes), so every figure shares one
look and its layout depends on its data alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ACCENT", "INK", "MUTED", "Canvas", "Message", "sequence_diagram"]

INK = "#1f2933"
MUTED = "#7b8794"
ACCENT = "#0b6e99"
WARN = "#b3261e"
PAPER = "#f5f7fa"


class Canvas:
    """A figure `width` x `height` inches whose coordinates are inches from the bottom left."""

    def __init__(self, width: float, height: float) -> None:
        from matplotlib.figure import Figure

        self.width = width
        self.height = height
        self.figure = Figure(figsize=(width, height))
        self.axes: Any = self.figure.add_axes((0, 0, 1, 1))
        self.axes.set_xlim(0, width)
        self.axes.set_ylim(0, height)
        self.axes.set_axis_off()

    def box(
        self,
        x: float,
        y: float,
        width: float,
        height: float,
        *,
        fill: str = PAPER,
        edge: str = INK,
        dashed: bool = False,
    ) -> None:
        """A rectangle whose bottom-left corner is (x, y)."""
        from matplotlib.patches import FancyBboxPatch

        self.axes.add_patch(
            FancyBboxPatch(
                (x, y),
                width,
                height,
                boxstyle="round,pad=0,rounding_size=0.06",
                facecolor=fill,
                edgecolor=edge,
                linewidth=1.0,
                linestyle="--" if dashed else "-",
            )
        )

    def text(self, x: float, y: float, words: str, **style: Any) -> None:
        style.setdefault("color", INK)
        style.setdefault("ha", "center")
        style.setdefault("va", "center")
        self.axes.text(x, y, words, **style)

    def line(self, xs: Sequence[float], ys: Sequence[float], **style: Any) -> None:
        style.setdefault("color", MUTED)
        style.setdefault("linewidth", 0.8)
        self.axes.plot(xs, ys, **style)

    def arrow(
        self,
        start: tuple[float, float],
        end: tuple[float, float],
        *,
        color: str = INK,
        dashed: bool = False,
        curve: float = 0.0,
    ) -> None:
        """An arrow from `start` to `end`; `curve` bends it (0 is straight)."""
        self.axes.annotate(
            "",
            xy=end,
            xytext=start,
            arrowprops={
                "arrowstyle": "-|>",
                "color": color,
                "linewidth": 1.0,
                "linestyle": "--" if dashed else "-",
                "shrinkA": 0,
                "shrinkB": 0,
                "connectionstyle": f"arc3,rad={curve}",
                "mutation_scale": 9,
            },
        )


@dataclass(frozen=True)
class Message:
    """One arrow of a sequence diagram, between two lanes, or a note across them."""

    source: str
    target: str
    label: str
    reply: bool = False  # a reply is drawn dashed
    refused: bool = False  # drawn in the warning colour


def sequence_diagram(
    lanes: Sequence[str], messages: Sequence[Message], *, width: float = 7.0
) -> Any:
    """Lanes left to right, one message per row, top to bottom, as they happened."""
    row = 0.3
    top = 0.55
    height = top + row * (len(messages) + 1) + 0.2
    canvas = Canvas(width, height)
    step = width / len(lanes)
    centre = {lane: step * (index + 0.5) for index, lane in enumerate(lanes)}
    head_y = height - top / 2 - 0.05
    for lane, x in centre.items():
        canvas.box(x - step * 0.42, head_y - 0.17, step * 0.84, 0.34)
        canvas.text(x, head_y, lane, fontweight="bold")
        canvas.line([x, x], [0.15, head_y - 0.17], linestyle=":")
    y = height - top - row * 0.7
    for message in messages:
        color = WARN if message.refused else INK
        if message.source == message.target:
            x = centre[message.source]
            canvas.text(x + 0.08, y, message.label, ha="left", color=MUTED, fontstyle="italic")
        else:
            start, end = centre[message.source], centre[message.target]
            canvas.arrow((start, y), (end, y), color=color, dashed=message.reply)
            left = min(start, end)
            canvas.text(
                (start + end) / 2 if abs(end - start) > step * 1.5 else left + step / 2,
                y + 0.09,
                message.label,
                color=color,
                fontsize=7.5,
            )
        y -= row
    return canvas.figure
