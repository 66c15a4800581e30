"""The verifier's JSON report, checked against the chapters the site is about to publish.

The site shows, on every chapter, what the verifier proved. That claim is only
as good as the report behind it, so the report is refused, with a message
that says what to do, when it:

- lacks a field the site needs (only the documented fields of the report are
  read: `chapters[].file`, `number`, `ok`, `listings`, `blocks[]` with
  `line`, `output_line`, `mode`, `status`, `checkpoint`, `learner`,
  `failures[]` with `file`, `line`, `message`, and `isolation`, which the
  site states on every chapter's banner);
- has no entry for a drafted chapter, or names another file for it;
- is stale: its listings are not where the chapter has them now, or a file the
  chapter's verification depends on (the chapter, its checkpoint, its learner
  file, the runtime under `src/`) changed after the report was written;
- says a chapter does not hold: then that chapter cannot be published, and the
  error names it with its failures.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from bookproof.layout import Manifest, ManifestChapter
from bookproof.verify.chapter import ChapterError, read_chapter

__all__ = [
    "ChapterEvidence",
    "ChaptersDoNotHold",
    "ListingEvidence",
    "ReportError",
    "chapter_inputs",
    "check_report",
    "load_report",
]


class ReportError(Exception):
    """The report cannot stand behind the site: missing, malformed, incomplete or stale."""


class ChaptersDoNotHold(Exception):
    """The report says one or more drafted chapters failed: they cannot be published."""

    def __init__(self, failures: Sequence[str]) -> None:
        super().__init__("\n".join(failures))
        self.failures = tuple(failures)


class _Model(BaseModel):
    # Strict: a string where a number belongs is a broken report, not a number.
    # Fields the site does not read are ignored, so the verifier may add more.
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _Listings(_Model):
    passed: int
    total: int


class _Block(_Model):
    line: int
    output_line: int | None
    mode: Literal["exact", "wildcard", "no-output"]
    status: Literal["passed", "failed", "not-run"]


class _Failure(_Model):
    file: str
    line: int
    message: str


class _Chapter(_Model):
    file: str
    number: int | None
    ok: bool
    listings: _Listings
    blocks: tuple[_Block, ...]
    checkpoint: str
    learner: str
    failures: tuple[_Failure, ...]
    isolation: Literal["bwrap", "none"]


class _Report(_Model):
    chapters: tuple[_Chapter, ...]


@dataclass(frozen=True)
class ListingEvidence:
    """What the verifier proved about one listing (a `python` or `python raises=` block)."""

    line: int  # 1-based line of the listing's opening fence
    output_line: int | None
    mode: Literal["exact", "wildcard", "no-output"]


@dataclass(frozen=True)
class ChapterEvidence:
    """A drafted chapter that holds, as the site presents it."""

    number: int
    listings: tuple[ListingEvidence, ...]
    checkpoint: str  # "ok", or "not checked" for a chapter without a checkpoint
    learner: str  # "ok", or "none"
    verified_at: dt.datetime
    isolation: Literal["bwrap", "none"] = "none"  # how its code ran: in a sandbox, or not


def load_report(path: Path) -> _Report:
    """Parse the report at `path`; every problem is a ReportError naming the file."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportError(f"{path}: no verifier report there") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ReportError(f"{path}: cannot read the verifier report: {error}") from None
    try:
        json.loads(raw)
    except json.JSONDecodeError as error:
        raise ReportError(f"{path}: the verifier report is not JSON: {error}") from None
    except RecursionError:
        # The parser recurses once per level; a report nests five at most.
        raise ReportError(f"{path}: the verifier report is nested too deeply to read") from None
    try:
        # JSON mode: strict, yet a JSON array is a valid tuple.
        return _Report.model_validate_json(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in issue['loc']) or '(top level)'}: {issue['msg']}"
            for issue in error.errors()[:5]
        )
        raise ReportError(
            f"{path}: the verifier report lacks what the site needs ({problems}); "
            "write it with `verify_book_assets_v2.py --textbook --json PATH`"
        ) from None


def chapter_inputs(chapter: ManifestChapter, repo: Path) -> list[Path]:
    """Every file whose change can change the chapter's verification."""
    files = [path for path in (chapter.text, chapter.checkpoint, chapter.learner) if path]
    source = repo / "src"
    if source.is_dir():
        files.extend(sorted(source.rglob("*.py")))
    return files


