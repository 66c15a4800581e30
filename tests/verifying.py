"""Running the book verifier as CI and authors do: its real script, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "verify_book_assets_v2.py"


def verify(
    *arguments: str | Path, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, arguments)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def verify_json(tmp_path: Path, *arguments: str | Path) -> tuple[int, dict[str, Any]]:
    """The exit status, and the JSON report the run wrote."""
    report = tmp_path / "report.json"
    completed = verify(*arguments, "--json", report)
    return completed.returncode, json.loads(report.read_text(encoding="utf-8"))
