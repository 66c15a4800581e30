"""Chapter 12's own reader-file checks, beyond the shared ones in test_reader_files.py.

The listings run and print their blocks (the supplier's desk, the workers
and DBOS's worker started, killed and stopped by them), and the morning the
workers import by name is one module, the same in the chapter, the learner
file and the checkpoint.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from real_book import RealBookRun

from bookproof.layout import REPO_ROOT

TEXTBOOK = REPO_ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch12_recovering_unfinished_work.md"
CHECKPOINT = (
    TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch12_recovering_unfinished_work_checkpoint.py"
)
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch12_recovering_unfinished_work_learner.py"


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


# The chapter starts desks, kills workers and runs DBOS twice, so the full
# suite's. Its verdict comes from the session's one fresh run of the whole book
# (tests/real_book.py says why it is the verdict a run of this file alone gets).
@pytest.mark.slow
def test_the_chapters_listings_print_their_blocks(real_book: RealBookRun) -> None:
    row = real_book.chapter_row(12)
    assert "listings 10/10" in row and row.endswith(" holds"), real_book.stdout + real_book.stderr


def test_the_morning_setup_is_the_same_module_in_the_chapter_learner_and_checkpoint() -> None:
    # The workers import it by name: a drifted copy would run another morning.
    morning = listing_constant("MORNING")
    assert module_constant(LEARNER, "MORNING") == morning
    assert module_constant(CHECKPOINT, "MORNING") == morning
    assert "def lucy_morning(connection, run):" in morning
