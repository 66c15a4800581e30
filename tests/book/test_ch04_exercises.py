"""Exercise Book 4: the starter does no exercise, the solution does all, its tests can fail.

Each test works in a copy of the folder, as a learner would, in a real
subprocess; every expected value is worked out here, not taken from the code
under test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from exercise_books import notebook_script

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "exercises/book04"
SOLUTION = ROOT / "solutions/book04"


def folder(tmp_path: Path, solved: bool) -> Path:
    """The exercise folder as a learner has it; with the solution's files, when solved."""
    copy = tmp_path / "book04"
    shutil.copytree(STARTER, copy, ignore=shutil.ignore_patterns("__pycache__"))
    if solved:
        for name in ("evidence.py", "suite.toml", "test_book04_traces.py", "test_book04_suite.py"):
            shutil.copyfile(SOLUTION / name, copy / name)
    return copy


def python(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def door(cwd: Path, expression: str) -> object:
    """Call the grader's door in a fresh process; the JSON it returns, or the exception's name."""
    code = (
        "import evidence, json\n"
        f"try:\n    print(json.dumps({expression}))\n"
        "except Exception as error:\n    print(json.dumps({'raised': type(error).__name__}))\n"
    )
    result = python(cwd, "-c", code)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


CARELESS = """
import json, evidence
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import ProductArguments
from sovereign_agent.trace import JsonLinesFile, Recorder

def ask(i, name, **a):
    return AssistantToolCall(id=i, name=name, arguments_json=json.dumps(a))

def refuse(call):
    raise PermissionError("no")

shop = evidence.build_tools(evidence.MORNING_SHOP)
place = evidence.ExecutableTool("place_order", "Place.", ProductArguments, lambda a: "x", True)
tools = evidence.Dispatcher([*shop.tools.values(), place],
                            allowed=[*shop.allowed, "place_order"], before_write=refuse)
replies = [AssistantMessage(tool_calls=(ask("c1", "place_order", sku="SKU-VANILLA"),
                                        ask("c2", "draft_order", sku="SKU-MANGO", quantity=1))),
           AssistantMessage(content="done")]
evidence.record_morning("t.jsonl")
evidence.run_task(ScriptedModel(replies), tools, "t", max_steps=3, max_tool_calls=4,
                  recorder=Recorder(JsonLinesFile("t.jsonl")))
"""


def test_the_starter_does_none_of_the_exercises(tmp_path: Path) -> None:
    cwd = folder(tmp_path, solved=False)
    assert door(cwd, "evidence.record_morning('t.jsonl')") == 14
    assert door(cwd, "evidence.failures_in('t.jsonl')") == {"raised": "NotImplementedError"}
    assert door(cwd, "evidence.replay_at_290('t.jsonl')") == {"raised": "NotImplementedError"}
    assert door(cwd, "evidence.spread('suite.toml', 'chapter tools', [0], 1)") == {
        "raised": "NotImplementedError"
    }
    # The starter's suite passes the regression: nothing yet looks at the freezer.
    assert door(cwd, "evidence.suite_pass_rates('suite.toml', 1, 0)") == {
        "chapter tools": 1.0,
        "draft moves stock": 1.0,
    }


def test_the_solution_finds_the_failed_handlers_at_their_lines(tmp_path: Path) -> None:
    cwd = folder(tmp_path, solved=True)
    assert python(cwd, "-c", CARELESS).returncode == 0
    # The morning plan takes lines 1-14. The careless run: 15 start, 16 request,
    # 17 reply, place_order 18-19 (the authority refused: no handler), the
    # mango draft 20-21 (its handler raised KeyError), then 22 and 23.
    failures = door(cwd, "evidence.failures_in('t.jsonl')")
    assert isinstance(failures, list) and len(failures) == 1
    (failure,) = failures
    assert (failure["line"], failure["tool"], failure["call_id"]) == (21, "draft_order", "c2")
    assert (failure["exception"], failure["message"]) == ("KeyError", "'SKU-MANGO'")


def test_the_solution_diverges_at_the_strawberry_outcome(tmp_path: Path) -> None:
    cwd = folder(tmp_path, solved=True)
    door(cwd, "evidence.record_morning('t.jsonl')")
    divergence = door(cwd, "evidence.replay_at_290('t.jsonl')")
    assert isinstance(divergence, dict)
    assert (divergence["seq"], divergence["kind"], divergence["line"]) == (11, "tool_outcome", 11)
    assert '"total_pence": 1160' in divergence["now"]


def test_the_solutions_suite_catches_the_regression_and_keeps_the_chapters_tools(
    tmp_path: Path,
) -> None:
    cwd = folder(tmp_path, solved=True)
    assert door(cwd, "evidence.suite_pass_rates('suite.toml', 2, 0)") == {
        "chapter tools": 1.0,
        "draft moves stock": 0.0,
    }


def test_the_solutions_spread_is_one_rate_per_seed(tmp_path: Path) -> None:
    cwd = folder(tmp_path, solved=True)
    spread = door(cwd, "evidence.spread('suite.toml', 'chapter tools', [3, 1, 2], 1)")
    assert spread == {"rates": [1.0, 1.0, 1.0], "lowest": 1.0, "highest": 1.0}
    assert door(cwd, "evidence.spread('suite.toml', 'nope', [0], 1)") == {"raised": "KeyError"}


def test_the_solutions_tests_pass_on_the_solution_and_fail_on_the_starter(
    tmp_path: Path,
) -> None:
    solved = folder(tmp_path / "solved", solved=True)
    passing = python(solved, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert passing.returncode == 0, passing.stdout
    unsolved = folder(tmp_path / "unsolved", solved=False)
    for name in ("test_book04_traces.py", "test_book04_suite.py"):
        shutil.copyfile(SOLUTION / name, unsolved / name)
    failing = python(unsolved, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert failing.returncode == 1
    # Only the test of a chapter behaviour (a defect stays loud) passes on the starter.
    assert "11 failed, 1 passed" in failing.stdout


@pytest.mark.parametrize("unit", ["unit_a", "unit_b"])
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
    else:
        assert "caught" in result.stdout
        assert "safe hints: 100%" in result.stdout


# Faulty versions of the reference solution: each breaks one thing the
# exercises ask for, and the learner-side tests must notice every one.
FAULTS = {
    "the authority's refusal counted": (
        'event.failure_stage in ("handler", "result")',
        'event.failure_stage in ("handler", "result", "before_write")',
    ),
    "failures in run order, not line order": (
        'return sorted(found, key=lambda failure: failure["line"])',
        "return found",
    ),
    "the schema changed instead of the price": (
        'return build_tools(**{**recorded, "prices": prices})',
        'return build_tools(**{**recorded, "allowed": recorded["allowed"][:2]})',
    ),
    "the seeds sorted": (
        "for seed in seeds]",
        "for seed in sorted(seeds)]",
    ),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_learner_tests_catch_each_faulty_solution(tmp_path: Path, fault: str) -> None:
    cwd = folder(tmp_path, solved=True)
    source = (cwd / "evidence.py").read_text(encoding="utf-8")
    right, wrong = FAULTS[fault]
    assert source.count(right) == 1, f"the fault {fault!r} no longer applies"
    (cwd / "evidence.py").write_text(source.replace(right, wrong), encoding="utf-8")
    result = python(cwd, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 1, f"no learner test noticed: {fault}"
