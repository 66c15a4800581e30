"""Chapter 10's reader files: the learner file and the listings it matches.

The rules the verifier applies to drafted chapters are held here
directly: the listings run and print their blocks, and the learner file defines
exactly what a listing defines.

The checkpoint's offline output and facts, and a silent learner import, are held
for every drafted chapter by tests/book/test_reader_files.py (its `FACTS` table).
"""

from __future__ import annotations

import pytest
from real_book import RealBookRun

from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch10_durable_approvals.md"
CHECKPOINT = TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch10_durable_approvals_checkpoint.py"
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch10_durable_approvals_learner.py"


# Verifying the chapter runs its 22 listings, checkpoint and learner import in
# sandboxes: the full suite's, as chapters 9, 11 and 12's own verifications
# are. Its verdict comes from the session's one fresh run of the whole book
# (tests/real_book.py says why it is the verdict a run of this file alone gets).
@pytest.mark.slow
def test_the_chapters_listings_print_their_blocks(real_book: RealBookRun) -> None:
    row = real_book.chapter_row(10)
    assert "listings 22/22" in row and row.endswith(" holds"), real_book.stdout + real_book.stderr
