"""Exercise Book 6: the grader gives the reference full marks, the starter its chapter baseline
only, each mistake exactly the checks it breaks, and learner tests what they catch; the solution's
own tests (in tests/book/test_solution_tests.py) pass against it and fail against the starter, its
state machine catches each fault the unit plants, the grader's door speaks plain JSON over real
store files, and the notebooks match their plans.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from committed import EXERCISES
from exercise_books import check_cell_lines, run_in
from exercise_books import hand_in as hand_in_module
from grading import Graded, SharedGrades, grade_batch

from bookproof.layout import REPO_ROOT
from sovereign_agent.store import MIGRATIONS

ROOT = REPO_ROOT
BOOK = EXERCISES / "book06"
SOLUTIONS = ROOT / "solutions" / "book06"
SOLUTION = (SOLUTIONS / "reservations.py").read_text(encoding="utf-8")
STARTER = (BOOK / "reservations.py").read_text(encoding="utf-8")
LEARNER = (
    ROOT
    / "book/textbook/learner/profrod_sovereign_agent_ch06_reservations_and_deliveries_learner.py"
)
DOOR = "# --- The grader's door"
EXERCISE_2 = "# --- Exercise 2"
EXERCISE_3 = "# --- Exercise 3"


def hand_in(tmp_path: Path, reservations: str) -> Path:
    return hand_in_module(tmp_path, SOLUTIONS, "reservations.py", reservations)


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
    """The solution with its write_off replaced: the definition between Exercise 2 and 3."""
    start = source.index("def write_off(", source.index(EXERCISE_2))
    return source[:start] + replacement.lstrip() + "\n\n" + source[source.index(EXERCISE_3) :]


# --- the grader, through its command line, in bubblewrap ------------------------------

NOTE_CHECKS = {"ex1_note_tests"}
# Unit C, an open design task: graded by what the store holds after a sheet, never by code shape.
UNIT_C = {
    "ex3_stock_take_keeps_what_moved",
    "ex3_stock_take_all_or_nothing",
    "ex3_stock_take_supersedes",
}
MACHINE_CHECKS = {
    "ex2_machine_catches_clamping",
    "ex2_machine_catches_stale_drafts",
    "ex2_machine_catches_negative_tubs",
}
TEST_FILES = {path.name: path.read_text(encoding="utf-8") for path in SOLUTIONS.glob("test_*.py")}

# name -> (the reservations.py handed in, the checks it must lose). These are handed in
# without tests, which costs exactly the learner-test checks besides.
MISTAKES: dict[str, tuple[str, set[str]]] = {
    # Chapter 6's collect forgets the promise it keeps.
    "collect_keeps_the_promise": (
        SOLUTION.replace(
            'move_tubs(connection, "collect", sku, tubs, on_hand=-1, reserved=-1)',
            'move_tubs(connection, "collect", sku, tubs, on_hand=-1)',
        ),
        {"ch6_actions", "ch6_refusals"},
    ),
    # Exercise 1: each line's work right, but no transaction around the note.
    "note_without_a_transaction": (
        SOLUTION.replace(
            "    with transaction(connection):\n        for sku, tubs in note.items():",
            "    if True:\n        for sku, tubs in note.items():",
        ),
        {"ex1_note_all_or_nothing", "ex1_note_expected_lines"},
    ),
    # Exercise 1: the numbers go to SQLite unchecked (True and 2.0 go in as tubs).
    "note_trusts_its_numbers": (
        SOLUTION.replace(
            "    # Every number is checked before the lock: a bad line never takes it.\n"
            "    for tubs in note.values():\n"
            '        at_least_one_tub("receive", tubs)\n',
            "",
        ),
        {"ex1_note_bad_numbers"},
    ),
    # Exercise 1: a note with no lines is received, quietly.
    "note_accepts_an_empty_note": (
        SOLUTION.replace("    if not note:\n", "    if note is None:\n"),
        {"ex1_note_empty"},
    ),
    # Exercise 1: an accepted surplus takes all its tubs off the van (below 0: refused).
    "note_empties_more_than_the_van": (
        SOLUTION.replace('off_the_van = min(tubs, product["incoming"])', "off_the_van = tubs"),
        {"ex1_note_surplus_accepted"},
    ),
    # Exercise 3 (Unit C's open design): the sheet's numbers written over the store's, so the
    # collection or delivery made since the count is undone.
    "stock_take_writes_the_sheet": (
        SOLUTION.replace(
            '"UPDATE products SET on_hand = on_hand + ? WHERE sku = ?", (found_wrong, sku)',
            '"UPDATE products SET on_hand = ? WHERE sku = ?", (line["counted"], sku)',
        ),
        {"ex3_stock_take_keeps_what_moved", "ex3_stock_take_supersedes"},
    ),
    # Exercise 3: each line its own transaction; the good line stays when a later one fails.
    "stock_take_line_by_line": (
        SOLUTION.replace(
            "    with transaction(connection):\n        for sku, line in sheet.items():\n"
            '            found_wrong = line["counted"] - line["seen"]\n',
            "    for sku, line in sheet.items():\n"
            "        with transaction(connection):\n"
            '            found_wrong = line["counted"] - line["seen"]\n',
        ).replace(
            "            supersede_stale_draft(connection, sku)\n"
            "        rows = [read_product(connection, sku) for sku in sorted(sheet)]\n",
            "            supersede_stale_draft(connection, sku)\n"
            "    with transaction(connection):\n"
            "        rows = [read_product(connection, sku) for sku in sorted(sheet)]\n",
        ),
        {"ex3_stock_take_all_or_nothing"},
    ),
    # Exercise 3: the numbers go to SQLite unchecked (6.0 and True go in as tubs).
    "stock_take_trusts_its_numbers": (
        SOLUTION.replace(
            "    for sku, line in sheet.items():\n"
            '        for name in ("seen", "counted"):\n'
            "            if whole_number(name, line[name]) < 0:\n"
            '                raise ValueError(f"{sku}: {name} cannot be below 0 tubs")\n',
            "",
        ),
        {"ex3_stock_take_all_or_nothing"},
    ),
    # Exercise 3: the count corrected, its open draft left for the old need.
    "stock_take_leaves_the_draft": (
        SOLUTION.replace(
            "            supersede_stale_draft(connection, sku)\n"
            "        rows = [read_product(connection, sku) for sku in sorted(sheet)]\n",
            "        rows = [read_product(connection, sku) for sku in sorted(sheet)]\n",
        ),
        {"ex3_stock_take_supersedes"},
    ),
    # Exercise 2: Unit B's three faults, each alone.
    "write_off_stops_at_0": (
        with_write_off(SOLUTION, FAULTY_WRITE_OFFS["stops at 0 instead of refusing"]),
        {"ex2_write_off_too_many", "ex2_write_off_moves_stock"},
    ),
    "write_off_leaves_the_draft": (
        with_write_off(SOLUTION, FAULTY_WRITE_OFFS["leaves the stale draft open"]),
        {"ex2_write_off_supersedes"},
    ),
    "write_off_takes_negative_tubs": (
        with_write_off(SOLUTION, FAULTY_WRITE_OFFS["takes -3 tubs as 3 more"]),
        {"ex2_write_off_no_tubs"},
    ),
}

MACHINE = TEST_FILES["test_book06_machine.py"]
NOTE = TEST_FILES["test_book06_note.py"]


def template(unit: str, name: str) -> str:
    """The test file a unit's new-file cell creates, as the learner first gets it."""
    plan = (BOOK / f"{unit}.md").read_text(encoding="utf-8")
    return plan.split(f"```python new-file={name}\n", 1)[1].split("\n```\n", 1)[0] + "\n"


