"""Reusing runs of a learner's tests within one batch: identical inputs are run once.

A class's folders often hand in the same test file: the same starter
template, the same suite beside code that differs elsewhere. The runs of a
learner's test file see the tests, every other file of the folder, and a
stand-in of the book's module (never the module itself: the code under test
is served from the oracle's sandbox), and they run against the reference and
each faulty version with data derived from the batch's seed. Two folders
that agree on all of that give the same runs, so the grader runs the file's
tests for the first and gives every later one the same verdicts.

The key (`runs_key`) is a SHA-256 digest of everything a run can read or
that decides its verdict:

- every file and folder of the submission's copy (path, permission bits,
  bytes), except the book's module, which the run never sees;
- the test file's name, the surface the stand-in offers, the book and its
  module, the number of reference runs and the faulty versions with the
  checks they decide;
- the isolation, every limit (the tests' timeout, memory, output, files),
  and the seed from which the oracle's data and the run order come;
- the batch's own options that change how a run is started
  (`--one-sandbox-per-run`).

What it does not hold is what no two runs share in the first place: the
clock, and the randomness a run draws for itself (Hypothesis's own seed,
`random` without a seed, the names of its temporary folders, file times).
A suite whose verdict depends on those gets the first run's verdict for
every identical copy in the batch. Within one folder nothing changes: the
reference still runs `reference_runs` times.

That list is all a run can see only in bubblewrap mode, where a run sees
its folder, the grader's read-only code and environment, and a fresh /tmp.
In process mode a run shares the machine with every other run (its /tmp,
its home, every world-readable file, what an earlier run left there), so
the grader reuses nothing there (`reusable`).

The memo lives for one batch (`Reuse`, made by the command line) and is
shared by its worker threads: a folder whose key is being graded by another
worker waits for that grading instead of running the same runs beside it.
`--no-reuse` grades every folder's tests afresh.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import stat
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookproof.grade.book import LearnerTests
from bookproof.grade.sandbox import Isolation, Limits
from bookproof.grade.session import Outcome

__all__ = ["Graded", "Reuse", "folder_digest", "reusable", "runs_key"]

Verdicts = dict[str, tuple[Outcome, str]]


@dataclass(frozen=True)
class Graded:
    """One test file's grading: its checks' verdicts, and how many runs of the tests made them."""

    verdicts: Verdicts
    runs: int


def folder_digest(copy: Path, module_file: str) -> str:
    """A digest of every entry of the copy a learner's test run sees: all but the book's module.

    The run finds a stand-in where `module_file` was, so that file's bytes
    cannot reach it; every other name, kind, permission and byte can. Each
    entry is one line of JSON (its path, kind, permission bits and the
    SHA-256 of its bytes), so no two different trees give the same lines.
    """
    digest = hashlib.sha256()
    for relative, kind, mode, content in _entries(copy, ""):
        if relative == module_file and kind == "file":
            continue
        line = json.dumps([relative, kind, mode, content], ensure_ascii=True)
        digest.update(line.encode("ascii") + b"\n")
    return digest.hexdigest()


def _entries(folder: Path, prefix: str) -> list[tuple[str, str, int, str]]:
    """(relative path, kind, permission bits, SHA-256 of the bytes) of every entry, sorted."""
    found: list[tuple[str, str, int, str]] = []
    for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
        relative = f"{prefix}{entry.name}"
        info = entry.stat(follow_symlinks=False)
        mode = stat.S_IMODE(info.st_mode)
        if stat.S_ISDIR(info.st_mode):
            found.append((relative, "folder", mode, ""))
            found.extend(_entries(Path(entry.path), relative + "/"))
        elif stat.S_ISREG(info.st_mode):
            found.append((relative, "file", mode, _content(entry.path)))
        else:
            # The intake copies plain files and folders only; anything else
            # is keyed by its kind alone, and never opened (a FIFO would block).
            found.append((relative, f"other {stat.S_IFMT(info.st_mode):o}", mode, ""))
    return found


def _content(path: str) -> str:
    """The SHA-256 of a regular file, read in pieces; never following a link, never blocking."""
    digest = hashlib.sha256()
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        # Keyed by the failure: a file no one can read is not the same as any bytes.
        return f"unreadable: {exc.errno}"
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return "not a regular file"
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def reusable(isolation: Isolation) -> bool:
    """Whether the key holds everything a run can see in this isolation: bubblewrap only."""
    return isolation is Isolation.BUBBLEWRAP


def runs_key(
    group: LearnerTests,
    folder: str,
    *,
    isolation: Isolation,
    limits: Limits,
    seed: str,
    options: Mapping[str, Any],
) -> str:
    """The digest two gradings of `group` must share to be the same runs.

    `folder` is the copy's `folder_digest`; `options` the batch's options
    that change how a run is started (all of them, named, plain JSON).
    """
    chosen = {
        "folder": folder,
        "book": group.book.number,
        "module": group.book.module,
        "file": group.file,
        "surface": repr(group.surface),
        "reference_runs": group.reference_runs,
        "checks": [[check.id, [v.id for v in check.versions]] for check in group.checks],
        "isolation": isolation.value,
        "limits": dataclasses.asdict(limits),
        "seed": seed,
        "options": dict(options),
    }
    text = json.dumps(chosen, sort_keys=True, ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


class Reuse:
    """One batch's graded test files, by key, shared by the batch's worker threads.

    `ran` counts the runs made; `reused` the runs given their verdicts from an
    identical grading instead of being made again.
    """

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = dict(options)
        self.ran = 0
        self.reused = 0
        self._lock = threading.Lock()
        self._graded: dict[str, Graded] = {}
        self._grading: dict[str, threading.Event] = {}

    def graded(self, key: str, grade: Callable[[], Graded]) -> tuple[Graded, bool]:
        """The grading under `key`, made by `grade` unless it already was; True when reused.

        A key another thread is grading is waited for. A worker waits only
        while it grades nothing itself, so two workers never wait for each
        other; if the grading it waited for failed, it grades the key itself.
        """
        while True:
            with self._lock:
                found = self._graded.get(key)
                if found is not None:
                    self.reused += found.runs
                    return found, True
                busy = self._grading.get(key)
                if busy is None:
                    mine = self._grading[key] = threading.Event()
                    break
            busy.wait()
        try:
            result = grade()
        except BaseException:
            with self._lock:
                del self._grading[key]
            mine.set()
            raise
        with self._lock:
            self._graded[key] = result
            self.ran += result.runs
            del self._grading[key]
        mine.set()
        return result, False
