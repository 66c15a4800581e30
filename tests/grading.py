"""Grading a batch of submission folders through the real grader CLI, as an instructor would."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from system_components import require_executable

from bookproof.grade.book import BASELINE, Book

ROOT = Path(__file__).resolve().parents[1]
BWRAP_INSTALL = "sudo apt-get install bubblewrap"


@dataclass(frozen=True)
class Graded:
    """One submission's row of the JSON report."""

    entry: dict[str, Any]

    @property
    def passed(self) -> dict[str, bool]:
        return {check["id"]: check["passed"] for check in self.entry["checks"]}

    @property
    def outcomes(self) -> dict[str, str]:
        return {check["id"]: check["outcome"] for check in self.entry["checks"]}

    @property
    def failed(self) -> set[str]:
        return {check for check, passed in self.passed.items() if not passed}

    @property
    def full(self) -> bool:
        return bool(self.entry["total"] == self.entry["max"])

    @property
    def baseline(self) -> tuple[int, int]:
        return self.entry["chapter_baseline"]["points"], self.entry["chapter_baseline"]["max"]

    @property
    def exercises(self) -> tuple[int, int]:
        return self.entry["exercises"]["points"], self.entry["exercises"]["max"]

    def holds_every_check_of(self, book: Book) -> bool:
        """Full marks, on exactly the checks the book declares."""
        return set(self.passed) == {check.id for check in book.checks} and self.full

    def earns_only_the_baseline_of(self, book: Book) -> bool:
        """Every chapter-baseline point, and not one exercise point."""
        baseline = sum(check.points for check in book.checks if check.kind == BASELINE)
        return self.baseline == (baseline, baseline) and self.exercises == (
            0,
            book.max_points - baseline,
        )


def edited(text: str, edits: Sequence[tuple[str, str]]) -> str:
    """`text` with each (old, new) edit made; each old text must be there exactly once."""
    for old, new in edits:
        assert text.count(old) == 1, f"expected exactly one {old!r}"
        text = text.replace(old, new)
    return text


def grade_batch(
    book: int,
    folders: Mapping[str, Mapping[str, str]],
    *,
    base: Path,
    isolation: str = "bubblewrap",
    options: Sequence[str] = (),
) -> dict[str, Graded]:
    """Write each folder (name -> {file name: text}), grade them all in one -j 2 batch.

    Bubblewrap isolation by default: the test skips on a laptop without it
    and fails in CI. Planted `secret-token` strings must never leave the
    grader, so that is asserted here for every caller.
    """
    if isolation == "bubblewrap":
        require_executable("bwrap", install=BWRAP_INSTALL)
    for name, files in folders.items():
        (base / name).mkdir()
        for file_name, text in files.items():
            (base / name / file_name).write_text(text, encoding="utf-8")
    out = base / "report.json"
    result = subprocess.run(
        [
            sys.executable,
            "scripts/grade_exercises.py",
            "--book",
            str(book),
            "-j",
            "2",
            "--isolation",
            isolation,
            "--json",
            str(out),
            *options,
            *[str(base / name) for name in folders],
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    assert "secret-token" not in text
    assert "secret-token" not in result.stdout
    assert "secret-token" not in result.stderr
    return {entry["submission"]: Graded(entry) for entry in json.loads(text)["submissions"]}
