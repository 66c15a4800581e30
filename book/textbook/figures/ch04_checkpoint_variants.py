"""Figure 4.3: the evaluation at the end of chapter 4's checkpoint, each variant's intervals.

The settings (suite, seed, repeats) are read from the checkpoint itself and
the suite is run through the same `run_suite`, so the figure draws the run
whose table the checkpoint prints.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

from bookproof.figures.rates import rates_figure
from sovereign_agent.evaluate import VariantResult, load_suite, run_suite

CHAPTER_4 = (
    Path(__file__).resolve().parent.parent
    / "checkpoints"
    / "profrod_sovereign_agent_ch04_traces_and_evaluation_checkpoint.py"
)


def compared() -> list[VariantResult]:
    """The checkpoint's evaluation: every variant of its suite, at its seed and repeats."""
    checkpoint = runpy.run_path(str(CHAPTER_4))
    suite = load_suite(checkpoint["SUITE"])
    return run_suite(suite, repeat=checkpoint["REPEAT"], seed=checkpoint["SEED"])


def draw() -> Any:
    return rates_figure(compared())
