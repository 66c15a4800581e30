"""Exercise Book 3: the reference solution scores full marks, the starter does not, each
typical mistake loses exactly the checks written for it, and the notebooks match their plans.

The grader runs as a real subprocess over real folders, all in one batch.
"""

from __future__ import annotations

import pytest
from committed import EXERCISES
from grading import Graded, SharedGrades, grade_batch

from bookproof.layout import REPO_ROOT
from bookproof.notebooks.build import notebook_json

ROOT = REPO_ROOT
BOOK = EXERCISES / "book03"
SOLUTION = (ROOT / "solutions" / "book03" / "agent_loop.py").read_text(encoding="utf-8")
STARTER = (BOOK / "agent_loop.py").read_text(encoding="utf-8")

CHAPTER_CHECKS = {
    "imports",
    "ch3_final_answer",
    "ch3_ids_in_order",
    "ch3_step_limit",
    "ch3_tool_call_limit",
    "ch3_malformed",
    "ch3_model_error",
    "ch3_bad_bounds",
    "ch3_duplicate_call_id",
}
UNIT_A = {
    "ex1_no_delivery",
    "ex1_delivery_recovers",
    "ex1_delivery_to_zero",
    "ex1_nothing_needed",
    "ex1_answer_total",
}
UNIT_B = {"ex2_repeat_stops", "ex2_same_arguments", "ex2_not_a_repeat", "ex2_turn_answered"}
# Unit C, an open design task: graded by how runs end, never by the shape of the code.
UNIT_C = {"ex3_no_progress_stops", "ex3_progress_starts_again", "ex3_patience_checked"}
REPEAT_KEY = "json.dumps(call.arguments, sort_keys=True)"

# name -> (edits to the solution, the checks the result must fail). A mistake
# that fails ex1_delivery_recovers also loses ex1_no_delivery: that check holds
# in the starter already, and counts only once the work it guards is done.
MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # Comparing the arguments' text misses the same object written another way.
    "compares_argument_text": (
        [
            (f"{REPEAT_KEY}) in refused_requests", "raw.arguments_json) in refused_requests"),
            (
                f"refused_requests.add((call.name, {REPEAT_KEY}))",
                "refused_requests.add((call.name, raw.arguments_json))",
            ),
        ],
        {"ex2_same_arguments"},
    ),
    # Remembering successes too stops any model that reads the stock twice.
    "remembers_successes": (
        [
            (
                '                if observation.get("ok") is not True:\n'
                "                    refused_requests.add(",
                "                if True:\n                    refused_requests.add(",
            )
        ],
        {
            "ch3_tool_call_limit",
            "ex1_delivery_recovers",
            "ex1_no_delivery",
            "ex1_delivery_to_zero",
            "ex1_answer_total",
            "ex2_not_a_repeat",
        },
    ),
    # Drafting every need again after the re-read drafts strawberry twice.
    "redrafts_everything": (
        [('row["needed"] > 0 and row["sku"] not in drafted', 'row["needed"] > 0')],
        {"ex1_delivery_recovers", "ex1_no_delivery", "ex1_delivery_to_zero", "ex1_answer_total"},
    ),
    # Answering after a refusal, without fresh numbers, is the starter's flaw.
    "answers_after_refusal": (
        [('if any(not answer["ok"] for answer in answers):', "if False:")],
        {"ex1_delivery_recovers", "ex1_no_delivery", "ex1_delivery_to_zero", "ex1_answer_total"},
    ),
    # Unit C: idle calls counted, not idle turns: two refusals in one turn stall the run.
    "counts_idle_calls": (
        [
            (
                "idle_turns = idle_turns + 1 if len(executed) == ran_before else 0",
                "idle_turns = idle_turns + len(calls) if len(executed) == ran_before else 0",
            )
        ],
        {"ex3_progress_starts_again"},
    ),
    # Unit C: the count never starts again, so a slow run is stopped as a stalled one.
    "never_starts_again": (
        [
            (
                "idle_turns = idle_turns + 1 if len(executed) == ran_before else 0",
                "idle_turns = idle_turns + 1 if len(executed) == ran_before else idle_turns",
            )
        ],
        {"ex3_progress_starts_again"},
    ),
    # Unit C: one turn too many before the stop.
    "stops_one_turn_late": (
        [("and idle_turns >= patience:", "and idle_turns > patience:")],
        {"ex3_no_progress_stops", "ex3_progress_starts_again"},
    ),
    # Unit C: True passes for a patience of 1.
    "patience_accepts_true": (
        [
            (
                "        isinstance(patience, bool) or not isinstance(patience, int)",
                "        not isinstance(patience, int)",
            )
        ],
        {"ex3_patience_checked"},
    ),
    # Running the last step's calls breaks chapter 3's promise about the step limit.
    "runs_the_last_step": (
        [("elif stop is StopReason.STEP_LIMIT:", "elif stop is StopReason.STEP_LIMIT and False:")],
        {"ch3_step_limit"},
    ),
}


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("book03")
    folders = {"starter": STARTER}
    for name, (edits, _) in MISTAKES.items():
        text = SOLUTION
        for old, new in edits:
            assert text.count(old) == 1, (name, old)
            text = text.replace(old, new)
        folders[name] = text
    return grade_batch(
        3,
        {name: {"agent_loop.py": text} for name, text in folders.items()},
        base=base,
        shared=shared_grades,
    )


