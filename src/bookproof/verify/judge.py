"""Judging what a chapter's runs did: the verdict on each listing, checkpoint and learner file."""

from __future__ import annotations

import dataclasses
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookproof.verify.chapter import Chapter, Listing, split_lines
from bookproof.verify.compare import has_wildcards, matches, unified_diff
from bookproof.verify.drift import Role, find_drift
from bookproof.verify.environment import display_path
from bookproof.verify.execute import (
    MAX_CAPTURE_BYTES,
    MAX_PROCESS_OUTPUT,
    ListingRun,
    ListingsRun,
    ProcessRun,
)
from bookproof.verify.figures import FigureRef, FiguresRun, judge_figures
from bookproof.verify.manifest import ManifestChapter
from bookproof.verify.quoting import bounded, quoted
from bookproof.verify.verdict import (
    LISTING_FAILURE_KINDS,
    BlockStatus,
    BlockVerdict,
    ChapterVerdict,
    Coverage,
    Failure,
    FailureKind,
    Mode,
)

__all__ = ["ChapterJob", "judge_chapter", "mark_cascade"]


@dataclass(frozen=True)
class ChapterJob:
    """A parsed chapter and, when the manifest names it, its manifest entry."""

    chapter: Chapter
    entry: ManifestChapter | None
    figures: tuple[FigureRef, ...] = ()


class _Sources:
    """Source lines for a traceback: the chapter's own text, or a regular file's."""

    # A file larger than this is not source a traceback should quote.
    _MAX_SOURCE_BYTES = 10 * 1024 * 1024

    def __init__(self, chapter: Chapter) -> None:
        self.chapter = chapter.path
        self._files: dict[str, list[str]] = {str(chapter.path): split_lines(chapter.text)}

    def line(self, file: str, number: int) -> str:
        if file not in self._files:
            self._files[file] = self._read(file)
        lines = self._files[file]
        return lines[number - 1].strip() if 0 < number <= len(lines) else ""

    def _read(self, file: str) -> list[str]:
        # Listing code names its own files: never open a FIFO, a device or a
        # huge file because a traceback says it ran from there.
        try:
            status = os.stat(file)
            if not stat.S_ISREG(status.st_mode) or status.st_size > self._MAX_SOURCE_BYTES:
                return []
            with open(file, encoding="utf-8", errors="replace") as handle:
                return handle.read().split("\n")
        except (OSError, ValueError):
            return []


def _frames_text(exception: dict[str, Any], chapter_file: str, sources: _Sources) -> str:
    """The traceback from the chapter's first frame on: the chapter's frames and the
    innermost one, where the exception was raised; library frames between are counted."""
    frames = list(exception.get("frames", []))
    while frames and frames[0].get("file") != chapter_file:
        frames.pop(0)
    lines = ["Traceback (chapter lines):"]
    hidden = 0
    for position, frame in enumerate(frames):
        if "hidden" in frame:
            hidden += frame["hidden"]
            continue
        if frame["file"] != chapter_file and position != len(frames) - 1:
            hidden += 1
            continue
        if hidden:
            lines.append(f"  ... {hidden} frame(s) in library code ...")
            hidden = 0
        lines.append(
            f'  File "{display_path(Path(frame["file"]))}", line {frame["line"]}, '
            f"in {frame['name']}"
        )
        code = sources.line(frame["file"], frame["line"])
        if code:
            lines.append(f"    {code}")
    lines.append(bounded(str(exception.get("message", ""))))
    return "\n".join(lines)


def _mode(listing: Listing) -> Mode:
    if listing.output is None:
        return "no-output"
    return "wildcard" if has_wildcards(listing.output.content) else "exact"


