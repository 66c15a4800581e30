"""Chapter 11's reader files: the learner file and the listings it matches.

The rules the verifier applies to drafted chapters are held here directly,
whatever the manifest says: the listings run and print their blocks (the
supplier's desk started and stopped by them), the learner file defines
exactly what a listing defines.

The checkpoint's offline output and facts, and a silent learner import, are held
for every drafted chapter by tests/book/test_reader_files.py (its `FACTS` table).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from chapter_files import definitions
from markdown_it import MarkdownIt
from verifying import verify

ROOT = Path(__file__).resolve().parents[2]
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch11_purchasing_exactly_once.md"
CHECKPOINT = (
    TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch11_purchasing_exactly_once_checkpoint.py"
)
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch11_purchasing_exactly_once_learner.py"


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
