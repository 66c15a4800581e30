"""Chapter 3's learner file: silent on import, the same code as the runtime and checkpoint."""

from __future__ import annotations

from pathlib import Path

from chapter_files import constants, definitions, parts, run_python

import sovereign_agent.loop

LEARNER = parts(3).learner
CHECKPOINT = parts(3).checkpoint
RUNTIME = Path(sovereign_agent.loop.__file__)


def test_the_loop_module_defines_only_what_the_chapter_teaches() -> None:
    # Whether each definition is the current one is held by
    # test_runtime_grows_with_the_chapters; this says loop.py holds nothing
    # the chapter does not print, and shares its bound on argument text.
    runtime = definitions(RUNTIME)
    learner = definitions(LEARNER)
    assert set(runtime) == {
        "StopReason",
        "RunRecord",
        "check_setup",
        "refuse_constant",
        "refuse_duplicate_keys",
        "nested_deeper_than",
        "parse_tool_call",
        "observation_message",
        "one_line",
        "run_task",
        # Chapter 13's: how the loop answers a turn's reads side by side.
        "TurnDispatcher",
        "runs_side_by_side",
        "batch_from",
        "answer_together",
    }
    chapter_13 = {"TurnDispatcher", "runs_side_by_side", "batch_from", "answer_together"}
    assert set(runtime) - chapter_13 <= set(learner)
    for bound in (
        "MAX_ARGUMENTS_CHARS",
        "MAX_ARGUMENTS_DEPTH",
        "ARGUMENTS_DECODER",
        "OBSERVATION_ENCODER",
    ):
        assert constants(RUNTIME)[bound] == constants(LEARNER)[bound]


def test_the_checkpoint_uses_the_chapters_offline_model_unchanged() -> None:
    checkpoint = definitions(CHECKPOINT)
    learner = definitions(LEARNER)
    shared = set(checkpoint) - {"main"}
    assert {"ask_for_stock", "draft_what_is_needed", "report_plan", "drafts_in"} <= shared
    for name in shared:
        assert checkpoint[name] == learner.get(name), f"{name} differs from the learner file"


def test_importing_the_learner_file_prints_nothing_and_contacts_no_model(tmp_path: Path) -> None:
    (tmp_path / "agent_loop.py").write_text(LEARNER.read_text(encoding="utf-8"), encoding="utf-8")
    code = (
        "import agent_loop, sys; sys.stderr.write(','.join(r.value for r in agent_loop.StopReason))"
    )
    result = run_python("-c", code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == "final_answer,step_limit,tool_call_limit,model_error,duplicate_call_id"


def test_running_the_learner_file_shows_the_morning_plan(tmp_path: Path) -> None:
    result = run_python(str(LEARNER), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "stop: final_answer after 3 step(s)"
    assert 'model asks [call-3]: draft_order {"sku": "SKU-STRAWBERRY", "quantity": 4}' in lines
