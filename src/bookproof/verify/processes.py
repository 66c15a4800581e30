"""Child processes that cannot outlive their run, and their output read in bounded memory.

Every run (a chapter's worker, a checkpoint, a learner import) starts in its
own session, with a marker in its environment that each process it starts
inherits: `BOOKPROOF_RUN=<random token>`. When the run ends, any process
still carrying its marker is one the run left behind, even one that left the
session or lost its parent: it is reported, then killed. Finding processes by
marker needs Linux's /proc; elsewhere the run's process group is killed and
nothing is reported.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from bookproof.verify.environment import REPO_ROOT, child_environment
from bookproof.verify.worker import LISTING_NAME, LISTING_VARIABLE

__all__ = [
    "MARKER_VARIABLE",
    "Child",
    "Head",
    "Leftover",
    "Tail",
    "finish",
    "start",
    "stop_all",
]

MARKER_VARIABLE = "BOOKPROOF_RUN"
# How much of a leftover process's command line a report quotes.
_COMMAND_CHARS = 200
_PROC = "/proc"


@dataclass(frozen=True)
class Leftover:
    """A process a run left running, as /proc described it before it was killed."""

    pid: int
    started: float  # seconds since boot
    command: str
    listing: int | None = None  # the index of the listing that started it, when tagged


@dataclass(eq=False)
class Child:
    """A started run: its root process, and the marker its descendants carry."""

    process: subprocess.Popen[bytes]
    marker: bytes  # b"BOOKPROOF_RUN=<token>", as it stands in /proc/<pid>/environ

    @property
    def stdout(self) -> IO[bytes]:
        assert self.process.stdout is not None
        return self.process.stdout

    @property
    def stderr(self) -> IO[bytes]:
        assert self.process.stderr is not None
        return self.process.stderr


# Every run still going, so that an interrupted verifier can stop them all
# (they run in their own sessions, out of reach of the terminal's Ctrl-C).
_LIVE: set[Child] = set()
_LIVE_LOCK = threading.Lock()


def start(command: Sequence[str], *, stdin: int) -> Child:
    """Start `command` from the repository root with pipes for stdout and stderr."""
    token = secrets.token_hex(16)
    env = child_environment()
    env[MARKER_VARIABLE] = token
    process = subprocess.Popen(
        list(command),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
        env=env,
        start_new_session=True,
    )
    child = Child(process, f"{MARKER_VARIABLE}={token}".encode())
    with _LIVE_LOCK:
        _LIVE.add(child)
    return child


def _kill_group(child: Child) -> None:
    # Only while the root is not reaped: its pid is the group's id, and once
    # reaped it may belong to an unrelated process.
    if child.process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.process.pid, signal.SIGKILL)


def finish(child: Child, *, kill: bool) -> tuple[int, tuple[Leftover, ...]]:
    """End the run: the root's exit status, and the processes it left running.

    With `kill`, the root and its process group are stopped first (a time
    limit, a flood, tampering); otherwise the root is waited for. Either way
    every process still carrying the run's marker is killed before this returns.
    """
    if kill:
        _kill_group(child)
    try:
        status = child.process.wait(timeout=None if kill else 5)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        status = child.process.wait()
    leftovers = _sweep(child.marker)
    for stream in (child.process.stdin, child.process.stdout, child.process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    with _LIVE_LOCK:
        _LIVE.discard(child)
    return status, leftovers


def stop_all() -> None:
    """Kill every run still going, and everything each one started."""
    with _LIVE_LOCK:
        children = list(_LIVE)
    for child in children:
        _kill_group(child)
        _sweep(child.marker)


def _marked(marker: bytes) -> list[Leftover]:
    """The live processes whose environment holds `marker`, zombies left out."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return []
    found = []
    ticks = os.sysconf("SC_CLK_TCK")
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/environ", "rb") as environ:
                variables = environ.read().split(b"\0")
            if marker not in variables:
                continue
            with open(f"{_PROC}/{name}/stat", "rb") as stat:
                # The process name, in parentheses, may itself hold spaces and ')'.
                head, _, tail = stat.read().rpartition(b")")
                fields = tail.split()
            with open(f"{_PROC}/{name}/cmdline", "rb") as cmdline:
                command = cmdline.read(_COMMAND_CHARS * 4)
        except OSError:  # gone meanwhile, or another user's
            continue
        if fields[0] in (b"Z", b"X"):
            continue
        shown = command.replace(b"\0", b" ").decode("utf-8", errors="replace").strip()
        if len(shown) > _COMMAND_CHARS:
            shown = shown[: _COMMAND_CHARS - 3] + "..."
        listing = _listing_tag(variables, head.partition(b"(")[2])
        found.append(Leftover(int(name), int(fields[19]) / ticks, shown, listing))
    return found


def _listing_tag(variables: list[bytes], process_name: bytes) -> int | None:
    prefix = f"{LISTING_VARIABLE}=".encode()
    for variable in variables:
        if variable.startswith(prefix) and variable[len(prefix) :].isdigit():
            return int(variable[len(prefix) :])
    word, _, number = process_name.partition(b" ")
    if word == LISTING_NAME.encode() and number.isdigit():
        return int(number)
    return None


def _sweep(marker: bytes) -> tuple[Leftover, ...]:
    """Kill every process carrying `marker`; the ones first found, in pid order."""
    first = _marked(marker)
    current = first
    # A process may fork while it is being killed; its child carries the
    # marker too, and the next round finds it. A process in uninterruptible
    # sleep takes a moment to go.
    for _ in range(100):
        if not current:
            break
        for process in current:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(process.pid, signal.SIGKILL)
        time.sleep(0.01)
        current = _marked(marker)
    return tuple(sorted(first, key=lambda process: process.pid))


class Head:
    """The first `limit` bytes of a stream, and how many bytes it had in all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def overflowed(self) -> bool:
        return self.total > self.limit


class Tail:
    """The last `limit` bytes of a stream."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def feed(self, chunk: bytes) -> None:
        self.data += chunk[-self.limit :]
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]
