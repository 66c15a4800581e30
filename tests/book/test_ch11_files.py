"""Chapter 11's reader files: the checkpoint's facts, the learner file, the listings they match.

The rules the verifier applies to drafted chapters are held here directly,
whatever the manifest says: the listings run and print their blocks (the
supplier's desk started and stopped by them), the learner file defines
exactly what a listing defines, and the checkpoint prints the chapter's block
from any folder and leaves nothing behind, no file and no desk.
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
CHAPTER = TEXTBOOK / "ch11_purchasing_exactly_once.md"
CHECKPOINT = (
    TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch11_purchasing_exactly_once_checkpoint.py"
)
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch11_purchasing_exactly_once_learner.py"

# The facts the chapter promises, written out independently of the code.
FACTS = (
    "approval-1 attempt 1: the connection was lost before the answer (RemoteDisconnected)",
    "approval-1 attempt 2: 201 SUP-0001 Idempotent-Replayed: true",
    "approval-2 attempt 1: 201 SUP-0002",
    "order 1: SKU-VANILLA 9 CONFIRMED SUP-0001",
    "order 2: SKU-CHOCOLATE 1 CONFIRMED SUP-0002",
    "ledger: 2 orders, 2,550 pence",
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


# The chapter starts desks and kills processes: about 30 s, so the full suite's.
@pytest.mark.slow
def test_the_chapters_listings_print_their_blocks() -> None:
    result = verify(CHAPTER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "listings 8/8" in result.stdout


def test_the_learner_file_defines_what_the_listings_define() -> None:
    learner = definitions(LEARNER)
    assert set(learner) == {
        "start_supplier",
        "ledger_says",
        "naive_order",
        "post",
        "friday_store",
        "order_what_is_needed",
        "show",
    }
    listings = listing_definitions()
    for name, tree in learner.items():
        assert listings[name] == tree, f"{name} differs from the chapter's listing"


def test_the_checkpoint_defines_what_the_listings_define_the_same_way() -> None:
    listings = listing_definitions()
    shared = set(definitions(CHECKPOINT)) & set(listings)
    assert {"start_supplier", "ledger_says", "friday_store", "show"} <= shared
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
