"""Exercise Book 1: the reference solution scores full marks, the starter does not,
and each typical mistake loses exactly the checks written for it.

The grader runs as a real subprocess over real folders, all in one batch.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from committed import EXERCISES
from grading import Graded, SharedGrades, grade_batch

from bookproof.grade.books import load_book
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
SOLUTION = (ROOT / "solutions" / "book01" / "morning_brief.py").read_text(encoding="utf-8")
STARTER = (EXERCISES / "book01" / "morning_brief.py").read_text(encoding="utf-8")

ALL_CHECKS = {
    "imports",
    "ch1_need",
    "ch1_offline_brief",
    "ex1_fields_only",
    "ex1_shop_unchanged",
    "ex1_private_not_sent",
    "ex2_taken_at",
    "ex2_request",
    "ex3_config_notice",
    "ex3_unreachable_notice",
    "ex3_defects_stay_loud",
    "ex4_focus_within_limit",
    "ex4_focus_largest_needs",
    "ex4_focus_limit_checked",
}
# Exercise 4's reference picks the products: the largest need first, a new list.
CHOSEN = "chosen = sorted(products, key=lambda row: -replenishment_need(row))[:limit]"

IN_PLACE = """
def brief_snapshot(shop: dict) -> dict:
    for row in shop["products"]:
        for key in list(row):
            if key not in BRIEF_FIELDS:
                del row[key]
    for key in list(shop):
        if key not in ("name", "products"):
            del shop[key]
    return shop
