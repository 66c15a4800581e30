"""`grade-exercises`: grade a class's submissions for one exercise book.

Exit status: 0 when grading ran, whatever the scores; 2 for a usage error
(an unknown flag or book, a path that does not exist, a folder given twice,
a limit that is not a finite number in range, an output that is a folder or
the same file as another output); 3 when the sandbox the grader was asked
for is not available here (among them process mode run by root where the
user nobody cannot start the interpreter, unless --run-submissions-as-root
accepts running submissions as root); 4 when something the grader relies on (the
environment's packages, the runtime, the grader itself) changed while it
graded, in which case no report is written. A path that exists but cannot
be graded (a file, a FIFO, a link, a folder without the book's files or
holding anything but plain files) is not a usage error: it gets a row of
zeros with one line saying why, so one broken hand-in neither stops an
instructor's batch nor goes missing from the gradebook.
"""

from __future__ import annotations

import argparse
import math
import os
import secrets
import signal
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from types import FrameType

from bookproof.grade.book import Book, BookError
from bookproof.grade.books import load_book
from bookproof.grade.intake import printable
from bookproof.grade.integrity import changed, relied_on, snapshot
from bookproof.grade.learner_tests import ROOT, close_oracles
from bookproof.grade.provenance import grader_commit
from bookproof.grade.report import write_csv, write_gradescope, write_json, write_table
from bookproof.grade.reuse import Reuse, reusable
from bookproof.grade.roster import Roster, RosterError, read_roster
from bookproof.grade.runner import SubmissionReport, grade_submission
from bookproof.grade.sandbox import (
    Isolation,
    IsolationFailed,
    Limits,
    bubblewrap_problem,
    describe,
    one_sandbox_per_run,
    root_children_accepted,
    stop_everything,
    unprivileged_problem,
)

__all__ = ["main"]

USAGE_ERROR = 2
NO_ISOLATION = 3
ENVIRONMENT_CHANGED = 4
# Bounds that keep every limit a number the kernel's rlimits can hold.
MAX_TIMEOUT = 24 * 3600.0
MAX_MEMORY_MB = 1024 * 1024
# The isolation an instructor can ask for: the runtime's two modes, and
# process mode that insists on the unprivileged user (Gradescope's autograder).
UNPRIVILEGED = "unprivileged"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grade-exercises",
        description="Grade exercise-book submissions, each in its own sandbox.",
        epilog=(
            "Exit status: 0 when grading ran (whatever the scores), 2 for a usage error, "
            "3 when the requested isolation is not available (process mode run by root "
            "where nobody cannot start Python included), 4 when the environment, the "
            "runtime or the grader changed while grading (no report is written). Progress "
            "goes to stderr, one line per submission (with the runs of its learner tests made "
            "and reused), then, for a book that grades learners' tests, one line of the "
            "batch's runs; the table to stdout; files are "
            "written once, at the end."
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
        "--roster",
        type=Path,
        metavar="CSV",
        help="a CSV file with the columns folder,student_id and optionally name: the CSV "
        "gradebook and the JSON report give each submission its student id (and name). A "
        "roster folder not graded, or a graded folder not on the roster, is warned about on "
        "stderr; the folder is still graded",
    )
    parser.add_argument(
        "--gradescope",
        type=Path,
        metavar="DIR",
        help="write Gradescope's results.json into DIR, made if missing (exactly one submission)",
    )
    parser.add_argument(
        "--isolation",
        choices=[*(mode.value for mode in Isolation), UNPRIVILEGED],
        default=Isolation.BUBBLEWRAP.value,
        help="bubblewrap (default): each submission in its own sandbox, read-only, no "
        "network, refusing to grade where none can be made. process: the same limits "
        "without namespaces; run by root, a submission runs as the unprivileged user "
        "nobody, so it cannot write the environment, the runtime or the grader, nor read "
        "what nobody cannot read, but it has the network and can read every "
        "world-readable file; where nobody cannot start this interpreter, the grader "
        "refuses (exit 3) unless you pass --run-submissions-as-root; run by anyone else, "
        "as your user, reading and writing what you can. In every mode a batch that "
        "finds those trees changed afterwards fails (exit 4). unprivileged: process mode "
        "that refuses to grade unless submissions run as nobody",
    )
    parser.add_argument(
        "--run-submissions-as-root",
        action="store_true",
        help="with --isolation process, run by root where the user nobody cannot start "
        "this interpreter: accept running each submission as root, which can read and "
        "write everything root can (the first line printed says so). Only for "
        "submissions you trust",
    )
    parser.add_argument(
        "--one-sandbox-per-run",
        action="store_true",
        help="in bubblewrap mode, start a sandbox of its own for every run of a learner's "
        "tests, instead of forking each run, in namespaces of its own, from one warm "
        "sandbox per worker: slower, the same grades (the benchmark's baseline). "
        "Where the kernel refuses namespaces inside the sandbox this is the path taken anyway",
    )
    parser.add_argument(
        "--no-reuse",
        action="store_true",
        help="run every folder's learner tests afresh. By default, in bubblewrap mode, within "
        "one batch, a test file whose runs would see exactly the same bytes as another "
        "folder's (the tests, every other file of the folder, the seed, the limits, the "
        "options) is run once and its verdicts given to each identical copy; the progress "
        "lines say how many runs were reused (see exercises/GRADING.md). Process mode never "
        "reuses: there a run sees more than its folder",
    )
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
        help="wall-clock limit for importing a submission and for each question of a check "
        "(default 10); a run of a learner's tests gets 3x that, at least 30",
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
        help="the seed of the randomised data (in the JSON report); the same seed asks the "
        "same questions and gives the same grades. Default: fresh each run",
    )
    return parser


