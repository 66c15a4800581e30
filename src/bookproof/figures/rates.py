"""Rates compared across variants, each a dot on its 95% interval: chapter 4's evaluation figures.

A table of percentages invites reading the second decimal; a dot on its
interval shows at once which variants the runs told apart and which they did
not. The figure takes `run_suite`'s own results, so it shows the run the
chapter prints, never numbers copied by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bookproof.figures.diagrams import ACCENT, INK, MUTED
from sovereign_agent.evaluate import VariantResult
from sovereign_agent.evaluate.interval import Rate

__all__ = ["rates_figure"]

_GRID = "#e4e7eb"


def _panel(axes: Any, title: str, rates: Sequence[Rate], over: str) -> None:
    axes.set_title(title, fontsize=9, color=INK, loc="left")
    axes.set_xlim(0, 100)
    axes.set_ylim(len(rates) - 0.4, -0.6)  # the first variant on top, as in the printed table
    axes.set_xticks([0, 50, 100], ["0%", "50%", "100%"])
    axes.set_xticks([25, 75], minor=True)
    axes.tick_params(axis="both", colors=MUTED, labelsize=8, length=2)
    axes.grid(axis="x", which="both", color=_GRID, linewidth=0.6)
    axes.set_axisbelow(True)
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    axes.spines["bottom"].set_color(MUTED)
    for row, rate in enumerate(rates):
        if rate.value is None or rate.interval is None:
            axes.text(50, row, f"no {over}", ha="center", va="center", color=MUTED, fontsize=7.5)
            continue
        low, high = (100 * bound for bound in rate.interval)
        axes.plot([low, high], [row, row], color=ACCENT, linewidth=2.2, solid_capstyle="butt")
        for end in (low, high):
            axes.plot([end, end], [row - 0.12, row + 0.12], color=ACCENT, linewidth=1)
        axes.plot([100 * rate.value], [row], "o", color=INK, markersize=4.5)
        axes.text(
            min(max(100 * rate.value, 14.0), 86.0),  # the words stay inside their panel
            row - 0.2,
            f"{rate.successes}/{rate.trials} {over}",
            ha="center",
            va="bottom",
            color=INK,
            fontsize=7.5,
        )


def rates_figure(results: Sequence[VariantResult]) -> Any:
    """Three panels (pass rate, invalid choices, recovery), a row per variant."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.2, 1.1 + 0.6 * len(results)))
    panels = figure.subplots(1, 3, sharey=True)
    _panel(panels[0], "pass rate", [result.passes for result in results], "runs")
    _panel(panels[1], "invalid choices", [result.invalid for result in results], "calls")
    _panel(panels[2], "recovery", [result.recovered for result in results], "mistakes")
    panels[0].set_yticks(range(len(results)), [result.variant.name for result in results])
    panels[0].tick_params(axis="y", colors=INK, labelsize=8.5)
    figure.subplots_adjust(left=0.16, right=0.97, top=0.86, bottom=0.12, wspace=0.22)
    return figure
