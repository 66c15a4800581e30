"""A worker process forked from the test's own interpreter, which has already imported it all.

`python -m sovereign_agent.worker` starts a fresh interpreter and imports the
runtime (Pydantic's models most of all): a third of a second on a quiet
machine, seconds on a busy one, paid by every worker of every recovery test.
A forked child is as much a process of its own as that one: its own pid, its
own SQLite connections and lease-renewing thread, killed by a real SIGKILL,
paused by a real SIGSTOP, stopped by a real SIGTERM or SIGINT. It runs the
command's own `main` with the command's arguments and environment, its
standard output and error in files of its own, so what a recovery test proves
about the worker is unchanged; only the start-up is shared. The tests about
the command itself (an uninterrupted morning, a worker told to stop) still
start it with `python -m`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from typing import IO

from sovereign_agent.worker.__main__ import main

__all__ = ["ForkedWorker", "stop_all"]

# Every child forked and not yet reaped, so that a failed test leaves none behind.
RUNNING: dict[int, ForkedWorker] = {}


class ForkedWorker:
    """What a test asks of a `subprocess.Popen`: pid, poll, send_signal, communicate."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self.returncode: int | None = None
        # Files, not pipes: nothing need read them while the child runs, and a
        # child forked later inherits no pipe whose end a test waits for.
        self._out: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - read when it exits
        self._err: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - read when it exits
        # Whatever this process has buffered would be written twice, by it and by the child.
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child: it never returns
            _child(list(argv), dict(env), self._out, self._err)
        self.pid = pid
        RUNNING[pid] = self

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self._reaped(status)
        return self.returncode

    def send_signal(self, how: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, how)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Its output once it exits; as with Popen, a timeout leaves it running."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(["forked worker"], timeout or 0)
            time.sleep(0.005)
        return self._read(self._out), self._read(self._err)

    def kill(self) -> None:
        """SIGKILL it, paused or not, and reap it."""
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            os.kill(self.pid, signal.SIGCONT)
            _, status = os.waitpid(self.pid, 0)
            self._reaped(status)

    def _reaped(self, status: int) -> None:
        self.returncode = os.waitstatus_to_exitcode(status)
        RUNNING.pop(self.pid, None)

    @staticmethod
    def _read(file: IO[bytes]) -> str:
        file.seek(0)
        return file.read().decode("utf-8")


def _child(argv: list[str], env: dict[str, str], out: IO[bytes], err: IO[bytes]) -> None:
    """Become the worker command: its output, environment and signals, then exit with its status."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - for the process's life
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - for the process's life
        os.environ.clear()
        os.environ.update(env)
        # As a fresh interpreter has them: Ctrl-C raises, SIGTERM kills (until main says otherwise).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        # Never back into pytest: no cleanup, no atexit, no second report of the test.
        os._exit(code)


def stop_all() -> None:
    """Kill and reap every forked worker still running (a test that failed half-way)."""
    for child in list(RUNNING.values()):
        child.kill()
