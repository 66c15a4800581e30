"""Figure 4.2: section 4.11's comparison of two variants, each rate with its 95% interval.

The numbers are not copied from the page: the script runs the evaluation
section 4.11 runs (the same suite, 20 repeats, seed 4, the variants "full
descriptions" and "shuffled", the offline stand-in), through the same
`run_suite`, and draws each rate as a dot on its Wilson interval.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bookproof.figures.rates import rates_figure
from sovereign_agent.evaluate import VariantResult, load_suite, run_suite

SUITE = Path(__file__).resolve().parent.parent / "suites" / "morning_reorder.toml"
REPEAT, SEED = 20, 4
VARIANTS = ("full descriptions", "shuffled")


def compared() -> list[VariantResult]:
    """Section 4.11's run: the two variants, each over both tasks and twenty repeats."""
    suite = load_suite(SUITE)
    kept = [variant for variant in suite.variants if variant.name in VARIANTS]
    return run_suite(suite.model_copy(update={"variants": kept}), repeat=REPEAT, seed=SEED)


def draw() -> Any:
    return rates_figure(compared())
