"""Support the book does not print: `run_python`, running model-written Python in a sandbox.

No check of arguments can make code safe: a program's meaning is what it
does, so the only defence is a boundary it cannot cross. `run_python` is
that boundary, built from the runtime's one sandbox (`sovereign_agent.sandbox`,
the grader's too), layer by layer:

1. bubblewrap namespaces: its own user, mount, PID, network, IPC and UTS
   namespaces; no network at all; it sees no process outside;
2. mounts: the interpreter, its libraries and one data folder at `/data`,
   all read-only, and no /proc; its only writable place is a small /tmp
   that disappears with it, where it starts;
3. the process's own first act, before the model's code: rlimits (memory,
   file size, CPU seconds, open files) and a seccomp filter that refuses new
   processes, `exec`, io_uring and new namespaces;
4. the parent's clock and byte counts: a wall-clock limit on the code (its
   clock starts once layer 3 holds, so the sandbox's start-up is not
   charged to it), and a bound on what it may print.

The result is one of the named `Outcome`s with what the code printed,
bounded. Where no sandbox can be made, the tool says so (`no_sandbox`) and
runs nothing: there is no unsandboxed fallback.

The outcomes `time_limit` and `output_limit` are the parent's measurements.
`memory_limit`, `file_limit` and `raised` are reported by the code's own
process (a `MemoryError`, an `EFBIG`, any other exception), so a program can
claim them falsely about itself; it can never claim more time or output
than the parent allowed, nor reach anything the boundary hides.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import cast

from pydantic import BaseModel, ConfigDict, Field

from sovereign_agent.sandbox import (
    ENVIRONMENT,
    Isolation,
    SandboxStopping,
    View,
    bubblewrap_problem,
    start,
    stop,
)
from sovereign_agent.tools import ExecutableTool, ToolCall

__all__ = [
    "DATA_INSIDE",
    "RUN_PYTHON_CONSEQUENTIAL",
    "CodeArguments",
    "CodeLimits",
    "CodeResult",
    "Outcome",
    "build_code_tool",
    "run_python",
    "sandboxed_code_only",
]

# Where the data folder appears inside the sandbox.
DATA_INSIDE = "/data"
# Where the code starts: the sandbox's own /tmp, its only writable place.
SCRATCH_INSIDE = "/tmp"

# The code tool's policy, in one place. It changes nothing outside its
# sandbox, yet it runs whatever the model wrote: it is consequential, so it
# runs only where a write authority (an operator's policy) lets it.
RUN_PYTHON_CONSEQUENTIAL = True


def sandboxed_code_only(call: ToolCall) -> None:
    """A write authority for a run whose one consequential tool is `run_python`.

    The operator's standing yes to code that runs behind the boundary, and a
    no to every other consequential tool: a run given this authority can
    compute, never buy. A shop that wants a person to read each program first
    uses chapter 10's approvals instead.
    """
    if call.name != "run_python":
        raise PermissionError(f"this run may only run sandboxed code, not {call.name}")


class Outcome(StrEnum):
    """Every way one run of model-written code can end; nothing else is ever reported."""

    PRINTED = "printed"  # the code ran to its end
    RAISED = "raised"  # the code raised an exception (or exited non-zero)
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    FILE_LIMIT = "file_limit"
    OUTPUT_LIMIT = "output_limit"
    KILLED = "killed"  # ended by a signal the code brought on itself (a crash)
    NO_SANDBOX = "no_sandbox"  # nothing ran: no sandbox could be made


@dataclass(frozen=True)
class CodeLimits:
    """What one run may use. Small on purpose: an analysis of a sales file needs little."""

    seconds: float = 5.0
    memory_bytes: int = 256 * 1024 * 1024
    output_bytes: int = 4096
    file_bytes: int = 1024 * 1024
    open_files: int = 64
    scratch_bytes: int = 8 * 1024 * 1024

    def for_child(self) -> dict[str, int]:
        """The rlimits the sandboxed process sets on itself before the model's code runs."""
        return {
            "memory_bytes": self.memory_bytes,
            "file_bytes": self.file_bytes,
            # The wall clock ends the run first; CPU seconds are the backstop
            # that needs no parent to notice.
            "cpu_seconds": math.ceil(self.seconds) + 1,
            "open_files": self.open_files,
        }


