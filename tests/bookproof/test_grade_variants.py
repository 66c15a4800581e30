"""CI's proof that the checks measure the exercises: full marks, starter short, mistakes priced.

The reference solution must score full marks and the untouched starter must
not. Each wrong variant is the reference solution with one mistake a learner
could make; it must lose exactly the checks that cover that mistake, and keep
every other point.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bookproof.grade.books import load_book
from bookproof.grade.runner import Limits, SubmissionReport, grade_submission

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = (ROOT / "solutions" / "book02" / "shop_tools.py").read_text(encoding="utf-8")
BOOK = load_book(2)
LIMITS = Limits(timeout=30)


def _variant(replacements: list[tuple[str, str]]) -> str:
    text = SOLUTION
    for old, new in replacements:
        assert text.count(old) == 1, f"the solution no longer contains {old!r}"
        text = text.replace(old, new)
    return text


def _grade(folder: Path, seed: int = 0) -> SubmissionReport:
    return grade_submission(folder, BOOK, LIMITS, random.Random(seed))


def _lost(report: SubmissionReport) -> set[str]:
    return {check.id for check in report.checks if not check.passed}


RESERVED = 'row.get("reserved", 0)'
NEED_LINE = 'return max(0, row["reorder_point"] - row["on_hand"] + reserved)'
DRAFT_NEED = "need = replenishment_need(find_product(products, sku))"
REPORT_NEED = 'rows = [{**row, "needed": replenishment_need(row)} for row in products]'
ALLOWED = "allowed=SHOP_TOOL_NAMES if allowed is None else allowed,"

VARIANTS: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # Exercise 1: a missing price borrows the cheapest known one.
    "borrows_a_price": (
        [
            (
                "quote = supplier_quote(prices, sku)",
                "quote = supplier_quote({sku: min(prices.values()), **prices}, sku)",
            )
        ],
        {"ex1_missing_price"},
    ),
    # Exercise 1: duplicate skus slip through.
    "no_duplicate_sku_check": (
        [("raise ValueError(f\"duplicate sku: {row['sku']!r}\")", "pass")],
        {"ex1_duplicate_sku"},
    ),
    # Exercise 2: the draft check keeps chapter 2's formula (not the shared function).
    "draft_ignores_reserved": (
        [
            (
                DRAFT_NEED,
                "row = find_product(products, sku)\n"
                '    need = max(0, row["reorder_point"] - row["on_hand"])',
            )
        ],
        {"ex2_draft_reserved"},
    ),
    # Exercise 2: the report keeps chapter 2's formula.
    "report_ignores_reserved": (
        [
            (
                REPORT_NEED,
                'rows = [{**row, "needed": max(0, row["reorder_point"] - row["on_hand"])}'
                " for row in products]",
            )
        ],
        {"ex2_report_reserved"},
    ),
    # Exercise 2: reserved is never counted anywhere.
    "need_ignores_reserved": (
        [(NEED_LINE, 'return max(0, row["reorder_point"] - row["on_hand"])')],
        {"ex2_need_reserved", "ex2_report_reserved", "ex2_draft_reserved"},
    ),
    # Exercise 3: allowed=None lets every registered tool through.
    "extras_allowed_by_default": (
        [(ALLOWED, "allowed=[t.name for t in tools] if allowed is None else allowed,")],
        {"ex3_probe_hidden", "ex3_probe_refused"},
    ),
    # Exercise 3: extra tools are never registered.
    "extras_dropped": (
        [("        *extra_tools,\n", "")],
        {"ex3_probe_allowed", "ex3_duplicate_tool"},
    ),
    # Exercise 3: a later tool silently replaces an earlier one of the same name.
    "duplicates_overwrite": (
        [
            (
                "    return Dispatcher(\n        tools,",
                "    tools = list({t.name: t for t in tools}.values())\n"
                "    return Dispatcher(\n        tools,",
            )
        ],
        {"ex3_duplicate_tool"},
    ),
}


def test_reference_solution_scores_full_marks(tmp_path: Path) -> None:
    report = _grade(ROOT / "solutions" / "book02")
    assert report.total == report.max == sum(check.points for check in BOOK.CHECKS)
    assert _lost(report) == set()


def test_untouched_starter_scores_less_than_full_marks() -> None:
    report = _grade(ROOT / "exercises" / "book02")
    assert _lost(report) == {
        "ex1_duplicate_sku",
        "ex2_need_reserved",
        "ex2_report_reserved",
        "ex2_draft_reserved",
        "ex3_probe_allowed",
        "ex3_duplicate_tool",
    }
    assert report.total < report.max


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_wrong_variant_loses_exactly_the_points_for_its_mistake(tmp_path: Path, name: str) -> None:
    replacements, expected_lost = VARIANTS[name]
    folder = tmp_path / name
    folder.mkdir()
    (folder / "shop_tools.py").write_text(_variant(replacements), encoding="utf-8")
    report = _grade(folder, seed=len(name))
    assert _lost(report) == expected_lost
    lost_points = sum(c.points for c in BOOK.CHECKS if c.id in expected_lost)
    assert report.total == report.max - lost_points
    assert all(check.outcome == "failed" for check in report.checks if check.id in expected_lost)


def test_scores_do_not_depend_on_the_random_data(tmp_path: Path) -> None:
    # Random extras change every run; a right answer must stay right for all of them.
    for seed in range(3):
        assert _grade(ROOT / "solutions" / "book02", seed=1000 + seed).total == 28
