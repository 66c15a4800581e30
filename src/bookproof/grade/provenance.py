"""When a report was made and by which grader: what lets a grade be explained later.

A grade disputed weeks afterwards is read against the grader that gave it.
The JSON report therefore records the moment it was made (UTC, ISO 8601)
and the grader's commit: `git rev-parse HEAD` of the checkout the grader
runs from, with `-dirty` appended when tracked files differ from it (files
git does not track, such as a gradebook written into the checkout, do not
count). Outside git, the commit is the one stamped into the folder when it
was packed (`GRADER_COMMIT`, which the Gradescope autograder's zip carries,
since an unpacked zip has no `.git`), and `unknown` where there is no valid
stamp either or git cannot say.
"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
from pathlib import Path

__all__ = ["STAMP", "UNKNOWN", "grader_commit", "made_at"]

UNKNOWN = "unknown"
# The file, at the grader's root, that names the commit a packed grader was
# built from.
STAMP = "GRADER_COMMIT"
# What a stamp may say: a full commit, dirty or not. Anything else (a forged or
# damaged stamp) is read as unknown, never repeated into a gradebook.
_STAMPED = re.compile(r"[0-9a-f]{40}(-dirty)?")
# git answers these in milliseconds; a hung git must not hold up a gradebook.
_GIT_TIMEOUT = 10.0


def made_at() -> str:
    """Now, in UTC, to the second: `2026-12-01T16:30:00Z`."""
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    return now.isoformat().replace("+00:00", "Z")


def _git(root: Path, *args: str) -> str | None:
    # The user's git configuration may not redirect this to another repository.
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    try:
        completed = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT,
            check=False,
            env=env,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout if completed.returncode == 0 else None


def grader_commit(root: Path) -> str:
    """The commit the grader at `root` runs from, `<sha>-dirty` if changed, else `unknown`."""
    if not (root / ".git").exists():
        # Only the checkout's own repository counts, never one that encloses it.
        return _stamped(root)
    head = _git(root, "rev-parse", "--verify", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    if head is None or status is None:
        return UNKNOWN
    return head.strip() + ("-dirty" if status.strip() else "")


def _stamped(root: Path) -> str:
    """The commit stamped into a packed grader at `root`, or `unknown`."""
    path = root / STAMP
    if not path.is_file():  # a FIFO there would hang the read
        return UNKNOWN
    try:
        with path.open("rb") as stamp:
            text = stamp.read(100).decode("ascii").strip()  # a commit is 46 bytes at most
    except (OSError, UnicodeDecodeError):
        return UNKNOWN
    return text if _STAMPED.fullmatch(text) else UNKNOWN
