"""Chapter 4's checkpoint and learner file, run as a reader runs them, offline and recorded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from chapter_files import checkpoint_output, run_checkpoint
from provider_stub import OPENAI_ROUTE, ProviderStub, openai_text, openai_tool_calls

from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch04_traces_and_evaluation.md"
CHECKPOINT = (
    TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch04_traces_and_evaluation_checkpoint.py"
)
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch04_traces_and_evaluation_learner.py"
CHAPTER_1 = TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
CHAPTER_3 = TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch03_bounded_agent_loop_checkpoint.py"
VANILLA = '{"sku": "SKU-VANILLA", "quantity": 6}'
STRAWBERRY = '{"sku": "SKU-STRAWBERRY", "quantity": 4}'


def run(argv: list[str], cwd: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SOVEREIGN", "OPENAI", "ANTHROPIC"))
    }
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env={**env, **variables},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


# That the offline checkpoint prints the chapter's checkpoint-output block from
# any folder and leaves that folder empty (its files went to a folder it
# removed) is held for every chapter, this one included, by
# tests/book/test_reader_files.py: the same run and the same assertions.


def test_a_run_recorded_from_a_provider_replays_offline_without_asking_again(
    tmp_path: Path,
) -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls([("a1", "list_stock", "{}")]),
            openai_tool_calls([("a2", "draft_order", VANILLA), ("a3", "draft_order", STRAWBERRY)]),
            openai_text("Two drafts: 2,600 pence."),
        )
        result = run_checkpoint(
            CHECKPOINT,
            tmp_path,
            SOVEREIGN_MODEL="openai:stub-model",
            OPENAI_API_KEY="secret-token-ch4-checkpoint",
            OPENAI_BASE_URL=stub.openai_base_url,
        )
        asked = len(stub.requests_to(OPENAI_ROUTE))
    assert result.returncode == 0, result.stderr
    assert asked == 3  # the three steps of the recording, and not one request more
    lines = result.stdout.splitlines()
    expected = checkpoint_output(CHAPTER).splitlines()
    assert lines[0].startswith("model: openai:stub-model at http://127.0.0.1:")
    assert lines[1:] == expected[1:]


def test_an_unconfigured_provider_starts_nothing(tmp_path: Path) -> None:
    result = run_checkpoint(CHECKPOINT, tmp_path, SOVEREIGN_MODEL="parrot:polly")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("cannot start: ")


def test_importing_the_learner_file_prints_nothing_and_contacts_no_model(tmp_path: Path) -> None:
    (tmp_path / "traces.py").write_text(LEARNER.read_text(encoding="utf-8"), encoding="utf-8")
    code = "import traces, sys; sys.stderr.write(traces.FailureClass.BUDGET.value)"
    result = run(["-c", code], cwd=tmp_path, SOVEREIGN_MODEL="openai:nowhere")
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("", "budget")


def test_the_learner_files_run_task_records_a_run_that_the_runtime_replays(
    tmp_path: Path,
) -> None:
    (tmp_path / "traces.py").write_text(LEARNER.read_text(encoding="utf-8"), encoding="utf-8")
    code = f"""
import runpy, traces
from pathlib import Path
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.trace import JsonLinesFile, read_trace
from sovereign_agent.trace.replay import replay_run
plan = runpy.run_path({str(CHAPTER_3)!r})
shop = runpy.run_path({str(CHAPTER_1)!r})["SHOP"]
recorder = traces.Recorder(JsonLinesFile(Path("t.jsonl")))
model = ScriptedModel(plan["SHOP_SCRIPT"])
tools = traces.build_tools(shop)
traces.run_task(model, tools, plan["TASK"], max_steps=6, max_tool_calls=8, recorder=recorder)
(recorded,) = read_trace(Path("t.jsonl"))
print(replay_run(recorded).divergence)
"""
    result = run(["-c", code], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "None\n"