def submission_names(folders: Sequence[Path]) -> list[str]:
    """Each folder's name, lengthened by its parents only where two names would be the same.

    A gradebook row must say whose work it is: `alice` stays `alice`, but two
    folders both called `book02` become `solutions/book02` and `exercises/book02`.
    Every name is made printable: escapes instead of control characters.
    """
    paths = [Path(os.path.abspath(folder)) for folder in folders]
    depth = [1] * len(paths)

    def label(index: int) -> str:
        return printable("/".join(paths[index].parts[-depth[index] :]))

    while True:
        seen: dict[str, list[int]] = {}
        for index in range(len(paths)):
            seen.setdefault(label(index), []).append(index)
        clashes = [group for group in seen.values() if len(group) > 1]
        if not clashes:
            return [label(index) for index in range(len(paths))]
        for group in clashes:
            for index in group:
                depth[index] = min(depth[index] + 1, len(paths[index].parts))


def _usage(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"grade-exercises: {message}", file=sys.stderr)
    return USAGE_ERROR


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _limits_problem(args: argparse.Namespace) -> str | None:
    if args.jobs < 1:
        return "-j must be at least 1"
    if not math.isfinite(args.timeout) or not 0 < args.timeout <= MAX_TIMEOUT:
        return f"--timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}"
    if not 64 <= args.memory_mb <= MAX_MEMORY_MB:
        return f"--memory-mb must be at least 64 and at most {MAX_MEMORY_MB}"
    return None


def _outputs_problem(args: argparse.Namespace) -> str | None:
    """Why the report files cannot be written as asked, checked before any grading."""
    files: list[tuple[str, Path]] = []
    for flag, output in (("--json", args.json), ("--csv", args.csv)):
        if output is None:
            continue
        if output.is_dir():
            return f"{flag} names a folder, not a file: {printable(str(output))}"
        if not output.parent.is_dir():
            return f"no folder for {flag} {printable(str(output))}"
        files.append((flag, output))
    if args.gradescope is not None:
        folder: Path = args.gradescope
        if os.path.lexists(folder) and not folder.is_dir():
            return f"--gradescope needs a folder: {printable(str(folder))} is not one"
        if not folder.is_dir() and not folder.parent.is_dir():
            return f"no folder for --gradescope {printable(str(folder))}"
        files.append(("--gradescope", folder / "results.json"))
    resolved = [os.path.realpath(path) for _, path in files]
    for index, path in enumerate(resolved):
        if path in resolved[:index]:
            first = files[resolved.index(path)][0]
            return f"{first} and {files[index][0]} name the same file: {printable(path)}"
    return None


def _distinct(folders: list[Path]) -> tuple[list[Path], list[str]]:
    """The folders with each real folder once (the first name given), and a note per alias."""
    kept: list[Path] = []
    notes: list[str] = []
    seen: dict[str, Path] = {}
    for folder in folders:
        # A link given itself is graded (and refused) as a link; only a
        # folder reached twice through a linked parent is the same hand-in.
        real = str(folder) if os.path.islink(folder) else os.path.realpath(folder)
        if real in seen:
            notes.append(
                f"grade-exercises: {printable(str(folder))} is the same folder as "
                f"{printable(str(seen[real]))}: graded once, as {printable(str(seen[real]))}"
            )
            continue
        seen[real] = folder
        kept.append(folder)
    return kept, notes


