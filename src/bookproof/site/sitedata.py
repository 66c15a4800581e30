"""What the build hands to the Sphinx extension: the book's plan and the verifier's evidence.

The build writes it as JSON beside the generated sources; the extension reads
it back. One typed model on both sides means a field cannot be written under
one name and read under another.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "DATA_FOLDER",
    "ChapterData",
    "ExerciseBookData",
    "ListingData",
    "SiteData",
    "read_site_data",
]

# Inside the Sphinx source folder, excluded from the documents Sphinx reads.
DATA_FOLDER = "_bookproof"
_DATA_FILE = "site.json"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ListingData(_Model):
    line: int
    output_line: int | None
    mode: Literal["exact", "wildcard", "no-output"]


class ChapterData(_Model):
    number: int
    title: str
    status: Literal["drafted", "planned"]
    summary: str | None = None
    docname: str | None = None  # drafted chapters only
    source: str | None = None  # the chapter file, relative to the repository
    listings: tuple[ListingData, ...] = ()
    checkpoint: str | None = None
    learner: str | None = None
    exercise_book: str | None = None  # docname of the exercise book's page
    # How the verifier ran its code: "bwrap" (a sandbox per run) or "none".
    isolation: Literal["bwrap", "none"] | None = None


class ExerciseBookData(_Model):
    chapter: int
    title: str
    docname: str
    units: tuple[str, ...] = ()


class SiteData(_Model):
    title: str
    subtitle: str | None
    verified_at: dt.datetime
    commit: str | None  # abbreviated commit of the repository, when it is a git checkout
    uncommitted: tuple[str, ...] = ()  # chapter files that differ from that commit
    chapters: tuple[ChapterData, ...]
    exercise_books: tuple[ExerciseBookData, ...]

    def chapter_for(self, docname: str) -> ChapterData | None:
        """The drafted chapter whose page is `docname`."""
        for chapter in self.chapters:
            if chapter.docname == docname:
                return chapter
        return None

    def chapter(self, number: int) -> ChapterData | None:
        for chapter in self.chapters:
            if chapter.number == number:
                return chapter
        return None

    def write(self, srcdir: Path) -> None:
        folder = srcdir / DATA_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        (folder / _DATA_FILE).write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")


def read_site_data(srcdir: Path) -> SiteData:
    return SiteData.model_validate_json((srcdir / DATA_FOLDER / _DATA_FILE).read_bytes())