def check_report(
    report: _Report,
    report_path: Path,
    manifest: Manifest,
    repo: Path,
    *,
    verified_at: dt.datetime,
    check_times: bool = True,
) -> dict[int, ChapterEvidence]:
    """The evidence for every drafted chapter, or the reason the report cannot give it.

    `check_times` compares modification times with the report's; it is off only
    when the caller ran the verifier itself and compared file contents instead.
    """
    drafted = [chapter for chapter in manifest.chapters if chapter.drafted]
    by_number: dict[int, _Chapter] = {}
    for entry in report.chapters:
        if entry.number is not None:
            by_number[entry.number] = entry
    missing = [chapter for chapter in drafted if chapter.number not in by_number]
    if missing:
        names = ", ".join(f"chapter {c.number} ({c.title})" for c in missing)
        raise ReportError(
            f"{report_path}: the report has no entry for {names}; write it with "
            "`verify_book_assets_v2.py --textbook --json PATH` for this manifest"
        )

    report_time = report_path.stat().st_mtime if check_times else None
    not_holding: list[str] = []
    evidence: dict[int, ChapterEvidence] = {}
    for chapter in drafted:
        entry = by_number[chapter.number]
        assert chapter.text is not None  # a drafted chapter always has its text
        _check_same_file(report_path, chapter, entry)
        if report_time is not None:
            _check_not_older(report_path, report_time, chapter, chapter_inputs(chapter, repo))
        _check_listing_positions(report_path, chapter, entry)
        if not _holds(entry):
            not_holding.append(_does_not_hold(chapter, entry))
            continue
        evidence[chapter.number] = ChapterEvidence(
            number=chapter.number,
            listings=tuple(
                ListingEvidence(line=b.line, output_line=b.output_line, mode=b.mode)
                for b in entry.blocks
            ),
            checkpoint=entry.checkpoint,
            learner=entry.learner,
            verified_at=verified_at,
            isolation=entry.isolation,
        )
    if not_holding:
        raise ChaptersDoNotHold(not_holding)
    return evidence


def _holds(entry: _Chapter) -> bool:
    return (
        entry.ok
        and not entry.failures
        and entry.listings.passed == entry.listings.total == len(entry.blocks)
        and all(block.status == "passed" for block in entry.blocks)
    )


def _does_not_hold(chapter: ManifestChapter, entry: _Chapter) -> str:
    head = (
        f"chapter {chapter.number} ({chapter.title}) does not hold: "
        f"{entry.listings.passed} of {entry.listings.total} listings passed, "
        f"checkpoint {entry.checkpoint}, learner file {entry.learner}"
    )
    lines = [head, *(f"  {f.file}:{f.line}: {f.message}" for f in entry.failures[:10])]
    if len(entry.failures) > 10:
        lines.append(f"  ... and {len(entry.failures) - 10} more failure(s)")
    return "\n".join(lines)


def _tail_matches(named: Path, actual: Path) -> bool:
    """Whether `named` (as the report wrote it, maybe relative) can be `actual`."""
    if named.is_absolute():
        return named.resolve() == actual.resolve()
    parts = [part for part in named.parts if part not in (".",)]
    if ".." in parts:
        return (Path.cwd() / named).resolve() == actual.resolve()
    return list(actual.resolve().parts[-len(parts) :]) == parts


def _check_same_file(report_path: Path, chapter: ManifestChapter, entry: _Chapter) -> None:
    assert chapter.text is not None
    if not _tail_matches(Path(entry.file), chapter.text):
        raise ReportError(
            f"{report_path}: the report's chapter {chapter.number} is {entry.file}, "
            f"but the manifest's is {chapter.text}; the report is from another book"
        )


def _check_not_older(
    report_path: Path, report_time: float, chapter: ManifestChapter, inputs: Iterable[Path]
) -> None:
    for path in inputs:
        try:
            changed = path.stat().st_mtime
        except FileNotFoundError:
            continue  # a missing input fails the verification itself, not this check
        if changed > report_time:
            raise ReportError(
                f"{report_path}: stale: {path} changed after the report was written, so "
                f"the report cannot vouch for chapter {chapter.number} ({chapter.title}); "
                "verify again, or build without --report to verify as part of the build"
            )


def _check_listing_positions(report_path: Path, chapter: ManifestChapter, entry: _Chapter) -> None:
    """The report's listings are at the lines where the chapter has its listings now."""
    assert chapter.text is not None
    try:
        parsed = read_chapter(chapter.text)
    except ChapterError as error:
        raise ReportError(str(error)) from None
    now = [
        (listing.fence.line, listing.output.line if listing.output else None)
        for listing in parsed.listings
    ]
    reported = [(block.line, block.output_line) for block in entry.blocks]
    if now != reported:
        differing = [
            f"{seen} in the report, {found} in the chapter"
            for seen, found in zip(reported, now, strict=False)
            if seen != found
        ]
        first = (
            differing[0]
            if differing
            else f"{len(reported)} listings in the report, {len(now)} in the chapter"
        )
        raise ReportError(
            f"{report_path}: stale: the listings of chapter {chapter.number} "
            f"({chapter.text}) are not where the report saw them (listing and output lines "
            f"{first}); verify again"
        )
