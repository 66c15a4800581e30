"""Where book code runs: in a bubblewrap sandbox of its own, or beside the verifier.

What the sandbox is for. The verifier guards against accidents: a listing
that prints without end, patches builtins, closes descriptors, forks a
process that outlives its chapter, or sends a signal to the wrong pid. It
does not guard against a listing written to deceive it: such a listing sits
in the book, for every reader to see. Without a sandbox a listing runs as the
verifier's user, beside it, so one stray `os.kill(os.getppid(), SIGSTOP)`
freezes the verifier, and a listing can reach the network.

With bubblewrap (`bwrap`), each run of book code (a chapter's listings, its
checkpoint, its learner import: one sandbox each, never one per listing) gets
its own PID namespace, in which the verifier and every other process of the
machine do not exist, and its own network namespace, in which only loopback
is up: a listing's own server on 127.0.0.1 works, nothing outside does. The
file system is the machine's, read-only, except /tmp (shared with the
machine, where the chapters make their temporary folders), the repository and
the virtual environment (writable, as for a reader's own script), a private
/dev, and an empty /run (where the machine's services keep their Unix sockets).

Inside the sandbox the first process (PID 1) is `_HOLDER`, a few lines of
Python that start the real command and wait for it. It is there for two
reasons. The kernel drops every signal sent to a namespace's PID 1 from
inside with no handler for it, SIGSTOP and SIGKILL included, so a listing
that signals its parent stops nothing. And when a namespace's PID 1 ends the
kernel kills every process left in it; the holder reports the command's exit
status and then waits until the verifier has listed what the run left
running (to report it at the listing that started it) before it ends.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bookproof.verify.environment import REPO_ROOT

__all__ = [
    "CHOICES",
    "Isolation",
    "IsolationUnavailable",
    "bubblewrap_problem",
    "choose_isolation",
    "sandboxed",
]

Mode = Literal["bwrap", "none"]
CHOICES = ("auto", "bwrap", "none")
# Python, run as `python -I -S -c _HOLDER STATUS_FD HOLD_FD COMMAND...` as the
# sandbox's PID 1. -I -S: nothing of the environment or of site-packages is
# read, so it starts in a few milliseconds and nothing a chapter sets changes it.
_HOLDER = """\
import os, signal, sys
status_fd, hold_fd = int(sys.argv[1]), int(sys.argv[2])
command = sys.argv[3:]
# PID 1 gets only the signals it handles: with Python's SIGINT handler gone,
# a listing's stray SIGINT to its parent reaches nothing.
signal.signal(signal.SIGINT, signal.SIG_DFL)
pid = os.fork()
if pid == 0:
    os.close(status_fd)
    os.close(hold_fd)
    # The defaults a command expects, which Python changed in this process.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execv(command[0], command)
    finally:
        os._exit(127)
while True:
    try:
        _, status = os.waitpid(pid, 0)
        break
    except InterruptedError:
        continue
# The run's pipes reach end-of-file once the command and what it left behind
# are done with them: the holder keeps none of them open.
for descriptor in (0, 1, 2):
    try:
        os.close(descriptor)
    except OSError:
        pass
os.write(status_fd, str(os.waitstatus_to_exitcode(status)).encode())
os.close(status_fd)
# Until the verifier closes its end: it lists what is still running first.
while os.read(hold_fd, 4096):
    pass
"""


class IsolationUnavailable(Exception):
    """`--isolation bwrap` was asked for, and bubblewrap cannot run here."""


@dataclass(frozen=True)
class Isolation:
    """How this verification runs book code, and, when not isolated, why not."""

    mode: Mode
    reason: str = ""  # why there is no sandbox ("--isolation none", "bwrap is not installed")

    @property
    def isolated(self) -> bool:
        return self.mode == "bwrap"

    def describe(self) -> str:
        """One sentence for the construction report."""
        if self.isolated:
            return (
                "every chapter ran offline, isolated: each run in a bubblewrap sandbox with its "
                "own PID and network namespaces (no signal reaches the verifier, no connection "
                "leaves the sandbox), the file system read-only outside /tmp, the repository "
                "and the virtual environment"
            )
        return (
            f"NOT isolated ({self.reason}): book code ran as this user beside the verifier; "
            "it could signal the verifier's processes and reach the network"
        )


def bubblewrap_problem() -> str | None:
    """None when bubblewrap sandboxes work here; otherwise why not, in a few words."""
    return _bubblewrap_problem()


@functools.cache
def _bubblewrap_problem() -> str | None:
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed; install it with: sudo apt-get install bubblewrap"
    try:
        # A sandbox like the real ones, running the verifier's interpreter.
        completed = subprocess.run(
            [*_bwrap_prefix(()), sys.executable, "-I", "-S", "-c", "pass"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not start a sandbox ({type(error).__name__})"
    if completed.returncode != 0:
        lines = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        return "bubblewrap could not start a sandbox here" + (f" ({lines[-1]})" if lines else "")
    return None


def choose_isolation(choice: str) -> Isolation:
    """The isolation for `--isolation CHOICE`: `auto` takes bubblewrap when it works here."""
    if choice == "none":
        return Isolation("none", "--isolation none")
    problem = bubblewrap_problem()
    if problem is None:
        return Isolation("bwrap")
    if choice == "bwrap":
        raise IsolationUnavailable(f"--isolation bwrap: {problem}")
    return Isolation("none", problem)


@functools.cache
def _bwrap() -> str:
    return shutil.which("bwrap") or "bwrap"


def _writable() -> tuple[str, ...]:
    """Where book code may write: /tmp (and the temporary folder the environment
    names), the repository and the virtual environment, as a reader's own script
    may. The last two also because Python caches compiled modules beside their
    sources: read-only, every run would compile the runtime and pydantic anew."""
    places = ["/tmp"]
    for place in (os.environ.get("TMPDIR"), str(REPO_ROOT), sys.prefix):
        if place and os.path.isdir(place):
            places.append(os.path.realpath(place))
    # A place inside another needs no bind of its own (the venv in the repository).
    return tuple(
        place
        for place in dict.fromkeys(places)
        if not any(place.startswith(other + os.sep) for other in places)
    )


def _bwrap_prefix(setenv: Sequence[tuple[str, str]]) -> list[str]:
    argv = [
        _bwrap(),
        "--unshare-pid",
        "--unshare-net",  # bubblewrap brings loopback up in the new namespace
        "--die-with-parent",
        "--as-pid-1",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        # Unix sockets are files, outside the network namespace's reach: the
        # machine's services (a session bus, a container daemon) keep theirs in /run.
        "--tmpfs",
        "/run",
    ]
    for place in _writable():
        argv += ["--bind", place, place]
    for name, value in setenv:
        argv += ["--setenv", name, value]
    return [*argv, "--chdir", str(REPO_ROOT), "--"]


def sandboxed(
    command: Sequence[str], *, status_fd: int, hold_fd: int, setenv: Sequence[tuple[str, str]]
) -> list[str]:
    """`command` inside a sandbox, under the holder (see the module's docstring).

    `setenv` reaches the command but not the bwrap process outside, whose
    environment the verifier reads in /proc: a marker given this way marks
    the run's processes only.
    """
    holder = [sys.executable, "-I", "-S", "-c", _HOLDER, str(status_fd), str(hold_fd)]
    return [*_bwrap_prefix(setenv), *holder, *command]
