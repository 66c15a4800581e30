"""Exercise Book 6: the solution's own tests pass against it and fail against the starter, its
state machine catches each fault the unit plants, the grader's door speaks plain JSON over real
store files, and the notebooks match their plans.
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
BOOK = ROOT / "exercises" / "book06"
SOLUTIONS = ROOT / "solutions" / "book06"
SOLUTION = (SOLUTIONS / "reservations.py").read_text(encoding="utf-8")
STARTER = (BOOK / "reservations.py").read_text(encoding="utf-8")
LEARNER = (
    ROOT
    / "book/textbook/learner/profrod_sovereign_agent_ch06_reservations_and_deliveries_learner.py"
)
DOOR = "# --- The grader's door"
EXERCISE_2 = "# --- Exercise 2"


def hand_in(tmp_path: Path, reservations: str) -> Path:
    return hand_in_module(tmp_path, SOLUTIONS, "reservations.py", reservations)


def test_the_solutions_own_tests_pass_against_the_solution(tmp_path: Path) -> None:
    result = run_in(hand_in(tmp_path, SOLUTION), "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 0, result.stdout
    assert "19 passed" in result.stdout


def test_the_solutions_own_tests_fail_against_the_starter(tmp_path: Path) -> None:
    result = run_in(hand_in(tmp_path, STARTER), "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 1
    # What holds already: an exact and a short note (one line at a time is
    # fine when every line is good), the nephew's two write-off tests, and an
    # unknown flavour written off (a KeyError, after an UPDATE that matched nothing).
    assert "14 failed, 5 passed" in result.stdout


# The three faults of Unit B, each alone: what the grader's faulty versions of write_off do.
FAULTY_WRITE_OFFS = {
    "stops at 0 instead of refusing": """
def write_off(connection, sku, tubs):
    at_least_one_tub("write off", tubs)
    with transaction(connection):
        connection.execute(
            "UPDATE products SET on_hand = max(0, on_hand - ?) WHERE sku = ?", (tubs, sku)
        )
        supersede_stale_draft(connection, sku)
        product = read_product(connection, sku)
    return {**product, "needed": replenishment_need(product)}
""",
    "leaves the stale draft open": """
def write_off(connection, sku, tubs):
    at_least_one_tub("write off", tubs)
    with transaction(connection):
        refuse_below_zero(read_product(connection, sku), "write off", tubs, {"on_hand": -tubs})
        connection.execute("UPDATE products SET on_hand = on_hand - ? WHERE sku = ?", (tubs, sku))
        product = read_product(connection, sku)
    return {**product, "needed": replenishment_need(product)}
""",
    "takes -3 tubs as 3 more": """
def write_off(connection, sku, tubs):
    whole_number("tubs", tubs)
    with transaction(connection):
        refuse_below_zero(read_product(connection, sku), "write off", tubs, {"on_hand": -tubs})
        connection.execute("UPDATE products SET on_hand = on_hand - ? WHERE sku = ?", (tubs, sku))
        supersede_stale_draft(connection, sku)
        product = read_product(connection, sku)
    return {**product, "needed": replenishment_need(product)}
