"""Chapter 14's reader files: the checkpoint's visible skip, the learner file.

The verifier proves the chapter's listings and checkpoint output; this holds
that the learner file and the checkpoint define what the listings define, and
that where bubblewrap is missing the checkpoint says so with the install
command, and fails under REQUIRE_SYSTEM_COMPONENTS=1 as CI sets it.

The checkpoint's offline output and facts, and a silent learner import, are held
for every drafted chapter by tests/book/test_reader_files.py (its `FACTS` table).
"""

from __future__ import annotations

import ast
from pathlib import Path

from chapter_files import definitions, run_checkpoint
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch14_running_generated_code.md"
CHECKPOINT = (
    TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch14_running_generated_code_checkpoint.py"
)
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch14_running_generated_code_learner.py"


def listing_definitions() -> dict[str, str]:
    """Every top-level function and class the chapter's python listings define."""
    found: dict[str, str] = {}
    for token in MarkdownIt("commonmark").parse(CHAPTER.read_text(encoding="utf-8")):
        if token.type == "fence" and token.info.split()[:1] == ["python"]:
            for node in ast.parse(token.content).body:
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    found[node.name] = ast.dump(node, include_attributes=False)
    return found


def test_the_learner_file_defines_what_the_listings_define() -> None:
    learner = definitions(LEARNER)
    assert set(learner) == {
        "looks_harmless",
        "show",
        "write_the_analysis",
        "answer_from_the_result",
    }
    listings = listing_definitions()
    for name, tree in learner.items():
        assert listings[name] == tree, f"{name} differs from the chapter's listing"


def test_the_checkpoint_defines_what_the_listings_define_the_same_way() -> None:
    listings = listing_definitions()
    shared = set(definitions(CHECKPOINT)) & set(listings)
    assert shared == {"write_the_analysis", "answer_from_the_result"}
    for name in shared:
        assert listings[name] == definitions(CHECKPOINT)[name], name


def test_without_bubblewrap_the_checkpoint_skips_visibly_and_ci_fails(tmp_path: Path) -> None:
    # A PATH with no bwrap on it: the sandbox cannot be made, and nothing runs.
    bare = {"PATH": str(tmp_path)}
    skipped = run_checkpoint(CHECKPOINT, tmp_path, REQUIRE_SYSTEM_COMPONENTS="0", **bare)
    assert skipped.returncode == 0
    assert skipped.stdout == ""
    assert "sudo apt-get install bubblewrap" in skipped.stderr
    assert skipped.stderr.startswith("skipped: run_python needs a sandbox")
    required = run_checkpoint(CHECKPOINT, tmp_path, REQUIRE_SYSTEM_COMPONENTS="1", **bare)
    assert required.returncode == 1
    assert required.stdout == ""
    assert "sudo apt-get install bubblewrap" in required.stderr
