"""Child processes that cannot outlive their run, and their output read in bounded memory.

Every run (a chapter's worker, a checkpoint, a learner import) starts in its
own session, with a marker in its environment that each process it starts
inherits: `BOOKPROOF_RUN=<random token>`. When the run's command ends, any
process still carrying its marker is one the run left behind, even one that
left the session or lost its parent: it is reported, then killed. Finding
processes by marker needs Linux's /proc; elsewhere the run's process group is
killed and nothing is reported.

A run may be isolated (`bookproof.verify.isolation`): then the command runs
in a bubblewrap sandbox under a holder process, which reports the command's
exit status on a pipe of its own and ends the sandbox when the verifier,
having listed what was left running, lets it go. A leftover is reported
with the pid the run saw (its sandbox has its own pid numbers).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from bookproof.verify.environment import REPO_ROOT, child_environment
from bookproof.verify.isolation import Isolation, sandboxed
from bookproof.verify.worker import LISTING_NAME, LISTING_VARIABLE

__all__ = [
    "MARKER_VARIABLE",
    "Child",
    "Head",
    "Leftover",
    "Tail",
    "finish",
    "host_pid",
    "start",
    "stop_all",
]

MARKER_VARIABLE = "BOOKPROOF_RUN"
# How much of a leftover process's command line a report quotes.
_COMMAND_CHARS = 200
_PROC = "/proc"
# How long a run that said it was done, or a sandbox let go, may take to end.
_END_S = 5.0


@dataclass(frozen=True)
class Leftover:
    """A process a run left running, as /proc described it before it was killed."""

    pid: int  # as the run saw it: in its sandbox's own numbering, when isolated
    started: float  # seconds since boot
    command: str
    listing: int | None = None  # the index of the listing that started it, when tagged


@dataclass(frozen=True)
class _Marked:
    """A live process carrying a run's marker."""

    pid: int  # as the verifier sees it
    parent: int  # its parent's pid, as the verifier sees it
    leftover: Leftover


@dataclass(eq=False)
class Child:
    """A started run: its root process, and the marker its descendants carry.

    Unisolated, the root is the command itself. Isolated, the root is bwrap,
    and the command's exit status comes from the holder, on `status_fd`;
    closing `hold_fd` lets the holder, and so the sandbox, end.
    """

    process: subprocess.Popen[bytes]
    marker: bytes  # b"BOOKPROOF_RUN=<token>", as it stands in /proc/<pid>/environ
    isolated: bool = False
    status_fd: int = -1
    hold_fd: int = -1
    _status: int | None = None

    @property
    def stdout(self) -> IO[bytes]:
        assert self.process.stdout is not None
        return self.process.stdout

    @property
    def stderr(self) -> IO[bytes]:
        assert self.process.stderr is not None
        return self.process.stderr

    def wakers(self) -> list[int]:
        """Descriptors to add to a `select` so that it returns when the command ends: the
        status pipe of a sandbox, whose bwrap holds the run's output pipes open."""
        return [self.status_fd] if self.isolated and self.status_fd >= 0 else []

    def poll(self) -> int | None:
        """The command's exit status once it has ended (negative: killed by that signal)."""
        if not self.isolated:
            return self.process.poll()
        return self._read_status(0)

    def wait(self, timeout: float | None) -> int:
        """The command's exit status; raises subprocess.TimeoutExpired after `timeout`."""
        if not self.isolated:
            return self.process.wait(timeout=timeout)
        status = self._read_status(timeout)
        if status is None:
            raise subprocess.TimeoutExpired(self.process.args, timeout or 0.0)
        return status

    def _read_status(self, timeout: float | None) -> int | None:
        if self._status is not None or self.status_fd < 0:
            return self._status
        if not select.select([self.status_fd], [], [], timeout)[0]:
            return None
        # The holder writes a few digits at once and closes: one read has them.
        # Nothing at all means the holder never ran or was killed with the
        # sandbox: bwrap's own status (it ends with its sandbox) says how.
        data = os.read(self.status_fd, 64)
        os.close(self.status_fd)
        self.status_fd = -1
        try:
            self._status = int(data)
        except ValueError:
            self._status = self.process.wait()
        return self._status

    def holder(self, marked: Sequence[_Marked]) -> int | None:
        """The holder's pid among `marked`: the one process bwrap started itself."""
        if not self.isolated:
            return None
        for process in marked:
            if process.parent == self.process.pid:
                return process.pid
        return None

    def release(self) -> None:
        """Let the run end and wait for its root; safe to call twice."""
        if self.hold_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.hold_fd)
            self.hold_fd = -1
        try:
            self.process.wait(timeout=_END_S)
        except subprocess.TimeoutExpired:
            _kill_group(self)
            self.process.wait()
        if self.status_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.status_fd)
            self.status_fd = -1


