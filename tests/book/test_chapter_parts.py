"""Every drafted chapter of the manifest has all its parts, where the layout says they are.

One test for every chapter, driven by `book/textbook/book.toml`: the text,
checkpoint and learner file, the exercise book with its unit plans and
notebooks, the solutions, the grader's book and the site's pages. What each
part says (listings, the checkpoint's output, the learner file's definitions)
is the verifier's to prove; this says the parts are there and wired together.
"""

from __future__ import annotations

import pytest
from chapter_files import chapter_problems

from bookproof.layout import ManifestChapter, default_layout, load_manifest

LAYOUT = default_layout()
DRAFTED = load_manifest(LAYOUT.manifest).drafted


def test_the_book_has_drafted_chapters() -> None:
    assert len(DRAFTED) >= 8


@pytest.mark.parametrize("chapter", DRAFTED, ids=lambda chapter: f"ch{chapter.number:02d}")
def test_every_drafted_chapter_has_all_its_parts(chapter: ManifestChapter) -> None:
    assert chapter_problems(LAYOUT, chapter) == []