# name -> (test files handed in beside the reference, the checks they must lose).
LEARNER_TESTS: dict[str, tuple[dict[str, str], set[str]]] = {
    "note_tests_assert_nothing": (
        {"test_book06_note.py": "import reservations\n\n\ndef test_note():\n    pass\n"},
        NOTE_CHECKS | MACHINE_CHECKS,
    ),
    # The connection stays with the code under test: it offers close() and nothing else,
    # so SQL of the test's own fails against the reference.
    "note_tests_run_their_own_sql": (
        {
            "test_book06_note.py": NOTE.replace(
                "    return [tuple(delivery) for delivery in deliveries_in_file(path)]",
                "    with closing(open_store(path)) as connection:\n"
                '        rows = connection.execute("SELECT sku, tubs FROM deliveries")\n'
                "        return [tuple(row) for row in rows]",
            )
        },
        NOTE_CHECKS | MACHINE_CHECKS,
    ),
    # The shapes the units hand out earn nothing until the learner adds the tests that matter.
    "note_template_as_given": (
        {"test_book06_note.py": template("unit_a", "test_book06_note.py")},
        NOTE_CHECKS | MACHINE_CHECKS,
    ),
    "machine_template_as_given": (
        {"test_book06_machine.py": template("unit_b", "test_book06_machine.py")},
        NOTE_CHECKS | MACHINE_CHECKS,
    ),
    "machine_asserts_nothing": (
        {"test_book06_machine.py": "import reservations\n\n\ndef test_machine():\n    pass\n"},
        NOTE_CHECKS | MACHINE_CHECKS,
    ),
    # Without the invariant about open drafts, a stale draft goes unseen.
    "machine_without_the_draft_invariant": (
        {
            "test_book06_machine.py": MACHINE.replace(
                "    @invariant()\n    def every_open_draft_is_for_the_current_need(self):",
                "    def every_open_draft_is_for_the_current_need(self):",
            )
        },
        NOTE_CHECKS | {"ex2_machine_catches_stale_drafts"},
    ),
    # Only whole tubs tried: a write-off of -3 is never attempted.
    "machine_tries_positive_tubs_only": (
        {"test_book06_machine.py": MACHINE.replace("st.integers(-2, 6)", "st.integers(1, 6)")},
        NOTE_CHECKS | {"ex2_machine_catches_negative_tubs"},
    ),
}


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    folders: dict[str, dict[str, str]] = {
        "starter": {"reservations.py": STARTER},
    }
    for name, (module, _) in MISTAKES.items():
        assert module != SOLUTION, f"{name}: the edit no longer applies"
        folders[name] = {"reservations.py": module}
    for name, (files, _) in LEARNER_TESTS.items():
        assert all(text not in TEST_FILES.values() for text in files.values()), name
        folders[name] = {"reservations.py": SOLUTION, **files}
    return grade_batch(6, folders, base=tmp_path_factory.mktemp("book06"), shared=shared_grades)


