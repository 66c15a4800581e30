"""Chapter 12's reader files: the checkpoint's facts, the learner file, the listings they match.

The rules the verifier applies to drafted chapters are held here directly,
whatever the manifest says: the listings run and print their blocks (the
supplier's desk, the workers and DBOS's worker started, killed and stopped by
them), the learner file defines exactly what a listing defines, and the
checkpoint prints the chapter's block from any folder and leaves nothing
behind, no file and no desk.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from chapter_files import checkpoint_output, definitions, run_checkpoint, run_python
from markdown_it import MarkdownIt
from verifying import verify

ROOT = Path(__file__).resolve().parents[2]
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch12_recovering_unfinished_work.md"
CHECKPOINT = (
    TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch12_recovering_unfinished_work_checkpoint.py"
)
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch12_recovering_unfinished_work_learner.py"

# The facts the chapter promises, written out independently of the code: the
# first worker killed after SUP-0001 with the purchase in doubt, the second
# asking the model only for the step nobody reached, one order per purchase.
FACTS = (
    "first worker: bought SUP-0001",
    "first worker: exit -9",
    "order 1: SKU-VANILLA 9 PREPARED",
    "ledger: 1 order, 2,250 pence; twice: none",
    "run 2: finished, final_answer after 3 step(s); 2 reply(ies) and 1 outcome(s) from the journal",
    "model asked for step 3",
    "order 1: SKU-VANILLA 9 CONFIRMED SUP-0001",
    "order 2: SKU-CHOCOLATE 1 CONFIRMED SUP-0002",
    "ledger: 2 orders, 2,550 pence; twice: none",
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


def listing_constant(name: str) -> str:
    """The string a listing assigns to `name` at top level."""
    for token in MarkdownIt("commonmark").parse(CHAPTER.read_text(encoding="utf-8")):
        if token.type == "fence" and token.info.split()[:1] == ["python"]:
            for node in ast.parse(token.content).body:
                if (
                    isinstance(node, ast.Assign)
                    and [getattr(target, "id", None) for target in node.targets] == [name]
                    and isinstance(node.value, ast.Constant)
                ):
                    return str(node.value.value)
    raise KeyError(name)


def module_constant(path: Path, name: str) -> str:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == [name]
            and isinstance(node.value, ast.Constant)
        ):
            return str(node.value.value)
    raise KeyError(name)


# The chapter starts desks, kills workers and runs DBOS twice: about 20 s.
@pytest.mark.slow
def test_the_chapters_listings_print_their_blocks() -> None:
    result = verify(CHAPTER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "listings 8/8" in result.stdout


def test_the_learner_file_defines_what_the_listings_define() -> None:
    learner = definitions(LEARNER)
    assert set(learner) == {"start_supplier", "ledger_says", "worker", "friday_morning", "runs"}
    listings = listing_definitions()
    for name, tree in learner.items():
        assert listings[name] == tree, f"{name} differs from the chapter's listing"


def test_the_morning_setup_is_the_same_module_in_the_chapter_learner_and_checkpoint() -> None:
    # The workers import it by name: a drifted copy would run another morning.
    morning = listing_constant("MORNING")
    assert module_constant(LEARNER, "MORNING") == morning
    assert module_constant(CHECKPOINT, "MORNING") == morning
    assert "def lucy_morning(connection, run):" in morning


def test_the_checkpoint_defines_what_the_listings_define_the_same_way() -> None:
    listings = listing_definitions()
    shared = set(definitions(CHECKPOINT)) & set(listings)
    assert {"start_supplier", "ledger_says", "worker", "friday_morning"} <= shared
    for name in shared:
        assert listings[name] == definitions(CHECKPOINT)[name], f"{name} differs"


def test_importing_the_learner_file_prints_nothing(tmp_path: Path) -> None:
    result = run_python("-c", f"import runpy; runpy.run_path({str(LEARNER)!r})", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert list(tmp_path.iterdir()) == []


def test_the_checkpoint_prints_the_chapters_output_and_its_facts(tmp_path: Path) -> None:
    result = run_checkpoint(CHECKPOINT, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == checkpoint_output(CHAPTER)
    lines = result.stdout.splitlines()
    for fact in FACTS:
        assert fact in lines, fact
    assert list(tmp_path.iterdir()) == []