def _isolation(choice: str, *, root_accepted: bool) -> Isolation | str:
    """The isolation to grade in, or why the one asked for is not available here."""
    if choice == Isolation.BUBBLEWRAP.value:
        problem = bubblewrap_problem()
        if problem is not None:
            return (
                f"{problem}.\nWithout a sandbox a submission can read what its user can "
                "read (see --help for who that is). To accept that, pass --isolation process."
            )
        return Isolation.BUBBLEWRAP
    if choice == UNPRIVILEGED:
        problem = unprivileged_problem()
        if problem is not None:
            return f"{problem}; --isolation unprivileged grades only as user nobody."
    elif os.geteuid() == 0 and not root_accepted:
        # Root is the one caller for whom a silent fallback would hand a
        # submission everything: the environment, the runtime, the grader,
        # every learner's folder. Only an explicit flag may accept that.
        problem = unprivileged_problem()
        if problem is not None:
            return (
                f"{problem}, so --isolation process would run each submission as root; "
                "pass --run-submissions-as-root to accept that, or install Python where "
                "nobody can start it."
            )
    return Isolation.PROCESS


def main(argv: Sequence[str] | None = None) -> int:
    # The grader writes no bytecode while it grades: the trees it checks for
    # changes afterwards must change only if something else changed them.
    sys.dont_write_bytecode = True
    parser = _parser()
    args = parser.parse_args(argv)
    problem = _limits_problem(args)
    if problem is not None:
        return _usage(parser, problem)
    try:
        book: Book = load_book(args.book)
    except BookError as exc:
        return _usage(parser, str(exc))
    given: list[Path] = args.submissions
    for folder in given:
        if not os.path.lexists(folder):
            return _usage(parser, f"no such file or folder: {printable(str(folder))}")
    absolute = [os.path.abspath(folder) for folder in given]
    for index, path in enumerate(absolute):
        if path in absolute[:index]:
            # Graded twice, it would take two rows of the gradebook for one learner.
            return _usage(parser, f"given twice: {printable(str(given[index]))}")
    folders, aliases = _distinct(given)
    if args.gradescope is not None and len(folders) != 1:
        return _usage(parser, "--gradescope grades exactly one submission")
    problem = _outputs_problem(args)
    if problem is not None:
        return _usage(parser, problem)
    roster: Roster | None = None
    if args.roster is not None:
        try:
            roster = read_roster(args.roster)
        except RosterError as exc:
            return _usage(parser, f"--roster {printable(str(args.roster))}: {exc}")
    if args.run_submissions_as_root and args.isolation != Isolation.PROCESS.value:
        return _usage(parser, "--run-submissions-as-root goes only with --isolation process")
    isolation = _isolation(args.isolation, root_accepted=args.run_submissions_as_root)
    if not isinstance(isolation, Isolation):
        print(f"grade-exercises: refusing to grade: {isolation}", file=sys.stderr)
        return NO_ISOLATION
    if args.gradescope is not None:
        # Made like --json's file: in a folder that exists, before grading.
        args.gradescope.mkdir(exist_ok=True)
    for note in aliases:
        print(note, file=sys.stderr)
    names = submission_names(folders)
    if roster is not None:
        _warn_unmatched(roster, names)
    limits = Limits(timeout=args.timeout, memory_bytes=args.memory_mb * 1024 * 1024)
    seed = args.seed if args.seed is not None else secrets.randbits(63)
    with one_sandbox_per_run(args.one_sandbox_per_run):
        return _grade_and_report(args, book, folders, names, roster, isolation, limits, seed)


