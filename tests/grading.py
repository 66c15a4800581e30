"""Grading a batch of submission folders through the real grader CLI, as an instructor would.

A folder graded once in a test session is not graded again: `SharedGrades`
keeps each graded row under a key made of everything the row depends on
that a test chooses (the book, the isolation, the grader's options, the
folder's name and every file in it), for every test of the session, on
every xdist worker. The grader, the runtime and the environment are the
same for the whole session, so a row is never reused across sessions.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from system_components import require_executable

from bookproof.grade.book import BASELINE, Book
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
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


class SharedGrades:
    """Graded rows kept for one test session, shared by its xdist workers through files.

    Each row is a JSON file named by its key, written whole (a rename) by the
    worker that graded it. A worker grading a folder holds that key's lock
    (`flock`, dropped by the kernel if the worker dies) until the row is
    written, so another worker wanting the same folder waits for the row
    rather than grading it again. No worker waits while holding a lock, so
    two workers can never each wait for the other.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def key(
        book: int, isolation: str, options: Sequence[str], name: str, files: Mapping[str, str]
    ) -> str:
        """A digest of everything a test chooses that a folder's row depends on."""
        chosen = {
            "book": book,
            "isolation": isolation,
            "options": list(options),
            "name": name,
            "files": sorted(files.items()),
        }
        return hashlib.sha256(json.dumps(chosen, sort_keys=True).encode()).hexdigest()

    def row(self, key: str) -> dict[str, Any] | None:
        path = self.root / f"{key}.json"
        if not path.is_file():
            return None
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return loaded

    def keep(self, key: str, entry: Mapping[str, Any]) -> None:
        # Written beside its final name and renamed: a reader sees the whole row or none.
        handle, temporary = tempfile.mkstemp(dir=self.root, suffix=".part")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(entry, file)
        os.replace(temporary, self.root / f"{key}.json")

    @contextlib.contextmanager
    def claimed(self, keys: Sequence[str]) -> Iterator[list[str]]:
        """The keys of `keys` no other worker is grading, locked for this one until the end."""
        with contextlib.ExitStack() as held:
            mine = []
            for key in keys:
                lock = held.enter_context((self.root / f"{key}.lock").open("a"))
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # being graded elsewhere
                mine.append(key)
            yield mine

    def wait_for(self, key: str) -> None:
        """Return once no worker holds the lock of `key` (its row written, or its grader gone)."""
        with (self.root / f"{key}.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)


def grade_batch(
    book: int,
    folders: Mapping[str, Mapping[str, str]],
    *,
    base: Path,
    isolation: str = "bubblewrap",
    options: Sequence[str] = (),
    shared: SharedGrades | None = None,
) -> dict[str, Graded]:
    """Each folder's row (name -> {file name: text}): graded in one -j 2 batch or shared.

    With `shared`, a folder already graded in this session (same book,
    isolation, options, name and files) is read from there, and the rest are
    graded together and kept there for the session's other tests.
    Bubblewrap isolation by default: the test skips on a laptop without it
    and fails in CI. Planted `secret-token` strings must never leave the
    grader, so that is asserted here for every caller.
    """
    if isolation == "bubblewrap":
        require_executable("bwrap", install=BWRAP_INSTALL)
    if shared is None:
        return _graded_now(book, folders, base=base, isolation=isolation, options=options)
    keys = {
        name: shared.key(book, isolation, options, name, files) for name, files in folders.items()
    }
    rows = {name: shared.row(key) for name, key in keys.items()}
    while missing := [name for name, row in rows.items() if row is None]:
        with shared.claimed([keys[name] for name in missing]) as mine:
            # Read again under the lock: another worker may have just written some.
            rows |= {name: shared.row(keys[name]) for name in missing if keys[name] in mine}
            left = {name: folders[name] for name in missing if keys[name] in mine}
            left = {name: files for name, files in left.items() if rows[name] is None}
            if left:
                graded = _graded_now(book, left, base=base, isolation=isolation, options=options)
                assert graded.keys() == left.keys()
                for name, row in graded.items():
                    shared.keep(keys[name], row.entry)
                    rows[name] = row.entry
        if not mine:
            # Every folder left is being graded by another worker: wait for one, read again.
            shared.wait_for(keys[missing[0]])
            rows |= {name: shared.row(keys[name]) for name in missing}
    found = {name: row for name, row in rows.items() if row is not None}
    assert found.keys() == folders.keys()
    assert all("secret-token" not in json.dumps(row) for row in found.values())
    return {name: Graded(row) for name, row in found.items()}


def grade_with_cli(
    book: int, folders: Sequence[Path], report: Path, *options: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    """Grade `folders` in one -j 2 batch of the real CLI; its run, and the JSON report's text.

    Asserts that the grader finished well, with its stderr as the message.
    """
    completed = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "grade_exercises.py"),
            "--book",
            str(book),
            "-j",
            "2",
            "--json",
            str(report),
            *options,
            *map(str, folders),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return completed, report.read_text(encoding="utf-8")


def _graded_now(
    book: int,
    folders: Mapping[str, Mapping[str, str]],
    *,
    base: Path,
    isolation: str,
    options: Sequence[str],
) -> dict[str, Graded]:
    """Write each folder under `base` and grade them all in one -j 2 batch of the real CLI."""
    for name, files in folders.items():
        (base / name).mkdir()
        for file_name, text in files.items():
            (base / name / file_name).write_text(text, encoding="utf-8")
    result, text = grade_with_cli(
        book,
        [base / name for name in folders],
        base / "report.json",
        "--isolation",
        isolation,
        # Process mode run by root where nobody cannot start Python (this
        # machine's and CI's): these are our own reference files.
        *(["--run-submissions-as-root"] if isolation == "process" else []),
        *options,
    )
    assert "secret-token" not in text
    assert "secret-token" not in result.stdout
    assert "secret-token" not in result.stderr
    return {entry["submission"]: Graded(entry) for entry in json.loads(text)["submissions"]}


# Pasted into a hostile submission: every string its process can reach that
# did not come from the folder it was asked about. Memory (every object the
# collector knows, every frame's locals), its own and its sandbox init's
# command line and environment, and the readable files of every folder it
# can see except the grader's folders for its checks (`/files`): if a check's
# folder description, or an answer, ever reached the sandbox by any way but
# the folder itself, it is in here.
LEAK_HUNT = '''
import gc as _gc
import os as _os
import sys as _sys


def _strings(value, found, depth=0):
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, bytes):
        found.append(value.decode("utf-8", "replace"))
    elif depth < 4 and isinstance(value, dict):
        for key, item in list(value.items()):
            _strings(key, found, depth + 1)
            _strings(item, found, depth + 1)
    elif depth < 4 and isinstance(value, (list, tuple, set, frozenset)):
        for item in list(value):
            _strings(item, found, depth + 1)
    elif depth < 4 and hasattr(value, "__dict__") and not isinstance(value, type):
        _strings(dict(vars(value)), found, depth + 1)


def everything_but_the_files(asked_about):
    found = []
    for value in _gc.get_objects():
        if isinstance(value, (dict, list, tuple)):
            _strings(value, found, 3)
    for frame in list(_sys._current_frames().values()):
        while frame is not None:
            _strings(dict(frame.f_locals), found)
            frame = frame.f_back
    found += [*_sys.argv, *_os.environ.values()]
    for path in ("/proc/self/cmdline", "/proc/self/environ", "/proc/1/cmdline", "/proc/1/environ"):
        try:
            with open(path, "rb") as handle:
                found.append(handle.read().decode("utf-8", "replace"))
        except OSError:
            pass
    for top in ("/", "/tmp", "/grader", "/submission", _os.getcwd()):
        try:
            names = _os.listdir(top)
        except OSError:
            continue
        for name in names:
            path = _os.path.join(top, name)
            if path.startswith(("/files", "/proc", "/sys", "/dev", "/usr")):
                continue
            if path == asked_about or not _os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as handle:
                    found.append(handle.read(65536).decode("utf-8", "replace"))
            except OSError:
                pass
    return found


def leaked(asked_about, marker):
    """Strings from anywhere but the folder holding `marker`: a folder's description, leaked."""
    return [text for text in everything_but_the_files(asked_about) if marker in text]
'''
