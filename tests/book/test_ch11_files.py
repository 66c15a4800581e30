"""Chapter 11's listings, run by the verifier: each prints its block, the desk started and stopped.

The reader files (the learner file and checkpoint against the listings, the
checkpoint's output and facts, a silent learner import that leaves no file
and no desk) are held for every drafted chapter by
tests/book/test_reader_files.py.
"""

from __future__ import annotations

import pytest
from chapter_files import parts
from verifying import verify

CHAPTER = parts(11).text


# The chapter starts desks and kills processes: about 30 s, so the full suite's.
@pytest.mark.slow
def test_the_chapters_listings_print_their_blocks() -> None:
    result = verify(CHAPTER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "listings 8/8" in result.stdout
