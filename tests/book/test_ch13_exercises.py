"""Exercise Book 13: graded through the real grader; each typical mistake loses exactly its
checks, the untouched starter earns no exercise point, and the notebooks' cells run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from committed import EXERCISES
from exercise_books import check_cell_lines
from grading import Graded, SharedGrades, edited, grade_batch

from bookproof.grade.books import load_book

ROOT = Path(__file__).resolve().parents[2]
BOOK = EXERCISES / "book13"
SOLUTION = (ROOT / "solutions/book13/limits.py").read_text(encoding="utf-8")
STARTER = (BOOK / "limits.py").read_text(encoding="utf-8")

CHAPTER_CHECKS = {"ch13_bucket", "ch13_streams"}
UNIT_A = {"ex1_window_waits", "ex1_old_calls_leave", "ex1_window_refuses"}
UNIT_B = {"ex2_cheapest", "ex2_exact_edges", "ex2_refuses"}
# Unit C, an open design task: graded by how a day of runs stops and spends, never by code shape.
UNIT_C = {"ex3_day_shared_out", "ex3_reserve_for_urgent"}

# name -> (edits to the solution, the checks the result must fail).
MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # Every call ever allowed counted, not only those still inside the window.
    "count_every_call": (
        [("sorted(moment for moment in allowed_at if now < moment + per_s)", "sorted(allowed_at)")],
        {"ex1_old_calls_leave"},
    ),
    # Waiting for the newest call in the window instead of the oldest of the last `calls`.
    "newest_leaves": (
        [("return in_window[-calls] + per_s - now", "return in_window[-1] + per_s - now")],
        {"ex1_window_waits"},
    ),
    # A cost exactly at the budget refused.
    "strictly_below": (
        [("if cost[0] <= budget", "if cost[0] < budget")],
        {"ex2_exact_edges"},
    ),
    # A tie broken by the table's order instead of the name.
    "first_in_table": (
        [
            (
                "affordable = sorted(cost for cost in costs if cost[0] <= budget)",
                "affordable = sorted(\n"
                "        (cost for cost in costs if cost[0] <= budget), key=lambda cost: cost[0]\n"
                "    )",
            )
        ],
        {"ex2_exact_edges"},
    ),
    # The chapter's bucket broken: it never refills.
    "bucket_never_refills": (
        [("self._tokens + elapsed * self.refill_per_s", "self._tokens")],
        {"ch13_bucket"},
    ),
    # Unit C's plausible wrong designs. The reserve kept from urgent runs too.
    "reserve_for_everyone": (
        [
            (
                "ceiling = daily_pence if urgent else daily_pence - reserve_pence",
                "ceiling = daily_pence - reserve_pence",
            )
        ],
        {"ex3_reserve_for_urgent"},
    ),
    # Rounded up: a run is handed part of a penny the day has not got.
    "rounded_up": (
        [
            (
                "left = (ceiling * 1_000_000 - spent_today_micropence) // 1_000_000",
                "left = -((spent_today_micropence - ceiling * 1_000_000) // 1_000_000)",
            )
        ],
        UNIT_C,
    ),
    # Nothing left given as a budget of 0 pence, which chapter 13's Limits refuses.
    "zero_budget": (
        [("return left if left >= 1 else None", "return max(left, 0)")],
        UNIT_C,
    ),
}


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("book13")
    folders = {"starter": {"limits.py": STARTER}, "solution": {"limits.py": SOLUTION}}
    for name, (edits, _) in MISTAKES.items():
        folders[name] = {"limits.py": edited(SOLUTION, edits)}
    return grade_batch(13, folders, base=base, shared=shared_grades)


def test_the_grader_declares_exactly_the_books_checks() -> None:
    assert {check.id for check in load_book(13).checks} == CHAPTER_CHECKS | UNIT_A | UNIT_B | UNIT_C


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


@pytest.mark.parametrize(
    ("unit", "printed"),
    [
        ("unit_a", ["[0.0, 0.0, 0.5, 0.0]"]),
        (
            "unit_b",
            [
                'check_availability {"sku": "VANILLA"}',
                "ModelResponseError: the stream was cut before message_stop",
            ],
        ),
    ],
)
def test_the_warm_up_cells_run_with_the_starter(
    tmp_path: Path, unit: str, printed: list[str]
) -> None:
    lines = check_cell_lines(tmp_path, BOOK, "limits.py", STARTER, unit)
    for line in printed:
        assert line in lines, line


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        (
            SOLUTION,
            [
                "ordinary run of 4 steps: money_budget, 3.5p",
                "ordinary run of 2 steps: not_started, 0.0p",
                "urgent run of 2 steps: money_budget, 9.5p",
                "the day spent 42.0p of 40p",
            ],
        ),
        (STARTER, ["not yet: Exercise 3: write run_budget"]),
    ],
    ids=["solution", "starter"],
)
def test_unit_cs_day_runs_out_with_the_solution_and_not_yet_with_the_starter(
    tmp_path: Path, text: str, printed: list[str]
) -> None:
    lines = check_cell_lines(tmp_path, BOOK, "limits.py", text, "unit_c")
    for line in printed:
        assert line in lines, (line, lines)
