"""Exercise Book 4: full marks for the reference, the chapter baseline and no exercise point for
the starter, each mistake loses exactly its checks, and the learner-side files hold.

The grader runs as a real subprocess over real folders, all in one batch, in
bubblewrap. Every other test works in a copy of the folder, as a learner
would, in a real subprocess.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from committed import EXERCISES
from exercise_books import notebook_script
from grading import Graded, SharedGrades, edited, grade_batch

from bookproof.grade.book import BASELINE
from bookproof.grade.books import load_book
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
STARTER_DIR = EXERCISES / "book04"
SOLUTION_DIR = ROOT / "solutions" / "book04"
BOOK = load_book(4)
TESTS_CHECKS = {check.id for check in BOOK.checks if check.tests is not None}
BASELINE_CHECKS = {check.id for check in BOOK.checks if check.kind == BASELINE}
SUITE_CHECKS = {"ex3_regression_fails", "ex3_chapter_tools_pass", "ex3_tasks_kept"}
# Unit C, an open design task: graded by the runs listed for review, never by code shape.
UNIT_C = {"ex5_review_finds_trouble", "ex5_review_leaves_the_rest", "ex5_review_in_start_order"}


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


SOLUTION = read(SOLUTION_DIR / "evidence.py")
STARTER = read(STARTER_DIR / "evidence.py")
SOLVED_SUITE = read(SOLUTION_DIR / "suite.toml")
STARTER_SUITE = read(STARTER_DIR / "suite.toml")
REGRESSED = read(STARTER_DIR / "regressed.py")
LEARNER_TESTS = {
    name: read(SOLUTION_DIR / name) for name in ("test_book04_traces.py", "test_book04_suite.py")
}

MORNING_ON_HAND = "on_hand = { SKU-VANILLA = 2, SKU-CHOCOLATE = 7, SKU-STRAWBERRY = 1 }\n"
DELIVERY_ON_HAND = "on_hand = { SKU-VANILLA = 9, SKU-CHOCOLATE = 7, SKU-STRAWBERRY = 1 }\n"

# name -> (edits to the reference evidence.py, the checks the result must lose)
EVIDENCE_MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # Exercise 1: the authority's refusal is not a handler that raised.
    "counts_the_authority": (
        [
            (
                'event.failure_stage in ("handler", "result")',
                'event.failure_stage in ("handler", "result", "before_write")',
            )
        ],
        {"ex1_not_the_authority"},
    ),
    # Exercise 1: read_trace groups by run; interleaved runs come out of order.
    "run_order": (
        [('return sorted(found, key=lambda failure: failure["line"])', "return found")],
        {"ex1_file_order"},
    ),
    # Exercise 2: a schema changed (supplier dropped) and no price: diverges at event 2.
    "schema_instead_of_price": (
        [
            (
                'return build_tools(**{**recorded, "prices": prices})',
                'return build_tools(**{**recorded, "allowed": recorded["allowed"][:2]})',
            )
        ],
        {"ex2_diverges_at_event_11", "ex2_same_schema"},
    ),
    # Exercise 2: right for the morning plan, but a product it did not name loses its price.
    "prices_by_hand": (
        [
            (
                'prices = {**recorded["prices"], "SKU-STRAWBERRY": 290}',
                'prices = {"SKU-VANILLA": recorded["prices"]["SKU-VANILLA"], '
                '"SKU-CHOCOLATE": recorded["prices"]["SKU-CHOCOLATE"], "SKU-STRAWBERRY": 290}',
            )
        ],
        {"ex2_same_schema"},
    ),
    # Exercise 4: right rates, in the order of the sorted seeds.
    "seeds_sorted": (
        [("for seed in seeds]", "for seed in sorted(seeds)]")],
        {"ex4_rates_per_seed"},
    ),
    # Exercise 4: an unknown variant measured as the first one instead of refused.
    "unknown_variant_runs_the_first": (
        [("raise KeyError(variant)", "chosen = suite.variants[:1]")],
        {"ex4_range_and_unknown"},
    ),
    # Chapter 4: a run_task that no longer tells its recorder a call was taken up.
    "no_tool_call_events": (
        [("            trace.tool_call(raw)\n", "")],
        {"ch4_trace_events", "ch4_replays"},
    ),
    # Chapter 4: a refused write classed as a broken tool.
    "refused_write_is_a_failed_tool": (
        [('if code == "tool_failed" and stage == "before_write":', "if False:")],
        {"ch4_failure_classes"},
    ),
    # Chapter 4: a hint that names the key the model invented.
    "hints_name_invented_keys": (
        [
            (
                'hint = {"field": None, "expected": f"only the declared fields: {names}"}',
                'hint = {"field": field, "expected": f"only the declared fields: {names}"}',
            )
        ],
        {"ch4_hints_safe"},
    ),
    # Exercise 5 (Unit C's open design): a run whose process was killed is not looked at.
    "review_forgets_killed_runs": (
        [("        if not run.complete\n        or any(\n", "        if any(\n")],
        UNIT_C,
    ),
    # Exercise 5: a write its authority refused is taken for the model's slip.
    "review_misses_refused_writes": (
        [
            (
                'NEEDS_LUCY = frozenset({"handler", "result", "before_write"})',
                'NEEDS_LUCY = frozenset({"handler", "result"})',
            )
        ],
        UNIT_C,
    ),
    # Exercise 5: every refusal counted, the model's bad arguments it went on from too.
    "review_counts_every_refusal": (
        [
            (
                'event.event == "tool_outcome" and event.failure_stage in NEEDS_LUCY',
                'event.event == "tool_outcome" and event.code != "ok"',
            )
        ],
        {"ex5_review_leaves_the_rest"},
    ),
    # Exercise 5: runs listed in the order they end, not the order they start.
    "review_in_order_of_ending": (
        [
            (
                "        for run in read_trace(Path(trace_path))\n",
                "        for run in sorted(read_trace(Path(trace_path)), key=lambda r: r.lines[-1])"
                "\n",
            )
        ],
        {"ex5_review_in_start_order"},
    ),
}

# Checks a mistake fails only for some of the grader's random data: the careless
# run ch4_replays records has hints on half the time, and sends an invented key
# only sometimes.
DATA_DEPENDENT: dict[str, set[str]] = {"hints_name_invented_keys": {"ch4_replays"}}

# name -> (suite.toml beside the reference evidence.py, the checks it must lose)
SUITE_MISTAKES: dict[str, tuple[str, set[str]]] = {
    # The delivery task's regressed runs still pass: strawberry's stock goes unwatched.
    "suite_watches_one_task": (SOLVED_SUITE.replace(DELIVERY_ON_HAND, ""), SUITE_CHECKS),
    # The stock after the regression, expected: the chapter's tools fail, the regression passes.
    "suite_expects_the_regressed_stock": (
        SOLVED_SUITE.replace(
            MORNING_ON_HAND, "on_hand = { SKU-VANILLA = 8, SKU-STRAWBERRY = 5 }\n"
        ).replace(DELIVERY_ON_HAND, "on_hand = { SKU-STRAWBERRY = 5 }\n"),
        SUITE_CHECKS,
    ),
    # Catches the regression, but checks the total no more.
    "suite_drops_an_expectation": (
        SOLVED_SUITE.replace("total_pence = 2600\n", ""),
        {"ex3_tasks_kept"},
    ),
    "suite_not_toml": (SOLVED_SUITE + "\n[[tasks\n", SUITE_CHECKS),
}

# name -> (test files beside the reference, the checks they must lose)
TEST_FILES: dict[str, tuple[dict[str, str], set[str]]] = {
    "tests_assert_nothing": (
        {
            "test_book04_traces.py": "from evidence import failures_in\n\n\n"
            "def test_nothing():\n    pass\n",
            "test_book04_suite.py": "from evidence import spread\n\n\n"
            "def test_nothing():\n    pass\n",
        },
        TESTS_CHECKS,
    ),
    "tests_import_beyond_the_door": (
        {
            **LEARNER_TESTS,
            "test_book04_traces.py": LEARNER_TESTS["test_book04_traces.py"].replace(
                "    failures_in,\n", "    failures_in,\n    handler_failures,\n"
            ),
        },
        {"tests_catch_authority_counted", "tests_catch_run_order", "tests_catch_schema_changed"},
    ),
}


def hand_in(
    evidence: str = SOLUTION, suite: str | None = SOLVED_SUITE, tests: dict[str, str] | None = None
) -> dict[str, str]:
    files = {"evidence.py": evidence, "regressed.py": REGRESSED, **(tests or {})}
    if suite is not None:
        files["suite.toml"] = suite
    return files


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    for _, (suite, _) in SUITE_MISTAKES.items():
        assert suite != SOLVED_SUITE
    folders = {
        "starter": hand_in(STARTER, STARTER_SUITE),
        "no_suite": hand_in(suite=None),
    }
    for name, (edits, _) in EVIDENCE_MISTAKES.items():
        folders[name] = hand_in(edited(SOLUTION, edits))
    for name, (suite, _) in SUITE_MISTAKES.items():
        folders[name] = hand_in(suite=suite)
    for name, (tests, _) in TEST_FILES.items():
        folders[name] = hand_in(tests=tests)
    return grade_batch(4, folders, base=tmp_path_factory.mktemp("book04"), shared=shared_grades)


def test_the_untouched_starter_holds_back_the_checks_its_exercises_guard(
    report: dict[str, Graded],
) -> None:
    starter = report["starter"]
    assert starter.baseline == (6, 6)
    assert starter.failed == {check.id for check in BOOK.checks} - BASELINE_CHECKS
    # The starter's suite passes the chapter's tools and keeps both tasks: held
    # back until it catches the regression.
    assert starter.outcomes["ex3_chapter_tools_pass"] == "locked"
    assert starter.outcomes["ex3_tasks_kept"] == "locked"


@pytest.mark.parametrize("mistake", sorted(EVIDENCE_MISTAKES))
def test_each_mistake_in_evidence_loses_exactly_its_checks(
    report: dict[str, Graded], mistake: str
) -> None:
    # These folders hand in no tests: the tests' checks are lost with them.
    lost = report[mistake].failed - TESTS_CHECKS
    assert EVIDENCE_MISTAKES[mistake][1] <= lost
    assert lost - EVIDENCE_MISTAKES[mistake][1] <= DATA_DEPENDENT.get(mistake, set())


@pytest.mark.parametrize("mistake", sorted(SUITE_MISTAKES))
def test_each_mistake_in_the_suite_loses_exactly_its_checks(
    report: dict[str, Graded], mistake: str
) -> None:
    assert report[mistake].failed - TESTS_CHECKS == SUITE_MISTAKES[mistake][1]


def test_a_suite_that_is_not_toml_is_told_so_with_its_line(report: dict[str, Graded]) -> None:
    line = (SOLVED_SUITE + "\n[[tasks\n").count("\n")
    for check in report["suite_not_toml"].entry["checks"]:
        if check["id"] == "ex3_regression_fails":
            assert check["feedback"].startswith(f"suite.toml is not valid TOML (line {line}).")


def test_a_folder_without_its_suite_gets_a_zero_line_naming_it(report: dict[str, Graded]) -> None:
    entry = report["no_suite"].entry
    assert entry["total"] == 0
    assert all(
        check["feedback"].startswith("No suite.toml in this folder") for check in entry["checks"]
    )


@pytest.mark.parametrize("tests", sorted(TEST_FILES))
def test_learner_tests_earn_what_they_catch_and_nothing_more(
    report: dict[str, Graded], tests: str
) -> None:
    assert report[tests].failed == TEST_FILES[tests][1]


# --- the learner's side ------------------------------------------------------------------


def folder(tmp_path: Path, solved: bool) -> Path:
    """The exercise folder as a learner has it; with the solution's files, when solved."""
    copy = tmp_path / "book04"
    shutil.copytree(STARTER_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    if solved:
        for name in ("evidence.py", "suite.toml"):
            shutil.copyfile(SOLUTION_DIR / name, copy / name)
    return copy


def python(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_the_starter_keeps_the_door_and_the_morning_of_the_solution() -> None:
    # Only the marked exercise parts may differ between starter and solution.
    start = "# --- Lucy's morning, for the notebooks and your tests"
    assert STARTER[STARTER.index(start) :] == SOLUTION[SOLUTION.index(start) :]
    assert STARTER_SUITE != SOLVED_SUITE
    assert read(SOLUTION_DIR / "regressed.py") == REGRESSED


def test_the_solutions_tests_pass_on_the_solution_and_fail_on_the_starter(
    tmp_path: Path,
) -> None:
    for solved in (True, False):
        cwd = folder(tmp_path / str(solved), solved=solved)
        for name, text in LEARNER_TESTS.items():
            (cwd / name).write_text(text, encoding="utf-8")
        result = python(cwd, "-m", "pytest", "-q", "-p", "no:cacheprovider")
        if solved:
            assert result.returncode == 0, result.stdout
            assert "11 passed" in result.stdout
        else:
            assert result.returncode == 1
            assert "11 failed" in result.stdout


@pytest.mark.parametrize("unit", ["unit_a", "unit_b", "unit_c"])
def test_the_check_cells_show_the_exercises_done_with_the_solution(
    tmp_path: Path, unit: str
) -> None:
    for solved in (False, True):
        cwd = folder(tmp_path / str(solved), solved=solved)
        (cwd / "_cells.py").write_text(notebook_script(cwd / f"{unit}.ipynb"), encoding="utf-8")
        result = python(cwd, "_cells.py")
        assert result.returncode == 0, result.stderr
        not_yet = "is not written yet" in result.stdout or "not yet" in result.stdout
        assert not_yet is not solved, result.stdout
    if unit == "unit_a":
        assert "'seq': 11" in result.stdout
        assert "draft_order ValueError quantity 8 does not match the need of 6" in result.stdout
    elif unit == "unit_b":
        assert "caught" in result.stdout
        assert "safe hints: 100%" in result.stdout
    else:
        assert "to review: broken handler, refused write, step bound, killed" in result.stdout, (
            result.stdout
        )
