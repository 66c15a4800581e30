"""Exercise Book 12: graded through the real grader, on real SQLite stores in each sandbox.

The untouched starter earns its baseline and no exercise point, each typical
mistake loses exactly its checks, and the grader's door answers plain JSON.
Every store is a real SQLite file migrated by the book's runtime; runs are
claimed with its `claim_next`, journaled with its `Journal`, and written
behind its fence.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from committed import EXERCISES
from exercise_books import check_cell_lines
from grading import Graded, SharedGrades, edited, grade_batch

from bookproof.grade.books import load_book

ROOT = Path(__file__).resolve().parents[2]
BOOK = EXERCISES / "book12"
SOLUTION = (ROOT / "solutions/book12/recovery_rules.py").read_text(encoding="utf-8")
STARTER = (BOOK / "recovery_rules.py").read_text(encoding="utf-8")

CHAPTER_CHECKS = {"ch12_claim_and_fence"}
UNIT_A = {"ex1_in_doubt", "ex1_between_steps", "ex1_finished", "ex1_reads_only"}
UNIT_B = {"ex2_claim_or_wait", "ex2_fenced", "ex2_ended"}
# Unit C, an open design task: graded by the claims and the runs' rows, never by code shape.
UNIT_C = {"ex3_poison_run_given_up", "ex3_claims_as_chapter", "ex3_held_run_left_alone"}

# name -> (edits to the solution, the checks the result must fail).
MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # A STARTED call taken as done: the vanilla order is never settled. The
    # check that only asks for a read-only plan is credited after the first.
    "started_trusted": (
        [('{"DONE": "journal", "STARTED": "settle"}', '{"DONE": "journal", "STARTED": "journal"}')],
        {"ex1_in_doubt", "ex1_reads_only"},
    ),
    # The step nobody reached left out: the run would stop where it died.
    "next_step_forgotten": (
        [
            (
                'if not replies or replies[-1].record["message"]["tool_calls"]:',
                "if False:",
            )
        ],
        {"ex1_in_doubt", "ex1_between_steps", "ex1_reads_only"},
    ),
    # The model asked again after its final answer.
    "asks_after_the_answer": (
        [('if not replies or replies[-1].record["message"]["tool_calls"]:', "if True:")],
        {"ex1_finished"},
    ),
    # The owner's name trusted instead of the generation: a worker claimed
    # again under the same name, or holding a stale token, would still write.
    "owner_only": (
        [('"write" if owner == worker and generation == token', '"write" if owner == worker')],
        {"ex2_fenced"},
    ),
    # The clock trusted instead of the generation: a worker past its expiry
    # that nobody took over is told it has lost, though the fence lets it write.
    "clock_decides": (
        [
            (
                '"write" if owner == worker and generation == token',
                '"write" if owner == worker and generation == token and expires_ms > now_ms',
            )
        ],
        {"ex2_fenced"},
    ),
    # A lease that runs out at this very millisecond treated as still running.
    "claim_a_millisecond_late": (
        [("expires_ms <= now_ms", "expires_ms < now_ms")],
        {"ex2_claim_or_wait"},
    ),
    # A finished run treated as any other.
    "ended_ignored": (
        [('    if status in ("FINISHED", "FAILED"):\n        return "ended"\n', "")],
        {"ex2_ended"},
    ),
    # Unit C's plausible wrong designs. Given up on one claim early: a run still
    # allowed another worker is ended instead of claimed.
    "one_claim_early": (
        [
            (
                "\" WHERE status IN ('QUEUED', 'RUNNING') AND lease_generation >= ?\"",
                "\" WHERE status IN ('QUEUED', 'RUNNING') AND lease_generation >= ? - 1\"",
            )
        ],
        {"ex3_claims_as_chapter"},
    ),
    # Given up on while its last worker still holds a live lease.
    "held_run_failed": (
        [
            (
                '" AND (owner IS NULL OR lease_expires_ms <= ?)",\n'
                "            (now, max_claims, now),",
                '"",\n            (now, max_claims),',
            )
        ],
        {"ex3_claims_as_chapter", "ex3_held_run_left_alone"},
    ),
    # Another chance instead of an end: back to the queue, its generation reset,
    # so the next claim takes it again (and a stale token could match once more).
    "queued_again": (
        [
            (
                "\"UPDATE runs SET status = 'FAILED', owner = NULL, lease_expires_ms = NULL,\"\n"
                "            \" finished_ms = ?, error = 'given up: its lease was given out '\"\n"
                "            \" || lease_generation || ' times, and ran out every time'\"",
                "\"UPDATE runs SET status = 'QUEUED', owner = NULL, lease_expires_ms = NULL,\"\n"
                '            " lease_generation = 0 * ?"',
            )
        ],
        {"ex3_poison_run_given_up", "ex3_held_run_left_alone"},
    ),
}


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("book12")
    folders = {"starter": {"recovery_rules.py": STARTER}}
    for name, (edits, _) in MISTAKES.items():
        folders[name] = {"recovery_rules.py": edited(SOLUTION, edits)}
    folders["solution"] = {"recovery_rules.py": SOLUTION}
    return grade_batch(12, folders, base=base, shared=shared_grades)


def test_the_grader_declares_exactly_the_books_checks() -> None:
    assert {check.id for check in load_book(12).checks} == CHAPTER_CHECKS | UNIT_A | UNIT_B | UNIT_C


def test_the_solution_earns_full_marks(report: dict[str, Graded]) -> None:
    assert report["solution"].failed == set()


def test_the_untouched_starter_earns_its_baseline_and_no_exercise_point(
    report: dict[str, Graded],
) -> None:
    starter = report["starter"]
    assert starter.baseline == (2, 2)
    assert starter.exercises[0] == 0
    assert starter.failed == UNIT_A | UNIT_B | UNIT_C


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_exactly_its_checks(report: dict[str, Graded], mistake: str) -> None:
    assert report[mistake].failed == MISTAKES[mistake][1]


def test_the_starter_and_the_solution_share_the_chapter_part_and_the_door() -> None:
    chapter = "# --- Chapter 12:"
    exercises = "# --- Exercise 1"
    door = "# --- The grader's door"
    for marker in (chapter, exercises, door):
        assert STARTER.count(marker) == SOLUTION.count(marker) == 1, marker
    assert (
        STARTER.split(exercises)[0].split(chapter)[1]
        == SOLUTION.split(exercises)[0].split(chapter)[1]
    )
    assert STARTER.split(door)[1] == SOLUTION.split(door)[1]


def load(text: str, tmp_path: Path) -> ModuleType:
    path = tmp_path / "recovery_rules.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("book12_recovery_rules", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_the_grader_door_answers_in_plain_json(tmp_path: Path) -> None:
    rules = load(SOLUTION, tmp_path)
    path = str(tmp_path / "lucy.db")
    assert rules.queue_file(path, 2) == [1, 2]
    steps = [[["stock", "list_stock", "DONE"]], [["v", "place_order", "STARTED"]]]
    assert rules.journal_file(path, "first", steps) == 1
    # The journal's claim held run 1 for the default 30 s from 1 s.
    assert rules.claim_file(path, "second", 2000, 31_000) == [1, 2, 33_000]
    answers = [
        rules.plan_file(path, 1),
        rules.plan_file(path, 2),
        rules.plan_file(path, 3),
        [
            rules.decide_file(path, 1, who, token, 32_000)
            for who, token in (("first", 1), ("second", 2))
        ],
        [
            rules.decide_file(path, 2, "third", None, 0),
            rules.decide_file(path, 1, "third", None, 33_000),
        ],
        [rules.write_file(path, 1, "first", 1), rules.write_file(path, 1, "second", 2)],
        rules.store_file(path),
    ]
    assert json.loads(json.dumps(answers)) == answers
    assert [(p["step"], p["call"], p["answer"]) for p in answers[0]] == [
        (1, None, "journal"),
        (1, "stock", "journal"),
        (2, None, "journal"),
        (2, "v", "settle"),
        (3, None, "ask"),
    ]
    assert answers[1:6] == [
        [{"step": 1, "call": None, "answer": "ask"}],
        "KeyError",
        ["lost", "write"],
        ["claim", "claim"],
        ["refused", "written"],
    ]


@pytest.mark.parametrize(
    ("unit", "with_the_solution", "with_the_starter"),
    [
        (
            "unit_a",
            [
                "[{'step': 1, 'call': None, 'answer': 'journal'}, {'step': 1, 'call': 'stock',"
                " 'answer': 'journal'}, {'step': 2, 'call': None, 'answer': 'journal'},"
                " {'step': 2, 'call': 'order-SKU-VANILLA', 'answer': 'settle'},"
                " {'step': 2, 'call': 'order-SKU-CHOCOLATE', 'answer': 'run'},"
                " {'step': 3, 'call': None, 'answer': 'ask'}]",
                "[{'step': 1, 'call': None, 'answer': 'journal'}, {'step': 1, 'call': 'stock',"
                " 'answer': 'journal'}, {'step': 2, 'call': None, 'answer': 'ask'}]",
            ],
            "not yet: Exercise 1: write resume_plan",
        ),
        (
            "unit_b",
            [
                "paused-worker, token 1: lost",
                "other-worker, token 2: write",
                "third-worker, no token: wait",
                "third-worker at 5000 ms: claim",
            ],
            "not yet: Exercise 2: write lease_decision",
        ),
        (
            "unit_c",
            [
                "worker-c at 4000 ms: [2, 1, 6000]",
                "worker-c at 5000 ms: [3, 1, 7000]",
                "worker-d at 5500 ms: None",
                "no limit: ValueError",
                "1 FAILED given up: its lease was given out 2 times, and ran out every time None",
            ],
            "not yet: Exercise 3: write claim_patiently",
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution_and_not_with_the_starter(
    tmp_path: Path, unit: str, with_the_solution: list[str], with_the_starter: str
) -> None:
    lines = check_cell_lines(tmp_path / "solution", BOOK, "recovery_rules.py", SOLUTION, unit)
    for line in with_the_solution:
        assert line in lines, (line, lines)
    assert with_the_starter in check_cell_lines(
        tmp_path / "starter", BOOK, "recovery_rules.py", STARTER, unit
    )
