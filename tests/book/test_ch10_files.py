"""Chapter 10's reader files: the learner file and the listings it matches.

The rules the verifier applies to drafted chapters are held here
directly: the listings run and print their blocks, and the learner file defines
exactly what a listing defines.

The checkpoint's offline output and facts, and a silent learner import, are held
for every drafted chapter by tests/book/test_reader_files.py (its `FACTS` table).
"""

from __future__ import annotations

import ast

from chapter_files import definitions
from markdown_it import MarkdownIt
from verifying import verify

from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch10_durable_approvals.md"
CHECKPOINT = TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch10_durable_approvals_checkpoint.py"
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch10_durable_approvals_learner.py"


def fences() -> list[tuple[str, str]]:
    """(info string, content) of every fenced block in the chapter."""
    return [
        (token.info, token.content)
        for token in MarkdownIt("commonmark").parse(CHAPTER.read_text(encoding="utf-8"))
        if token.type == "fence"
    ]


def listing_definitions() -> dict[str, str]:
    """Every top-level function and class the chapter's whole python listings define.

    A `changes=` listing shows part of a definition and is not Python on its
    own; the verifier composes it and holds the learner file to the result.
    """
    found: dict[str, str] = {}
    for info, content in fences():
        words = info.split()
        if words[:1] == ["python"] and not any(w.startswith("changes=") for w in words):
            for node in ast.parse(content).body:
                if isinstance(node, ast.FunctionDef | ast.ClassDef):
                    found[node.name] = ast.dump(node, include_attributes=False)
    return found


# Shown as changes to an earlier chapter's definition (section 10.11).
CHANGED = {
    "build_tools",
    "build_store_tools",
    "build_document_tools",
    "read_document_tool",
    "load_skill_tool",
    "build_skill_tools",
}


def test_the_chapters_listings_print_their_blocks() -> None:
    result = verify(CHAPTER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "listings 22/22" in result.stdout


def test_the_learner_file_defines_what_the_listings_define() -> None:
    learner = definitions(LEARNER)
    assert set(learner) == {
        "friday_store",
        "order_what_is_needed",
        # Section 10.11: the effect classes and the tools that declare them.
        "Effect",
        "Classed",
        "classes_of_consequential",
        "needs_authority",
        "kept_after_untrusted_text",
        "ExecutableTool",
        "build_tools",
        "build_store_tools",
        "build_document_tools",
        "read_document_tool",
        "load_skill_tool",
        "build_skill_tools",
    }
    listings = listing_definitions()
    for name, tree in learner.items():
        if name in CHANGED:
            continue  # composed and compared by the verifier, in the test above
        assert listings[name] == tree, f"{name} differs from the chapter's listing"
    shown = {info.split("changes=")[1] for info, _ in fences() if "changes=" in info}
    assert shown == CHANGED


def test_the_checkpoint_defines_what_the_listings_define_the_same_way() -> None:
    listings = listing_definitions()
    for name, tree in definitions(CHECKPOINT).items():
        if name in listings:
            assert listings[name] == tree, f"{name} differs from the chapter's listing"
