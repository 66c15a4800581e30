"""Where every part of the book lives: the one reader of book.toml and of the repository's layout.

A chapter is a number in the manifest (`book/textbook/book.toml`) and about
fifteen files in eight folders: its text, checkpoint and learner file under
`book/textbook/`, its exercise book (starter, unit plans, notebooks) under
`exercises/`, its solutions, the grader's book module, and the site pages
built from them. The verifier, the grader, the site, the notebook sync, the
tests and `scripts/new_chapter.py` all ask this module where a part is, so a
chapter is laid out one way and found one way.

The repository root is found one way: a manifest's repository is the folder
two levels above the manifest's own (`book/textbook/book.toml`), and the
default repository is the one holding this package, never the caller's
working directory. The manifest is read with `tomllib`; every error names
`file:line`, and the verifier turns it into a one-line usage error (exit 2).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bookproof.verify.files import UnreadableFile, read_regular_file, regular_file_problem, shown

__all__ = [
    "DEFAULT_MANIFEST",
    "REPO_ROOT",
    "BookLayout",
    "ChapterParts",
    "Manifest",
    "ManifestChapter",
    "ManifestError",
    "chapter_slug",
    "default_layout",
    "load_manifest",
]

# src/bookproof/layout.py: the repository is two folders above this package.
REPO_ROOT = Path(__file__).resolve().parents[2]
# Where the manifest sits below a repository root; its chapters' paths are
# relative to its folder (text, checkpoint, learner) or to the root (books).
TEXTBOOK = Path("book", "textbook")
MANIFEST_NAME = "book.toml"
DEFAULT_MANIFEST = REPO_ROOT / TEXTBOOK / MANIFEST_NAME
# Every reader file is named after the book and its chapter, so that a
# learner's download folder sorts them together.
_READER_FILE_PREFIX = "profrod_sovereign_agent_"
# Unit plans (the notebooks' sources) and the notebooks generated beside them.
PLAN_GLOB = "unit_*.md"
NOTEBOOK_GLOB = "unit_*.ipynb"
BOOK_FOLDER_GLOB = "book[0-9][0-9]"


class ManifestError(Exception):
    """The manifest cannot be trusted: the run stops with a usage error (exit 2)."""


@dataclass(frozen=True)
class ManifestChapter:
    """One `[[chapters]]` entry; paths are absolute, checked to exist when drafted."""

    number: int
    title: str
    status: Literal["drafted", "planned"]
    line: int
    summary: str | None = None
    text: Path | None = None
    checkpoint: Path | None = None
    learner: Path | None = None
    exercises: Path | None = None
    solutions: Path | None = None

    @property
    def drafted(self) -> bool:
        return self.status == "drafted"


@dataclass(frozen=True)
class Manifest:
    """The ordered chapter list and where it was read from."""

    path: Path
    title: str
    chapters: tuple[ManifestChapter, ...]
    subtitle: str | None = None

    def chapter(self, number: int) -> ManifestChapter | None:
        """The chapter listed under `number`, if any."""
        return next((chapter for chapter in self.chapters if chapter.number == number), None)

    @property
    def drafted(self) -> tuple[ManifestChapter, ...]:
        return tuple(chapter for chapter in self.chapters if chapter.drafted)

    def chapter_for_text(self, text: Path) -> ManifestChapter | None:
        """The drafted chapter whose text is `text`, if the manifest names it."""
        resolved = text.resolve()
        for chapter in self.chapters:
            if chapter.text is not None and chapter.text.resolve() == resolved:
                return chapter
        return None


_CHAPTER_HEADER = re.compile(r"^\s*\[\[\s*chapters\s*\]\]")
_BOOK_FILES = ("text", "checkpoint", "learner")
_REPO_FOLDERS = ("exercises", "solutions")


def _chapter_lines(raw: str) -> list[int]:
    return [n for n, line in enumerate(raw.splitlines(), 1) if _CHAPTER_HEADER.match(line)]


def _key_line(raw: str, start: int, key: str) -> int:
    """The line of `key = ...` inside the section starting at `start`, else the header."""
    lines = raw.splitlines()
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for number in range(start, len(lines) + 1):
        line = lines[number - 1]
        if number > start and line.lstrip().startswith("["):
            break
        if pattern.match(line):
            return number
    return start


def load_manifest(path: Path) -> Manifest:
    """Parse and validate the manifest; every error names `path:line`."""
    try:
        raw = read_regular_file(path).decode("utf-8")
    except UnreadableFile as error:
        raise ManifestError(f"{shown(path)}: cannot read the manifest: {error}") from None
    except UnicodeDecodeError as error:
        raise ManifestError(f"{shown(path)}: the manifest is not UTF-8 text: {error}") from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as error:
        match = re.search(r"line (\d+)", str(error))
        where = f"{path}:{match.group(1)}" if match else str(path)
        raise ManifestError(f"{where}: malformed TOML: {error}") from None
    except RecursionError:
        # tomllib recurses once per nested array or inline table; no manifest
        # nests more than two, so a few hundred levels is not a manifest.
        raise ManifestError(f"{path}: malformed TOML: nested too deeply to read") from None

    entries = data.get("chapters")
    if not isinstance(entries, list) or not entries:
        raise ManifestError(f"{path}:1: no [[chapters]] entries")
    header_lines = _chapter_lines(raw)
    book_dir = path.parent
    # Exercise folders are named relative to the repository that holds this manifest.
    repo_dir = BookLayout.of_manifest(path, resolve=False).root
    title = data.get("title", "")
    subtitle = data.get("subtitle")
    chapters: list[ManifestChapter] = []
    for index, entry in enumerate(entries):
        line = header_lines[index] if index < len(header_lines) else 1
        chapters.append(_chapter(path, raw, line, entry, book_dir, repo_dir))

    seen: set[int] = set()
    previous = 0
    for chapter in chapters:
        if chapter.number in seen:
            raise ManifestError(f"{path}:{chapter.line}: chapter number {chapter.number} repeats")
        if chapter.number < previous:
            raise ManifestError(
                f"{path}:{chapter.line}: chapter {chapter.number} is listed after {previous}; "
                "the manifest lists chapters in order"
            )
        seen.add(chapter.number)
        previous = chapter.number
    return Manifest(
        path=path,
        title=str(title),
        chapters=tuple(chapters),
        subtitle=subtitle if isinstance(subtitle, str) and subtitle.strip() else None,
    )


def _chapter(
    path: Path, raw: str, line: int, entry: Any, book_dir: Path, repo_dir: Path
) -> ManifestChapter:
    def fail(key: str | None, message: str) -> ManifestError:
        where = _key_line(raw, line, key) if key else line
        return ManifestError(f"{path}:{where}: {message}")

    if not isinstance(entry, dict):
        raise fail(None, "a [[chapters]] entry must be a table")
    number = entry.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise fail("number", "`number` must be a positive integer")
    title = entry.get("title")
    if not isinstance(title, str) or not title.strip():
        raise fail("title", f"chapter {number}: `title` must be a non-empty string")
    status = entry.get("status")
    if status not in ("drafted", "planned"):
        raise fail("status", f'chapter {number}: `status` must be "drafted" or "planned"')
    if status == "planned":
        summary = entry.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            raise fail("summary", f"chapter {number}: a planned chapter needs a one-line `summary`")
        return ManifestChapter(
            number=number, title=title, status="planned", line=line, summary=summary
        )

    named: dict[str, Path] = {}
    for key in (*_BOOK_FILES, *_REPO_FOLDERS):
        value = entry.get(key)
        if not isinstance(value, str) or not value.strip():
            raise fail(key, f"chapter {number}: a drafted chapter needs `{key}` (a path)")
        named[key] = (book_dir if key in _BOOK_FILES else repo_dir) / value
    for key in _BOOK_FILES:
        problem = regular_file_problem(named[key])
        if problem == "no such file":
            raise fail(key, f"chapter {number}: `{key}` names a missing file: {named[key]}")
        if problem is not None:
            raise fail(key, f"chapter {number}: `{key}` names {shown(named[key])}: {problem}")
    paths: dict[str, Path] = {}
    for key, path in named.items():
        try:
            paths[key] = path.resolve()
        except (OSError, RuntimeError, ValueError):  # a NUL in it, a link loop
            message = f"chapter {number}: `{key}` is not a usable path: {shown(path)}"
            raise fail(key, message) from None
    return ManifestChapter(
        number=number,
        title=title,
        status="drafted",
        line=line,
        summary=entry.get("summary") if isinstance(entry.get("summary"), str) else None,
        **paths,
    )


# --- where each part of a chapter lives ----------------------------------------------


def chapter_slug(title: str) -> str:
    """A chapter title as it appears in file names: "Remote tool servers" -> remote_tool_servers.

    Raises ValueError for a title that leaves no letter or digit to name a file by.
    """
    slug = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")
    if not slug:
        raise ValueError(f"the title {title!r} has no letter or digit to name its files by")
    return slug


@dataclass(frozen=True)
class ChapterParts:
    """Every file and folder of one chapter, whether or not it exists yet."""

    number: int
    text: Path
    checkpoint: Path
    learner: Path
    exercises: Path
    solutions: Path
    grader_book: Path  # bookNN.py, or the package folder bookNN/ where one file was too long

    @property
    def folder(self) -> str:
        """`bookNN`: the exercise book's folder name, and the grader's module name."""
        return f"book{self.number:02d}"

    def unit_plans(self) -> list[Path]:
        """The exercise book's unit plans (`unit_a.md`, ...), each the source of a notebook."""
        return sorted(self.exercises.glob(PLAN_GLOB))

    def notebooks(self) -> list[Path]:
        """The notebook each unit plan generates, beside it."""
        return [plan.with_suffix(".ipynb") for plan in self.unit_plans()]

    def starter(self, module: str) -> Path:
        """The exercise book's starter of the graded `module` (the grader's `Book.module`)."""
        return self.exercises / f"{module}.py"

    def solution(self, module: str) -> Path:
        return self.solutions / f"{module}.py"

    def site_pages(self, root: Path) -> tuple[str, str]:
        """The site's docnames of the chapter and of its exercise book's README page."""
        return (
            self.text.relative_to(root).with_suffix("").as_posix(),
            (self.exercises / "README").relative_to(root).as_posix(),
        )

    def paths(self) -> dict[str, Path]:
        """Every part by its name, for listing them and for refusing to overwrite one."""
        return {
            "text": self.text,
            "checkpoint": self.checkpoint,
            "learner": self.learner,
            "exercises": self.exercises,
            "solutions": self.solutions,
            "grader book": self.grader_book,
        }


