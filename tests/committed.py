"""The exercise starters as the project committed them, not as a learner may have left them.

A learner who does the exercises in `exercises/` by mistake (rather than in
their own `work/` copy) edits the very starters the project's tests grade and
compare. The tests therefore read `exercises/` from git's index: the files as
committed, plus any change a developer has staged with `git add`, and never an
unstaged edit in the working tree. Outside a git checkout (an unpacked
archive) there is no index, and the folder on disk is all there is.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

from bookproof.layout import REPO_ROOT

__all__ = ["EXERCISES", "EXERCISES_ROOT", "as_committed", "committed", "export_index"]

ROOT = REPO_ROOT


def _git(root: Path, *argv: str, stdin: bytes | None = None) -> bytes | None:
    git = shutil.which("git")
    if git is None:
        return None
    result = subprocess.run(
        [git, "-C", str(root), *argv], input=stdin, capture_output=True, check=False
    )
    return result.stdout if result.returncode == 0 else None


def export_index(root: Path, folder: str, into: Path) -> Path | None:
    """`folder` of the git checkout `root`, as its index holds it, written under `into`.

    None when `root` is no git checkout (or git is missing), so the caller
    reads the folder on disk.
    """
    listed = _git(root, "ls-files", "-z", "--", folder)
    if not listed:
        return None
    # checkout-index writes the index's blobs, whatever the working tree holds.
    if _git(root, "checkout-index", "-z", f"--prefix={into}/", "--stdin", stdin=listed) is None:
        return None
    return into / folder


@functools.cache
def committed(folder: str) -> Path:
    """`folder` of this repository as git's index holds it, exported once a session."""
    export = Path(tempfile.mkdtemp(prefix="committed-"))
    atexit.register(shutil.rmtree, export, True)
    return export_index(ROOT, folder, export) or ROOT / folder


EXERCISES = committed("exercises")
# A repository root whose `exercises/` is the committed one (for code that takes a root).
EXERCISES_ROOT = EXERCISES.parent


def as_committed(path: Path) -> Path:
    """`path` inside this checkout's `exercises/`, read from the committed export instead."""
    try:
        return EXERCISES / path.resolve().relative_to(ROOT / "exercises")
    except ValueError:
        return path
