"""The real book verified once per test session, afresh, for every test that needs its verdict.

Verifying the whole book (every listing, checkpoint and learner file, in
sandboxes) takes over a minute. The test of the command line, the chapters'
own tests and the site's browser tests all need a fresh verdict of the same
files; each used to verify on its own. Here the first of them runs
`verify_book_assets_v2.py --textbook --no-cache --json REPORT`, exactly the
command a reader runs, and the others read what it printed and wrote.

Why this proves what a run of their own proved:

- it is this session's run, never a cache's: `--no-cache` is on its command
  line, and `verified_afresh` checks the verifier said so ("cache off");
- a chapter's verdict in a `--textbook` run is the one a run naming that
  chapter file gets: both run every listing, the checkpoint and the learner
  file of the chapter against the same manifest (`bookproof.verify.cli`);
- the book's files are the repository's, which no test writes; the site's
  build refuses a report older than any file it vouches for, so even an
  edit made meanwhile could not pass unseen there.

Under pytest-xdist the workers share it through a folder of this run only
(the parent of each worker's own temporary folder), under an exclusive lock:
the worker that comes second waits for the first's run and reads it.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from verifying import REPO, SCRIPT

__all__ = ["RealBookRun", "real_book_run"]

# The bound the site's build gives the same verification: on a machine shared
# by other jobs the whole book has taken over five minutes.
TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class RealBookRun:
    """What one `--textbook --no-cache --json` run of the real book printed and wrote."""

    returncode: int
    stdout: str
    stderr: str
    report: Path  # its JSON report

    @property
    def verified_afresh(self) -> bool:
        """The verifier's own first line says the cache was off: nothing was taken from it."""
        first = self.stdout.splitlines()[0] if self.stdout else ""
        return first.startswith("verifying ") and first.endswith(", cache off)")

    def chapter_row(self, number: int) -> str:
        """Chapter `number`'s line of the construction report; fails the test if absent."""
        lines = self.stdout.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith("Construction report")]
        assert starts, self.stdout + self.stderr
        rows = [line for line in lines[starts[0] + 1 :] if line[:4].strip() == str(number)]
        assert len(rows) == 1, f"chapter {number} has {len(rows)} rows:\n{self.stdout}"
        return rows[0]


def _write_whole(path: Path, text: str) -> None:
    # Written whole, then renamed: no reader ever sees half a result.
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".result-")
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.replace(temporary, path)


def real_book_run(session_folder: Path) -> RealBookRun:
    """This session's verification of the real book: run by the first caller, read by the rest.

    `session_folder` is this run's own folder that every worker sees (the
    `session_folder` fixture).
    """
    folder = session_folder / "real-book-verification"
    folder.mkdir(exist_ok=True)
    report = folder / "report.json"
    result = folder / "result.json"
    with (folder / "lock").open("w") as lock:
        # Held while verifying: a second worker waits here, then reads the result.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.is_file():
            completed = subprocess.run(
                [sys.executable, str(SCRIPT), "--textbook", "--no-cache", "--json", str(report)],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_SECONDS,
                check=False,
            )
            _write_whole(
                result,
                json.dumps(
                    {
                        "returncode": completed.returncode,
                        "stdout": completed.stdout,
                        "stderr": completed.stderr,
                    }
                ),
            )
        recorded = json.loads(result.read_text(encoding="utf-8"))
    run = RealBookRun(recorded["returncode"], recorded["stdout"], recorded["stderr"], report)
    assert run.verified_afresh, run.stdout + run.stderr
    return run