def _grade_and_report(
    args: argparse.Namespace,
    book: Book,
    folders: list[Path],
    names: list[str],
    roster: Roster | None,
    isolation: Isolation,
    limits: Limits,
    seed: int,
) -> int:
    print(f"grade-exercises: {book.title}; {describe(isolation)}; seed {seed}", file=sys.stderr)
    signal.signal(signal.SIGTERM, _interrupted)
    # Taken before grading: the report names the grader that graded.
    grader = grader_commit(ROOT)
    trees = relied_on()
    before = snapshot(trees)
    # The option that changes how a run of a learner's tests is started (only
    # bubblewrap reuses); the seed, isolation and limits go into each key
    # beside it (`reuse.runs_key`).
    reuse = (
        None
        if args.no_reuse or not reusable(isolation)
        else Reuse({"one_sandbox_per_run": args.one_sandbox_per_run})
    )
    try:
        with root_children_accepted(args.run_submissions_as_root):
            reports = _grade_all(folders, names, book, isolation, limits, seed, args.jobs, reuse)
    except KeyboardInterrupt:
        stop_everything()
        print("grade-exercises: interrupted; no report was written", file=sys.stderr)
        return 130
    except IsolationFailed as exc:
        stop_everything()
        print(
            f"grade-exercises: the sandbox failed ({exc}); no report was written", file=sys.stderr
        )
        return NO_ISOLATION
    close_oracles()
    if book.groups():
        print(_runs_line(reports, reuse, args.no_reuse), file=sys.stderr)
    altered = changed(before, snapshot(trees))
    if altered:
        more = f" (and {len(altered) - 1} more)" if len(altered) > 1 else ""
        print(
            f"grade-exercises: refusing to finish: {printable(altered[0])}{more} changed "
            "while grading, and every later run would rely on it; no report was written. "
            "Reinstall the environment before grading again.",
            file=sys.stderr,
        )
        return ENVIRONMENT_CHANGED
    # Every child is gone by now: write each output once, whole.
    write_table(sys.stdout, book, reports)
    if args.json is not None:
        write_json(
            args.json,
            book,
            reports,
            seed=seed,
            isolation=isolation,
            grader=grader,
            roster=roster,
            reuse=reuse is not None,
        )
    if args.csv is not None:
        write_csv(args.csv, book, reports, roster)
    if args.gradescope is not None:
        write_gradescope(args.gradescope, book, reports[0], seed=seed, grader=grader)
    return 0


def _warn_unmatched(roster: Roster, names: Sequence[str]) -> None:
    """One line on stderr per roster folder not graded and per graded folder not on it."""
    absent, missing = roster.unmatched(names)
    for folder in absent:
        print(
            f"grade-exercises: warning: the roster names {printable(folder)}, which is not "
            "among the folders graded",
            file=sys.stderr,
        )
    for name in missing:
        print(
            f"grade-exercises: warning: {name} is not on the roster: graded, with no student id",
            file=sys.stderr,
        )


def _runs_said(report: SubmissionReport) -> str:
    """The runs of a folder's learner tests, made and reused, for its progress line."""
    if not report.test_runs and not report.reused_runs:
        return ""
    made = f"{report.test_runs} test run{'s' if report.test_runs != 1 else ''}"
    if not report.reused_runs:
        return f"; {made}"
    return f"; {made}, {report.reused_runs} reused from an identical folder"


def _runs_line(reports: Sequence[SubmissionReport], reuse: Reuse | None, refused: bool) -> str:
    """The batch's runs of learners' tests: how many were made, how many reused, or why none."""
    made = sum(report.test_runs for report in reports)
    reused = sum(report.reused_runs for report in reports)
    if reuse is None:
        why = "--no-reuse" if refused else "process mode, where a run can see more than its folder"
        return f"grade-exercises: runs of learners' tests: {made} made, none reused ({why})"
    return (
        f"grade-exercises: runs of learners' tests: {made} made, {reused} reused from a folder "
        "whose runs would see the same bytes (--no-reuse runs every one)"
    )


def _grade_all(
    folders: Sequence[Path],
    names: Sequence[str],
    book: Book,
    isolation: Isolation,
    limits: Limits,
    seed: int,
    jobs: int,
    reuse: Reuse | None,
) -> list[SubmissionReport]:
    reports: list[SubmissionReport | None] = [None] * len(folders)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {
            pool.submit(
                grade_submission,
                folder,
                book,
                isolation=isolation,
                limits=limits,
                seed=seed,
                name=names[index],
                reuse=reuse,
            ): index
            for index, folder in enumerate(folders)
        }
        try:
            for done, future in enumerate(as_completed(futures), start=1):
                report = future.result()
                reports[futures[future]] = report
                print(
                    f"[{done}/{len(folders)}] {report.submission}: "
                    f"{report.total}/{report.max} ({report.seconds:.1f} s{_runs_said(report)})",
                    file=sys.stderr,
                    flush=True,
                )
        except BaseException:
            for future in futures:
                future.cancel()
            stop_everything()
            raise
    return [report for report in reports if report is not None]


if __name__ == "__main__":
    raise SystemExit(main())
