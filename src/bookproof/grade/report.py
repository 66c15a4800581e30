"""The grader's outputs: a terminal table, a JSON report, a CSV gradebook and Gradescope's results.

Everything written here comes from the grader's own records: check ids,
points, outcomes, and feedback sentences the book module wrote. No text a
submission produced (its output, its exception messages) is ever included,
and every submission name has already been made printable (`intake.printable`).

Files are written whole or not at all: to a temporary file in the same
folder, then renamed over the target (`os.replace`), once, after every
child process of the batch is gone. Each is made readable by its group
(mode 0640, whatever the umask): a gradebook is shared with the course's
other instructors and teaching assistants through a group, and never with
every user of the machine.

Visibility: the instructor who runs the grader sees every check, and the
table and the JSON report mark the ones a learner does not see at once
(`hidden`, `after_due_date`, `after_published`); Gradescope's results.json
carries each check's visibility, for Gradescope to honour.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from bookproof.grade.book import BASELINE, EXERCISE, Book, Visibility
from bookproof.grade.intake import printable
from bookproof.grade.provenance import made_at
from bookproof.grade.roster import Roster
from bookproof.grade.runner import CheckOutcome, SubmissionReport
from bookproof.grade.sandbox import Isolation, describe

__all__ = [
    "REPORT_MODE",
    "gradescope_results",
    "to_json",
    "write_atomically",
    "write_csv",
    "write_gradescope",
    "write_json",
    "write_table",
]


# Owner reads and writes, the group reads, others nothing. Set explicitly, not
# through the umask: a umask of 077 (common on shared machines) would leave a
# gradebook the course's group cannot read, and 022 one every user can.
REPORT_MODE = 0o640


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` in one step: a crash leaves the old file or the new, whole."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            # Before the first byte, and on the descriptor: the file never
            # holds grades under another mode, nor is another file changed.
            os.fchmod(handle.fileno(), REPORT_MODE)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _visibility(book: Book) -> dict[str, Visibility]:
    return {check.id: check.visibility for check in book.checks}


def to_json(
    book: Book,
    reports: Sequence[SubmissionReport],
    *,
    seed: int,
    isolation: Isolation,
    grader: str,
    made: str | None = None,
    roster: Roster | None = None,
    reuse: bool = False,
) -> dict[str, Any]:
    """The report: when and by which grader it was made, then per submission its totals
    (apart by kind), the runs of its learner tests (made, and reused from an identical
    folder when `reuse` was on), and one entry per check, with who may see it."""
    visibility = _visibility(book)
    return {
        "book": book.number,
        "title": book.title,
        "made_at": made if made is not None else made_at(),
        "grader_commit": grader,
        "seed": seed,
        "isolation": isolation.value,
        "reuse": reuse,
        "submissions": [
            {
                "submission": report.submission,
                **_student(roster, report.submission),
                "isolation": report.isolation.value,
                "total": report.total,
                "max": report.max,
                "chapter_baseline": _subtotal(report, BASELINE),
                "exercises": _subtotal(report, EXERCISE),
                "test_runs": {"made": report.test_runs, "reused": report.reused_runs},
                "checks": [
                    {
                        "id": check.id,
                        "kind": check.kind,
                        "exercise": check.label,
                        "points": check.points,
                        "max_points": check.max_points,
                        "passed": check.passed,
                        "outcome": check.outcome,
                        "visibility": visibility[check.id],
                        "feedback": check.feedback,
                    }
                    for check in report.checks
                ],
            }
            for report in reports
        ],
    }


def _subtotal(report: SubmissionReport, kind: str) -> dict[str, int]:
    points, most = report.subtotal(kind)  # type: ignore[arg-type]
    return {"points": points, "max": most}


def _student(roster: Roster | None, submission: str) -> dict[str, str | None]:
    """The roster's fields for one submission: nothing without a roster, null off it."""
    if roster is None:
        return {}
    student = roster.students.get(submission)
    fields: dict[str, str | None] = {"student_id": student.student_id if student else None}
    if roster.has_names:
        fields["name"] = student.name if student else None
    return fields


