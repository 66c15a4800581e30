"""`grade-exercises`: grade a class's submissions for one exercise book.

Exit status: 0 when grading ran, whatever the scores; 2 for a usage error
(an unknown flag or book, a folder that does not exist). A folder that exists
but lacks the book's files is not a usage error: it is graded, with zero and
a feedback line naming the missing file, so one mistaken hand-in does not stop
an instructor's batch and still gets a row in the gradebook.
"""

from __future__ import annotations

import argparse
import random
import secrets
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from bookproof.grade.books import BookError, load_book
from bookproof.grade.report import write_csv, write_json, write_table
from bookproof.grade.runner import Limits, SubmissionReport, grade_submission

__all__ = ["main"]

USAGE_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grade-exercises",
        description="Grade exercise-book submissions, each in its own limited process.",
        epilog=(
            "Exit status: 0 when grading ran (whatever the scores), 2 for a usage error. "
            "Progress goes to stderr, one line per submission; the table to stdout."
        ),
    )
    parser.add_argument("--book", type=int, required=True, help="exercise book number, e.g. 2")
    parser.add_argument(
        "submissions",
        nargs="+",
        type=Path,
        metavar="SUBMISSION_DIR",
        help="one learner's folder, holding the file(s) the book names (book 2: shop_tools.py)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    parser.add_argument("--csv", type=Path, metavar="PATH", help="write the CSV gradebook here")
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="submissions graded at once (default 1)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="wall-clock limit for importing a submission and for each step of a check "
        "(default 10)",
    )
    parser.add_argument(
        "--memory-mb",
        type=int,
        default=1024,
        metavar="MB",
        help="address-space limit for one submission's process (default 1024)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="fix the randomised scenario data (to reproduce a run); default: fresh each run",
    )
    return parser


def submission_names(folders: Sequence[Path]) -> list[str]:
    """Each folder's name, lengthened by its parents only where two names would be the same.

    A gradebook row must say whose work it is: `alice` stays `alice`, but two
    folders both called `book02` become `solutions/book02` and `exercises/book02`.
    """
    paths = [folder.resolve() for folder in folders]
    depth = [1] * len(paths)

    def label(index: int) -> str:
        return "/".join(paths[index].parts[-depth[index] :])

    while True:
        seen: dict[str, list[int]] = {}
        for index in range(len(paths)):
            seen.setdefault(label(index), []).append(index)
        clashes = [group for group in seen.values() if len(group) > 1]
        if not clashes:
            return [label(index) for index in range(len(paths))]
        for group in clashes:
            for index in group:
                depth[index] += 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.timeout <= 0 or args.memory_mb < 64:
        parser.print_usage(sys.stderr)
        print("grade-exercises: -j, --timeout and --memory-mb must be positive", file=sys.stderr)
        return USAGE_ERROR
    try:
        book = load_book(args.book)
    except BookError as exc:
        print(f"grade-exercises: {exc}", file=sys.stderr)
        return USAGE_ERROR
    folders: list[Path] = args.submissions
    for folder in folders:
        if not folder.is_dir():
            print(f"grade-exercises: not a folder: {folder}", file=sys.stderr)
            return USAGE_ERROR
    resolved = [folder.resolve() for folder in folders]
    for index, path in enumerate(resolved):
        if path in resolved[:index]:
            # Graded twice, it would take two rows of the gradebook for one learner.
            print(f"grade-exercises: folder given twice: {folders[index]}", file=sys.stderr)
            return USAGE_ERROR
    names = submission_names(folders)
    for output in (args.json, args.csv):
        if output is not None and not output.parent.is_dir():
            print(f"grade-exercises: no folder for {output}", file=sys.stderr)
            return USAGE_ERROR
    limits = Limits(timeout=args.timeout, memory_bytes=args.memory_mb * 1024 * 1024)
    seed = args.seed if args.seed is not None else secrets.randbits(64)
    # One generator per submission, drawn up front: the same seed gives the
    # same data whatever order the parallel workers finish in.
    seeds = random.Random(seed).sample(range(2**62), len(folders))
    reports: list[SubmissionReport | None] = [None] * len(folders)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {
            pool.submit(
                grade_submission, folder, book, limits, random.Random(seeds[i]), name=names[i]
            ): i
            for i, folder in enumerate(folders)
        }
        for done, future in enumerate(as_completed(futures), start=1):
            index = futures[future]
            report = future.result()
            reports[index] = report
            print(
                f"[{done}/{len(folders)}] {report.submission}: "
                f"{report.total}/{report.max} ({report.seconds:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
    finished = [report for report in reports if report is not None]
    write_table(sys.stdout, finished)
    if args.json is not None:
        write_json(args.json, book.BOOK, finished)
    if args.csv is not None:
        write_csv(args.csv, book.CHECKS, finished)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
