"""Chapter 13's reader files: the checkpoint's facts, the learner file, the listings they match.

The verifier holds a drafted chapter's listings, checkpoint and learner file
already; these tests state the chapter's own facts independently of its text,
so that an edit that keeps text and code agreeing but breaks a promise (the
timeout at 2.0 s, the third call refused, the reads finishing together, a cut
stream refused) is still caught.
"""

from __future__ import annotations

import ast
from pathlib import Path

from chapter_files import checkpoint_output, definitions, run_checkpoint, run_python
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch13_limits.md"
CHECKPOINT = TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch13_limits_checkpoint.py"
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch13_limits_learner.py"

# The facts the chapter promises, written out independently of the code.
FACTS = (
    "slow supplier: tool_timeout at 2.0 s",
    "call 3 at 0.4 s: rate_limited (retry in 0.1 s)",
    "three reads, one after another: VANILLA 40, CHOCOLATE 12, STRAWBERRY 0; done at 0.6 s",
    "three reads, side by side: VANILLA 40, CHOCOLATE 12, STRAWBERRY 0; done at 0.2 s",
    "three reads in a run: stop final_answer at 0.2 s",
    "three reads in a run: stop deadline at 6.0 s",
    'chat completions, whole: check_availability {"sku": "VANILLA"}',
    'messages, whole: check_availability {"sku": "VANILLA"}',
    "messages, cut: ModelResponseError: the stream was cut before message_stop",
)


def listing_definitions() -> dict[str, str]:
    """Every top-level function and class the chapter's python listings define in full.

    A `changes=` listing shows only part of a definition (run_task's, here):
    the verifier composes it; `test_the_learner_files_run_task_is_the_runtimes` holds it.
    """
    found: dict[str, str] = {}
    for token in MarkdownIt("commonmark").parse(CHAPTER.read_text(encoding="utf-8")):
        words = token.info.split()
        if token.type == "fence" and words[:1] == ["python"] and len(words) == 1:
            for node in ast.parse(token.content).body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    found[node.name] = ast.dump(node, include_attributes=False)
    return found


def test_the_learner_file_defines_what_the_listings_define() -> None:
    learner = definitions(LEARNER)
    assert set(learner) == {
        "SkuArguments",
        "supplier_tools",
        "ask",
        "said",
        "TokenBucket",
        "MeteredModel",
        "turn_events",
        "wire",
        "carried",
        "streamed",
        "StopReason",
        "TurnDispatcher",
        "runs_side_by_side",
        "answer_together",
        "run_task",
    }
    listings = listing_definitions()
    for name, tree in learner.items():
        if name != "run_task":
            assert listings[name] == tree, f"{name} differs from the chapter's listing"


def test_the_learner_files_run_task_is_the_runtimes() -> None:
    # The chapter shows run_task as a change to chapter 7's; the loop the
    # runtime runs is the composed one, and so is the learner file's.
    runtime = definitions(ROOT / "src/sovereign_agent/loop.py")
    assert definitions(LEARNER)["run_task"] == runtime["run_task"]
    assert "except RunLimitReached as error:" in LEARNER.read_text(encoding="utf-8")


def test_the_checkpoint_defines_what_the_listings_define_the_same_way() -> None:
    listings = listing_definitions()
    shared = set(definitions(CHECKPOINT)) & set(listings)
    assert {"supplier_tools", "said", "turn_events", "wire", "streamed"} <= shared
    for name, tree in definitions(CHECKPOINT).items():
        if name in listings:
            assert listings[name] == tree, f"{name} differs from the chapter's listing"


def test_importing_the_learner_file_prints_nothing(tmp_path: Path) -> None:
    result = run_python("-c", f"import runpy; runpy.run_path({str(LEARNER)!r})", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert list(tmp_path.iterdir()) == []


def test_the_checkpoint_prints_the_chapters_output_and_its_facts(tmp_path: Path) -> None:
    result = run_checkpoint(CHECKPOINT, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == checkpoint_output(CHAPTER)
    for fact in FACTS:
        assert fact in result.stdout.splitlines(), fact