@dataclass(frozen=True)
class CodeResult:
    """How a run ended, what the code printed (bounded) and, when it failed, one line saying why."""

    outcome: Outcome
    output: str
    error: str = ""

    def observation(self) -> dict[str, str]:
        return {"outcome": self.outcome.value, "output": self.output, "error": self.error}


class CodeArguments(BaseModel):
    """The one argument a model gives `run_python`: the program's text."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    code: str = Field(min_length=1, max_length=20_000)


# The exit statuses the process's own prelude uses; the model's code could
# use them too, and so only claim its own failure (see the module's docstring).
_RAISED, _MEMORY, _FILE, _NO_FILTER = 1, 3, 4, 70
# Written by the prelude once its limits and filter hold, before any of the
# model's code runs: a process that ends without it never started.
_READY = b"run_python: confined\n"
# The most of standard error kept: the end of a traceback is what says why.
_ERROR_TAIL_BYTES = 2048
_ERROR_LINE_CHARACTERS = 300
# Standard error beyond this is a flood too.
_ERROR_FLOOD_BYTES = 256 * 1024
# How long bubblewrap and the interpreter may take to start, on a busy
# machine, before the code's own clock starts: the time limit is the code's,
# never charged for the sandbox's start-up.
_START_UP_SECONDS = 30.0

_PRELUDE = """
import errno, os, sys, traceback
from sovereign_agent.sandbox import confine
if not confine({limits}, forbid_exec=True):
    os._exit({no_filter})
os.write(1, {ready!r})
code = sys.stdin.read()
try:
    exec(compile(code, "<run_python>", "exec"), {{"__name__": "__main__"}})
    sys.stdout.flush()
except MemoryError:
    os.write(2, b"MemoryError\\n")
    os._exit({memory})
except SystemExit as exit:
    sys.stdout.flush()
    os._exit(0 if exit.code in (None, 0) else {raised})
except BaseException as error:
    with_errno = getattr(error, "errno", None)
    try:
        sys.stdout.flush()
        traceback.print_exc()
    except BaseException:
        pass
    os._exit({file} if with_errno == errno.EFBIG else {raised})
os._exit(0)
"""


def _prelude(limits: CodeLimits) -> str:
    return _PRELUDE.format(
        limits=json.dumps(limits.for_child()),
        no_filter=_NO_FILTER,
        ready=_READY,
        memory=_MEMORY,
        raised=_RAISED,
        file=_FILE,
    )


class _Reader(threading.Thread):
    """Reads one pipe to its end, keeping a bounded part; notes when more than `bound` came."""

    def __init__(
        self,
        stream: io.BufferedReader,
        *,
        bound: int,
        tail: bool,
        flooded: threading.Event,
        ready: threading.Event | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._bound = bound
        self._tail = tail
        self._flooded = flooded
        self._ready = ready
        self.kept = b""
        self.total = 0

    def run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := self._stream.read1(65536):
                self.total += len(chunk)
                if self._tail:
                    self.kept = (self.kept + chunk)[-_ERROR_TAIL_BYTES:]
                elif len(self.kept) <= self._bound:
                    self.kept += chunk[: self._bound + 1 - len(self.kept)]
                if self._ready is not None and self.kept.startswith(_READY):
                    self._ready.set()
                if self.total > self._bound:
                    # Noticed at once, so the parent stops the flood, not the clock.
                    self._flooded.set()


def _last_line(error: bytes) -> str:
    lines = error.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:_ERROR_LINE_CHARACTERS] if lines else ""


def run_python(code: str, data: Path, limits: CodeLimits | None = None) -> CodeResult:
    """Run `code` behind the boundary, with `data` read-only at /data; never unsandboxed."""
    limits = limits or CodeLimits()
    # 1. No sandbox, no run: a tool that fell back to running the code in our
    #    own process would be no boundary at all.
    problem = bubblewrap_problem(proc=False)
    if problem is not None:
        return CodeResult(Outcome.NO_SANDBOX, "", problem)
    view = View(
        {DATA_INSIDE: data.resolve()},
        SCRATCH_INSIDE,
        tmp_bytes=limits.scratch_bytes,
        network=False,
        environment=dict(ENVIRONMENT),
        # No /proc: the code has no processes to list, and the sandbox can
        # start inside another one (a verifier's, a container's).
        proc=False,
    )
    argv = [sys.executable, "-I", "-B", "-c", _prelude(limits)]
    with tempfile.TemporaryDirectory(prefix="run-python-") as scratch:
        try:
            process = start(Isolation.BUBBLEWRAP, view, argv, Path(scratch))
        except (OSError, SandboxStopping) as error:
            return CodeResult(Outcome.NO_SANDBOX, "", f"the sandbox did not start: {error}")
        return _watch(process, code, limits)


def _watch(process: subprocess.Popen[bytes], code: str, limits: CodeLimits) -> CodeResult:
    """Hand the code over, then wait for the end, the clock or a flood, whichever comes first."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    flooded, ready = threading.Event(), threading.Event()
    stdout = cast(io.BufferedReader, process.stdout)
    stderr = cast(io.BufferedReader, process.stderr)
    bound = len(_READY) + limits.output_bytes
    out = _Reader(stdout, bound=bound, tail=False, flooded=flooded, ready=ready)
    err = _Reader(stderr, bound=_ERROR_FLOOD_BYTES, tail=True, flooded=flooded)
    out.start()
    err.start()
    # The code travels on standard input, never on a command line another
    # process could read; a program that never reads it cannot block us, as
    # the prelude reads it all before the code runs.
    with contextlib.suppress(OSError):
        process.stdin.write(code.encode("utf-8", "surrogatepass"))
    with contextlib.suppress(OSError):
        process.stdin.close()
    # The code's clock starts when the prelude says its limits hold.
    deadline = time.monotonic() + _START_UP_SECONDS
    clock_started = False
    timed_out = False
    while process.poll() is None:
        if flooded.is_set():
            break
        if ready.is_set() and not clock_started:
            clock_started = True
            deadline = time.monotonic() + limits.seconds
        if time.monotonic() >= deadline:
            timed_out = True
            break
        flooded.wait(0.01)
    stop(process, close_streams=False)
    out.join(5)
    err.join(5)
    stop(process)
    printed = out.kept
    if not printed.startswith(_READY):
        # The prelude never finished: bubblewrap or the filter refused, not the code.
        why = _last_line(err.kept) or "the sandbox ended before the code could start"
        if timed_out:
            why = f"the sandbox did not start within {_START_UP_SECONDS:g} seconds"
        elif process.returncode == _NO_FILTER:
            why = "the process filter could not be installed here"
        return CodeResult(Outcome.NO_SANDBOX, "", why)
    text = printed[len(_READY) :][: limits.output_bytes].decode("utf-8", "replace")
    outcome, why = _named(process.returncode, timed_out, flooded.is_set(), err.kept)
    return CodeResult(outcome, text, why)


