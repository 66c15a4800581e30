"""Figures 4.2 and 4.3 draw the comparisons chapter 4 prints, from the same evaluation runs.

The verifier holds the drawing to its script; this holds the script's data to
the verified output on the page: the rows `format_report` makes of the
script's results are the rows of the printed table, so the figure cannot show
another run than the one the chapter shows.
"""

from __future__ import annotations

import runpy
from pathlib import Path

from markdown_it import MarkdownIt

from bookproof.verify.environment import DEFAULT_MANIFEST
from sovereign_agent.evaluate.report import format_report

FIGURES = DEFAULT_MANIFEST.parent / "figures"
CHAPTER_4 = DEFAULT_MANIFEST.parent / "ch04_traces_and_evaluation.md"


def printed_outputs(chapter: Path, kind: str = "output") -> list[str]:
    tokens = MarkdownIt("commonmark").parse(chapter.read_text(encoding="utf-8"))
    return [token.content for token in tokens if token.type == "fence" and token.info == kind]


def test_figure_4_2_is_drawn_from_the_run_whose_table_the_chapter_prints() -> None:
    script = runpy.run_path(str(FIGURES / "ch04_variant_rates.py"))
    results = script["compared"]()
    assert [result.variant.name for result in results] == ["full descriptions", "shuffled"]
    table = format_report(results)[:3]  # the header and one row per variant
    shown = [output for output in printed_outputs(CHAPTER_4) if table[0] in output]
    assert shown, "no output block of chapter 4 prints the comparison table"
    assert any(all(line in output.splitlines() for line in table) for output in shown)
    text = CHAPTER_4.read_text(encoding="utf-8")
    assert "](figures/ch04_variant_rates.svg)" in text


def test_figure_4_3_is_drawn_from_the_evaluation_the_checkpoint_prints() -> None:
    script = runpy.run_path(str(FIGURES / "ch04_checkpoint_variants.py"))
    results = script["compared"]()
    assert len(results) == 5
    table = format_report(results)[: 1 + len(results)]
    (printed,) = printed_outputs(CHAPTER_4, "checkpoint-output")
    assert all(line in printed.splitlines() for line in table)
    text = CHAPTER_4.read_text(encoding="utf-8")
    assert "](figures/ch04_checkpoint_variants.svg)" in text