@dataclass(frozen=True)
class BookLayout:
    """The folders of one repository that holds the book, and the names of a chapter's parts."""

    root: Path

    @classmethod
    def of_manifest(cls, manifest: Path, *, resolve: bool = True) -> BookLayout:
        """The repository whose manifest is `manifest` (book/textbook/book.toml below it)."""
        path = manifest.resolve() if resolve else manifest
        return cls(path.parent.parent.parent)

    @property
    def textbook(self) -> Path:
        return self.root / TEXTBOOK

    @property
    def manifest(self) -> Path:
        return self.textbook / MANIFEST_NAME

    @property
    def exercises(self) -> Path:
        return self.root / "exercises"

    @property
    def solutions(self) -> Path:
        return self.root / "solutions"

    @property
    def grader_books(self) -> Path:
        return self.root / "src" / "bookproof" / "grade" / "books"

    @property
    def verifier(self) -> Path:
        return self.root / "scripts" / "verify_book_assets_v2.py"

    @property
    def site_out(self) -> Path:
        return self.root / "build" / "site"

    def unit_plans(self) -> list[Path]:
        """Every unit plan of every exercise book, in a stable order."""
        return sorted(self.exercises.glob(f"{BOOK_FOLDER_GLOB}/{PLAN_GLOB}"))

    def notebooks(self) -> list[Path]:
        """Every notebook on disk in an exercise book, planned or not."""
        return sorted(self.exercises.glob(f"{BOOK_FOLDER_GLOB}/{NOTEBOOK_GLOB}"))

    def grader_book(self, number: int) -> Path:
        """The grader's book module: `bookNN/` where it is a package, else `bookNN.py`."""
        package = self.grader_books / f"book{number:02d}"
        return package if (package / "__init__.py").is_file() else package.with_suffix(".py")

    def parts(self, chapter: ManifestChapter) -> ChapterParts:
        """Where a chapter's parts are: as the manifest names them, where it names them."""
        planned = self.planned_parts(chapter.number, chapter.title)
        return ChapterParts(
            number=chapter.number,
            text=chapter.text or planned.text,
            checkpoint=chapter.checkpoint or planned.checkpoint,
            learner=chapter.learner or planned.learner,
            exercises=chapter.exercises or planned.exercises,
            solutions=chapter.solutions or planned.solutions,
            grader_book=planned.grader_book,
        )

    def planned_parts(self, number: int, title: str) -> ChapterParts:
        """Where a new chapter's parts go, named after its number and title."""
        stem = f"ch{number:02d}_{chapter_slug(title)}"
        folder = f"book{number:02d}"
        return ChapterParts(
            number=number,
            text=self.textbook / f"{stem}.md",
            checkpoint=self.textbook / "checkpoints" / f"{_READER_FILE_PREFIX}{stem}_checkpoint.py",
            learner=self.textbook / "learner" / f"{_READER_FILE_PREFIX}{stem}_learner.py",
            exercises=self.exercises / folder,
            solutions=self.solutions / folder,
            grader_book=self.grader_book(number),
        )

    def manifest_entry(self, parts: ChapterParts) -> dict[str, str]:
        """The manifest keys of a drafted chapter with these parts, as the manifest writes them."""
        return {
            "text": parts.text.relative_to(self.textbook).as_posix(),
            "checkpoint": parts.checkpoint.relative_to(self.textbook).as_posix(),
            "learner": parts.learner.relative_to(self.textbook).as_posix(),
            "exercises": parts.exercises.relative_to(self.root).as_posix(),
            "solutions": parts.solutions.relative_to(self.root).as_posix(),
        }


def default_layout() -> BookLayout:
    """The repository holding this package."""
    return BookLayout(REPO_ROOT)