def _judge_listing(
    display: str, listing: Listing, run: ListingRun, sources: _Sources
) -> tuple[BlockVerdict, Failure | None]:
    """The verdict on one listing that ran, in the order a reader would check it:
    valid Python, within the output limit, the right exception (or none), then
    the printed output."""
    fence, output = listing.fence, listing.output
    chapter_file = str(sources.chapter)

    def block(status: BlockStatus, *, updatable: bool) -> BlockVerdict:
        return BlockVerdict(
            line=fence.line,
            output_line=output.line if output else None,
            mode=_mode(listing),
            status=status,
            actual=run.stdout,
            updatable=updatable,
        )

    def failed(kind: FailureKind, message: str, detail: str = "") -> tuple[BlockVerdict, Failure]:
        return block("failed", updatable=False), Failure(display, fence.line, kind, message, detail)

    def with_printed(detail: str) -> str:
        if not run.stdout:
            return detail
        return f"{detail}\nprinted before it:\n{quoted(run.stdout)}"

    def traceback() -> str:
        assert run.exception is not None
        return with_printed(_frames_text(run.exception, chapter_file, sources))

    if run.syntax_error is not None:
        error = run.syntax_error
        return failed(
            "syntax-error",
            f"the listing is not valid Python: {error['type']} at line {error.get('line')}",
            bounded(str(error["message"]).replace(chapter_file, display)),
        )
    if run.truncated:
        stopped = " and was stopped at the worker's file-size limit" if run.flooded else ""
        return failed(
            "too-much-output",
            f"the listing printed {run.stdout_bytes:,} bytes, more than the capture limit "
            f"of {MAX_CAPTURE_BYTES:,} bytes{stopped}",
            "printed:\n" + quoted(run.stdout),
        )
    if fence.kind == "raises":
        if run.exception is None:
            return failed(
                "no-exception",
                f"expected the listing to raise {fence.raises}; nothing was raised",
            )
        if run.exception["type"] != fence.raises:
            return failed(
                "wrong-exception",
                f"expected {fence.raises}, but the listing raised {run.exception['type']}",
                traceback(),
            )
    elif run.exception is not None:
        return failed("exception", f"the listing raised {run.exception['type']}", traceback())

    if output is None:
        if run.stdout:
            return failed(
                "unexpected-output",
                "the listing printed output but has no `output` block (it must print nothing)",
                "printed:\n" + quoted(run.stdout),
            )
        return block("passed", updatable=True), None
    if matches(output.content, run.stdout):
        return block("passed", updatable=True), None
    failure = Failure(
        display,
        fence.line,
        "output-mismatch",
        f"printed output differs from the `output` block at line {output.line}",
        unified_diff(output.content, run.stdout, label=f"{display}:{output.line}"),
    )
    return block("failed", updatable=True), failure


def _stopped_failure(display: str, listing: Listing, result: ListingsRun, later: int) -> Failure:
    assert result.stopped is not None and result.stopped_kind is not None
    return Failure(
        display,
        listing.fence.line,
        result.stopped_kind,
        f"{result.stopped}: the worker was stopped, so the {later} later "
        "listing(s) of this chapter were not run",
        (
            "printed before it was stopped:\n" + quoted(result.partial_stdout)
            if result.partial_stdout
            else ""
        ),
    )


def _judge_listings(
    display: str, chapter: Chapter, result: ListingsRun | None
) -> tuple[list[BlockVerdict], list[Failure]]:
    verdicts: list[BlockVerdict] = []
    failures: list[Failure] = []
    listings = chapter.listings
    runs = result.runs if result else ()
    sources = _Sources(chapter)
    for index, listing in enumerate(listings):
        if index < len(runs):
            verdict, failure = _judge_listing(display, listing, runs[index], sources)
            verdicts.append(verdict)
            if failure:
                failures.append(failure)
            continue
        # The worker stopped (time limit, crash, tampering) at the listing it was running.
        assert result is not None
        stopped_here = index == len(runs)
        verdicts.append(
            BlockVerdict(
                line=listing.fence.line,
                output_line=listing.output.line if listing.output else None,
                mode=_mode(listing),
                status="failed" if stopped_here else "not-run",
            )
        )
        if stopped_here:
            failures.append(_stopped_failure(display, listing, result, len(listings) - index - 1))
        else:
            failures.append(
                Failure(
                    display,
                    listing.fence.line,
                    "not-run",
                    "not run: the worker was stopped at an earlier listing",
                )
            )
    for index, leftover in result.leftovers if result else ():
        listing = listings[index]
        failures.append(
            Failure(
                display,
                listing.fence.line,
                "process-left-running",
                "the listing started a process that was still running when the chapter's "
                f"listings ended (pid {leftover.pid}: {leftover.command}); it was stopped",
            )
        )
        verdicts[index] = dataclasses.replace(verdicts[index], status="failed", updatable=False)
    failures.sort(key=lambda failure: failure.line)
    return verdicts, failures


