"""Exercise Book 10: graded through the real grader, each typical mistake loses exactly its checks,
tests that assert nothing earn nothing, the solution's own tests (in
tests/book/test_solution_tests.py) pass against it and fail against the starter, the grader's door
answers plain JSON, and the notebooks' cells show the exercises done.

Every store is a real SQLite file: the grader's in the sandbox's scratch, these tests' in pytest's
tmp_path.
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
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
BOOK = EXERCISES / "book10"
SOLUTIONS = ROOT / "solutions" / "book10"
SOLUTION = (SOLUTIONS / "approval_rules.py").read_text(encoding="utf-8")
STARTER = (BOOK / "approval_rules.py").read_text(encoding="utf-8")
TESTS = {
    name: (SOLUTIONS / name).read_text(encoding="utf-8")
    for name in ("test_book10_caps.py", "test_book10_release.py")
}

CHAPTER_CHECKS = {"ch10_run_waits", "ch10_approved_orders_once", "ch10_budget_and_denial"}
UNIT_A = {
    "ex1_over_cap_refused",
    "ex1_cap_is_inclusive_and_own",
    "ex1_no_is_never_capped",
    "ex1_tests_catch_cap_exclusive",
    "ex1_tests_catch_lowest_cap",
    "ex1_tests_catch_refusal_that_changed",
}
UNIT_B = {
    "ex2_release_frees_money",
    "ex2_release_only_what_is_held",
    "ex2_tests_catch_every_run",
    "ex2_tests_catch_pending_revoked",
    "ex2_tests_catch_nothing_revoked",
}
# Exercise 3, at the end of Unit B: hold_tubs declared by its effect classes.
HOLDS = {"ex3_hold_runs_without_approval", "ex3_hold_is_a_write"}
# Unit C, an open design task: graded by which decisions the ledger takes, never by code shape.
UNIT_C = {"ex4_deputy_approves_in_own_name", "ex4_deputy_within_allowance"}
# A check locked behind a failing one is not earned either: it fails with it.
CAP_BEHAVIOUR = {"ex1_over_cap_refused", "ex1_cap_is_inclusive_and_own", "ex1_no_is_never_capped"}
RELEASE_BEHAVIOUR = {"ex2_release_frees_money", "ex2_release_only_what_is_held"}

# name -> (edits to the solution, the checks the result must fail). The tests
# handed in are the solution's own, which still pass against the reference.
MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # A cap of N pence that refuses an approval of exactly N.
    "cap_exclusive": (
        [("        if amount > cap:", "        if amount >= cap:")],
        {"ex1_cap_is_inclusive_and_own"},
    ),
    # Whoever decides, the lowest cap given holds them: an uncapped operator is capped too.
    "lowest_cap_for_everyone": (
        [("    cap = caps.get(operator)", "    cap = min(caps.values(), default=None)")],
        CAP_BEHAVIOUR,
    ),
    # Pending approvals revoked with the approved ones: a question an operator never answered.
    "pending_released": (
        [
            (
                'if approval.run_id == run_id and approval.status == "APPROVED"',
                'if approval.run_id == run_id and approval.status in ("APPROVED", "PENDING")',
            )
        ],
        RELEASE_BEHAVIOUR,
    ),
    # Every run's approvals released, not the one named.
    "every_run_released": (
        [
            (
                'if approval.run_id == run_id and approval.status == "APPROVED"',
                'if approval.status == "APPROVED"',
            )
        ],
        RELEASE_BEHAVIOUR,
    ),
}

MISTAKES.update(
    {
        # Declared a read: it runs without an approval, and would survive a read of a note.
        "hold_declared_read": (
            [
                (
                    "        effects=frozenset({Effect.WRITE}),",
                    "        effects=frozenset({Effect.READ}),",
                )
            ],
            {"ex3_hold_is_a_write"},
        ),
        # Declared able to spend: the approval authority meets it, and refuses it unpriced.
        "hold_declared_money": (
            [
                (
                    "        effects=frozenset({Effect.WRITE}),",
                    "        effects=frozenset({Effect.WRITE, Effect.MONEY}),",
                )
            ],
            HOLDS,
        ),
    }
)

# Unit C's plausible wrong designs, each losing exactly the checks it should.
MISTAKES.update(
    {
        # The deputy's yes written in the owner's name: the ledger no longer says who decided.
        "deputy_signs_as_owner": (
            [
                (
                    '    decide(connection, approval_id, operator, "approve")\n\n\n'
                    "# --- The grader's door",
                    '    decide(connection, approval_id, away["owner"], "approve")\n\n\n'
                    "# --- The grader's door",
                )
            ],
            UNIT_C,
        ),
        # Only the deputy is limited: every other operator still approves as in chapter 10.
        "anyone_approves": (
            [
                (
                    '        raise ApprovalRefused("owner_away", '
                    'f"{operator} may not approve while the owner is away")\n',
                    '        decide(connection, approval_id, operator, "approve")\n'
                    "        return\n",
                )
            ],
            UNIT_C,
        ),
        # The owner's own approvals counted against the deputy's allowance.
        "owner_counted": (
            [
                (
                    "        if approval.decided_by == operator\n",
                    "        if approval.decided_by is not None\n",
                )
            ],
            {"ex4_deputy_within_allowance"},
        ),
        # Only what still waits counts: once spent, the deputy's approvals are forgotten.
        "spent_forgotten": (
            [('            approval.status == "USED"\n            or ', "            ")],
            {"ex4_deputy_within_allowance"},
        ),
    }
)

# Tests that call the door and assert nothing: they pass everywhere, so they catch nothing.
SILENT_TESTS = {
    "test_book10_caps.py": (
        "from approval_rules import ask_file, friday_file\n\n\n"
        "def test_a_run_asks(tmp_path):\n"
        "    path = str(tmp_path / 'lucy.db')\n"
        "    friday_file(path, ['lucy'], 5000)\n"
        "    ask_file(path, 'cafe', [['SKU-VANILLA', 9]])\n"
    ),
    "test_book10_release.py": (
        "from approval_rules import friday_file, release_file\n\n\n"
        "def test_a_run_is_released(tmp_path):\n"
        "    path = str(tmp_path / 'lucy.db')\n"
        "    friday_file(path, ['lucy'], 5000)\n"
        "    release_file(path, 'cafe', 'lucy')\n"
    ),
}


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("book10")
    folders = {"starter": {"approval_rules.py": STARTER}}
    folders["silent_tests"] = {"approval_rules.py": SOLUTION, **SILENT_TESTS}
    for name, (edits, _) in MISTAKES.items():
        folders[name] = {"approval_rules.py": edited(SOLUTION, edits), **TESTS}
    return grade_batch(10, folders, base=base, shared=shared_grades)


def test_the_grader_declares_exactly_the_books_checks() -> None:
    # The ids are the gradebook's columns: written out here, a renamed one is seen.
    assert {
        check.id for check in load_book(10).checks
    } == CHAPTER_CHECKS | UNIT_A | UNIT_B | HOLDS | UNIT_C


def test_the_untouched_starter_earns_its_baseline_and_no_exercise_point(
    report: dict[str, Graded],
) -> None:
    starter = report["starter"]
    assert starter.baseline == (4, 4)
    assert starter.exercises[0] == 0
    assert starter.failed == UNIT_A | UNIT_B | HOLDS | UNIT_C


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_exactly_its_checks(report: dict[str, Graded], mistake: str) -> None:
    assert report[mistake].failed == MISTAKES[mistake][1]


def test_tests_that_assert_nothing_catch_nothing(report: dict[str, Graded]) -> None:
    assert report["silent_tests"].failed == {
        check for check in UNIT_A | UNIT_B if "_tests_catch_" in check
    }


def load(text: str, tmp_path: Path) -> ModuleType:
    return load_module(text, tmp_path, "book10", "approval_rules")


def test_the_grader_door_answers_in_plain_json(tmp_path: Path) -> None:
    rules = load(SOLUTION, tmp_path)
    path = str(tmp_path / "lucy.db")
    rules.friday_file(path, ["lucy", "sam"], 5000)
    asked = rules.ask_file(path, "morning", [["SKU-VANILLA", 9], ["SKU-CHOCOLATE", 1]])
    assert asked == {"stop": "awaiting_approval", "awaiting": [1, 2], "denied": []}
    assert rules.decide_file(path, "approve", 1, "sam", {"sam": 2000}) == "refused: over_cap"
    assert rules.decide_file(path, "approve", 1, "lucy", {"sam": 2000}) == "APPROVED"
    assert rules.decide_file(path, "approve", 2, "sam", {"sam": 2000}) == "APPROVED"
    assert rules.ask_file(path, "again", [["SKU-VANILLA", 9]])["stop"] == "final_answer"
    assert rules.release_file(path, "morning", "lucy") == [2]
    answers = [
        rules.approvals_file(path),
        rules.budget_file(path),
        rules.orders_file(path),
    ]
    assert json.loads(json.dumps(answers)) == answers
    assert answers == [
        [[1, "USED", "lucy", 2250, "morning"], [2, "REVOKED", "lucy", 300, "morning"]],
        {"reserved": 0, "spent": 2250, "left": 2750},
        [["SKU-VANILLA", 9, 1]],
    ]
    held = rules.hold_file(path, "hold", "SKU-CHOCOLATE", 4)
    classes = rules.classes_file(path)
    assert json.loads(json.dumps([held, classes])) == [held, classes]
    # Friday reserved 2 chocolate; the two approvals above are the only ones.
    assert held == {"stop": "final_answer", "reserved": 6, "approvals": 2}
    assert classes == {
        "classes": {
            "list_stock": ["read"],
            "supplier": ["read"],
            "draft_order": ["write"],
            "place_order": ["money", "write"],
            "hold_tubs": ["write"],
        },
        "kept": ["list_stock", "supplier"],
    }


def test_the_away_door_answers_each_decision_as_the_ledger_took_it(tmp_path: Path) -> None:
    rules = load(SOLUTION, tmp_path)
    path = str(tmp_path / "lucy.db")
    rules.friday_file(path, ["lucy", "sam", "kim"], 50_000)
    asked = [["SKU-VANILLA", 9], ["SKU-CHOCOLATE", 3], ["SKU-STRAWBERRY", 4]]
    assert rules.ask_file(path, "cafe", asked)["awaiting"] == [1, 2, 3]
    # 2,250, 900 and 1,100 pence: sam may approve 1,500 while lucy is away.
    away = {"owner": "lucy", "deputy": "sam", "up_to": 1500}
    answers = [
        rules.away_file(path, "approve", 2, "kim", away),
        rules.away_file(path, "approve", 2, "nobody", away),
        rules.away_file(path, "approve", 1, "lucy", away),
        rules.away_file(path, "approve", 2, "sam", away),
        rules.away_file(path, "approve", 3, "sam", away),
        rules.away_file(path, "revoke", 2, "sam", away),
        rules.away_file(path, "approve", 3, "sam", away),
        rules.away_file(path, "deny", 2, "kim", away),
    ]
    assert answers == [
        "refused: owner_away",
        "refused: unknown_operator",
        "APPROVED",
        "APPROVED",
        "refused: over_allowance",
        "REVOKED",
        "APPROVED",
        "refused: already_decided",
    ]
    assert rules.approvals_file(path) == [
        [1, "APPROVED", "lucy", 2250, "cafe"],
        [2, "REVOKED", "sam", 900, "cafe"],
        [3, "APPROVED", "sam", 1100, "cafe"],
    ]


@pytest.mark.parametrize(
    ("unit", "with_the_solution"),
    [
        ("unit_a", ["sam: refused: over_cap", "lucy: APPROVED", "DENIED"]),
        (
            "unit_b",
            [
                "released: [2]",
                "['USED', 'REVOKED', 'PENDING']",
                "{'reserved': 0, 'spent': 2250, 'left': 2750}",
                "released: []",
                "{'stop': 'final_answer', 'reserved': 5, 'approvals': 0}",
                "['write']",
            ],
        ),
        (
            "unit_c",
            [
                "kim: refused: owner_away",
                "sam: APPROVED",
                "[2, 'APPROVED', 'sam', 900, 'morning']",
                "lucy 1: APPROVED",
                "sam 2: APPROVED",
                "sam 3: refused: over_allowance",
                "sam revokes 2: REVOKED",
                "sam 3 again: APPROVED",
                "{'stop': 'awaiting_approval', 'awaiting': [4], 'denied': []}",
                "sam 4: refused: over_allowance",
                "lucy 4: APPROVED",
            ],
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution(
    tmp_path: Path, unit: str, with_the_solution: list[str]
) -> None:
    lines = check_cell_lines(
        tmp_path, BOOK, "approval_rules.py", SOLUTION, unit, "test_book10_*.py"
    )
    for line in with_the_solution:
        assert line in lines, line