def _named(status: int, timed_out: bool, flooded: bool, error: bytes) -> tuple[Outcome, str]:
    """The outcome, in the order the parent can be sure of: its own clock and counts first."""
    if timed_out:
        return Outcome.TIME_LIMIT, "the code ran past its time limit and was stopped"
    if flooded:
        return Outcome.OUTPUT_LIMIT, "the code printed more than its output limit and was stopped"
    # bubblewrap reports a child killed by signal N as 128 + N; a direct kill is -N.
    signal_number = -status if status < 0 else status - 128 if status > 128 else 0
    if signal_number == signal.SIGXCPU:
        return Outcome.TIME_LIMIT, "the code used up its CPU seconds"
    if signal_number == signal.SIGXFSZ:
        return Outcome.FILE_LIMIT, "the code wrote a file past its size limit"
    if signal_number in set(signal.Signals):
        return Outcome.KILLED, f"the code was ended by {signal.Signals(signal_number).name}"
    if status == 0:
        return Outcome.PRINTED, ""
    if status == _MEMORY:
        return Outcome.MEMORY_LIMIT, "the code asked for more memory than its limit"
    if status == _FILE:
        return Outcome.FILE_LIMIT, _last_line(error)
    return Outcome.RAISED, _last_line(error) or f"the code exited with status {status}"


def build_code_tool(data: Path, limits: CodeLimits | None = None) -> ExecutableTool[CodeArguments]:
    """`run_python` as a tool a dispatcher can hold: code in, the named result out."""

    def handler(arguments: CodeArguments) -> dict[str, str]:
        return run_python(arguments.code, data, limits).observation()

    return ExecutableTool(
        name="run_python",
        description=(
            "Run a short Python program in a sandbox with no network. The shop's sales "
            f"file is at {DATA_INSIDE}/sales.csv (read-only). Print the answer; the "
            "result is what the program printed."
        ),
        arguments=CodeArguments,
        handler=handler,
        consequential=RUN_PYTHON_CONSEQUENTIAL,
    )
