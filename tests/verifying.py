"""Running the book verifier as CI and authors do: its real script, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bookproof.layout import REPO_ROOT

REPO = REPO_ROOT
SCRIPT = REPO / "scripts" / "verify_book_assets_v2.py"

# Runs the script as `python SCRIPT ...` would, then records the verifier
# process's own peak memory in the file named first: VmHWM, the high-water
# mark of this program's memory (getrusage would also count the memory of the
# test process it was forked from, which Linux carries across exec).
_MEASURED = """\
import runpy, sys
report, sys.argv = sys.argv[1], sys.argv[2:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(report, "w") as written:
        written.write(peak)
"""


def _run(
    command: list[str], *, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def fresh(arguments: tuple[str | Path, ...]) -> list[str]:
    """The arguments, with `--no-cache` added to a `--textbook` run that names no cache.

    Each test asks for a verification of its own: a verdict another test left in
    the repository's cache must not answer it (tests of the cache name a folder).
    """
    words = [str(argument) for argument in arguments]
    if "--textbook" in words and "--cache-dir" not in words and "--no-cache" not in words:
        words.append("--no-cache")
    return words


def verify(
    *arguments: str | Path, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, str(SCRIPT), *fresh(arguments)], cwd=cwd, env=env)


def verify_json(tmp_path: Path, *arguments: str | Path) -> tuple[int, dict[str, Any]]:
    """The exit status, and the JSON report the run wrote."""
    report = tmp_path / "report.json"
    completed = verify(*arguments, "--json", report)
    return completed.returncode, json.loads(report.read_text(encoding="utf-8"))


def verify_measured(
    tmp_path: Path, *arguments: str | Path, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], int]:
    """The run, its JSON report, and the verifier's peak memory in KiB."""
    report, peak = tmp_path / "report.json", tmp_path / "peak-kib"
    command = [sys.executable, "-c", _MEASURED, str(peak), str(SCRIPT), *fresh(arguments)]
    completed = _run([*command, "--json", str(report)], env=env)
    return completed, json.loads(report.read_text(encoding="utf-8")), int(peak.read_text())
