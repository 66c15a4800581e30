"""Verifying chapters: schedule their child processes and judge what came back."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookproof.verify.chapter import Chapter, Listing, read_chapter
from bookproof.verify.compare import has_wildcards, matches, unified_diff
from bookproof.verify.drift import Role, find_drift
from bookproof.verify.environment import display_path
from bookproof.verify.execute import (
    ListingRun,
    ListingsRun,
    ProcessRun,
    import_learner,
    run_checkpoint,
    run_listings,
    stop_all,
)
from bookproof.verify.manifest import ManifestChapter
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

__all__ = [
    "ChapterFormatError",
    "ChapterJob",
    "judge_chapter",
    "mark_cascade",
    "verify_chapters",
]


@dataclass(frozen=True)
class ChapterJob:
    """A parsed chapter and, when the manifest names it, its manifest entry."""

    chapter: Chapter
    entry: ManifestChapter | None


def _frames_text(exception: dict[str, Any]) -> str:
    lines = ["Traceback (chapter lines):"]
    for frame in exception.get("frames", []):
        if "hidden" in frame:
            lines.append(f"  ... {frame['hidden']} frame(s) in library code ...")
            continue
        lines.append(
            f'  File "{display_path(Path(str(frame["file"])))}", line {frame["line"]}, '
            f"in {frame['name']}"
        )
        if frame["code"]:
            lines.append(f"    {frame['code']}")
    lines.append(str(exception.get("message", "")))
    return "\n".join(lines)


# A failure quotes this much of what was printed: enough to recognise, not a flood.
_QUOTED_LINES = 40


def _printed(text: str) -> str:
    lines = text.rstrip("\n").split("\n")
    quoted = [f"  | {line}" for line in lines[:_QUOTED_LINES]]
    if len(lines) > _QUOTED_LINES:
        quoted.append(f"  ... ({len(lines) - _QUOTED_LINES} more lines)")
    return "\n".join(quoted)


def _mode(listing: Listing) -> Mode:
    if listing.output is None:
        return "no-output"
    return "wildcard" if has_wildcards(listing.output.content) else "exact"


def _judge_listing(
    display: str, listing: Listing, run: ListingRun, listing_path: Path
) -> tuple[BlockVerdict, Failure | None]:
    """The verdict on one listing that ran, in the order a reader would check it:
    valid Python, the right exception (or none), then the printed output."""
    fence, output = listing.fence, listing.output

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
        return f"{detail}\nprinted before it:\n{_printed(run.stdout)}"

    if run.syntax_error is not None:
        error = run.syntax_error
        return failed(
            "syntax-error",
            f"the listing is not valid Python: {error['type']} at line {error.get('line')}",
            str(error["message"]).replace(str(listing_path), display),
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
                with_printed(_frames_text(run.exception)),
            )
    elif run.exception is not None:
        if run.flooded:
            return failed(
                "exception",
                "the listing printed more than the worker's file-size limit and was stopped",
                with_printed(_frames_text(run.exception)),
            )
        return failed(
            "exception",
            f"the listing raised {run.exception['type']}",
            with_printed(_frames_text(run.exception)),
        )

    if output is None:
        if run.stdout:
            return failed(
                "unexpected-output",
                "the listing printed output but has no `output` block (it must print nothing)",
                "printed:\n" + _printed(run.stdout),
            )
        return block("passed", updatable=True), None
    if matches(output.content, run.stdout):
        return block("passed", updatable=True), None
    note = " (cut at the capture limit)" if run.truncated else ""
    failure = Failure(
        display,
        fence.line,
        "output-mismatch",
        f"printed output differs from the `output` block at line {output.line}{note}",
        unified_diff(output.content, run.stdout, label=f"{display}:{output.line}"),
    )
    # Output cut at the capture limit is not the real output: never written back.
    return block("failed", updatable=not run.truncated), failure


def _judge_listings(
    display: str, path: Path, listings: Sequence[Listing], result: ListingsRun | None
) -> tuple[list[BlockVerdict], list[Failure]]:
    verdicts: list[BlockVerdict] = []
    failures: list[Failure] = []
    runs = result.runs if result else ()
    for index, listing in enumerate(listings):
        if index < len(runs):
            verdict, failure = _judge_listing(display, listing, runs[index], path)
            verdicts.append(verdict)
            if failure:
                failures.append(failure)
            continue
        # The worker stopped (time limit or crash) at the listing it was running.
        assert result is not None and result.stopped_kind is not None
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
            later = len(listings) - index - 1
            failures.append(
                Failure(
                    display,
                    listing.fence.line,
                    result.stopped_kind,
                    f"{result.stopped}: the worker was stopped, so the {later} later "
                    "listing(s) of this chapter were not run",
                    (
                        "printed before it was stopped:\n" + _printed(result.partial_stdout)
                        if result.partial_stdout
                        else ""
                    ),
                )
            )
        else:
            failures.append(
                Failure(
                    display,
                    listing.fence.line,
                    "not-run",
                    "not run: the worker was stopped at an earlier listing",
                )
            )
    return verdicts, failures


def _judge_checkpoint(
    display: str, chapter: Chapter, entry: ManifestChapter, run: ProcessRun
) -> list[Failure]:
    assert entry.checkpoint is not None
    where = display_path(entry.checkpoint)
    if run.timed_out:
        return [Failure(where, 1, "checkpoint", "the checkpoint did not finish in time: stopped")]
    if run.returncode != 0:
        return [
            Failure(
                where,
                1,
                "checkpoint",
                f"the checkpoint exited with status {run.returncode}",
                run.stderr[-2000:],
            )
        ]
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
    failures = []
    for fence in chapter.checkpoint_outputs:
        if not matches(fence.content, run.stdout, wildcards=False):
            failures.append(
                Failure(
                    display,
                    fence.line,
                    "checkpoint-output",
                    f"{where} prints something other than this `checkpoint-output` block",
                    unified_diff(fence.content, run.stdout, label=f"{display}:{fence.line}"),
                )
            )
    return failures


def _judge_learner(entry: ManifestChapter, run: ProcessRun) -> list[Failure]:
    assert entry.learner is not None
    where = display_path(entry.learner)
    if run.timed_out:
        return [Failure(where, 1, "learner", "importing the learner file did not finish in time")]
    if run.returncode != 0:
        return [
            Failure(
                where,
                1,
                "learner",
                f"importing the learner file failed (exit status {run.returncode})",
                run.stderr[-2000:],
            )
        ]
    printed = run.stdout + run.stderr
    if printed:
        return [
            Failure(
                where,
                1,
                "learner",
                "importing the learner file printed output (it must print nothing)",
                "printed:\n" + _printed(printed),
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
) -> ChapterVerdict:
    """Turn the raw runs of one chapter into its verdict."""
    chapter, entry = job.chapter, job.entry
    display = display_path(chapter.path)
    blocks, failures = _judge_listings(display, chapter.path, chapter.listings, listings_run)
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
        failures=tuple(mark_cascade(failures)),
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


class ChapterFormatError(Exception):
    """Chapters break the format (an `output` block with nothing to pair with): exit 2."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


