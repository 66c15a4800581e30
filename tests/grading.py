"""Grading a batch of submission folders through the real grader CLI, as an instructor would."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def grade_batch(
    book: int, files: Mapping[str, str], *, module_file: str, base: Path
) -> dict[str, dict[str, bool]]:
    """Write each submission (folder name -> module text), grade them all in one -j 2 batch.

    Returns, per folder, each check's verdict plus `__full__` (full marks or not).
    Planted `secret-token` strings must never leave the grader, so that is
    asserted here for every caller.
    """
    for name, text in files.items():
        (base / name).mkdir()
        (base / name / module_file).write_text(text, encoding="utf-8")
    out = base / "report.json"
    result = subprocess.run(
        [
            sys.executable,
            "scripts/grade_exercises.py",
            "--book",
            str(book),
            "-j",
            "2",
            "--json",
            str(out),
            *[str(base / name) for name in files],
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    assert "secret-token" not in text
    assert "secret-token" not in result.stdout
    return {
        entry["submission"]: {check["id"]: check["passed"] for check in entry["checks"]}
        | {"__full__": entry["total"] == entry["max"]}
        for entry in json.loads(text)["submissions"]
    }