def test_the_untouched_starter_holds_back_the_checks_its_exercises_guard(
    report: dict[str, Graded],
) -> None:
    starter = report["starter"]
    assert starter.baseline == (len(CHAPTER_CHECKS), len(CHAPTER_CHECKS))
    assert starter.exercises[0] == 0
    assert starter.failed == UNIT_A | UNIT_B | UNIT_C
    # Chapter 3's loop already drafts once without a delivery and runs calls
    # that repeat nothing: those checks hold, held back until the work is done.
    assert starter.outcomes["ex1_no_delivery"] == "locked"
    assert starter.outcomes["ex2_not_a_repeat"] == "locked"


# Checks a mistake fails only for some of the grader's random data: remembering
# successes stops a step-limit run early only when the limit is 3 or more, and
# a random turn only sometimes asks for the same successful call twice.
DATA_DEPENDENT: dict[str, set[str]] = {
    "remembers_successes": {"ch3_step_limit", "ch3_ids_in_order"}
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_exactly_its_checks(report: dict[str, Graded], mistake: str) -> None:
    lost = report[mistake].failed
    assert MISTAKES[mistake][1] <= lost
    assert lost - MISTAKES[mistake][1] <= DATA_DEPENDENT.get(mistake, set())


def test_the_starter_keeps_chapter_3s_loop_and_the_grader_door_of_the_solution() -> None:
    # Only the marked exercise parts may differ between starter and solution.
    door = "# --- The grader's door"
    assert STARTER[STARTER.index(door) :] == SOLUTION[SOLUTION.index(door) :]
    learner = (
        ROOT / "book/textbook/learner/profrod_sovereign_agent_ch03_bounded_agent_loop_learner.py"
    ).read_text(encoding="utf-8")
    for name in ("def check_setup(", "def parse_tool_call(", "def observation_message("):
        start = learner.index(name)
        body = learner[start : learner.index("\n\n\n", start)]
        assert body in STARTER, name


@pytest.mark.parametrize("unit", ["unit_a", "unit_b", "unit_c"])
def test_the_notebooks_are_generated_from_their_plans(unit: str) -> None:
    plan = BOOK / f"{unit}.md"
    expected = notebook_json(plan.read_text(encoding="utf-8"), source_name=plan.name)
    assert (BOOK / f"{unit}.ipynb").read_text(encoding="utf-8") == expected
