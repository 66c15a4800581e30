"""Exercise Book 14: graded through the real grader, each typical mistake loses exactly its checks,
a hostile program is stopped by the grader's own sandbox, the grader's door answers plain JSON, and
the notebooks' cells show the exercises done. Unit C's open design task is judged by behaviour:
three wrong designs each lose the one rule they break.

Every program is run for real: by the grader, with `run_python`, in a bubblewrap sandbox of its
own; a learner's module only ever hands over text.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from committed import EXERCISES
from exercise_books import check_cell_lines, load_module
from grading import Graded, SharedGrades, edited, grade_batch
from system_components import require_executable

from bookproof.grade.books import load_book

ROOT = Path(__file__).resolve().parents[2]
BOOK = EXERCISES / "book14"
SOLUTIONS = ROOT / "solutions" / "book14"
SOLUTION = (SOLUTIONS / "code_answers.py").read_text(encoding="utf-8")
STARTER = (BOOK / "code_answers.py").read_text(encoding="utf-8")

CHAPTER_CHECKS = {"ch14_saturday_program", "ch14_answer_from_the_result"}
UNIT_A = {"ex1_weekday_program", "ex1_weekday_program_ties"}
UNIT_B = {
    "ex2_reads_a_clean_answer",
    "ex2_refuses_what_did_not_finish",
    "ex2_refuses_unreadable_output",
}
UNIT_C = {
    "ex3_stops_what_a_retry_cannot_fix",
    "ex3_more_time_for_a_timeout",
    "ex3_within_the_budget",
}

BEST = "best = min(totals, key=lambda sku: (-totals[sku], sku))"
# name -> (edits to the solution, the checks the result must fail).
MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # A tie goes to the last sku by name.
    "tie_to_the_last": (
        [(BEST, "best = max(sorted(totals, reverse=True), key=totals.get)")],
        {"ex1_weekday_program_ties"},
    ),
    # The weekday's total printed as the best day.
    "total_for_the_best_day": (
        [('"tubs": best_day[best]', '"tubs": totals[best]')],
        UNIT_A,
    ),
    # A program that never ends: the grader's clock stops it, in the grader's sandbox.
    "endless_program": (
        [
            (
                "    return WEEKDAY_PROGRAM.format(weekday=weekday)",
                "    return 'while True:\\n    pass'",
            )
        ],
        UNIT_A,
    ),
    # The outcome never looked at: a stopped run's first line read as an answer.
    "outcome_not_checked": (
        [('    if observation.get("outcome") != "printed":', "    if False:")],
        {"ex2_refuses_what_did_not_finish"},
    ),
    # A refusal that carries the output back to whoever reads it.
    "refusal_echoes_output": (
        [
            (
                "    except ValidationError:\n"
                '        return {"ok": False, "reason": "unreadable_output"}',
                "    except ValidationError:\n"
                '        return {"ok": False, "reason": "unreadable_output", "output": output}',
            ),
            (
                '    if "\\n" in line:\n'
                '        return {"ok": False, "reason": "unreadable_output"}',
                '    if "\\n" in line:\n'
                '        return {"ok": False, "reason": "unreadable_output", "output": output}',
            ),
        ],
        {"ex2_refuses_unreadable_output"},
    ),
    # Unit C: every outcome but an answer run again, while the budget lasts.
    "retries_everything": (
        [('    if outcome != "time_limit":', '    if outcome == "answered":')],
        {"ex3_stops_what_a_retry_cannot_fix"},
    ),
    # Unit C: a timeout ends the question, with budget to spare.
    "never_retries_a_timeout": (
        [("    more = min(2 * seconds, seconds_left)", "    more = seconds")],
        {"ex3_more_time_for_a_timeout"},
    ),
    # Unit C: twice the time, whatever the budget has left.
    "budget_forgotten": (
        [("    more = min(2 * seconds, seconds_left)", "    more = 2 * seconds")],
        {"ex3_within_the_budget"},
    ),
}


# Hostile hand-ins: name -> (the body of weekday_program, words its feedback must hold).
HOSTILE: dict[str, tuple[str, str]] = {
    # A program that reads the reference solution: the grader's sandbox holds no such file.
    "program_reads_the_reference": (
        f'    return "print(open({str(SOLUTIONS / "code_answers.py")!r}).read())"',
        "raised: FileNotFoundError",
    ),
    # A submission that starts a sandbox of its own, from inside the grader's: it cannot,
    # and says what it got in the program it hands over.
    "starts_its_own_sandbox": (
        "    from pathlib import Path\n"
        "    from sovereign_agent.generated_code import run_python\n"
        "    got = run_python('print(1)', Path('.')).outcome.value\n"
        "    return f'raise RuntimeError({got!r})'",
        "raised: RuntimeError: no_sandbox",
    ),
}
WEEKDAY_BODY = "    return WEEKDAY_PROGRAM.format(weekday=weekday)"


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("book14")
    folders = {"starter": {"code_answers.py": STARTER}, "solution": {"code_answers.py": SOLUTION}}
    for name, (edits, _) in MISTAKES.items():
        folders[name] = {"code_answers.py": edited(SOLUTION, edits)}
    for name, (body, _) in HOSTILE.items():
        folders[name] = {"code_answers.py": edited(SOLUTION, [(WEEKDAY_BODY, body)])}
    return grade_batch(14, folders, base=base, shared=shared_grades)


def test_the_grader_declares_exactly_the_books_checks() -> None:
    # The ids are the gradebook's columns: written out here, a renamed one is seen.
    assert {check.id for check in load_book(14).checks} == CHAPTER_CHECKS | UNIT_A | UNIT_B | UNIT_C


def test_the_solution_earns_full_marks(report: dict[str, Graded]) -> None:
    assert report["solution"].full


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


def test_an_endless_program_is_stopped_by_the_graders_clock(report: dict[str, Graded]) -> None:
    endless = report["endless_program"]
    feedback = next(
        c["feedback"] for c in endless.entry["checks"] if c["id"] == "ex1_weekday_program"
    )
    assert "Your program ended time_limit" in feedback
    # The grader's own clock stopped it: the check failed, it did not time out the submission.
    assert endless.outcomes["ex1_weekday_program"] == "failed"


def _feedback(graded: Graded, check: str) -> str:
    return str(next(c["feedback"] for c in graded.entry["checks"] if c["id"] == check))


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
def test_a_hostile_program_is_run_on_the_graders_terms_and_earns_nothing(
    report: dict[str, Graded], hostile: str
) -> None:
    graded = report[hostile]
    assert graded.failed == UNIT_A
    assert HOSTILE[hostile][1] in _feedback(graded, "ex1_weekday_program")


def test_unit_c_feedback_names_the_section_and_the_behaviour_never_the_code(
    report: dict[str, Graded],
) -> None:
    said = _feedback(report["retries_everything"], "ex3_stops_what_a_retry_cannot_fix")
    assert "Chapter 14, '14.5 Seven hostile programs' (Exercise Book 14, Unit C)" in said
    assert "the plan should stop with" in said
    # Behaviour only: no line of the learner's code comes back.
    assert "outcome ==" not in said and "def " not in said
    over = _feedback(report["budget_forgotten"], "ex3_within_the_budget")
    assert "should stop time_limit" in over


def load(text: str, tmp_path: Path) -> ModuleType:
    return load_module(text, tmp_path, "book14", "code_answers")


def test_the_grader_door_answers_in_plain_json(tmp_path: Path) -> None:
    answers = load(SOLUTION, tmp_path)
    program = answers.saturday_program()
    result = {
        "outcome": "printed",
        "output": '{"sku": "SKU-VANILLA", "saturdays": [3, 5], "friday_night": 5}\n',
        "error": "",
    }
    said = answers.model_answer(result)
    assert json.loads(json.dumps([program, said])) == [program, said]
    assert said == (
        "Vanilla sells most on Saturdays (8 tubs over 2 Saturdays). Have 5 tubs of vanilla on "
        "Friday night: the most sold on any of those Saturdays."
    )
    assert answers.read_answer({"outcome": "killed", "output": "", "error": "x"}) == {
        "ok": False,
        "reason": "killed",
    }
    history = [{"seconds": 5, "outcome": "time_limit"}]
    step = answers.next_step(history, {"attempts": 3, "seconds": 30})
    assert json.loads(json.dumps(step)) == step == {"run": 10}


def test_a_weekday_with_a_quote_stays_a_string_in_the_program(tmp_path: Path) -> None:
    answers = load(SOLUTION, tmp_path)
    program = answers.weekday_program("Satur'day\"\nimport os")
    compile(program, "<weekday program>", "exec")
    assert "\nimport os" not in program.replace("\\nimport os", "")


@pytest.mark.parametrize(
    ("unit", "with_the_solution"),
    [
        (
            "unit_a",
            [
                'printed: {"sku": "SKU-VANILLA", "saturdays": [9, 11], "friday_night": 11}',
                'printed: {"sku": "SKU-VANILLA", "tubs": 6}',
                'printed: {"sku": "SKU-CHOCOLATE", "tubs": 4}',
                "raised: ValueError: min() arg is an empty sequence",
            ],
        ),
        (
            "unit_b",
            [
                "{'ok': True, 'sku': 'SKU-VANILLA', 'tubs': 6}",
                "{'ok': False, 'reason': 'time_limit'}",
                "{'ok': False, 'reason': 'unreadable_output'}",
            ],
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution(
    tmp_path: Path, unit: str, with_the_solution: list[str]
) -> None:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    lines = check_cell_lines(tmp_path, BOOK, "code_answers.py", SOLUTION, unit)
    for line in with_the_solution:
        assert line in lines, line


UNIT_C_PLAYED = [
    "a program that needs 12 s, then ends answered:",
    "  run for 5 s: time_limit",
    "  run for 10 s: time_limit",
    "  run for 15 s: answered",
    "  stop: answered",
    "a program that needs 40 s, then ends answered:",
    "  run for 5 s: time_limit",
    "  run for 10 s: time_limit",
    "  run for 15 s: time_limit",
    "  stop: time_limit",
    "a program that needs 1 s, then ends raised:",
    "  run for 5 s: raised",
    "  stop: raised",
]


@pytest.mark.parametrize(
    ("text", "printed"),
    [(SOLUTION, UNIT_C_PLAYED), (STARTER, ["not yet: Exercise 3: write next_step"])],
    ids=["solution", "starter"],
)
def test_unit_cs_questions_play_out_with_the_solution_and_not_yet_with_the_starter(
    tmp_path: Path, text: str, printed: list[str]
) -> None:
    lines = check_cell_lines(tmp_path, BOOK, "code_answers.py", text, "unit_c")
    if text is SOLUTION:
        # The whole of what the questions print, in order: a stop is where a question ends.
        assert lines == printed
    for line in printed:
        assert line in lines, (line, lines)