def test_the_untouched_starter_holds_back_the_checks_its_exercises_guard(
    report: dict[str, Graded],
) -> None:
    starter = report["starter"]
    assert (starter.baseline, starter.exercises) == ((6, 6), (0, 20))
    assert starter.failed >= UNIT_C
    for guard in ("ex1_note_expected_lines", "ex2_write_off_moves_stock"):
        assert starter.outcomes[guard] == "locked"


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_exactly_its_checks(report: dict[str, Graded], mistake: str) -> None:
    assert report[mistake].failed == MISTAKES[mistake][1] | NOTE_CHECKS | MACHINE_CHECKS


@pytest.mark.parametrize("tests", sorted(LEARNER_TESTS))
def test_learner_tests_earn_what_they_catch_and_nothing_more(
    report: dict[str, Graded], tests: str
) -> None:
    assert report[tests].failed == LEARNER_TESTS[tests][1]


def test_the_reference_keeps_full_marks_in_process_mode_with_another_seed(tmp_path: Path) -> None:
    # The tests' store paths (pytest's tmp_path, a TemporaryDirectory) name files
    # beside the code under test, whichever temporary folder each side has. Out
    # of the sandbox those files are on the disk, not in memory, and every commit
    # waits for it: the runs get the time a slow disk needs (--timeout 20 gives
    # each run of the tests 60 s).
    graded = grade_batch(
        6,
        {"solution": {"reservations.py": SOLUTION, **TEST_FILES}},
        base=tmp_path,
        isolation="process",
        options=["--seed", "2", "--timeout", "20"],
    )
    assert graded["solution"].full


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
    # Its store files in memory: every step of every sequence commits.
    machine = run_in(
        folder,
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_book06_machine.py"),
        temporary_in_memory=True,
    )
    assert machine.returncode == 1, machine.stdout
    # Hypothesis shrank the failure to a short sequence that writes off tubs.
    assert "state = Store()" in machine.stdout
    assert "state.act(action='write_off'" in machine.stdout
    assert EVIDENCE[fault] in machine.stdout
    # The example tests of the unit name the same fault.
    examples = run_in(
        folder,
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_book06_write_off.py"),
        temporary_in_memory=True,
    )
    assert examples.returncode == 1, examples.stdout


