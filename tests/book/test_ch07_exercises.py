"""Exercise Book 7: the solution's own tests pass against it and fail against the starter, the
grader's door speaks plain JSON over real skills folders, and the notebooks match their plans.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from exercise_books import PYTEST, hand_in, notebook_script, run_in

from bookproof.notebooks.build import notebook_json

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "exercises" / "book07"
SOLUTIONS = ROOT / "solutions" / "book07"
SOLUTION = (SOLUTIONS / "skill_tools.py").read_text(encoding="utf-8")
STARTER = (BOOK / "skill_tools.py").read_text(encoding="utf-8")
SKILLS = ROOT / "book" / "textbook" / "skills"
DOOR = "# --- The grader's door"
EXERCISES = "# --- Exercise 1"


def test_the_solutions_own_tests_pass_against_the_solution(tmp_path: Path) -> None:
    result = run_in(hand_in(tmp_path, SOLUTIONS, "skill_tools.py", SOLUTION), *PYTEST)
    assert result.returncode == 0, result.stdout
    assert "19 passed" in result.stdout


def test_the_solutions_own_tests_fail_against_the_starter(tmp_path: Path) -> None:
    result = run_in(hand_in(tmp_path, SOLUTIONS, "skill_tools.py", STARTER), *PYTEST)
    assert result.returncode == 1
    # What holds already: discovery refuses a malformed skill, with its line.
    assert "18 failed, 1 passed" in result.stdout


def test_the_starter_and_the_solution_share_the_chapter_part_and_the_grader_door() -> None:
    assert STARTER[STARTER.index(DOOR) :] == SOLUTION[SOLUTION.index(DOOR) :]
    chapter = "# --- Chapter 7:"
    assert (
        STARTER[STARTER.index(chapter) : STARTER.index(EXERCISES)]
        == SOLUTION[SOLUTION.index(chapter) : SOLUTION.index(EXERCISES)]
    )


DOOR_SCRIPT = """
import json, sys
import skill_tools as s
root = sys.argv[1]
run = ["draft_order", "list_stock", "load_skill", "read_reference", "supplier"]
seen = {
    "skills": s.skills_in_folder(root),
    "review": s.review_folder(root, ["list_stock", "load_skill"]),
    "bulk": s.run_calls(root, run, [["load_skill", {"skill": "bulk-buyer"}],
                                    ["place_order", {"sku": "SKU-VANILLA", "quantity": 500}]]),
    "missing": s.skills_in_folder(root + "/nowhere"),
}
print(json.dumps(seen, sort_keys=True))
"""


def test_the_grader_door_answers_in_plain_json_over_real_folders(tmp_path: Path) -> None:
    folder = hand_in(tmp_path, SOLUTIONS, "skill_tools.py", SOLUTION)
    result = run_in(folder, "-c", DOOR_SCRIPT, str(SKILLS))
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert [skill["name"] for skill in seen["skills"]] == [
        "bulk-buyer",
        "morning-reorder",
        "price-check",
    ]
    assert seen["skills"][0]["allowed_tools"] == ["list_stock", "place_order"]
    assert seen["review"][0] == {
        "skill": "bulk-buyer",
        "lists": ["list_stock", "place_order"],
        "keeps": ["list_stock"],
        "removes": ["load_skill"],
        "ignores": ["place_order"],
        "unknown": ["place_order"],
        "unreachable": ["place_order"],
    }
    bulk = seen["bulk"]
    assert bulk["offered"][1] == ["list_stock"]
    assert bulk["observations"][1] == {"ok": False, "error": "tool_not_allowed"}
    assert bulk["narrowings"][0]["ignored"] == ["place_order"]
    assert bulk["refused"] == [["place_order", "tool_not_allowed"]]
    assert seen["missing"]["error"] == "no such skills folder"


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
                "{'skill': 'counting', 'lists': ['list_stok'], 'keeps': [], 'removes': "
                "['list_stock', 'load_skill'], 'ignores': ['list_stok'], 'unknown': "
                "['list_stok'], 'unreachable': ['list_stock']}",
                "bulk-buyer unreachable: ['place_order']",
                "price-check unreachable: []",
                "['list_stock']",
            ],
        ),
        (
            "unit_b",
            [
                "['tool_failed']",
                "['ok', 'ok']",
                "['ok', 'invalid_arguments']",
                "{'error': 'tool_not_allowed', 'ok': False}",
            ],
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution(
    tmp_path: Path, unit: str, with_the_solution: list[str]
) -> None:
    folder = tmp_path / "book07"
    shutil.copytree(BOOK, folder, ignore=shutil.ignore_patterns("__pycache__", "unit_*_skills"))
    (folder / "skill_tools.py").write_text(SOLUTION, encoding="utf-8")
    (folder / "_cells.py").write_text(notebook_script(folder / f"{unit}.ipynb"), encoding="utf-8")
    result = run_in(folder, "_cells.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for line in with_the_solution:
        assert line in lines, line
