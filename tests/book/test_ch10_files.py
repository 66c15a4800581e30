"""Chapter 10's reader files: the learner file and the listings it matches.

The rules the verifier applies to drafted chapters are held here
directly: the listings run and print their blocks, and the learner file defines
exactly what a listing defines.

The checkpoint's offline output and facts, and a silent learner import, are held
for every drafted chapter by tests/book/test_reader_files.py (its `FACTS` table).
"""

from __future__ import annotations

import pytest
from verifying import verify

from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch10_durable_approvals.md"
CHECKPOINT = TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch10_durable_approvals_checkpoint.py"
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch10_durable_approvals_learner.py"


# Verifying the chapter runs its 22 listings, checkpoint and learner import in
# sandboxes (about 27 s on the shared machine): the full suite's, as chapters 9,
# 11 and 12's own verifications are (CI also verifies the whole book first).
@pytest.mark.slow
def test_the_chapters_listings_print_their_blocks() -> None:
    result = verify(CHAPTER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "listings 22/22" in result.stdout