"""

# name -> (text to replace in the solution, its replacement, the checks it must fail)
MISTAKES: dict[str, tuple[str, str, set[str]]] = {
    "catches_everything": (
        "except ModelError as error:",
        "except Exception as error:",
        {"ex3_defects_stay_loud"},
    ),
    "notice_shows_environment": (
        'return f"Brief unavailable: {error}"',
        'return f"Brief unavailable: {error} (settings: {dict(environ)})"',
        # ex3_defects_stay_loud still holds, but counts only with ex3_config_notice.
        {"ex3_config_notice", "ex3_unreachable_notice", "ex3_defects_stay_loud"},
    ),
    "drops_only_the_margin": (
        '"products": [{field: row[field] for field in BRIEF_FIELDS} for row in shop["products"]],',
        '"products": [{k: v for k, v in row.items() if k != "margin_pence"} '
        'for row in shop["products"]],',
        # ex1_shop_unchanged still holds, but counts only with ex1_fields_only.
        {"ex1_fields_only", "ex1_shop_unchanged", "ex1_private_not_sent", "ex2_taken_at"},
    ),
    "unsorted_json": (
        "indent=2, sort_keys=True)",
        "indent=2)",
        {"ex2_taken_at", "ex2_request"},
    ),
    "deletes_fields_in_place": ("def brief_snapshot(", "def _unused(", {"ex1_shop_unchanged"}),
    # Exercise 4 (Unit C's open design): the first products of the shop's list, whatever
    # they need.
    "focus_first_in_shop_order": (CHOSEN, "chosen = products[:limit]", {"ex4_focus_largest_needs"}),
    # Exercise 4: the emptiest shelves first, which are not the largest needs.
    "focus_lowest_stock_first": (
        CHOSEN,
        'chosen = sorted(products, key=lambda row: row["on_hand"])[:limit]',
        {"ex4_focus_largest_needs"},
    ),
    # Exercise 4: the shop's own list sorted, so the caller's shop comes back reordered.
    "focus_sorts_the_shop": (
        '    products = brief_snapshot(shop)["products"]\n',
        '    shop["products"].sort(key=lambda row: -replenishment_need(row))\n'
        '    products = brief_snapshot(shop)["products"]\n',
        {"ex4_focus_within_limit"},
    ),
    # Exercise 4: the products left out are not counted, so the model reads silence as "fine".
    "focus_forgets_what_it_left_out": (
        ', "left_out": len(products) - len(chosen)}',
        "}",
        {"ex4_focus_within_limit", "ex4_focus_largest_needs"},
    ),
    # Exercise 4: any limit taken, 0 and True included.
    "focus_limit_unchecked": (
        "    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:\n",
        "    if False:\n",
        {"ex4_focus_limit_checked"},
    ),
}


@pytest.fixture(scope="module")
def report(tmp_path_factory, shared_grades: SharedGrades) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("book01")
    folders = {"starter": STARTER}
    for name, (old, new, _) in MISTAKES.items():
        assert SOLUTION.count(old) == 1, name
        folders[name] = SOLUTION.replace(old, new)
    folders["deletes_fields_in_place"] += IN_PLACE
    return grade_batch(
        1,
        {name: {"morning_brief.py": text} for name, text in folders.items()},
        base=base,
        shared=shared_grades,
    )


def test_the_grader_declares_exactly_the_books_checks() -> None:
    # The ids are the gradebook's columns: written out here, a renamed one is seen.
    assert {check.id for check in load_book(1).checks} == ALL_CHECKS


def test_the_untouched_starter_holds_back_the_checks_its_exercises_guard(report):
    starter = report["starter"]
    assert starter.baseline == (3, 3)
    assert starter.exercises == (0, 18)
    # The brief_snapshot of chapter 1 leaves the shop alone already: that check
    # holds, and is held back until the exercise it guards is done.
    assert starter.outcomes["ex1_shop_unchanged"] == "locked"


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_exactly_its_checks(report, mistake):
    assert report[mistake].failed == MISTAKES[mistake][2]


def notebook_output(folder: Path, unit: str) -> str:
    """Run a unit notebook's non-exercise cells as one script, as a learner's kernel would."""
    import nbformat

    notebook = nbformat.read(folder / f"{unit}.ipynb", as_version=4)
    script = "\n\n".join(
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "code" and "exercise" not in cell.metadata.get("tags", [])
    )
    (folder / "_cells.py").write_text(script + "\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "_cells.py"], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def exercise_folder(tmp_path):
    folder = tmp_path / "book01"
    shutil.copytree(EXERCISES / "book01", folder)
    return folder


def test_the_notebooks_check_cells_show_the_exercises_done_with_the_solution(exercise_folder):
    (exercise_folder / "morning_brief.py").write_text(SOLUTION, encoding="utf-8")
    unit_a = notebook_output(exercise_folder, "unit_a")
    assert "fields sent: ['name', 'on_hand', 'reorder_point', 'sku']" in unit_a
    assert "private data sent: False" in unit_a
    assert "the model sees taken_at = 2026-06-01T07:30" in unit_a
    assert "rules mention taken_at: True" in unit_a
    unit_b = notebook_output(exercise_folder, "unit_b")
    assert "  missing key: returned: Brief unavailable: OPENAI_API_KEY is not set" in unit_b
    assert "  server down: returned: Brief unavailable: cannot reach http://127.0.0.1:" in unit_b
    assert "key in notice: False" in unit_b
    assert "broken shop: raised KeyError" in unit_b
    unit_c = notebook_output(exercise_folder, "unit_c")
    for line in (
        "Coffee needs 14",
        "Pistachio needs 17",
        "Raspberry needs 11",
        "Strawberry needs 4",
        "Vanilla needs 6",
        "left out: 7",
        "the shop still starts with: ['Vanilla', 'Chocolate', 'Strawberry']",
        "needing shown: 7 of 7; left out: 2",
        "True refused ValueError",
    ):
        assert line in unit_c, line
    assert "Mango needs" not in unit_c


def test_the_notebooks_check_cells_show_the_starter_not_done_yet(exercise_folder):
    unit_a = notebook_output(exercise_folder, "unit_a")
    assert "private data sent: True" in unit_a
    assert "the model sees taken_at = None" in unit_a
    unit_b = notebook_output(exercise_folder, "unit_b")
    assert "  missing key: raised ModelConfigurationError" in unit_b
    assert "  server down: raised ModelUnavailableError" in unit_b
    unit_c = notebook_output(exercise_folder, "unit_c")
    assert "left out: None" in unit_c
    assert "True taken" in unit_c
