"""The grader's outputs: a terminal table, a JSON report, a CSV gradebook and Gradescope's results.

Everything written here comes from the grader's own records: check ids,
points, outcomes, and feedback sentences the book module wrote. No text a
submission produced (its output, its exception messages) is ever included,
and every submission name has already been made printable (`intake.printable`).

Files are written whole or not at all: to a temporary file in the same
folder, then renamed over the target (`os.replace`), once, after every
child process of the batch is gone.
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

from bookproof.grade.book import BASELINE, EXERCISE, Book
from bookproof.grade.runner import SubmissionReport
from bookproof.grade.sandbox import Isolation, describe

__all__ = [
    "gradescope_results",
    "to_json",
    "write_atomically",
    "write_csv",
    "write_gradescope",
    "write_json",
    "write_table",
]


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` in one step: a crash leaves the old file or the new, whole."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def to_json(
    book: Book, reports: Sequence[SubmissionReport], *, seed: int, isolation: Isolation
) -> dict[str, Any]:
    """The report: per submission its totals (apart by kind) and one entry per check."""
    return {
        "book": book.number,
        "title": book.title,
        "seed": seed,
        "isolation": isolation.value,
        "submissions": [
            {
                "submission": report.submission,
                "isolation": report.isolation.value,
                "total": report.total,
                "max": report.max,
                "chapter_baseline": _subtotal(report, BASELINE),
                "exercises": _subtotal(report, EXERCISE),
                "checks": [
                    {
                        "id": check.id,
                        "kind": check.kind,
                        "exercise": check.label,
                        "points": check.points,
                        "max_points": check.max_points,
                        "passed": check.passed,
                        "outcome": check.outcome,
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


def write_json(
    path: Path, book: Book, reports: Sequence[SubmissionReport], *, seed: int, isolation: Isolation
) -> None:
    data = to_json(book, reports, seed=seed, isolation=isolation)
    write_atomically(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_csv(path: Path, book: Book, reports: Sequence[SubmissionReport]) -> None:
    """One row per submission: each check's points, then the two subtotals, total, max, mode."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(
        [
            "submission",
            *(check.id for check in book.checks),
            "chapter_baseline",
            "exercises",
            "total",
            "max",
            "isolation",
        ]
    )
    for report in reports:
        writer.writerow(
            [
                _cell(report.submission),
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


def write_table(out: TextIO, reports: Sequence[SubmissionReport]) -> None:
    """Per submission: its totals, then its checks grouped by kind; then a summary of all."""
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
            out.write(f"    {mark:<7} {check.id:<{width}} {score:>5}  {check.feedback}\n")
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


def gradescope_results(book: Book, report: SubmissionReport, *, seed: int) -> dict[str, Any]:
    """Gradescope's results.json for one submission: a score, and one test per check."""
    base, base_max = report.subtotal(BASELINE)
    work, work_max = report.subtotal(EXERCISE)
    return {
        "score": report.total,
        "execution_time": round(report.seconds),
        "output": (
            f"{book.title}: {report.total}/{report.max} "
            f"(chapter baseline {base}/{base_max}, exercises {work}/{work_max}). "
            f"Graded in isolation mode {report.isolation.value} ({describe(report.isolation)}), "
            f"seed {seed}."
        ),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [
            {
                "name": f"{check.id} ({check.label})",
                "number": str(number),
                "score": check.points,
                "max_score": check.max_points,
                "status": "passed" if check.passed else "failed",
                "output": check.feedback,
                "tags": [check.label],
                "visibility": "visible",
            }
            for number, check in enumerate(report.checks, start=1)
        ],
    }


def write_gradescope(folder: Path, book: Book, report: SubmissionReport, *, seed: int) -> None:
    text = json.dumps(gradescope_results(book, report, seed=seed), indent=2, ensure_ascii=False)
    write_atomically(folder / "results.json", text + "\n")