""",
}


def with_write_off(source: str, replacement: str) -> str:
    """The solution with its write_off replaced: the definition between Exercise 2 and the door."""
    start = source.index("def write_off(", source.index(EXERCISE_2))
    return source[:start] + replacement.lstrip() + "\n\n" + source[source.index(DOOR) :]


# What the shrunk failing sequence shows, per fault.
EVIDENCE = {
    "stops at 0 instead of refusing": "was accepted, but it was impossible",
    "leaves the stale draft open": 'assert draft["quantity"] == need(',
    "takes -3 tubs as 3 more": "was accepted, but it was impossible",
}


@pytest.mark.parametrize("fault", list(FAULTY_WRITE_OFFS))
def test_the_solutions_state_machine_catches_each_fault_alone(tmp_path: Path, fault: str) -> None:
    faulty = with_write_off(SOLUTION, FAULTY_WRITE_OFFS[fault])
    folder = hand_in(tmp_path, faulty)
    machine = run_in(
        folder, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_book06_machine.py"
    )
    assert machine.returncode == 1, machine.stdout
    # Hypothesis shrank the failure to a short sequence that writes off tubs.
    assert "state = Store()" in machine.stdout
    assert "state.act(action='write_off'" in machine.stdout
    assert EVIDENCE[fault] in machine.stdout
    # The example tests of the unit name the same fault.
    examples = run_in(
        folder, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_book06_write_off.py"
    )
    assert examples.returncode == 1, examples.stdout


def test_the_faulty_versions_differ_from_the_solution_only_in_write_off() -> None:
    for replacement in FAULTY_WRITE_OFFS.values():
        faulty = with_write_off(SOLUTION, replacement)
        assert (
            faulty[: faulty.index("def write_off(")] == SOLUTION[: SOLUTION.index("def write_off(")]
        )
        assert faulty[faulty.index(DOOR) :] == SOLUTION[SOLUTION.index(DOOR) :]


def test_the_starter_and_the_solution_share_the_grader_door() -> None:
    assert STARTER[STARTER.index(DOOR) :] == SOLUTION[SOLUTION.index(DOOR) :]


def test_the_starter_is_the_chapters_learner_file_up_to_the_exercises() -> None:
    learner = LEARNER.read_text(encoding="utf-8")
    body = learner[learner.index("def replenishment_need") :].rstrip()
    for source in (STARTER, SOLUTION):
        chapter_part = source[
            source.index("def replenishment_need") : source.index("# --- Exercise 1")
        ]
        assert chapter_part.rstrip() == body


# Every function of the door, called in a child with plain JSON, as the grader calls them.
DOOR_SCRIPT = """
import json, sys
import reservations as r