def _judge_process(kind: FailureKind, doing: str, where: str, run: ProcessRun) -> list[Failure]:
    """What every checkpoint run and learner import must do: end in time, print
    within bounds, exit with status 0 and leave no process running. `doing`
    names the run in messages ("running the checkpoint")."""
    if run.timed_out:
        return [Failure(where, 1, kind, f"{doing} did not finish in time: stopped")]
    if run.flooded:
        return [
            Failure(
                where,
                1,
                kind,
                f"{doing} printed more than {MAX_PROCESS_OUTPUT:,} bytes: stopped",
                "printed:\n" + quoted(run.stdout),
            )
        ]
    failures = []
    if run.returncode != 0:
        failures.append(
            Failure(
                where,
                1,
                kind,
                f"{doing} failed (exit status {run.returncode})",
                bounded(run.stderr),
            )
        )
    for leftover in run.leftovers:
        failures.append(
            Failure(
                where,
                1,
                kind,
                f"{doing} left a process running after it ended "
                f"(pid {leftover.pid}: {leftover.command}); it was stopped",
            )
        )
    return failures


def _judge_checkpoint(
    display: str, chapter: Chapter, entry: ManifestChapter, run: ProcessRun
) -> list[Failure]:
    assert entry.checkpoint is not None
    failures = _judge_process(
        "checkpoint", "running the checkpoint", display_path(entry.checkpoint), run
    )
    if failures:
        return failures
    if not chapter.checkpoint_outputs:
        return [
            Failure(
                display,
                1,
                "checkpoint-output",
                "the chapter shows no `checkpoint-output` block, so its checkpoint's output "
                "is never compared",
            )
        ]
    for fence in chapter.checkpoint_outputs:
        if not matches(fence.content, run.stdout, wildcards=False):
            failures.append(
                Failure(
                    display,
                    fence.line,
                    "checkpoint-output",
                    f"{display_path(entry.checkpoint)} prints something other than this "
                    "`checkpoint-output` block",
                    unified_diff(fence.content, run.stdout, label=f"{display}:{fence.line}"),
                )
            )
    return failures


def _judge_learner(entry: ManifestChapter, run: ProcessRun) -> list[Failure]:
    assert entry.learner is not None
    where = display_path(entry.learner)
    failures = _judge_process("learner", "importing the learner file", where, run)
    if failures:
        return failures
    printed = run.stdout + run.stderr
    if printed:
        return [
            Failure(
                where,
                1,
                "learner",
                "importing the learner file printed output (it must print nothing)",
                "printed:\n" + quoted(printed),
            )
        ]
    return []


def _coverage(chapter: Chapter, checked: bool) -> Coverage:
    exact = wildcard = no_output = 0
    for listing in chapter.listings:
        if listing.output is None:
            no_output += 1
        elif has_wildcards(listing.output.content):
            wildcard += 1
        else:
            exact += 1
    count = len(chapter.checkpoint_outputs)
    return Coverage(
        exact=exact,
        wildcard=wildcard,
        no_output=no_output,
        skipped=len(chapter.skipped),
        checkpoint_checked=count if checked else 0,
        checkpoint_not_checked=0 if checked else count,
    )


