"""`verify-book`, the command line of the book verifier (`scripts/verify_book_assets_v2.py`).

Exit status: 0 when everything verified holds, 1 when anything failed,
2 for a usage error (unknown flag, missing file, malformed manifest or
chapter, a file named by the manifest missing, `--isolation bwrap` where
bubblewrap cannot run).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from bookproof.verify.chapter import ChapterError
from bookproof.verify.environment import DEFAULT_CACHE_DIR, DEFAULT_MANIFEST, display_path
from bookproof.verify.files import regular_file_problem, shown
from bookproof.verify.isolation import CHOICES, Isolation, IsolationUnavailable, choose_isolation
from bookproof.verify.manifest import Manifest, ManifestChapter, ManifestError, load_manifest
from bookproof.verify.report import (
    construction_report,
    failure_text,
    progress_line,
    write_json,
    write_junit,
)
from bookproof.verify.verdict import ChapterVerdict, Failure
from bookproof.verify.verification import ChapterFormatError, ChapterJob, verify_chapters

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """The command cannot run as asked; reported on stderr with exit status 2."""


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="verify-book",
        description=(
            "Run every listing of the book's chapters, diff their printed output against "
            "the expected-output blocks, run each checkpoint, import each learner file, "
            "and print the construction report."
        ),
        epilog="Exit status: 0 everything verified holds, 1 something failed, 2 usage error.",
    )
    parser.add_argument(
        "chapters",
        nargs="*",
        type=Path,
        metavar="CHAPTER.md",
        help="chapter files to verify (in or outside the repository)",
    )
    parser.add_argument(
        "--textbook",
        action="store_true",
        help="verify every drafted chapter of the manifest; a chapter that held and whose "
        "inputs are unchanged since is taken from the cache instead of run again (see "
        "--no-cache)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="run every chapter afresh, neither reading nor writing the cache (CI does). "
        "The cache keeps, per chapter of --textbook, the verdict of a run in which it held; "
        "it is used while the chapter's text and composed listings, its manifest entry, the "
        "book folder's other files (checkpoints, learner files, figures, data), src/ (the "
        "runtime and this verifier), scripts/, uv.lock, pyproject.toml, the interpreter, "
        "--timeout and the isolation are all unchanged. A cached chapter is reported as "
        "cached, never as verified in this run. Clear the cache by deleting its folder",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_CACHE_DIR,
        metavar="DIR",
        help=f"where the cache lives (default: {display_path(DEFAULT_CACHE_DIR)}, ignored by git)",
    )
    parser.add_argument(
        "--manifest",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"the book manifest (default: {display_path(DEFAULT_MANIFEST)}); "
        "mainly for testing the verifier on a fixture book",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_float,
        default=30.0,
        metavar="SECONDS",
        help="time limit per listing, checkpoint run and learner import (default: 30)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=_positive_int,
        default=1,
        metavar="N",
        help="run up to N child processes at once, chapters in parallel (default: 1)",
    )
    parser.add_argument(
        "--isolation",
        choices=CHOICES,
        default="auto",
        help="where book code runs: 'bwrap', each chapter's listings, checkpoint and learner "
        "import in bubblewrap sandboxes with their own PID and network namespaces (no signal "
        "reaches the verifier, no connection leaves); 'none', beside the verifier, as this "
        "user; 'auto' (default), bwrap when it works here, else none. The report says which",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write a JSON report to PATH")
    parser.add_argument("--junit", type=Path, metavar="PATH", help="write a JUnit XML report")
    parser.add_argument(
        "--update",
        action="store_true",
        help="rewrite failing `output` and `checkpoint-output` blocks from the actual output "
        "(nothing else in the file changes)",
    )
    return parser


def _load_manifest(arguments: argparse.Namespace) -> Manifest | None:
    path: Path = arguments.manifest or DEFAULT_MANIFEST
    if arguments.manifest is None and not arguments.textbook and not path.is_file():
        return None
    try:
        return load_manifest(path)
    except ManifestError as error:
        raise UsageError(str(error)) from None


def _targets(
    arguments: argparse.Namespace, manifest: Manifest | None
) -> list[tuple[Path, ManifestChapter | None]]:
    if arguments.textbook:
        assert manifest is not None
        return [(c.text, c) for c in manifest.chapters if c.drafted and c.text is not None]
    targets: list[tuple[Path, ManifestChapter | None]] = []
    for path in arguments.chapters:
        try:
            str(path).encode("utf-8")
        except UnicodeEncodeError:  # bytes the file system decoder could not read
            raise UsageError(f"{shown(path)}: the file name is not UTF-8 text") from None
        problem = regular_file_problem(path)
        if problem == "no such file":
            raise UsageError(f"{shown(path)}: no such chapter file")
        if problem is not None:
            raise UsageError(f"{shown(path)}: cannot verify it: {problem}")
        targets.append((path.resolve(), manifest.chapter_for_text(path) if manifest else None))
    return targets


def _isolation(choice: str) -> Isolation:
    try:
        return choose_isolation(choice)
    except IsolationUnavailable as error:
        raise UsageError(str(error)) from None


def _update(results: Sequence[tuple[ChapterJob, ChapterVerdict]]) -> list[ChapterVerdict]:
    from bookproof.verify.update import UpdateRefused, update_chapter  # only --update pays

    updated = []
    for job, verdict in results:
        try:
            updated.append(update_chapter(job.chapter, verdict))
        except UpdateRefused as error:
            refusal = Failure(verdict.display, 1, "output-mismatch", f"--update refused: {error}")
            updated.append(dataclasses.replace(verdict, failures=(*verdict.failures, refusal)))
    return updated


def run(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if arguments.textbook and arguments.chapters:
        parser.error("give either --textbook or chapter files, not both")
    if not arguments.textbook and not arguments.chapters:
        parser.error("nothing to verify: give --textbook or one or more chapter files")
    try:
        manifest = _load_manifest(arguments)
        targets = _targets(arguments, manifest)
        isolation = _isolation(arguments.isolation)
    except UsageError as error:
        print(f"verify-book: error: {error}", file=sys.stderr)
        return EXIT_USAGE

    out = sys.stdout
    cache_note = ""
    if arguments.textbook:
        cache_note = (
            ", cache off"
            if arguments.no_cache
            else f", cache {display_path(arguments.cache_dir.resolve())}"
        )
    print(
        f"verifying {len(targets)} chapter(s) (-j {arguments.jobs}, "
        f"--timeout {arguments.timeout:g} s, isolation {isolation.mode}{cache_note})",
        file=out,
        flush=True,
    )

    def on_done(verdict: ChapterVerdict) -> None:
        print(progress_line(verdict), file=out, flush=True)

    cache = None
    if arguments.textbook and not arguments.no_cache:
        # Imported here: the cache validates its entries with pydantic, whose import
        # would more than double the start-up of every run that does not use it.
        from bookproof.verify.cache import VerdictCache, shared_inputs_digest

        assert manifest is not None
        shared = shared_inputs_digest(manifest, timeout=arguments.timeout, isolation=isolation.mode)
        cache = VerdictCache(arguments.cache_dir, shared, manifest)
    try:
        results = verify_chapters(
            targets,
            parallel=arguments.jobs,
            timeout=arguments.timeout,
            isolation=isolation,
            on_done=on_done,
            manifest=manifest,
            cache=cache,
        )
    except ChapterError as error:
        print(f"verify-book: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("verify-book: interrupted; every child process was stopped", file=sys.stderr)
        return EXIT_FAILED
    except ChapterFormatError as error:
        print("verify-book: error: malformed chapter:", file=sys.stderr)
        for problem in error.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_USAGE
    verdicts = _update(results) if arguments.update else [verdict for _, verdict in results]

    for verdict in verdicts:
        for warning in verdict.warnings:
            print(f"warning: {warning}", file=out)
        for location in verdict.updated:
            print(f"updated: {location}", file=out)
    failures = [failure for verdict in verdicts for failure in verdict.failures]
    if failures:
        print("\nFailures", file=out)
        for verdict in verdicts:
            for index, failure in enumerate(verdict.failures):
                if index == 0:
                    print(f"-- {verdict.display}", file=out)
                print(failure_text(failure), file=out)
    if verdicts:
        print("\nCoverage", file=out)
        for verdict in verdicts:
            print(f"  {verdict.label}: {verdict.coverage.line()}", file=out)
    print("", file=out)
    for line in construction_report(
        manifest, verdicts, textbook=arguments.textbook, isolation=isolation
    ):
        print(line, file=out)

    status = EXIT_FAILED if failures else EXIT_OK
    try:
        if arguments.json:
            write_json(
                arguments.json,
                manifest if arguments.textbook else None,
                verdicts,
                status,
                isolation,
            )
        if arguments.junit:
            write_junit(arguments.junit, verdicts)
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        print(f"verify-book: error: cannot write a report: {reason}", file=sys.stderr)
        return EXIT_USAGE
    return status


def main(argv: Sequence[str] | None = None) -> None:
    if hasattr(signal, "SIGXFSZ"):
        # Past a file-size limit (`ulimit -f`) a write then fails with an error
        # the verifier reports, instead of the signal killing it mid-report.
        # Child processes get the default back (subprocess restores it).
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            # A listing's output quoted to a terminal that cannot show it is
            # escaped, not a UnicodeEncodeError that loses the report.
            stream.reconfigure(errors="backslashreplace")
    try:
        status = run(argv)
    except BrokenPipeError:
        # The reader closed the pipe (`| head`): stop quietly, and say nothing held.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = EXIT_FAILED
    sys.exit(status)


if __name__ == "__main__":
    main()
