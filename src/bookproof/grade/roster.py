"""The class roster: which student each graded folder belongs to.

A roster is a CSV file with a header naming the columns `folder` and
`student_id`, and optionally `name`, in any order; one row per learner.
`folder` is the name the gradebook gives a submission (the folder's own
name, `alice`; lengthened by its parents only where two graded folders
share a name, as the gradebook shows it). The gradebook gains the student
id (and the name, when the roster has names) beside each row, so it can be
uploaded to a course's grade centre without matching rows by hand.

A malformed roster stops the grader before it grades (a usage error, one
line saying where): a missing column, an unknown one, a row with too many or
too few cells, an empty folder or student id, a folder or a student id given
twice. A roster is the instructor's file, but it is read as untrusted text:
its cells reach the CSV gradebook, where `report` defuses formulas.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from bookproof.grade.intake import printable

__all__ = ["REQUIRED", "Roster", "RosterError", "Student", "parse_roster", "read_roster"]

REQUIRED = ("folder", "student_id")
OPTIONAL = ("name",)
# A class roster is small; a file this big is a mistake, not a class.
MAX_BYTES = 10 * 1024 * 1024


class RosterError(ValueError):
    """The roster cannot be read as one: the message is one line, for the instructor."""


@dataclass(frozen=True)
class Student:
    student_id: str
    name: str = ""


@dataclass(frozen=True)
class Roster:
    """Folder name -> student, and whether the file gave names at all."""

    students: Mapping[str, Student]
    has_names: bool

    def unmatched(self, graded: Iterable[str]) -> tuple[list[str], list[str]]:
        """(roster folders not graded, graded folders not on the roster), in their orders."""
        names = list(graded)
        seen = set(names)
        absent = [folder for folder in self.students if folder not in seen]
        missing = [folder for folder in names if folder not in self.students]
        return absent, missing


def parse_roster(text: str) -> Roster:
    """The roster in `text`, or RosterError naming the first problem and its line."""
    rows = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(rows, None)
        if header is None:
            raise RosterError("the roster is empty: its first line must name the columns")
        columns = [cell.strip().lower() for cell in header]
        for column in columns:
            if column not in (*REQUIRED, *OPTIONAL):
                raise RosterError(
                    f"line 1: unknown column '{printable(column)}'; "
                    "the columns are folder, student_id and optionally name"
                )
        for column in REQUIRED:
            if column not in columns:
                raise RosterError(f"line 1: the header has no {column} column")
        if len(set(columns)) < len(columns):
            raise RosterError("line 1: a column is named twice")
        students: dict[str, Student] = {}
        owners: dict[str, str] = {}
        for row in rows:
            line = rows.line_num
            if not any(cell.strip() for cell in row):
                continue  # a blank line, as spreadsheets leave at the end
            if len(row) != len(columns):
                raise RosterError(
                    f"line {line}: {len(row)} cells where the header names {len(columns)}"
                )
            cells = dict(zip(columns, (cell.strip() for cell in row), strict=True))
            folder, student_id = cells["folder"], cells["student_id"]
            if not folder or not student_id:
                raise RosterError(f"line {line}: a folder and a student_id are both needed")
            if folder in students:
                raise RosterError(f"line {line}: folder '{printable(folder)}' is listed twice")
            if student_id in owners:
                raise RosterError(
                    f"line {line}: student_id '{printable(student_id)}' is listed twice "
                    f"(folders '{printable(owners[student_id])}' and '{printable(folder)}')"
                )
            owners[student_id] = folder
            students[folder] = Student(student_id, cells.get("name", ""))
    except csv.Error as exc:
        raise RosterError(f"line {rows.line_num}: not CSV: {exc}") from None
    if not students:
        raise RosterError("the roster names no students")
    return Roster(students, has_names="name" in columns)


def read_roster(path: Path) -> Roster:
    """The roster file at `path`, read as UTF-8 (a spreadsheet's byte-order mark allowed)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise RosterError(f"cannot read it: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise RosterError(f"it is larger than {MAX_BYTES // (1024 * 1024)} MB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RosterError(f"not UTF-8 text (byte {exc.start})") from None
    if "\x00" in text:
        raise RosterError("not text: it holds a NUL byte")
    return parse_roster(text)