def write_json(
    path: Path,
    book: Book,
    reports: Sequence[SubmissionReport],
    *,
    seed: int,
    isolation: Isolation,
    grader: str,
    roster: Roster | None = None,
    reuse: bool = False,
) -> None:
    data = to_json(
        book, reports, seed=seed, isolation=isolation, grader=grader, roster=roster, reuse=reuse
    )
    write_atomically(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_csv(
    path: Path, book: Book, reports: Sequence[SubmissionReport], roster: Roster | None = None
) -> None:
    """One row per submission: with a roster its student id (and name), each check's points,
    then the two subtotals, total, max, mode. A submission off the roster has empty cells."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    who: list[str] = []
    if roster is not None:
        who = ["student_id", "name"] if roster.has_names else ["student_id"]
    writer.writerow(
        [
            "submission",
            *who,
            *(check.id for check in book.checks),
            "chapter_baseline",
            "exercises",
            "total",
            "max",
            "isolation",
        ]
    )
    for report in reports:
        student = roster.students.get(report.submission) if roster is not None else None
        known = [student.student_id, student.name] if student is not None else ["", ""]
        writer.writerow(
            [
                _cell(report.submission),
                *(_cell(printable(text)) for text in known[: len(who)]),
                *(outcome.points for outcome in report.checks),
                report.subtotal(BASELINE)[0],
                report.subtotal(EXERCISE)[0],
                report.total,
                report.max,
                report.isolation.value,
            ]
        )
    write_atomically(path, buffer.getvalue())


def _cell(text: str) -> str:
    # A name that starts like a formula must not run in a spreadsheet.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


_MARK = {
    "passed": "pass",
    "failed": "FAIL",
    "locked": "LOCKED",
    "error": "ERROR",
    "timeout": "TIMEOUT",
    "out of memory": "OOM",
    "crashed": "CRASH",
}


# How the table marks a check a learner does not see at once on Gradescope.
_SEEN = {
    "visible": "",
    "hidden": " [hidden]",
    "after_due_date": " [after due date]",
    "after_published": " [after published]",
}


def write_table(out: TextIO, book: Book, reports: Sequence[SubmissionReport]) -> None:
    """Per submission: its totals, then its checks grouped by kind; then a summary of all.

    Every check is shown (the instructor runs this); one a learner does not
    see at once carries its visibility after its feedback."""
    visibility = _visibility(book)
    for report in reports:
        base, base_max = report.subtotal(BASELINE)
        work, work_max = report.subtotal(EXERCISE)
        out.write(
            f"\n{report.submission}: {report.total}/{report.max}  "
            f"(chapter baseline {base}/{base_max}, exercises {work}/{work_max}; "
            f"{report.isolation.value})\n"
        )
        width = max((len(check.id) for check in report.checks), default=0)
        group = None
        for check in report.checks:
            if check.label != group:
                group = check.label
                out.write(f"  {group}\n")
            score = f"{check.points}/{check.max_points}"
            mark = _MARK[check.outcome]
            seen = _SEEN[visibility[check.id]]
            out.write(f"    {mark:<7} {check.id:<{width}} {score:>5}  {check.feedback}{seen}\n")
    if len(reports) > 1:
        width = max(len(report.submission) for report in reports)
        out.write("\n" + "submission".ljust(width) + "  score  baseline  exercises\n")
        for report in reports:
            base_text = "{}/{}".format(*report.subtotal(BASELINE))
            work_text = "{}/{}".format(*report.subtotal(EXERCISE))
            score = f"{report.total}/{report.max}"
            out.write(
                f"{report.submission.ljust(width)}  {score:<5}  {base_text:<8}  {work_text}\n"
            )


def gradescope_results(
    book: Book, report: SubmissionReport, *, seed: int, grader: str
) -> dict[str, Any]:
    """Gradescope's results.json for one submission: a score, and one test per check.

    The score counts every check, the ones hidden from the learner too: the
    learner sees the total, never which hidden check cost points."""
    visibility = _visibility(book)
    base, base_max = report.subtotal(BASELINE)
    work, work_max = report.subtotal(EXERCISE)
    return {
        "score": report.total,
        "execution_time": round(report.seconds),
        "output": (
            f"{book.title}: {report.total}/{report.max} "
            f"(chapter baseline {base}/{base_max}, exercises {work}/{work_max}). "
            f"Graded in isolation mode {report.isolation.value} ({describe(report.isolation)}), "
            f"seed {seed}, grader commit {grader}.{_not_shown(book)}"
        ),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [
            _gradescope_test(number, check, visibility[check.id])
            for number, check in enumerate(report.checks, start=1)
        ],
    }


_LATER = {
    "hidden": "shown to your instructor only",
    "after_due_date": "shown after the due date",
    "after_published": "shown once grades are published",
}


def _not_shown(book: Book) -> str:
    """A sentence that explains a score above the points a learner can see, or nothing.

    Without it, a learner adding up the visible tests would find points missing."""
    parts = []
    for visibility, said in _LATER.items():
        checks = [check for check in book.checks if check.visibility == visibility]
        if checks:
            points = sum(check.points for check in checks)
            many = len(checks) != 1
            parts.append(
                f"{len(checks)} check{'s' if many else ''} worth {points} "
                f"point{'s' if points != 1 else ''} {'are' if many else 'is'} {said}"
            )
    if not parts:
        return ""
    return " " + "; ".join(parts) + "; the score counts every check."


def _gradescope_test(number: int, check: CheckOutcome, visibility: Visibility) -> dict[str, Any]:
    """One check as a Gradescope test.

    Gradescope colours a test by its `status` ("passed" or "failed"), or else
    by its score against its max_score. A locked check did not run (a check it
    requires failed): it is neither, so it carries no status and no score,
    which Gradescope shows without a colour, and its points sit in its name
    and feedback. The submission's score is set once, at the top, so it
    still counts every check's points."""
    test: dict[str, Any] = {
        "name": f"{check.id} ({check.label})",
        "number": str(number),
        "output": check.feedback,
        "tags": [check.label],
        "visibility": visibility,
    }
    if check.outcome == "locked":
        test["name"] += f", locked: 0/{check.max_points}"
        return test
    test["score"] = check.points
    test["max_score"] = check.max_points
    test["status"] = "passed" if check.passed else "failed"
    return test


def write_gradescope(
    folder: Path, book: Book, report: SubmissionReport, *, seed: int, grader: str
) -> None:
    results = gradescope_results(book, report, seed=seed, grader=grader)
    text = json.dumps(results, indent=2, ensure_ascii=False)
    write_atomically(folder / "results.json", text + "\n")
