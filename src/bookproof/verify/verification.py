"""Verifying chapters: schedule their child processes, then have each chapter judged."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bookproof.verify.chapter import Chapter, read_chapter
from bookproof.verify.compose import compose_chapter
from bookproof.verify.execute import (
    ListingsRun,
    ProcessRun,
    import_learner,
    run_checkpoint,
    run_listings,
    stop_all,
)
from bookproof.verify.figures import FiguresRun, draw_figures, find_figures
from bookproof.verify.isolation import Isolation
from bookproof.verify.judge import ChapterJob, judge_chapter
from bookproof.verify.manifest import Manifest, ManifestChapter
from bookproof.verify.verdict import ChapterVerdict

if TYPE_CHECKING:
    # Only a caller that uses the cache imports it (and the pydantic it validates
    # entries with): a run of named chapters or `--no-cache` starts without both.
    from bookproof.verify.cache import CacheLookup, VerdictCache

__all__ = ["ChapterFormatError", "ChapterJob", "verify_chapters"]


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
    figures: Future[FiguresRun] | None = None
    # Starts at 1 for the parse itself, so the chapter cannot be concluded
    # before every one of its runs has been submitted.
    pending: int = 1

    def futures(self) -> list[Future[Any]]:
        runs = (self.listings, self.checkpoint, self.learner, self.figures)
        return [f for f in runs if f is not None]


def earlier_chapters(
    entry: ManifestChapter | None, manifest: Manifest | None
) -> Callable[[], list[Chapter]]:
    """The drafted chapters before `entry` in the book, read when first asked for.

    A `changes=` listing may change a definition an earlier chapter gave; a
    chapter the manifest does not name has no earlier chapters.
    """

    def read() -> list[Chapter]:
        if entry is None or manifest is None:
            return []
        return [
            read_chapter(chapter.text)
            for chapter in manifest.chapters
            if chapter.drafted and chapter.text is not None and chapter.number < entry.number
        ]

    return read


def verify_chapters(
    targets: Sequence[tuple[Path, ManifestChapter | None]],
    *,
    parallel: int,
    timeout: float,
    isolation: Isolation,
    on_done: Callable[[ChapterVerdict], None],
    manifest: Manifest | None = None,
    cache: VerdictCache | None = None,
) -> list[tuple[ChapterJob, ChapterVerdict]]:
    """Parse and verify every chapter; at most `parallel` child processes run at once.

    The unit of scheduling is a child process (a chapter's listings, its
    checkpoint, its learner import), so -j 1 runs exactly one at a time and
    -j N overlaps chapters as well as the three runs of one chapter. A
    chapter's checkpoint and learner runs are queued before its text is
    parsed, so the parsing overlaps them. `on_done` is called once per
    chapter, as soon as its last run ends. Raises ChapterError or
    ChapterFormatError (after stopping every run) when a chapter is unusable.

    With a `cache`, each chapter is parsed first and looked up: a hit is its
    verdict (marked as cached, nothing of it runs); a miss runs as above, and
    a verdict that holds is stored.
    """
    jobs: list[ChapterJob | None] = [None] * len(targets)
    lookups: list[CacheLookup | None] = [None] * len(targets)
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
            figures = runs.figures.result() if runs.figures else None
            seconds = sum(run.seconds for run in (listings, checkpoint, learner, figures) if run)
            verdict = dataclasses.replace(
                judge_chapter(job, listings, checkpoint, learner, seconds, figures),
                isolation=isolation.mode,
            )
            lookup = lookups[position]
            if cache is not None and lookup is not None:
                notes = [lookup.warning, cache.store(job, lookup.key, verdict)]
                extra = tuple(note for note in notes if note is not None)
                verdict = dataclasses.replace(verdict, warnings=(*verdict.warnings, *extra))
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

    def when_done(position: int, runs: _ChapterRuns) -> Callable[[Future[Any]], None]:
        def callback(_: Future[Any]) -> None:
            release(position, runs)

        return callback

    submitted: list[Future[Any]] = []
    pool = ThreadPoolExecutor(max_workers=max(1, parallel))
    try:
        for position, (path, entry) in enumerate(targets):
            runs = _ChapterRuns()

            def start_reader_files(
                runs: _ChapterRuns = runs, entry: ManifestChapter | None = entry
            ) -> None:
                if entry is not None and not problems:
                    assert entry.checkpoint is not None and entry.learner is not None
                    runs.checkpoint = pool.submit(
                        run_checkpoint, entry.checkpoint, timeout, isolation
                    )
                    runs.learner = pool.submit(import_learner, entry.learner, timeout, isolation)

            if cache is None:
                start_reader_files()  # before parsing, which then overlaps them
            chapter = compose_chapter(read_chapter(path), earlier_chapters(entry, manifest))
            figures = find_figures(path, chapter.text, entry.number if entry else None)
            parsed = ChapterJob(chapter=chapter, entry=entry, figures=tuple(figures))
            jobs[position] = parsed
            problems.extend(chapter.problems)
            if cache is not None and not problems:
                lookup = lookups[position] = cache.lookup(parsed)
                if lookup.verdict is not None:
                    with lock:
                        verdicts[position] = lookup.verdict
                        on_done(lookup.verdict)
                    continue  # unchanged since it held: nothing of it runs
                start_reader_files()
            # After a format error nothing more is started: the run ends with
            # exit status 2 once every chapter's problems are known.
            if chapter.listings and not problems:
                runs.listings = pool.submit(
                    run_listings, chapter.path, chapter.listings, timeout, isolation
                )
            # Figures are drawn by the repository's own scripts, not by
            # listings, so they run outside the listings' sandbox.
            scripts = sorted(
                {figure.script for figure in figures if figure.problem is None}
                & {figure.script for figure in figures if figure.script.is_file()}
            )
            if scripts and not problems:
                runs.figures = pool.submit(draw_figures, scripts, timeout)
            started = runs.futures()
            submitted.extend(started)
            with lock:
                runs.pending += len(started)
            for future in started:
                future.add_done_callback(when_done(position, runs))
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