@dataclass
class _ChapterRuns:
    """The child runs of one chapter, and how many are still to finish."""

    listings: Future[ListingsRun] | None = None
    checkpoint: Future[ProcessRun] | None = None
    learner: Future[ProcessRun] | None = None
    # Starts at 1 for the parse itself, so the chapter cannot be concluded
    # before every one of its runs has been submitted.
    pending: int = 1

    def futures(self) -> list[Future[Any]]:
        return [f for f in (self.listings, self.checkpoint, self.learner) if f is not None]


def verify_chapters(
    targets: Sequence[tuple[Path, ManifestChapter | None]],
    *,
    parallel: int,
    timeout: float,
    on_done: Callable[[ChapterVerdict], None],
) -> list[tuple[ChapterJob, ChapterVerdict]]:
    """Parse and verify every chapter; at most `parallel` child processes run at once.

    The unit of scheduling is a child process (a chapter's listings, its
    checkpoint, its learner import), so -j 1 runs exactly one at a time and
    -j N overlaps chapters as well as the three runs of one chapter. A
    chapter's checkpoint and learner runs are queued before its text is
    parsed, so the parsing overlaps them. `on_done` is called once per
    chapter, as soon as its last run ends. Raises ChapterError or
    ChapterFormatError (after stopping every run) when a chapter is unusable.
    """
    jobs: list[ChapterJob | None] = [None] * len(targets)
    verdicts: list[ChapterVerdict | None] = [None] * len(targets)
    errors: list[BaseException] = []
    problems: list[str] = []
    lock = threading.Lock()
    aborted = threading.Event()

    def conclude(position: int, runs: _ChapterRuns) -> None:
        if aborted.is_set():
            return
        try:
            job = jobs[position]
            assert job is not None
            listings = runs.listings.result() if runs.listings else None
            checkpoint = runs.checkpoint.result() if runs.checkpoint else None
            learner = runs.learner.result() if runs.learner else None
            seconds = sum(run.seconds for run in (listings, checkpoint, learner) if run)
            verdict = judge_chapter(job, listings, checkpoint, learner, seconds)
        except BaseException as error:  # a verifier defect must surface, never vanish
            with lock:
                errors.append(error)
            return
        with lock:
            verdicts[position] = verdict
            on_done(verdict)

    def release(position: int, runs: _ChapterRuns) -> None:
        with lock:
            runs.pending -= 1
            last = runs.pending == 0
        if last:
            conclude(position, runs)

    submitted: list[Future[Any]] = []
    pool = ThreadPoolExecutor(max_workers=max(1, parallel))
    try:
        for position, (path, entry) in enumerate(targets):
            runs = _ChapterRuns()
            if entry is not None and not problems:
                assert entry.checkpoint is not None and entry.learner is not None
                runs.checkpoint = pool.submit(run_checkpoint, entry.checkpoint, timeout)
                runs.learner = pool.submit(import_learner, entry.learner, timeout)
            chapter = read_chapter(path)
            jobs[position] = ChapterJob(chapter=chapter, entry=entry)
            problems.extend(chapter.problems)
            # After a format error nothing more is started: the run ends with
            # exit status 2 once every chapter's problems are known.
            if chapter.listings and not problems:
                runs.listings = pool.submit(run_listings, chapter.path, chapter.listings, timeout)
            started = runs.futures()
            submitted.extend(started)
            with lock:
                runs.pending += len(started)
            for future in started:
                future.add_done_callback(
                    lambda _, position=position, runs=runs: release(position, runs)
                )
            release(position, runs)
        if problems:
            aborted.set()
            for future in submitted:
                future.cancel()
        pool.shutdown(wait=True)
    except BaseException:
        # Ctrl-C or an unreadable chapter: no child may outlive the verifier.
        aborted.set()
        for future in submitted:
            future.cancel()
        stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    if problems:
        raise ChapterFormatError(problems)
    if errors:
        raise errors[0]
    results: list[tuple[ChapterJob, ChapterVerdict]] = []
    for job, verdict in zip(jobs, verdicts, strict=True):
        if job is None or verdict is None:
            raise RuntimeError("a chapter was left without a verdict")
        results.append((job, verdict))
    return results
