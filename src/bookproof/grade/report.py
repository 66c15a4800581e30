"""The grader's three outputs: a terminal table, a JSON report and a CSV gradebook.

Everything written here comes from the grader's own records: check ids,
points, outcomes and feedback sentences the book module wrote. No text a
submission produced (its output, its exception messages) is ever included.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from bookproof.grade.checks import Check
from bookproof.grade.runner import SubmissionReport

__all__ = ["to_json", "write_csv", "write_json", "write_table"]


def to_json(book: int, reports: Sequence[SubmissionReport]) -> dict[str, Any]:
    """The JSON report: per submission its total, its maximum and every check.

    Instructors' tools read `submission`, `total`, `max` and each check's `id`,
    `points`, `max_points`, `passed` and `feedback`; those keys stay stable.
    """
    return {
        "book": book,
        "submissions": [
            {
                "submission": report.submission,
                "total": report.total,
                "max": report.max,
                "checks": [
                    {
                        "id": check.id,
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


def write_json(path: Path, book: int, reports: Sequence[SubmissionReport]) -> None:
    text = json.dumps(to_json(book, reports), indent=2, sort_keys=True, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def write_csv(path: Path, checks: Sequence[Check], reports: Sequence[SubmissionReport]) -> None:
    """One row per submission, one column per check (its points), then total and max."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", *(check.id for check in checks), "total", "max"])
        for report in reports:
            writer.writerow(
                [
                    _cell(report.submission),
                    *(outcome.points for outcome in report.checks),
                    report.total,
                    report.max,
                ]
            )


def _cell(text: str) -> str:
    # A folder name that starts like a formula must not run in a spreadsheet.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


_MARK = {
    "passed": "pass",
    "failed": "FAIL",
    "error": "ERROR",
    "timeout": "TIMEOUT",
    "out of memory": "OOM",
    "crashed": "CRASH",
}


def write_table(out: TextIO, reports: Sequence[SubmissionReport]) -> None:
    """Per submission: one line per check; then a summary when there are several."""
    for report in reports:
        out.write(f"\n{report.submission}: {report.total}/{report.max}\n")
        width = max((len(check.id) for check in report.checks), default=0)
        for check in report.checks:
            score = f"{check.points}/{check.max_points}"
            line = f"  {_MARK[check.outcome]:<7} {check.id:<{width}} {score:>5}  {check.feedback}"
            out.write(line + "\n")
    if len(reports) > 1:
        width = max(len(report.submission) for report in reports)
        out.write("\n" + "submission".ljust(width) + "  score\n")
        for report in reports:
            out.write(f"{report.submission.ljust(width)}  {report.total}/{report.max}\n")