shop = {"products": [
    {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
    {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
    {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
]}
prices = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}
seen = {}
r.seed_file("a.db", shop, prices)
seen["version"] = r.version_of_file("a.db")
seen["reserve"] = r.act_in_file("a.db", "reserve", "SKU-VANILLA", 3)
r.act_in_file("a.db", "reserve", "SKU-CHOCOLATE", 2)
r.act_in_file("a.db", "expect_delivery", "SKU-STRAWBERRY", 4)
seen["stock"] = r.stock_in_file("a.db")
seen["draft"] = r.draft_in_file("a.db", "SKU-VANILLA", 9)
try:
    r.act_in_file("a.db", "collect", "SKU-VANILLA", 3)
except ValueError as error:
    seen["refused"] = str(error)
try:
    r.act_in_file("a.db", "sell", "SKU-VANILLA", 1)
except ValueError as error:
    seen["unknown action"] = str(error)
seen["expected"] = r.act_in_file("a.db", "receive", "SKU-STRAWBERRY", 4, True)
seen["unannounced"] = r.act_in_file("a.db", "receive", "SKU-VANILLA", 2)
seen["drafts"] = r.drafts_in_file("a.db")
seen["note"] = r.note_in_file("a.db", {"SKU-CHOCOLATE": 3}, True)
seen["write off"] = r.write_off_in_file("a.db", "SKU-CHOCOLATE", 4)
seen["deliveries"] = r.deliveries_in_file("a.db")
r.write_version_1_file("b.db", shop, prices)
seen["migrated"] = [r.version_of_file("b.db"), r.stock_in_file("b.db")]
print(json.dumps(seen, sort_keys=True))
"""


def test_the_grader_door_answers_in_plain_json_over_real_files(tmp_path: Path) -> None:
    folder = hand_in(tmp_path, SOLUTION)
    result = run_in(folder, "-c", DOOR_SCRIPT)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["version"] == 2
    assert (seen["reserve"]["reserved"], seen["reserve"]["needed"]) == (3, 9)
    assert [(r["sku"], r["needed"]) for r in seen["stock"]] == [
        ("SKU-CHOCOLATE", 1),
        ("SKU-STRAWBERRY", 0),
        ("SKU-VANILLA", 9),
    ]
    assert (seen["draft"]["quantity"], seen["draft"]["total_pence"]) == (9, 2250)
    assert seen["refused"] == "cannot collect 3 tubs of SKU-VANILLA: only 2 on hand"
    assert seen["unknown action"] == "no operator action 'sell'"
    assert (seen["expected"]["on_hand"], seen["expected"]["incoming"]) == (5, 0)
    assert (seen["unannounced"]["on_hand"], seen["unannounced"]["needed"]) == (4, 7)
    assert [(d["quantity"], d["status"]) for d in seen["drafts"]] == [(9, "SUPERSEDED")]
    # Chocolate: 3 unannounced tubs on 7 (nothing incoming), then 4 written off.
    assert [(r["sku"], r["on_hand"], r["needed"]) for r in seen["note"]] == [
        ("SKU-CHOCOLATE", 10, 0)
    ]
    assert (seen["write off"]["on_hand"], seen["write off"]["needed"]) == (6, 2)
    assert seen["deliveries"] == [["SKU-STRAWBERRY", 4], ["SKU-VANILLA", 2], ["SKU-CHOCOLATE", 3]]
    version, stock = seen["migrated"]
    assert version == 2
    assert [(r["sku"], r["on_hand"], r["reserved"], r["incoming"]) for r in stock] == [
        ("SKU-CHOCOLATE", 7, 0, 0),
        ("SKU-STRAWBERRY", 1, 0, 0),
        ("SKU-VANILLA", 2, 0, 0),
    ]


@pytest.mark.parametrize("unit", ["unit_a", "unit_b"])
def test_the_notebooks_are_generated_from_their_plans(unit: str) -> None:
    plan = BOOK / f"{unit}.md"
    expected = notebook_json(plan.read_text(encoding="utf-8"), source_name=plan.name)
    assert (BOOK / f"{unit}.ipynb").read_text(encoding="utf-8") == expected


FRIDAY = "{'SKU-CHOCOLATE': (7, 2, 0), 'SKU-STRAWBERRY': (1, 0, 4), 'SKU-VANILLA': (2, 3, 6)}"


@pytest.mark.parametrize(
    ("unit", "with_the_solution"),
    [
        (
            "unit_a",
            [
                "SKU-STRAWBERRY on hand 5 incoming 0 need 0",
                "SKU-VANILLA on hand 8 incoming 0 need 3",
                "refused: cannot start a transaction within a transaction",
                f"refused (ValueError): {FRIDAY}",
                f"refused (KeyError): {FRIDAY}",
                f"refused (TypeError): {FRIDAY}",
                "on hand 10 incoming 0 need 1",
                "1 SKU-VANILLA 3 SUPERSEDED",
            ],
        ),
        (
            "unit_b",
            [
                "on hand 4 need 2",
                "5 tubs: cannot write off 5 tubs of SKU-VANILLA: only 2 on hand",
                "0 tubs: cannot write off 0 tubs: an action moves at least one tub",
                "-3 tubs: cannot write off -3 tubs: an action moves at least one tub",
                "strawberry: on hand 0 need 5",
                "1 SKU-STRAWBERRY 4 SUPERSEDED",
            ],
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution(
    tmp_path: Path, unit: str, with_the_solution: list[str]
) -> None:
    folder = tmp_path / "book06"
    shutil.copytree(BOOK, folder, ignore=shutil.ignore_patterns("__pycache__", "*.db*"))
    (folder / "reservations.py").write_text(SOLUTION, encoding="utf-8")
    (folder / "_cells.py").write_text(notebook_script(folder / f"{unit}.ipynb"), encoding="utf-8")
    result = run_in(folder, "_cells.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for line in with_the_solution:
        assert line in lines, line
