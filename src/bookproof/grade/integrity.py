"""What the grader relies on, and whether a batch left it as it found it.

Every child of a batch runs the same interpreter, the same installed
packages, the runtime `sovereign_agent` and the grader's own package. A
submission that could change any of them (process mode run by a user who
owns them) would change how every later submission is graded: a planted
`.pth` file runs in every interpreter, a rewritten runtime module answers
for the learner. Bubblewrap shows all of them read-only and process mode as
root runs submissions as a user that cannot write them; this is the check
behind both: a walk of those trees before the batch and after it, comparing
each entry's type, permissions, size and modification time. It is cheap (a
`stat` per file, no reading) and it catches an entry added, removed or
rewritten, which is what planting needs.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import bookproof
import sovereign_agent

__all__ = ["Snapshot", "changed", "relied_on", "snapshot"]

# path -> (file type and permission bits, size, modification time in ns)
Snapshot = Mapping[str, tuple[int, int, int]]


def relied_on() -> list[Path]:
    """The trees a grading run relies on: the environment's packages, the runtime, the grader."""
    roots = [
        Path(os.path.dirname(os.path.realpath(sovereign_agent.__file__))),
        Path(os.path.dirname(os.path.realpath(bookproof.__file__))),
    ]
    if sys.prefix != sys.base_prefix:
        for name in ("lib", "lib64", "bin", "pyvenv.cfg"):
            path = Path(sys.prefix) / name
            if path.exists() and not (path.is_symlink() and name == "lib64"):
                roots.append(path)
    return roots


def snapshot(roots: Iterable[Path]) -> dict[str, tuple[int, int, int]]:
    """Every entry under `roots` (links not followed), by its path."""
    seen: dict[str, tuple[int, int, int]] = {}
    for root in roots:
        _walk(str(root), seen)
    return seen


def _walk(path: str, seen: dict[str, tuple[int, int, int]]) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    seen[path] = (info.st_mode, info.st_size, info.st_mtime_ns)
    if stat.S_ISDIR(info.st_mode):
        try:
            names = os.listdir(path)
        except OSError:
            return
        for name in names:
            _walk(os.path.join(path, name), seen)


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    """The paths added, removed or altered between two snapshots: files first, then folders.

    A planted file also changes its folder's modification time; the file is
    what an instructor needs named first.
    """
    paths = set(before) | set(after)
    altered = [path for path in paths if before.get(path) != after.get(path)]

    def folder(path: str) -> bool:
        entry = after.get(path) or before.get(path)
        return entry is not None and stat.S_ISDIR(entry[0])

    return sorted(altered, key=lambda path: (folder(path), path))
