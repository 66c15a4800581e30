"""Chapter 13's reader files: the learner file and the listings it matches.

The verifier holds a drafted chapter's listings, checkpoint and learner file
already; these tests hold the exact set of names the learner file defines.

The checkpoint's offline output and facts, and a silent learner import, are held
for every drafted chapter by tests/book/test_reader_files.py (its `FACTS` table).
"""

from __future__ import annotations

import ast
from pathlib import Path

from chapter_files import definitions
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch13_limits.md"
CHECKPOINT = TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch13_limits_checkpoint.py"
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch13_limits_learner.py"


def listing_definitions() -> dict[str, str]:
    """Every top-level function and class the chapter's python listings define."""
    found: dict[str, str] = {}
    for token in MarkdownIt("commonmark").parse(CHAPTER.read_text(encoding="utf-8")):
        if token.type == "fence" and token.info.split()[:1] == ["python"]:
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
    }
    listings = listing_definitions()
    for name, tree in learner.items():
        assert listings[name] == tree, f"{name} differs from the chapter's listing"


def test_the_checkpoint_defines_what_the_listings_define_the_same_way() -> None:
    listings = listing_definitions()
    shared = set(definitions(CHECKPOINT)) & set(listings)
    assert {"supplier_tools", "said", "turn_events", "wire", "streamed"} <= shared
    for name, tree in definitions(CHECKPOINT).items():
        if name in listings:
            assert listings[name] == tree, f"{name} differs from the chapter's listing"