# A failure's message is one line of prose, its detail a diff or a traceback:
# past these sizes they stop helping and start flooding the reports.
_MAX_MESSAGE_CHARS = 1_000
_MAX_DETAIL_CHARS = 20_000


def _bounded(failure: Failure) -> Failure:
    return dataclasses.replace(
        failure,
        message=bounded(failure.message, limit=_MAX_MESSAGE_CHARS),
        detail=bounded(failure.detail, limit=_MAX_DETAIL_CHARS),
    )


def mark_cascade(failures: list[Failure]) -> list[Failure]:
    """Listing failures after the first may follow from it: say which came first."""
    first: str | None = None
    marked = []
    for failure in failures:
        if failure.kind not in LISTING_FAILURE_KINDS:
            marked.append(failure)
            continue
        if first is None:
            first = f"{failure.file}:{failure.line}"
            marked.append(failure)
            continue
        marked.append(
            Failure(
                failure.file,
                failure.line,
                failure.kind,
                failure.message,
                failure.detail,
                cascade_of=first,
            )
        )
    return marked


def _drift_failures(chapter: Chapter, path: Path | None, display: str, role: Role) -> list[Failure]:
    """Definitions of a reader's file that no listing teaches identically."""
    assert path is not None
    where = display_path(path)
    drifts, parse_error = find_drift(
        chapter, path, chapter_label=display, file_label=where, role=role
    )
    kind: FailureKind = "drift" if role == "learner" else "checkpoint-drift"
    if parse_error:
        return [Failure(where, 1, "learner" if role == "learner" else "checkpoint", parse_error)]
    return [Failure(where, drift.line, kind, drift.message, drift.diff) for drift in drifts]


def judge_chapter(
    job: ChapterJob,
    listings_run: ListingsRun | None,
    checkpoint_run: ProcessRun | None,
    learner_run: ProcessRun | None,
    seconds: float,
    figures_run: FiguresRun | None = None,
) -> ChapterVerdict:
    """Turn the raw runs of one chapter into its verdict."""
    chapter, entry = job.chapter, job.entry
    display = display_path(chapter.path)
    blocks, failures = _judge_listings(display, chapter, listings_run)
    failures.extend(judge_figures(display, list(job.figures), figures_run))
    checkpoint = "not checked"
    learner = "none"
    exercises = "-"
    if entry is not None:
        assert checkpoint_run is not None and learner_run is not None
        checkpoint_failures = _judge_checkpoint(display, chapter, entry, checkpoint_run)
        checkpoint_failures.extend(
            _drift_failures(chapter, entry.checkpoint, display, "checkpoint")
        )
        checkpoint = "failed" if checkpoint_failures else "ok"
        failures.extend(checkpoint_failures)
        learner_failures = _judge_learner(entry, learner_run)
        learner_failures.extend(_drift_failures(chapter, entry.learner, display, "learner"))
        learner = "failed" if learner_failures else "ok"
        failures.extend(learner_failures)
        exercises = "ok"
        for key, folder in (("exercises", entry.exercises), ("solutions", entry.solutions)):
            if folder is not None and not folder.is_dir():
                exercises = "missing"
                failures.append(
                    Failure(
                        display,
                        1,
                        "exercises",
                        f"chapter {entry.number}: its `{key}` folder {display_path(folder)} "
                        "does not exist",
                    )
                )
    return ChapterVerdict(
        path=chapter.path,
        display=display,
        number=entry.number if entry else None,
        title=entry.title if entry else None,
        blocks=tuple(blocks),
        checkpoint=checkpoint,
        learner=learner,
        failures=tuple(mark_cascade([_bounded(failure) for failure in failures])),
        coverage=_coverage(chapter, checked=entry is not None),
        seconds=seconds,
        warnings=chapter.warnings,
        exercises=exercises,
        checkpoint_stdout=(
            checkpoint_run.stdout
            if checkpoint_run is not None and checkpoint_run.returncode == 0
            else None
        ),
    )
