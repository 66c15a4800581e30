"""Chapter 11's listings, run by the verifier: each prints its block, the desk started and stopped.

The reader files (the learner file and checkpoint against the listings, the
checkpoint's output and facts, a silent learner import that leaves no file
and no desk) are held for every drafted chapter by
tests/book/test_reader_files.py.
"""

from __future__ import annotations

import pytest
from chapter_files import parts
from real_book import RealBookRun

CHAPTER = parts(11).text


# The chapter starts desks and kills processes, so the full suite's. Its verdict
# comes from the session's one fresh run of the whole book (tests/real_book.py
# says why it is the verdict a run of this file alone gets).
@pytest.mark.slow
def test_the_chapters_listings_print_their_blocks(real_book: RealBookRun) -> None:
    row = real_book.chapter_row(11)
    assert "listings 8/8" in row and row.endswith(" holds"), real_book.stdout + real_book.stderr