def test_the_faulty_versions_differ_from_the_solution_only_in_write_off() -> None:
    for replacement in FAULTY_WRITE_OFFS.values():
        faulty = with_write_off(SOLUTION, replacement)
        assert (
            faulty[: faulty.index("def write_off(")] == SOLUTION[: SOLUTION.index("def write_off(")]
        )
        assert faulty[faulty.index(DOOR) :] == SOLUTION[SOLUTION.index(DOOR) :]


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
seen["stock take"] = r.stock_take_in_file("a.db", {"SKU-CHOCOLATE": {"seen": 6, "counted": 5}})
r.write_version_1_file("b.db", shop, prices)
seen["migrated"] = [r.version_of_file("b.db"), r.stock_in_file("b.db")]
print(json.dumps(seen, sort_keys=True))
"""


def test_the_grader_door_answers_in_plain_json_over_real_files(tmp_path: Path) -> None:
    folder = hand_in(tmp_path, SOLUTION)
    result = run_in(folder, "-c", DOOR_SCRIPT)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    # The runtime's store, which the door opens, is at its latest migration
    # (chapter 10's 3, then each later chapter's).
    assert seen["version"] == len(MIGRATIONS)
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
    # The sheet found one chocolate missing of the 6 left: 5, and a need of 3 (2 still promised).
    assert [(r["sku"], r["on_hand"], r["reserved"], r["needed"]) for r in seen["stock take"]] == [
        ("SKU-CHOCOLATE", 5, 2, 3)
    ]
    version, stock = seen["migrated"]
    assert version == len(MIGRATIONS)  # a chapter 5 file migrated through the latest migration
    assert [(r["sku"], r["on_hand"], r["reserved"], r["incoming"]) for r in stock] == [
        ("SKU-CHOCOLATE", 7, 0, 0),
        ("SKU-STRAWBERRY", 1, 0, 0),
        ("SKU-VANILLA", 2, 0, 0),
    ]


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
        (
            "unit_c",
            [
                "SKU-CHOCOLATE on hand 4 need 2",
                "SKU-VANILLA on hand 7 need 1",
                "refused KeyError",
                "refused TypeError",
                "refused ValueError",
                "{'SKU-CHOCOLATE': 7, 'SKU-STRAWBERRY': 1, 'SKU-VANILLA': 2}",
            ],
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution(
    tmp_path: Path, unit: str, with_the_solution: list[str]
) -> None:
    lines = check_cell_lines(tmp_path, BOOK, "reservations.py", SOLUTION, unit, "*.db*")
    for line in with_the_solution:
        assert line in lines, line
