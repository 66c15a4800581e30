"""Running book code in child processes, each under a time limit.

Three kinds of run: a chapter's listings (in the worker, one process per
chapter), a checkpoint script, and the import of a learner file. Every child
starts in its own session so that a timeout kills it and anything it spawned.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bookproof.verify.chapter import Listing
from bookproof.verify.environment import REPO_ROOT, child_environment, python_executable

__all__ = [
    "ListingRun",
    "ListingsRun",
    "ProcessRun",
    "import_learner",
    "run_checkpoint",
    "run_listings",
    "stop_all",
]

# How much of a crashed child's stderr a failure message quotes.
_STDERR_TAIL = 2_000
# Output past this is cut (a flooding checkpoint must not exhaust the verifier).
_MAX_OUTPUT = 1_000_000

_IMPORT_LEARNER = """\
import importlib.util, os, sys
path = sys.argv[1]
sys.path[0] = os.path.dirname(path)
spec = importlib.util.spec_from_file_location("learner_under_test", path)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
"""


@dataclass(frozen=True)
class ListingRun:
    """What one listing did: its printed output and, if any, what it raised."""

    stdout: str
    exception: dict[str, Any] | None = None
    syntax_error: dict[str, Any] | None = None
    truncated: bool = False
    flooded: bool = False  # printed so much that the worker's file-size limit stopped it
    seconds: float = 0.0


@dataclass(frozen=True)
class ListingsRun:
    """The runs of a chapter's listings, in order; `stopped` explains a missing tail."""

    runs: tuple[ListingRun, ...]
    stopped: str | None = None  # why the listings after the last run never ran
    stopped_kind: Literal["timeout", "crash"] | None = None
    partial_stdout: str = ""  # what the stopped listing had printed by then
    seconds: float = 0.0


@dataclass(frozen=True)
class ProcessRun:
    """A checkpoint run or a learner import."""

    returncode: int | None  # None when it was killed at the time limit
    stdout: str
    stderr: str
    timed_out: bool = False
    seconds: float = 0.0
    command: tuple[str, ...] = field(default=())


# Every child still running, so that an interrupted verifier can stop them all
# (they run in their own sessions, out of reach of the terminal's Ctrl-C).
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()


def _started(process: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    with _LIVE_LOCK:
        _LIVE.add(process)
    return process


def _ended(process: subprocess.Popen[bytes]) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(process)


def stop_all() -> None:
    """Kill every child process (and its session) that is still running."""
    with _LIVE_LOCK:
        processes = list(_LIVE)
    for process in processes:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _tail(path_file: Any) -> str:
    path_file.seek(0)
    data = path_file.read()
    text = data.decode("utf-8", errors="replace")
    return text[-_STDERR_TAIL:]


def _salvage_stdout(pid: int) -> str:
    """What a listing about to be stopped has printed so far, read from the worker's
    capture file through /proc (Linux); empty where that is not possible."""
    try:
        with open(f"/proc/{pid}/fd/1", "rb") as capture:
            return capture.read(_MAX_OUTPUT).decode("utf-8", errors="replace")
    except OSError:
        return ""


def run_listings(path: Path, listings: tuple[Listing, ...], timeout: float) -> ListingsRun:
    """Run `listings` in one worker process; each listing gets `timeout` seconds."""
    started = time.perf_counter()
    job = {
        "filename": str(path),
        "blocks": [
            {"index": i, "source": listing.fence.content, "first_line": listing.fence.line + 1}
            for i, listing in enumerate(listings)
        ],
    }
    runs: list[ListingRun] = []
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            # `-c` rather than `-m`: runpy's import is a measurable share of start-up.
            [python_executable(), "-c", "from bookproof.verify.worker import main; main()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=REPO_ROOT,
            env=child_environment(),
            start_new_session=True,
        )
        _started(process)
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(job).encode("utf-8"))
            process.stdin.close()
        except BrokenPipeError:
            pass
        channel = process.stdout.fileno()
        pending = b""
        waiting_for = "ready"
        deadline = time.monotonic() + timeout
        stopped: str | None = None
        stopped_kind: Literal["timeout", "crash"] | None = None
        partial = ""
        while True:
            newline = pending.find(b"\n")
            if newline >= 0:
                line, pending = pending[:newline], pending[newline + 1 :]
                try:
                    message = json.loads(line)
                except ValueError:
                    _kill(process)
                    stopped_kind = "crash"
                    stopped = "the worker's answer was unreadable (its channel was written to)"
                    break
                if message["event"] == "done":
                    break
                if message["event"] == "result":
                    runs.append(
                        ListingRun(
                            stdout=message["stdout"],
                            exception=message.get("exception"),
                            syntax_error=message.get("syntax_error"),
                            truncated=message.get("truncated", False),
                            flooded=message.get("flooded", False),
                            seconds=message.get("seconds", 0.0),
                        )
                    )
                waiting_for = "result"
                deadline = time.monotonic() + timeout
                continue
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([channel], [], [], max(remaining, 0))
            if not ready:
                partial = _salvage_stdout(process.pid)
                _kill(process)
                stopped_kind = "timeout"
                if waiting_for == "ready":
                    stopped = f"the worker did not start within {timeout:g} s"
                else:
                    stopped = f"the listing did not finish within {timeout:g} s (--timeout)"
                break
            chunk = os.read(channel, 65536)
            if not chunk:
                returncode = process.wait()
                stopped_kind = "crash"
                stopped = (
                    f"the worker process ended (exit status {returncode}) while running it"
                    + (f"; its stderr ends with:\n{_tail(stderr)}" if _tail(stderr) else "")
                )
                break
            pending += chunk
        if process.poll() is None:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _kill(process)
        process.stdout.close()
        _ended(process)
    if len(runs) == len(listings):
        stopped = stopped_kind = None
    return ListingsRun(
        runs=tuple(runs),
        stopped=stopped,
        stopped_kind=stopped_kind,
        partial_stdout=partial,
        seconds=time.perf_counter() - started,
    )


def _run_process(command: list[str], timeout: float) -> ProcessRun:
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
        env=child_environment(),
        start_new_session=True,
    )
    _started(process)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        out, err = process.communicate()
        _ended(process)
        return ProcessRun(
            returncode=None,
            stdout=out[:_MAX_OUTPUT].decode("utf-8", errors="replace"),
            stderr=err[-_STDERR_TAIL:].decode("utf-8", errors="replace"),
            timed_out=True,
            seconds=time.perf_counter() - started,
            command=tuple(command),
        )
    _ended(process)
    return ProcessRun(
        returncode=process.returncode,
        stdout=out[:_MAX_OUTPUT].decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
        seconds=time.perf_counter() - started,
        command=tuple(command),
    )


def run_checkpoint(path: Path, timeout: float) -> ProcessRun:
    """Run a checkpoint as a reader would: `python path`, from the repository root."""
    return _run_process([python_executable(), str(path)], timeout)


def import_learner(path: Path, timeout: float) -> ProcessRun:
    """Import a learner file as a module (not as __main__) in a fresh process."""
    return _run_process([python_executable(), "-c", _IMPORT_LEARNER, str(path)], timeout)
