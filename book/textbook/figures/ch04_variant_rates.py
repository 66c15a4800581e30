"""Figure 4.2: section 4.11's comparison of two variants, each rate with its 95% interval.

The numbers are not copied from the page: the script runs the evaluation
section 4.11 runs (the same suite, 20 repeats, seed 4, the variants "full
descriptions" and "shuffled", the offline stand-in), through the same
`run_suite`, and draws each rate as a dot on its Wilson interval.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bookproof.figures.diagrams import ACCENT, INK, MUTED, WARN
from sovereign_agent.evaluate import VariantResult, load_suite, run_suite
from sovereign_agent.evaluate.interval import Rate

SUITE = Path(__file__).resolve().parent.parent / "suites" / "morning_reorder.toml"
REPEAT, SEED = 20, 4
VARIANTS = ("full descriptions", "shuffled")
COLOURS = (ACCENT, WARN)


def compared() -> list[VariantResult]:
    """Section 4.11's run: the two variants, each over both tasks and twenty repeats."""
    suite = load_suite(SUITE)
    kept = [variant for variant in suite.variants if variant.name in VARIANTS]
    return run_suite(suite.model_copy(update={"variants": kept}), repeat=REPEAT, seed=SEED)


def _panel(axes: Any, title: str, rates: list[Rate], over: str) -> None:
    axes.set_title(title, fontsize=9, color=INK, loc="left")
    axes.set_xlim(0, 100)
    axes.set_ylim(-0.6, len(rates) - 0.4)
    axes.set_xticks([0, 50, 100], ["0%", "50%", "100%"])
    axes.set_xticks([25, 75], minor=True)
    axes.tick_params(axis="both", colors=MUTED, labelsize=8, length=2)
    axes.grid(axis="x", which="both", color="#e4e7eb", linewidth=0.6)
    axes.set_axisbelow(True)
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    axes.spines["bottom"].set_color(MUTED)
    axes.invert_yaxis()  # the first variant on top, as in the printed table
    for row, (rate, colour) in enumerate(zip(rates, COLOURS, strict=True)):
        if rate.value is None or rate.interval is None:
            axes.text(50, row, f"no {over}", ha="center", va="center", color=MUTED, fontsize=8)
            continue
        low, high = (100 * bound for bound in rate.interval)
        axes.plot([low, high], [row, row], color=colour, linewidth=2.2, solid_capstyle="butt")
        axes.plot([low, low], [row - 0.12, row + 0.12], color=colour, linewidth=1)
        axes.plot([high, high], [row - 0.12, row + 0.12], color=colour, linewidth=1)
        axes.plot([100 * rate.value], [row], "o", color=INK, markersize=4.5)
        axes.text(
            min(max(100 * rate.value, 14.0), 86.0),  # the words stay inside their panel
            row - 0.22,
            f"{rate.successes}/{rate.trials} {over}",
            ha="center",
            va="bottom",
            color=INK,
            fontsize=7.5,
        )


def draw() -> Any:
    from matplotlib.figure import Figure

    results = compared()
    figure = Figure(figsize=(7.2, 2.3))
    panels = figure.subplots(1, 3, sharey=True)
    _panel(panels[0], "pass rate", [result.passes for result in results], "runs")
    _panel(panels[1], "invalid choices", [result.invalid for result in results], "calls")
    _panel(panels[2], "recovery", [result.recovered for result in results], "mistakes")
    panels[0].set_yticks(range(len(results)), [result.variant.name for result in results])
    panels[0].tick_params(axis="y", colors=INK, labelsize=8.5)
    figure.subplots_adjust(left=0.16, right=0.97, top=0.84, bottom=0.13, wspace=0.22)
    return figure
