"""Careless listings, checkpoints and learner files do not upset the verifier's plumbing.

Each such chapter is verified next to a chapter where every rule holds, by
the real script in a subprocess. Whatever the careless code does (write to
every descriptor it holds, write frames that look like the worker's, patch
`json`, `print` or builtins, print a gigabyte, fork a child that never exits,
close its standard output), the run exits 1 naming the file and line that
did it, the good chapter's verdict is intact, the verifier's own memory stays
small, and no process the code started is left running. These are accidents
the verifier is built for; a listing written to deceive it (one that looks
for its key in the worker's memory) is not, and is not tested here.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from system_components import require_executable
from verifying import verify_measured

FIXTURES = Path(__file__).resolve().parent / "verify_fixtures"
HOSTILE = FIXTURES / "hostile"
PASSING = FIXTURES / "chapters" / "passing.md"
# The verifier alone peaks near 25 MiB; a gigabyte held would be forty times that.
MEMORY_BOUND_KIB = 120 * 1024


def run_next_to_a_good_chapter(
    tmp_path: Path, hostile: Path, *options: str
) -> tuple[dict[str, Any], list[int]]:
    """Verify `hostile` and the passing chapter together; the hostile chapter's
    record, and the pids its code left behind."""
    pids = tmp_path / "pids"
    pids.touch()
    env = {**os.environ, "HOSTILE_PIDS": str(pids)}
    completed, report, peak_kib = verify_measured(
        tmp_path, hostile, PASSING, "-j", "2", "--timeout", "20", *options, env=env
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "Traceback" not in completed.stderr
    assert peak_kib < MEMORY_BOUND_KIB
    first, good = report["chapters"]
    assert first["file"].endswith(hostile.name)
    assert good["ok"] and good["listings"] == {"passed": 9, "total": 9}
    left = [int(line) for line in pids.read_text().split()]
    assert_none_running(pids, report)
    return first, left


def assert_none_running(pids_file: Path, report: dict[str, Any]) -> None:
    """No process the code started still runs.

    Every process it starts inherits `HOSTILE_PIDS` (naming `pids_file`), so
    none on this machine may still carry it. Unisolated, each pid the code
    wrote to the file is gone too, or a zombie whose parent has not reaped it
    yet; in a sandbox those are the sandbox's own pid numbers, meaningless here.
    """
    marker = f"HOSTILE_PIDS={pids_file}".encode()
    deadline = time.monotonic() + 5
    while carriers := _carrying(marker):
        assert time.monotonic() < deadline, f"processes {carriers} are still running"
        time.sleep(0.05)
    if report["isolation"]["mode"] != "none":
        return
    for pid in [int(line) for line in pids_file.read_text().split()]:
        while True:
            try:
                state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
            except FileNotFoundError:
                break
            if state in (b"Z", b"X"):
                break
            assert time.monotonic() < deadline, f"process {pid} is still running"
            time.sleep(0.05)


def _carrying(marker: bytes) -> list[int]:
    """The live processes (zombies left out) whose environment holds `marker`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if marker not in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                continue
            state = Path(f"/proc/{name}/stat").read_bytes().rpartition(b")")[2].split()[0]
        except OSError:  # gone meanwhile, or another user's
            continue
        if state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def failures(chapter: dict[str, Any]) -> list[tuple[int, str]]:
    return [(failure["line"], failure["kind"]) for failure in chapter["failures"]]


def test_writing_to_every_descriptor_is_caught_at_its_listing(tmp_path: Path) -> None:
    chapter, _ = run_next_to_a_good_chapter(tmp_path, HOSTILE / "every_descriptor.md")
    assert failures(chapter) == [(6, "crash"), (30, "not-run")]
    assert "wrote to the verifier's private channel" in chapter["failures"][0]["message"]


def test_forged_results_never_make_a_failing_listing_pass(tmp_path: Path) -> None:
    chapter, _ = run_next_to_a_good_chapter(tmp_path, HOSTILE / "forged_results.md")
    assert failures(chapter) == [(3, "crash")]
    assert chapter["listings"]["passed"] == 0


def test_patched_json_print_and_builtins_change_no_verdict(tmp_path: Path) -> None:
    chapter, _ = run_next_to_a_good_chapter(tmp_path, HOSTILE / "patched_modules.md")
    # The patches themselves pass; what follows is judged as if nothing was patched.
    assert failures(chapter) == [(25, "exception"), (31, "output-mismatch")]
    assert "ValueError: raised after the patches" in chapter["failures"][0]["detail"]
    assert "+unexpected" in chapter["failures"][1]["detail"]


def test_a_gigabyte_of_output_fails_its_listing_in_bounded_memory(tmp_path: Path) -> None:
    chapter, _ = run_next_to_a_good_chapter(tmp_path, HOSTILE / "gigabyte.md")
    assert failures(chapter) == [(3, "too-much-output")]
    failure = chapter["failures"][0]
    assert "more than the capture limit of 1,000,000 bytes" in failure["message"]
    assert "not shown" in failure["detail"] and len(failure["detail"]) < 10_000
    assert chapter["listings"] == {"passed": 1, "total": 2}


def isolation_option(isolation: str) -> tuple[str, str]:
    """`--isolation` as given; a sandboxed run needs bubblewrap (CI never skips it)."""
    if isolation == "bwrap":
        require_executable("bwrap", install="sudo apt-get install bubblewrap")
    return ("--isolation", isolation)


