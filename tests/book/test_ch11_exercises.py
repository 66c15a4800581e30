"""Exercise Book 11: graded through the real grader, the desk running inside each sandbox.

The untouched starter earns its baseline and no exercise point, each typical
mistake loses exactly its checks, and the grader's door answers plain JSON
with the desk serving from a thread. Every store and ledger is a real SQLite
file, every request real HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from committed import EXERCISES
from exercise_books import check_cell_lines, load_module
from grading import Graded, SharedGrades, edited, grade_batch

from bookproof.grade.books import load_book

ROOT = Path(__file__).resolve().parents[2]
BOOK = EXERCISES / "book11"
SOLUTION = (ROOT / "solutions/book11/purchase_rules.py").read_text(encoding="utf-8")
STARTER = (BOOK / "purchase_rules.py").read_text(encoding="utf-8")
SERVER = ROOT / "book/textbook/servers/supplier_http.py"

CHAPTER_CHECKS = {"ch11_lost_answers", "ch11_refusal_stops"}
UNIT_A = {"ex1_report_states", "ex1_report_empty"}
UNIT_B = {"ex2_in_doubt", "ex2_lost", "ex2_sends_nothing"}
# Unit C, an open design task: graded by the ledger and the purchases, never by code shape.
UNIT_C = {"ex3_recent_doubt_settled", "ex3_forgotten_doubt_held", "ex3_remembered_doubt_confirmed"}

# name -> (edits to the solution, the checks the result must fail).
MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # An inner join: an order never sent drops out of the page, and out of
    # reconcile's findings, which must give one per order.
    "unsent_orders_dropped": (
        [("FROM orders o LEFT JOIN purchases p", "FROM orders o JOIN purchases p")],
        {"ex1_report_states", "ex2_in_doubt", "ex2_lost", "ex2_sends_nothing"},
    ),
    # Reconciling by resolving: in doubt purchases are sent and confirmed.
    "reconcile_sends": (
        [
            (
                '            held = desk.look_up(operation_id(connection, row["order"]))',
                '            purchase(connection, row["order"], desk)\n'
                '            held = desk.look_up(operation_id(connection, row["order"]))',
            )
        ],
        {"ex2_in_doubt", "ex2_lost", "ex2_sends_nothing"},
    ),
    # A confirmed purchase trusted without asking: the lost ledger goes unseen.
    "confirmed_trusted": (
        [('            elif held is None:\n                finding = "lost"\n', "")],
        {"ex2_lost"},
    ),
    # Unit C's plausible wrong designs. Chapter 11's resolving for every purchase, old or
    # not: a week-old purchase in doubt is sent again, to a supplier that forgot it.
    "age_ignored": (
        [("if row is None or now - row[0] < keeps_keys_for:", "if True:")],
        {"ex3_forgotten_doubt_held", "ex3_remembered_doubt_confirmed"},
    ),
    # Every old purchase in doubt held without asking: one the supplier holds is never confirmed.
    "held_without_asking": (
        [
            (
                "        found = desk.look_up(operation_id(connection, order_id))\n",
                "        found = None\n",
            )
        ],
        {"ex3_remembered_doubt_confirmed"},
    ),
    # Held by leaving it PREPARED: the morning's resolving then sends it.
    "held_left_prepared": (
        [
            (
                "            # REJECTED is the state chapter 11's resolving leaves for a person.\n",
                "            continue\n",
            )
        ],
        {"ex3_forgotten_doubt_held"},
    ),
}


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("book11")
    folders = {"starter": {"purchase_rules.py": STARTER}}
    for name, (edits, _) in MISTAKES.items():
        folders[name] = {"purchase_rules.py": edited(SOLUTION, edits)}
    folders["solution"] = {"purchase_rules.py": SOLUTION}
    return grade_batch(11, folders, base=base, shared=shared_grades)


def test_the_grader_declares_exactly_the_books_checks() -> None:
    assert {check.id for check in load_book(11).checks} == CHAPTER_CHECKS | UNIT_A | UNIT_B | UNIT_C


def test_the_solution_earns_full_marks(report: dict[str, Graded]) -> None:
    assert report["solution"].failed == set()


def test_the_untouched_starter_earns_its_baseline_and_no_exercise_point(
    report: dict[str, Graded],
) -> None:
    starter = report["starter"]
    assert starter.baseline == (3, 3)
    assert starter.exercises[0] == 0
    assert starter.failed == UNIT_A | UNIT_B | UNIT_C


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_exactly_its_checks(report: dict[str, Graded], mistake: str) -> None:
    assert report[mistake].failed == MISTAKES[mistake][1]


def load(text: str, tmp_path: Path) -> ModuleType:
    return load_module(text, tmp_path, "book11", "purchase_rules")


def test_the_grader_door_answers_in_plain_json(tmp_path: Path) -> None:
    rules = load(SOLUTION, tmp_path)
    ledger, path = str(tmp_path / "ledger.db"), str(tmp_path / "lucy.db")
    url = rules.supplier_file(str(SERVER), ledger, ["drop"])
    assert rules.shop_file(path, [["SKU-VANILLA", 9], ["SKU-CHOCOLATE", 1], ["SKU-VANILLA", 2]])
    assert rules.purchase_file(path, url, 1, "") == "CONFIRMED"
    assert rules.purchase_file(path, url, 2, "answered") == "stopped after answered"
    answers = [
        rules.purchases_file(path),
        rules.ledger_file(ledger),
        rules.report_file(path),
        rules.reconcile_file(path, url),
    ]
    assert json.loads(json.dumps(answers)) == answers
    assert answers[:2] == [
        [[1, "CONFIRMED", "SUP-0001"], [2, "PREPARED", None]],
        [["SUP-0001", "SKU-VANILLA", 9], ["SUP-0002", "SKU-CHOCOLATE", 1]],
    ]
    assert [row["state"] for row in answers[2]] == ["CONFIRMED", "PREPARED", "NOT_SENT"]
    assert [row["pence"] for row in answers[2]] == [2250, 300, 500]
    assert [f["finding"] for f in answers[3]] == ["ok", "found", "not_sent"]


def test_settling_a_week_later_holds_what_a_forgetful_supplier_could_buy_twice(
    tmp_path: Path,
) -> None:
    rules = load(SOLUTION, tmp_path)
    ledger, path = str(tmp_path / "ledger.db"), str(tmp_path / "lucy.db")
    url = rules.supplier_file(str(SERVER), ledger, [])
    rules.shop_file(path, [["SKU-VANILLA", 9], ["SKU-CHOCOLATE", 1]])
    assert rules.purchase_file(path, url, 2, "answered") == "stopped after answered"
    # The supplier keeps its one order and forgets its key.
    assert rules.forget_file(ledger) == 1
    day = 24 * 60 * 60
    assert rules.settle_file(path, url, 2 * day, day) == "settled"
    assert rules.resolve_file(path, url) == "resolved"
    assert rules.purchases_file(path) == [[1, "CONFIRMED", "SUP-0002"], [2, "REJECTED", None]]
    # Only the order never sent was bought: the chocolate stays bought once.
    assert rules.ledger_file(ledger) == [
        ["SUP-0001", "SKU-CHOCOLATE", 1],
        ["SUP-0002", "SKU-VANILLA", 9],
    ]


@pytest.mark.parametrize(
    ("unit", "with_the_solution", "with_the_starter"),
    [
        (
            "unit_a",
            [
                "[[1, 'CONFIRMED', 'SUP-0001'], [2, 'CONFIRMED', 'SUP-0002']]",
                "{'order': 1, 'sku': 'SKU-STRAWBERRY', 'quantity': 4, 'pence': 1100,"
                " 'state': 'PREPARED', 'supplier_order': None}",
                "{'order': 3, 'sku': 'SKU-VANILLA', 'quantity': 3, 'pence': 750,"
                " 'state': 'NOT_SENT', 'supplier_order': None}",
            ],
            "not yet: Exercise 1: write purchase_report",
        ),
        (
            "unit_b",
            [
                "[{'order': 1, 'finding': 'ok'}, {'order': 2, 'finding': 'found'},"
                " {'order': 3, 'finding': 'missing'}, {'order': 4, 'finding': 'rejected'}]",
                "ledger unchanged: True",
            ],
            "not yet: Exercise 2: write reconcile",
        ),
        (
            "unit_c",
            [
                "[[1, 'CONFIRMED', 'SUP-0002'], [2, 'CONFIRMED', 'SUP-0001'],"
                " [3, 'CONFIRMED', 'SUP-0003']]",
                "remembers: [[1, 'CONFIRMED', 'SUP-0002'], [2, 'CONFIRMED', 'SUP-0001'],"
                " [3, 'REJECTED', None]]",
                "keys forgotten: 1",
                "forgot: [[1, 'CONFIRMED'], [2, 'REJECTED'], [3, 'REJECTED']]",
                "ledger: [['SUP-0001', 'SKU-CHOCOLATE', 1], ['SUP-0002', 'SKU-VANILLA', 9]]",
            ],
            "not yet: Exercise 3: write settle_unfinished",
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution_and_not_with_the_starter(
    tmp_path: Path, unit: str, with_the_solution: list[str], with_the_starter: str
) -> None:
    lines = check_cell_lines(tmp_path / "solution", BOOK, "purchase_rules.py", SOLUTION, unit)
    for line in with_the_solution:
        assert line in lines, (line, lines)
    assert with_the_starter in check_cell_lines(
        tmp_path / "starter", BOOK, "purchase_rules.py", STARTER, unit
    )
