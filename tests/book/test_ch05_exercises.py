"""Exercise Book 5: the grader gives the reference full marks, the starter its chapter baseline
only, and each mistake exactly the checks it breaks; the solution's own tests (in
tests/book/test_solution_tests.py) pass against it and fail against the starter; the grader's door
speaks plain JSON over real store files; the notebooks match their plans.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from committed import EXERCISES
from exercise_books import check_cell_lines, run_in
from exercise_books import hand_in as hand_in_module
from grading import Graded, SharedGrades, edited, grade_batch

from bookproof.grade.books import load_book
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
BOOK = EXERCISES / "book05"
SOLUTIONS = ROOT / "solutions" / "book05"
SOLUTION = (SOLUTIONS / "shop_store.py").read_text(encoding="utf-8")
STARTER = (BOOK / "shop_store.py").read_text(encoding="utf-8")
LEARNER = ROOT / "book/textbook/learner/profrod_sovereign_agent_ch05_persistent_stock_learner.py"


GRADED = load_book(5)


def hand_in(tmp_path: Path, shop_store: str) -> Path:
    return hand_in_module(tmp_path, SOLUTIONS, "shop_store.py", shop_store)


# --- the grader, through its command line, in bubblewrap ------------------------------

COUNT = "    with transaction(connection):\n        for sku, tubs in counted.items():"
INDEX = (
    "    \"CREATE UNIQUE INDEX one_open_draft_per_sku ON drafts (sku) WHERE status = 'DRAFT'\",\n"
)
# Exercise 3's reference moves the freezer by the difference the correction found.
FREEZER_MOVES = (
    "        connection.execute(\n"
    '            "UPDATE products SET on_hand = on_hand + ? WHERE sku = ?", (difference, sku)\n'
    "        )\n"
)
# Unit C, an open design task: graded by what the store holds after a correction, never by code.
UNIT_C = {
    "ex3_correction_moves_the_difference",
    "ex3_correction_asked_twice",
    "ex3_correction_numbers_refused",
    "ex3_correction_unknown_refused",
    "ex3_correction_supersedes",
}

# name -> (edits to the solution, the checks it must lose); a lost guard shows as locked.
MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # The chapter's seed without its transaction: a bad row leaves the rows before it.
    "seed_row_by_row": (
        [
            (
                "    with transaction(connection):\n        if connection.execute(",
                "    if True:\n        if connection.execute(",
            )
        ],
        {"ch5_bad_seed_refused"},
    ),
    # Exercise 1: every line checked, but each UPDATE commits on its own.
    "count_without_a_transaction": (
        [(COUNT, "    if True:\n        for sku, tubs in counted.items():")],
        {"ex1_count_all_or_nothing", "ex1_count_sets_stock"},
    ),
    # Exercise 1: the numbers go to SQLite unchecked (STRICT takes 7.0 as 7).
    "count_trusts_its_numbers": (
        [
            (
                'counted = {sku: whole_number(f"the count of {sku}", tubs) for sku, tubs in '
                "counts.items()}",
                "counted = dict(counts)",
            )
        ],
        {"ex1_count_types"},
    ),
    # Exercise 1: an empty count counts nothing, quietly.
    "count_accepts_nothing": (
        [
            (
                "    if not counts:\n"
                '        raise ValueError("a stock count must count at least one sku")\n',
                "",
            )
        ],
        {"ex1_count_empty"},
    ),
    # Exercise 1: the count leaves the draft for the old need open.
    "count_keeps_stale_drafts": (
        [
            (
                "                raise KeyError(sku)\n"
                "            supersede_stale_draft(connection, sku)\n",
                "                raise KeyError(sku)\n",
            )
        ],
        {"ex1_count_supersedes"},
    ),
    # Exercise 2: the rebuild forgets the partial unique index, and drafting breaks.
    "migration_forgets_the_index": (
        [
            (
                '    "ALTER TABLE drafts_v2 RENAME TO drafts",\n' + INDEX,
                '    "ALTER TABLE drafts_v2 RENAME TO drafts",\n',
            )
        ],
        {
            "ch5_draft_saved_once",
            "ch5_delivery_supersedes",
            "ex1_count_supersedes",
            "ex2_one_open_draft",
            "ex3_correction_supersedes",
        },
    ),
    # Exercise 2: SCHEMA_V1 edited instead of a migration appended: old files stay at 1,
    # and, their schema no longer being the one the edited migration 1 makes, are refused.
    "schema_v1_edited": (
        [
            (
                "CONSTRAINT known_status CHECK (status IN ('DRAFT', 'SUPERSEDED'))",
                "CONSTRAINT known_status CHECK (status IN ('DRAFT', 'SUPERSEDED', 'CANCELLED'))",
            ),
            (
                "MIGRATIONS: tuple[tuple[str, ...], ...] = (SCHEMA_V1, CANCELLABLE_DRAFTS_V2)",
                "MIGRATIONS: tuple[tuple[str, ...], ...] = (SCHEMA_V1,)",
            ),
        ],
        {
            "ex2_new_store_version_2",
            "ex2_version_1_file_kept",
            "ex2_one_open_draft",
            "ex2_cancel",
            "ex2_cancel_nothing_open",
            "ex2_newer_refused",
        },
    ),
    # Exercise 2: every draft of the sku cancelled, the superseded ones too.
    "cancel_every_draft_of_the_sku": (
        [
            (
                'UPDATE drafts SET status = \'CANCELLED\' WHERE id = ?", (draft["id"],)',
                "UPDATE drafts SET status = 'CANCELLED' WHERE sku = ?\", (sku,)",
            )
        ],
        {"ex2_cancel"},
    ),
    # Exercise 2: nothing open to cancel, and nothing said.
    "cancel_says_nothing": (
        [
            (
                "        if draft is None:\n            raise KeyError(sku)\n",
                "        if draft is None:\n            return {}\n",
            )
        ],
        {"ex2_cancel_nothing_open"},
    ),
    # Exercise 3 (Unit C's open design): the record put right, the freezer left with the typo.
    "correction_fixes_only_the_record": (
        [(FREEZER_MOVES, "")],
        {
            "ex3_correction_moves_the_difference",
            "ex3_correction_asked_twice",
            "ex3_correction_supersedes",
        },
    ),
    # Exercise 3: a correction that finds nothing to move is taken for a mistake, so the
    # till's second try is refused although the first landed.
    "correction_refuses_a_repeat": (
        [
            (
                '        sku, difference = recorded["sku"], tubs - recorded["tubs"]\n',
                '        sku, difference = recorded["sku"], tubs - recorded["tubs"]\n'
                "        if difference == 0:\n"
                '            raise ValueError("the delivery already says so")\n',
            )
        ],
        {"ex3_correction_asked_twice"},
    ),
    # Exercise 3: the tubs go to SQLite unchecked (STRICT takes 7.0 as 7, True as 1).
    "correction_trusts_its_numbers": (
        [
            (
                '    if whole_number("tubs", tubs) < 1:\n'
                "        # A delivery that never came is not a correction: the record would have"
                " to go.\n"
                '        raise ValueError("a delivery brings at least 1 tub")\n',
                "",
            )
        ],
        {"ex3_correction_numbers_refused"},
    ),
    # Exercise 3: a delivery the store never recorded is corrected quietly, into nothing.
    "correction_ignores_an_unknown_delivery": (
        [
            (
                "        if recorded is None:\n            raise KeyError(delivery)\n",
                "        if recorded is None:\n            return {}\n",
            )
        ],
        {"ex3_correction_unknown_refused"},
    ),
    # Exercise 3: the freezer corrected, the draft for the old need left open.
    "correction_leaves_the_draft": (
        [(FREEZER_MOVES + "        supersede_stale_draft(connection, sku)\n", FREEZER_MOVES)],
        {"ex3_correction_supersedes"},
    ),
}


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    folders: dict[str, dict[str, str]] = {
        "starter": {"shop_store.py": STARTER},
    }
    for name, (edits, _) in MISTAKES.items():
        folders[name] = {"shop_store.py": edited(SOLUTION, edits)}
    return grade_batch(5, folders, base=tmp_path_factory.mktemp("book05"), shared=shared_grades)


def test_the_untouched_starter_holds_back_the_checks_its_exercises_guard(
    report: dict[str, Graded],
) -> None:
    starter = report["starter"]
    assert (starter.baseline, starter.exercises) == ((6, 6), (0, 22))
    assert starter.failed >= UNIT_C
    for guard in (
        "ex1_count_sets_stock",
        "ex2_one_open_draft",
        "ex2_newer_refused",
        "ex3_correction_asked_twice",
    ):
        assert starter.outcomes[guard] == "locked"


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_exactly_its_checks(report: dict[str, Graded], mistake: str) -> None:
    assert report[mistake].failed == MISTAKES[mistake][1]


def test_book_5_grades_no_learner_tests() -> None:
    # Every exercise of the book is new behaviour, graded as such; the unit's
    # tests are the learner's own (and the README says so).
    assert GRADED.groups() == []


@pytest.mark.parametrize("isolation", ["bubblewrap", "process"])
def test_the_reference_keeps_full_marks_whatever_the_seed_and_the_isolation(
    tmp_path: Path, isolation: str
) -> None:
    # Each check's store files live in its own scratch folder, in either mode.
    for seed in ("1", "2"):
        folder = tmp_path / seed
        folder.mkdir()
        graded = grade_batch(
            5,
            {"solution": {"shop_store.py": SOLUTION}},
            base=folder,
            isolation=isolation,
            options=["--seed", seed],
        )
        assert graded["solution"].full


# --- the solution's own tests, the door, the notebooks ----------------------------------


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
s.receive_in_file("a.db", "SKU-CHOCOLATE", 50)
s.receive_in_file("a.db", "SKU-CHOCOLATE", 2)
seen["corrected"] = s.correct_in_file("a.db", 2, 5)
seen["deliveries"] = s.deliveries_in_file("a.db")
seen["chocolate"] = s.stock_in_file("a.db")[0]
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
    # Delivery 2 said 50 and brought 5: 7 + 5 + 2 in the freezer, the record put right,
    # and the door hands nothing back (the return value is the design's own).
    assert seen["corrected"] is None
    assert seen["deliveries"] == [
        [1, "SKU-VANILLA", 7],
        [2, "SKU-CHOCOLATE", 5],
        [3, "SKU-CHOCOLATE", 2],
    ]
    assert (seen["chocolate"]["sku"], seen["chocolate"]["on_hand"]) == ("SKU-CHOCOLATE", 14)
    assert (seen["raw before"], seen["raw after"]) == (1, 2)
    assert (seen["cancel"]["id"], seen["cancel"]["status"]) == (1, "CANCELLED")
    assert (seen["newer"], seen["raw at the end"]) == ("refused", 9)


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
                # Money as the book prints it: never a bare 1100.
                "  1 SKU-VANILLA 6 1,500 pence SUPERSEDED",
                "  2 SKU-STRAWBERRY 4 1,100 pence CANCELLED",
            ],
        ),
        (
            "unit_c",
            [
                "before: 76 [(1, 'SKU-VANILLA', 70), (2, 'SKU-VANILLA', 4)]",
                "corrected: 13 [(1, 'SKU-VANILLA', 7), (2, 'SKU-VANILLA', 4)]",
                "sent again: 13 [(1, 'SKU-VANILLA', 7), (2, 'SKU-VANILLA', 4)]",
                "strawberry on hand: 4",
                "draft 1 SKU-STRAWBERRY 3 SUPERSEDED",
                "1 5.0 refused TypeError",
                "1 True refused TypeError",
                "1 0 refused ValueError",
                "9 5 refused KeyError",
                "after the count: refused ValueError",
                "3 [(1, 'SKU-CHOCOLATE', 5)]",
            ],
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution(
    tmp_path: Path, unit: str, with_the_solution: list[str]
) -> None:
    lines = check_cell_lines(tmp_path, BOOK, "shop_store.py", SOLUTION, unit, "*.db*")
    for line in with_the_solution:
        assert line in lines, line
