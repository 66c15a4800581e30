"""The session's shared graded rows: a key for everything a row depends on, one grader per key.

`grading.SharedGrades` lets a folder graded by one test (on one xdist
worker) answer every other test of the session that grades the same folder.
A stale row would make a test pass on another folder's grade, so the key
must change with each thing a test chooses; and two workers must never both
grade, nor wait on each other forever.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from grading import SharedGrades

FOLDER = {"shop_tools.py": "print('hi')\n", "test_book02_mango.py": "def test_x():\n    pass\n"}
CHOICE = (2, "bubblewrap", ("--seed", "7"), "starter", FOLDER)

# Holds the lock of the key given, says so, and lets go when its stdin closes.
HOLDER = """
import fcntl, sys
with open(sys.argv[1], "a") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.read()
"""


def test_the_key_changes_with_everything_a_row_depends_on() -> None:
    book, isolation, options, name, files = CHOICE
    key = SharedGrades.key(book, isolation, options, name, files)
    assert key == SharedGrades.key(book, isolation, list(options), name, dict(files))
    others = [
        SharedGrades.key(3, isolation, options, name, files),
        SharedGrades.key(book, "process", options, name, files),
        SharedGrades.key(book, isolation, ("--seed", "8"), name, files),
        SharedGrades.key(book, isolation, (), name, files),
        SharedGrades.key(book, isolation, options, "solution", files),
        SharedGrades.key(book, isolation, options, name, {**files, "shop_tools.py": "pass\n"}),
        SharedGrades.key(
            book, isolation, options, name, {"shop_tools.py": FOLDER["shop_tools.py"]}
        ),
        SharedGrades.key(book, isolation, options, name, {**files, "extra.py": ""}),
    ]
    assert len({key, *others}) == len(others) + 1


def test_a_row_is_read_back_whole_and_only_under_its_key(tmp_path: Path) -> None:
    shared = SharedGrades(tmp_path / "shared")
    key = SharedGrades.key(*CHOICE)
    assert shared.row(key) is None
    entry = {"submission": "starter", "checks": [{"id": "ch2_x", "passed": True}]}
    shared.keep(key, entry)
    assert shared.row(key) == entry
    assert shared.row(SharedGrades.key(3, *CHOICE[1:])) is None
    assert not list((tmp_path / "shared").glob("*.part"))


def test_a_key_another_process_is_grading_is_not_claimed_and_can_be_waited_for(
    tmp_path: Path,
) -> None:
    shared = SharedGrades(tmp_path / "shared")
    busy, free = SharedGrades.key(*CHOICE), SharedGrades.key(3, *CHOICE[1:])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / "shared" / f"{busy}.lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with shared.claimed([busy, free]) as mine:
            assert mine == [free]
        started = time.monotonic()
        assert holder.stdin is not None
        holder.stdin.close()  # the holder lets go ...
        shared.wait_for(busy)  # ... and the wait ends then
        assert time.monotonic() - started < 30
        with shared.claimed([busy, free]) as mine:
            assert mine == [busy, free]
    finally:
        holder.kill()
        holder.wait()