@pytest.mark.parametrize("isolation", ["none", "bwrap"])
def test_processes_left_running_fail_the_listings_that_started_them(
    tmp_path: Path, isolation: str
) -> None:
    chapter, left = run_next_to_a_good_chapter(
        tmp_path, HOSTILE / "leftover_processes.md", *isolation_option(isolation)
    )
    # A forked child, a started program, and a daemon that left the session.
    assert failures(chapter) == [
        (6, "process-left-running"),
        (23, "process-left-running"),
        (29, "process-left-running"),
    ]
    assert len(left) == 3
    for pid, failure in zip(left, chapter["failures"], strict=True):
        assert f"(pid {pid}: " in failure["message"]
    assert chapter["listings"] == {"passed": 1, "total": 4}


def test_a_closed_stdout_fails_the_listings_that_print_to_it_and_no_other(
    tmp_path: Path,
) -> None:
    chapter, _ = run_next_to_a_good_chapter(tmp_path, HOSTILE / "closed_stdout.md")
    assert failures(chapter) == [(3, "exception"), (10, "exception")]
    assert chapter["listings"] == {"passed": 1, "total": 3}


def test_closing_the_workers_own_descriptors_stops_the_chapter_at_that_listing(
    tmp_path: Path,
) -> None:
    chapter, _ = run_next_to_a_good_chapter(tmp_path, HOSTILE / "closed_descriptors.md")
    assert failures(chapter) == [(3, "crash"), (9, "not-run")]
    assert (
        "closed or replaced the worker's own file descriptors"
        in (chapter["failures"][0]["message"])
    )


@pytest.mark.parametrize("isolation", ["none", "bwrap"])
def test_a_flooding_checkpoint_and_a_learner_that_leaves_a_process_fail_in_bounded_memory(
    tmp_path: Path, isolation: str
) -> None:
    pids = tmp_path / "pids"
    pids.touch()
    manifest = FIXTURES / "book_hostile" / "book" / "textbook" / "book.toml"
    completed, report, peak_kib = verify_measured(
        tmp_path,
        "--textbook",
        "--manifest",
        manifest,
        *isolation_option(isolation),
        env={**os.environ, "HOSTILE_PIDS": str(pids)},
    )
    assert completed.returncode == 1
    assert peak_kib < MEMORY_BOUND_KIB
    (chapter,) = report["chapters"]
    found = [
        (Path(f["file"]).name, f["line"], f["kind"], f["message"]) for f in chapter["failures"]
    ]
    (pid,) = [int(line) for line in pids.read_text().split()]
    assert found == [
        (
            "fixture_ch01_checkpoint.py",
            1,
            "checkpoint",
            "running the checkpoint printed more than 1,000,000 bytes: stopped",
        ),
        (
            "fixture_ch01_learner.py",
            1,
            "learner",
            f"importing the learner file left a process running after it ended "
            f"(pid {pid}: sleep 1000); it was stopped",
        ),
    ]
    assert_none_running(pids, report)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_every_hostile_chapter_at_once_leaves_the_good_one_intact(
    tmp_path: Path, jobs: str
) -> None:
    pids = tmp_path / "pids"
    pids.touch()
    chapters = sorted(HOSTILE.glob("*.md"))
    completed, report, peak_kib = verify_measured(
        tmp_path,
        *chapters,
        PASSING,
        "-j",
        jobs,
        "--timeout",
        "20",
        env={**os.environ, "HOSTILE_PIDS": str(pids)},
    )
    assert completed.returncode == 1
    assert peak_kib < MEMORY_BOUND_KIB
    *hostile, good = report["chapters"]
    assert good["ok"]
    assert all(not chapter["ok"] and chapter["failures"] for chapter in hostile)
    assert_none_running(pids, report)


def test_a_listing_writing_to_stderr_without_end_still_meets_its_time_limit(
    tmp_path: Path,
) -> None:
    chapter = tmp_path / "noise.md"
    chapter.write_text(
        '# Noise\n\n```python\nimport sys\n\nwhile True:\n    sys.stderr.write("noise\\n")\n```\n',
        encoding="utf-8",
    )
    completed, report, peak_kib = verify_measured(tmp_path, chapter, "--timeout", "1")
    assert completed.returncode == 1
    assert peak_kib < MEMORY_BOUND_KIB
    assert failures(report["chapters"][0]) == [(3, "timeout")]


def test_a_worker_that_dies_while_its_forked_child_holds_the_channel_is_a_crash(
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    pids.touch()
    chapter = tmp_path / "dies.md"
    chapter.write_text(
        "# Dies\n\n```python\nimport os, time\n\nchild = os.fork()\nif child == 0:\n"
        "    time.sleep(1000)\n"
        'with open(os.environ["HOSTILE_PIDS"], "a") as pids:\n    pids.write(f"{child}\\n")\n'
        "os._exit(7)\n```\n",
        encoding="utf-8",
    )
    started = time.monotonic()
    completed, report, _ = verify_measured(
        tmp_path, chapter, "--timeout", "60", env={**os.environ, "HOSTILE_PIDS": str(pids)}
    )
    # Found at once, from the worker's exit status, not at the time limit.
    assert time.monotonic() - started < 30
    assert completed.returncode == 1
    (failure,) = report["chapters"][0]["failures"]
    assert (failure["line"], failure["kind"]) == (3, "crash")
    assert "the worker process ended (exit status 7) while running it" in failure["message"]
    assert_none_running(pids, report)
