"""Chapter 14's reader files: the checkpoint's facts and visible skip, the learner file.

The verifier proves the chapter's listings and checkpoint output; this holds
the facts the chapter promises (written out independently of the code), that
the learner file and the checkpoint define what the listings define, and
that where bubblewrap is missing the checkpoint says so with the install
command, and fails under REQUIRE_SYSTEM_COMPONENTS=1 as CI sets it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from chapter_files import checkpoint_output, definitions, run_checkpoint, run_python
from markdown_it import MarkdownIt
from system_components import require_executable

ROOT = Path(__file__).resolve().parents[2]
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch14_running_generated_code.md"
CHECKPOINT = (
    TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch14_running_generated_code_checkpoint.py"
)
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch14_running_generated_code_learner.py"

# The facts the chapter promises, written out independently of the code.
FACTS = (
    'program: printed {"sku": "SKU-STRAWBERRY", "saturdays": [11, 12, 9, 12], "friday_night": 12}',
    "answer: Strawberry sells most on Saturdays (44 tubs over 4 Saturdays). Have 12 tubs of "
    "strawberry on Friday night: the most sold on any of those Saturdays.",
    "read a file outside: raised: FileNotFoundError: [Errno 2] No such file or directory: "
    "'/etc/passwd'",
    "open a socket: raised: OSError: [Errno 101] Network is unreachable",
    "start a process: raised: PermissionError: [Errno 1] Operation not permitted",
    "endless loop: time_limit: the code ran past its time limit and was stopped",
    "memory bomb: memory_limit: the code asked for more memory than its limit",
    "flood of output: output_limit: the code printed more than its output limit and was stopped",
    "write outside scratch: raised: OSError: [Errno 30] Read-only file system: '/data/sales.csv'",
)


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


def test_importing_the_learner_file_prints_nothing(tmp_path: Path) -> None:
    result = run_python("-c", f"import runpy; runpy.run_path({str(LEARNER)!r})", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert list(tmp_path.iterdir()) == []


def test_the_checkpoint_prints_the_chapters_output_and_its_facts(tmp_path: Path) -> None:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    result = run_checkpoint(CHECKPOINT, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == checkpoint_output(CHAPTER)
    for fact in FACTS:
        assert fact in result.stdout.splitlines(), fact


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