# Every run still going, so that an interrupted verifier can stop them all
# (they run in their own sessions, out of reach of the terminal's Ctrl-C).
_LIVE: set[Child] = set()
_LIVE_LOCK = threading.Lock()


def start(command: Sequence[str], *, stdin: int, isolation: Isolation) -> Child:
    """Start `command` from the repository root with pipes for stdout and stderr."""
    token = secrets.token_hex(16)
    env = child_environment()
    status_fd = hold_fd = -1
    pass_fds: tuple[int, ...] = ()
    if isolation.isolated:
        # The holder's status descriptor, written inside, read here; and the
        # hold descriptor, read inside until this end closes.
        status_fd, status_inside = os.pipe2(os.O_CLOEXEC)
        hold_inside, hold_fd = os.pipe2(os.O_CLOEXEC)
        pass_fds = (status_inside, hold_inside)
        argv = sandboxed(
            command,
            status_fd=status_inside,
            hold_fd=hold_inside,
            setenv=[(MARKER_VARIABLE, token)],
        )
    else:
        env[MARKER_VARIABLE] = token
        argv = list(command)
    try:
        process = subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=REPO_ROOT,
            env=env,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except BaseException:
        for descriptor in (status_fd, hold_fd):
            if descriptor >= 0:
                os.close(descriptor)
        raise
    finally:
        # The sandbox's ends: only the sandbox may hold them, or no end-of-file comes.
        for descriptor in pass_fds:
            os.close(descriptor)
    marker = f"{MARKER_VARIABLE}={token}".encode()
    child = Child(process, marker, isolation.isolated, status_fd, hold_fd)
    with _LIVE_LOCK:
        _LIVE.add(child)
    return child


def _kill_group(child: Child) -> None:
    # Only while the root is not reaped: its pid is the group's id, and once
    # reaped it may belong to an unrelated process. Killing bwrap ends its
    # sandbox and all in it (--die-with-parent, then the PID namespace).
    if child.process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.process.pid, signal.SIGKILL)


def finish(child: Child, *, kill: bool) -> tuple[int, tuple[Leftover, ...]]:
    """End the run: the command's exit status, and the processes it left running.

    With `kill`, the root and its process group are stopped first (a time
    limit, a flood, tampering); otherwise the command is waited for. Either
    way every process still carrying the run's marker is killed before this
    returns.
    """
    if kill:
        _kill_group(child)
    try:
        status = child.wait(None if kill else _END_S)
    except subprocess.TimeoutExpired:
        kill = True
        _kill_group(child)
        status = child.wait(None)
    if kill:
        # A killed sandbox takes its processes with it: wait for that first,
        # so that none of them is counted as left behind.
        child.release()
    leftovers = _sweep(child)
    child.release()
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
        _sweep(child)


def host_pid(child: Child, pid: int) -> int | None:
    """The verifier's pid for the run's process numbered `pid` in the run's own view."""
    if not child.isolated:
        return pid
    for process in _marked(child.marker):
        if process.leftover.pid == pid:
            return process.pid
    return None


def _marked(marker: bytes) -> list[_Marked]:
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
            seen_as = _own_pid(name)
        except OSError:  # gone meanwhile, or another user's
            continue
        if fields[0] in (b"Z", b"X"):
            continue
        shown = command.replace(b"\0", b" ").decode("utf-8", errors="replace").strip()
        if len(shown) > _COMMAND_CHARS:
            shown = shown[: _COMMAND_CHARS - 3] + "..."
        listing = _listing_tag(variables, head.partition(b"(")[2])
        leftover = Leftover(seen_as, int(fields[19]) / ticks, shown, listing)
        found.append(_Marked(int(name), int(fields[1]), leftover))
    return found


def _own_pid(name: str) -> int:
    """The process's pid as it sees it: the last of its `NSpid` line (Linux 4.1 on)."""
    with open(f"{_PROC}/{name}/status", "rb") as status:
        for line in status:
            if line.startswith(b"NSpid:"):
                return int(line.split()[-1])
    return int(name)


def _listing_tag(variables: list[bytes], process_name: bytes) -> int | None:
    prefix = f"{LISTING_VARIABLE}=".encode()
    for variable in variables:
        if variable.startswith(prefix) and variable[len(prefix) :].isdigit():
            return int(variable[len(prefix) :])
    word, _, number = process_name.partition(b" ")
    if word == LISTING_NAME.encode() and number.isdigit():
        return int(number)
    return None


def _sweep(child: Child) -> tuple[Leftover, ...]:
    """Kill every process carrying the run's marker but its holder; the ones
    first found, in pid order."""
    first = _marked(child.marker)
    spared = child.holder(first)
    first = [process for process in first if process.pid != spared]
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
        current = [process for process in _marked(child.marker) if process.pid != spared]
    return tuple(sorted((process.leftover for process in first), key=lambda p: p.pid))


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
