"""Reading book.toml into typed chapter records, with errors that name file and line."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bookproof.verify.files import UnreadableFile, read_regular_file, regular_file_problem, shown

__all__ = ["Manifest", "ManifestChapter", "ManifestError", "load_manifest"]


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
    # Exercise folders are named relative to the repository that holds this
    # manifest (book/textbook/book.toml -> two levels up).
    repo_dir = path.parent.parent.parent
    title = data.get("title", "")
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
    return Manifest(path=path, title=str(title), chapters=tuple(chapters))


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
