"""Chapter 10's reader files: the checkpoint's facts, the learner file, the listings they match.

Chapter 10 is not in the manifest as drafted until its exercise book exists,
so the rules the verifier applies to drafted chapters are held here
directly: the listings run and print their blocks, the learner file defines
exactly what a listing defines, and the checkpoint prints the chapter's
block from any folder.
"""

from __future__ import annotations

import ast
from pathlib import Path

from chapter_files import checkpoint_output, definitions, run_checkpoint, run_python
from markdown_it import MarkdownIt
from verifying import verify

from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch10_durable_approvals.md"
CHECKPOINT = TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch10_durable_approvals_checkpoint.py"
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch10_durable_approvals_learner.py"

# The facts the chapter promises, written out independently of the code.
FACTS = (
    "morning run: awaiting_approval",
    'pending: 1 place_order {"quantity":9,"sku":"SKU-VANILLA"} 2250 pence',
    'pending: 2 place_order {"quantity":1,"sku":"SKU-CHOCOLATE"} 300 pence',
    "budget: 5000 pence a week, 2550 reserved, 0 spent, 2450 left",
    "next run: final_answer",
    "ordered: SKU-VANILLA 9 tubs, approval 1",
    "ordered: SKU-CHOCOLATE 1 tub, approval 2",
    "lucy approves 3: exit 1: error: over_budget: approval 3 is for 3300 pence;"
    " only 2450 pence are left this week",
)


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
}


def test_the_chapters_listings_print_their_blocks() -> None:
    result = verify(CHAPTER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "listings 20/20" in result.stdout


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
