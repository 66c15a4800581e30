"""Exercise Book 5: the solution's own tests pass against it and fail against the starter, the
grader's door speaks plain JSON over real store files, and the notebooks match their plans.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from exercise_books import hand_in as hand_in_module
from exercise_books import notebook_script, run_in

from bookproof.notebooks.build import notebook_json

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "exercises" / "book05"
SOLUTIONS = ROOT / "solutions" / "book05"
SOLUTION = (SOLUTIONS / "shop_store.py").read_text(encoding="utf-8")
STARTER = (BOOK / "shop_store.py").read_text(encoding="utf-8")
LEARNER = ROOT / "book/textbook/learner/profrod_sovereign_agent_ch05_persistent_stock_learner.py"
DOOR = "# --- The grader's door"


def hand_in(tmp_path: Path, shop_store: str) -> Path:
    return hand_in_module(tmp_path, SOLUTIONS, "shop_store.py", shop_store)


def test_the_solutions_own_tests_pass_against_the_solution(tmp_path: Path) -> None:
    result = run_in(hand_in(tmp_path, SOLUTION), "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 0, result.stdout
    assert "15 passed" in result.stdout


def test_the_solutions_own_tests_fail_against_the_starter(tmp_path: Path) -> None:
    result = run_in(hand_in(tmp_path, STARTER), "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 1
    # What holds already: a good count sets the stock, the one-open-draft rule,
    # and the refusal of a file newer than the code.
    assert "12 failed, 3 passed" in result.stdout


def test_the_starter_and_the_solution_share_the_grader_door() -> None:
    assert STARTER[STARTER.index(DOOR) :] == SOLUTION[SOLUTION.index(DOOR) :]


def test_the_starter_is_the_chapters_store_up_to_the_exercises() -> None:
    learner = LEARNER.read_text(encoding="utf-8")
    body = learner[learner.index("# Migration 1:") :].rstrip()
    chapter_part = STARTER[STARTER.index("# Migration 1:") : STARTER.index("# --- Exercise 1")]
    assert (
        chapter_part.replace(
            "# Exercise 2: define CANCELLABLE_DRAFTS_V2 just above, and append it here.\n", ""
        ).rstrip()
        == body
    )


# Every function of the door, called in a child with plain JSON, as the grader calls them.
DOOR_SCRIPT = """
import json, sys
import shop_store as s

shop = {"products": [
    {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
    {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
    {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
]}
prices = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}
seen = {}
s.seed_file("a.db", shop, prices)
seen["version"] = s.version_of_file("a.db")
seen["draft"] = s.invoke_in_file("a.db", "draft_order", {"sku": "SKU-VANILLA", "quantity": 6})
seen["again"] = s.invoke_in_file("a.db", "draft_order", {"sku": "SKU-VANILLA", "quantity": 6})
seen["delivery"] = s.receive_in_file("a.db", "SKU-VANILLA", 7)
seen["drafts"] = s.drafts_in_file("a.db")
seen["count"] = s.count_in_file("a.db", {"SKU-STRAWBERRY": 0})
seen["stock"] = s.stock_in_file("a.db")
s.write_version_1_file("b.db", shop, prices, [["SKU-STRAWBERRY", 4, 275, "DRAFT"]])
seen["raw before"] = s.raw_version_of_file("b.db")
seen["cancel"] = s.cancel_in_file("b.db", "SKU-STRAWBERRY")
seen["raw after"] = s.raw_version_of_file("b.db")
s.set_raw_version_of_file("b.db", 9)
try:
    s.version_of_file("b.db")
except s.NewerSchema:
    seen["newer"] = "refused"
seen["raw at the end"] = s.raw_version_of_file("b.db")
print(json.dumps(seen, sort_keys=True))
"""


def test_the_grader_door_answers_in_plain_json_over_real_files(tmp_path: Path) -> None:
    folder = hand_in(tmp_path, SOLUTION)
    result = run_in(folder, "-c", DOOR_SCRIPT)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    draft = {
        "currency": "GBP",
        "quantity": 6,
        "sku": "SKU-VANILLA",
        "status": "DRAFT",
        "supplier": "lucy-local",
        "total_pence": 1500,
        "unit_cost_pence": 250,
    }
    assert seen["version"] == 2
    assert seen["draft"] == seen["again"] == {"ok": True, "value": draft}
    assert (seen["delivery"]["on_hand"], seen["delivery"]["needed"]) == (9, 0)
    assert [(d["id"], d["status"]) for d in seen["drafts"]] == [(1, "SUPERSEDED")]
    assert [(r["sku"], r["on_hand"], r["needed"]) for r in seen["count"]] == [
        ("SKU-STRAWBERRY", 0, 5)
    ]
    assert [(r["sku"], r["needed"]) for r in seen["stock"]] == [
        ("SKU-CHOCOLATE", 0),
        ("SKU-STRAWBERRY", 5),
        ("SKU-VANILLA", 0),
    ]
    assert (seen["raw before"], seen["raw after"]) == (1, 2)
    assert (seen["cancel"]["id"], seen["cancel"]["status"]) == (1, "CANCELLED")
    assert (seen["newer"], seen["raw at the end"]) == ("refused", 9)


@pytest.mark.parametrize("unit", ["unit_a", "unit_b"])
def test_the_notebooks_are_generated_from_their_plans(unit: str) -> None:
    plan = BOOK / f"{unit}.md"
    expected = notebook_json(plan.read_text(encoding="utf-8"), source_name=plan.name)
    assert (BOOK / f"{unit}.ipynb").read_text(encoding="utf-8") == expected


@pytest.mark.parametrize(
    ("unit", "with_the_solution"),
    [
        (
            "unit_a",
            [
                "refused (KeyError): {'SKU-CHOCOLATE': 7, 'SKU-STRAWBERRY': 1, 'SKU-VANILLA': 2}",
                "refused (TypeError): {'SKU-CHOCOLATE': 7, 'SKU-STRAWBERRY': 1, 'SKU-VANILLA': 2}",
                "refused (ValueError): {'SKU-CHOCOLATE': 7, 'SKU-STRAWBERRY': 1, 'SKU-VANILLA': 2}",
                "1 SKU-VANILLA 6 SUPERSEDED",
                "2 SKU-STRAWBERRY 4 DRAFT",
            ],
        ),
        (
            "unit_b",
            [
                "version 2",
                "UNIQUE constraint failed: drafts.sku",
                "cancelled: 2 SKU-STRAWBERRY CANCELLED",
                "no open draft for SKU-CHOCOLATE",
                "  2 SKU-STRAWBERRY 4 1100 CANCELLED",
            ],
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution(
    tmp_path: Path, unit: str, with_the_solution: list[str]
) -> None:
    folder = tmp_path / "book05"
    shutil.copytree(BOOK, folder, ignore=shutil.ignore_patterns("__pycache__", "*.db*"))
    (folder / "shop_store.py").write_text(SOLUTION, encoding="utf-8")
    (folder / "_cells.py").write_text(notebook_script(folder / f"{unit}.ipynb"), encoding="utf-8")
    result = run_in(folder, "_cells.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for line in with_the_solution:
        assert line in lines, line
