"""The parent side of grading one submission: a limited child process, and a verdict per check.

The grading process never imports a submission. For each submission it
copies the folder into a fresh temporary directory, starts the harness there
(`python -I`, scrubbed environment, `close_fds=True`, only the result pipe
passed on), sends it the trials, and reads three pipes at once: the result
pipe (bounded, strictly validated) and stdout and stderr (drained, counted,
and the child killed past a cap; never shown in a report). The wall-clock
limit (per step, and a hard limit for the whole run) is enforced here; the
memory, file-size and CPU limits are set by the harness on itself before the
submission's first line runs.

If the child dies or hangs inside one trial, that trial is charged with what
happened, and a new child is started for the trials after it (at most
`MAX_RESTARTS` times), so one endless loop costs only the checks that hit it.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import bookproof
from bookproof.grade.checks import Check, Outcome, Result, Trial
from bookproof.grade.encoding import FrameError, decode_json
from bookproof.grade.harness import EXCEPTION_NAMES

__all__ = ["CheckOutcome", "Limits", "SubmissionReport", "grade_submission"]

MAX_RESTARTS = 2
_RESULT_CAP = 16 * 1024 * 1024  # the harness writes far less; more is someone else writing
_COPY_CAP_BYTES = 20 * 1024 * 1024
_COPY_CAP_FILES = 2_000
_IGNORED = shutil.ignore_patterns("__pycache__", ".git", ".ipynb_checkpoints", ".pytest_cache")
_SOURCE_ROOT = str(Path(bookproof.__file__).resolve().parent.parent)


@dataclass(frozen=True)
class Limits:
    """What one child process may use.

    `timeout` is wall-clock seconds for the import and for each step after it:
    the clock restarts with every observation the harness reports, so a
    class's slow-but-honest submissions are not cut off by the number of checks.
    """

    timeout: float = 10.0
    memory_bytes: int = 1024 * 1024 * 1024
    output_bytes: int = 1024 * 1024
    file_bytes: int = 8 * 1024 * 1024


@dataclass(frozen=True)
class CheckOutcome:
    """One line of a submission's report."""

    id: str
    points: int
    max_points: int
    outcome: Outcome
    feedback: str

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


@dataclass(frozen=True)
class SubmissionReport:
    submission: str
    checks: tuple[CheckOutcome, ...]
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(check.points for check in self.checks)

    @property
    def max(self) -> int:
        return sum(check.max_points for check in self.checks)


@dataclass
class _Run:
    """What one child process told us, already validated."""

    imported: bool = False
    import_failure: frozenset[str] | None = None
    results: dict[int, dict[int, Result]] = field(default_factory=dict)
    done: bool = False
    fate: str = "exited"  # exited | timeout | flood | tampered
    returncode: int | None = None
    stderr_tail: bytes = b""


def grade_submission(
    folder: Path, book: ModuleType, limits: Limits, rng: random.Random, *, name: str | None = None
) -> SubmissionReport:
    """Grade one folder against one book; never raises for anything the submission did.

    `name` labels the submission in every report; by default, the folder's name.
    """
    started = time.monotonic()
    if name is None:
        name = folder.resolve().name  # "." or "dir/" still name the folder
    checks: tuple[Check, ...] = book.CHECKS
    missing = [name for name in book.REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        feedback = f"No {missing[0]} in this folder: hand in a file named exactly {missing[0]}."
        return _all(name, checks, "error", feedback, started)
    trials: Mapping[str, Trial] = book.trials(rng)
    if set(trials) != {check.id for check in checks}:
        raise RuntimeError(f"{book.__name__}.trials() must give one trial per check id")
    ordered = [trials[check.id] for check in checks]
    verdicts: dict[int, CheckOutcome] = {}
    start = 0
    restarts = 0
    while start < len(ordered):
        run = _run_child(folder, book.MODULE, ordered[start:], limits)
        if run is None:
            return _all(name, checks, "error", "The folder is too large to grade.", started)
        if run.fate == "tampered":
            # Nothing from this run can be trusted, not even the frames that parsed.
            for index in range(start, len(ordered)):
                verdicts[index] = _charge(checks[index], "crashed", _TAMPERED)
            break
        if not run.imported:
            outcome, message = _import_fate(run, book.MODULE, limits)
            for index in range(start, len(ordered)):
                verdicts[index] = _charge(checks[index], outcome, message)
            break
        stopped_at: int | None = None
        for offset, trial in enumerate(ordered[start:]):
            index = start + offset
            got = run.results.get(offset, {})
            if len(got) == len(trial.steps):
                verdicts[index] = _judge(checks[index], trial, [got[i] for i in range(len(got))])
            elif stopped_at is None:
                stopped_at = index
                outcome, message = _step_fate(run, limits)
                verdicts[index] = _charge(checks[index], outcome, message)
        if stopped_at is None or run.done:
            break
        if restarts >= MAX_RESTARTS:
            for index in range(stopped_at + 1, len(ordered)):
                verdicts[index] = _charge(
                    checks[index], "crashed", "Not run: the submission failed too often before it."
                )
            break
        restarts += 1
        start = stopped_at + 1
    outcomes = tuple(verdicts[index] for index in range(len(ordered)))
    return SubmissionReport(name, outcomes, time.monotonic() - started)


# --- verdicts ----------------------------------------------------------------

_TAMPERED = (
    "The submission wrote to the grader's private result channel; "
    "nothing it reported can be trusted."
)


def _all(
    name: str, checks: Sequence[Check], outcome: Outcome, feedback: str, started: float
) -> SubmissionReport:
    return SubmissionReport(
        name,
        tuple(_charge(check, outcome, feedback) for check in checks),
        time.monotonic() - started,
    )


def _charge(check: Check, outcome: Outcome, message: str) -> CheckOutcome:
    feedback = f"{message} {check.hint} Re-read {check.section}."
    return CheckOutcome(check.id, 0, check.points, outcome, feedback)


def _judge(check: Check, trial: Trial, results: list[Result]) -> CheckOutcome:
    for step, result in zip(trial.steps, results, strict=True):
        if result.status == "raised":
            if "MemoryError" in result.raised:
                return _charge(check, "out of memory", "Ran out of memory during this check.")
            if not step.may_raise:
                return _charge(check, "error", f"Raised {_exception_name(result.raised)}.")
        if result.status == "wrong_type" and not step.may_raise:
            return _charge(
                check,
                "failed",
                "Returned something that is not plain data "
                "(only exact dict, list, str, int, bool and None count).",
            )
    try:
        reason = trial.judge(results)
    except (LookupError, TypeError, ValueError, AttributeError):
        # The values are the submission's: a shape the judge never expected is
        # a wrong answer, not a reason to stop grading the class.
        reason = "Returned values of an unexpected shape."
    if reason is None:
        return CheckOutcome(check.id, check.points, check.points, "passed", check.passed)
    return _charge(check, "failed", reason)


def _exception_name(names: frozenset[str]) -> str:
    # The most specific builtin class the exception belongs to; never its text.
    for name in EXCEPTION_NAMES:
        if name in names:
            return name
    return "an exception"


def _import_fate(run: _Run, module: str, limits: Limits) -> tuple[Outcome, str]:
    where = f"while importing {module}.py"
    if run.fate == "timeout":
        return "timeout", f"Did not finish importing within {limits.timeout:g} s."
    if run.fate == "flood":
        return "crashed", f"Printed more than {limits.output_bytes:,} bytes {where}; stopped."
    failure = run.import_failure
    if failure is not None:
        if "MemoryError" in failure:
            return "out of memory", f"Ran out of memory {where}."
        if "SystemExit" in failure:
            return "crashed", f"Called exit {where}; a module must only define things."
        return "error", f"Raised {_exception_name(failure)} {where}."
    if _looks_out_of_memory(run):
        return "out of memory", f"Ran out of memory {where}."
    return "crashed", f"The process ended {where} ({_exit_text(run.returncode)})."


def _step_fate(run: _Run, limits: Limits) -> tuple[Outcome, str]:
    if run.fate == "timeout":
        return "timeout", f"Did not finish within {limits.timeout:g} s (an endless loop?)."
    if run.fate == "flood":
        return "crashed", f"Printed more than {limits.output_bytes:,} bytes; stopped."
    if _looks_out_of_memory(run):
        return "out of memory", "Ran out of memory during this check."
    return "crashed", f"The process ended during this check ({_exit_text(run.returncode)})."


def _looks_out_of_memory(run: _Run) -> bool:
    # Allocation failures inside compiled code abort instead of raising MemoryError.
    tail = run.stderr_tail
    return b"MemoryError" in tail or b"memory allocation of" in tail


def _exit_text(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


# --- the child process ---------------------------------------------------------

_BOOT = "import sys; sys.path.insert(0, {root!r}); from bookproof.grade.harness import main; main()"


def _copy_submission(folder: Path, target: Path) -> bool:
    total = 0
    for count, path in enumerate(folder.rglob("*"), start=1):
        if path.is_file() and not path.is_symlink():
            total += path.stat().st_size
        if count > _COPY_CAP_FILES or total > _COPY_CAP_BYTES:
            return False
    shutil.copytree(folder, target, symlinks=True, ignore=_IGNORED)
    return True


def _run_child(folder: Path, module: str, trials: Sequence[Trial], limits: Limits) -> _Run | None:
    home = Path(tempfile.mkdtemp(prefix="bookproof-grade-"))
    try:
        workdir = home / "submission"
        if not _copy_submission(folder, workdir):
            return None
        return _supervise(workdir, home, module, trials, limits)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _supervise(
    workdir: Path, home: Path, module: str, trials: Sequence[Trial], limits: Limits
) -> _Run:
    nonce = secrets.token_hex(16)
    read_end, write_end = os.pipe()
    env = {
        "PATH": os.defpath,
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }
    orders = {
        "fd": write_end,
        "nonce": nonce,
        "module": module,
        "limits": {
            "memory_bytes": limits.memory_bytes,
            "file_bytes": limits.file_bytes,
            "cpu_seconds": int(limits.timeout * (len(trials) + 1)) + 5,
        },
        "trials": [{"steps": [step.op for step in trial.steps]} for trial in trials],
    }
    payload = json.dumps(orders).encode("utf-8")
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOT.format(root=_SOURCE_ROOT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env=env,
            close_fds=True,
            pass_fds=(write_end,),
            start_new_session=True,
        )
    finally:
        os.close(write_end)
    run = _Run()
    channel = bytearray()
    output_seen = 0
    tail = bytearray()
    # `timeout` bounds the import and each trial: the deadline moves on with
    # every frame the harness writes, and a hard limit bounds the whole run,
    # so a channel kept alive by trickled bytes still ends.
    started = time.monotonic()
    deadline = started + limits.timeout
    hard_deadline = started + limits.timeout * (len(trials) + 1)
    selector = selectors.DefaultSelector()
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    os.set_blocking(process.stdin.fileno(), False)
    pending_in = memoryview(payload)
    selector.register(process.stdin, selectors.EVENT_WRITE, "stdin")
    selector.register(process.stdout, selectors.EVENT_READ, "stdout")
    selector.register(process.stderr, selectors.EVENT_READ, "stderr")
    result_pipe = os.fdopen(read_end, "rb", buffering=0)
    selector.register(result_pipe, selectors.EVENT_READ, "channel")
    open_readers = 3
    try:
        while open_readers:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                run.fate = "timeout"
                break
            for key, _ in selector.select(timeout=min(remaining, 0.5)):
                if key.data == "stdin":
                    try:
                        sent = os.write(key.fd, pending_in)
                    except (BrokenPipeError, BlockingIOError) as exc:
                        sent = len(pending_in) if isinstance(exc, BrokenPipeError) else 0
                    pending_in = pending_in[sent:]
                    if not pending_in:
                        selector.unregister(key.fileobj)
                        process.stdin.close()
                    continue
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    open_readers -= 1
                    continue
                if key.data == "channel":
                    channel += chunk
                    deadline = min(time.monotonic() + limits.timeout, hard_deadline)
                    if len(channel) > _RESULT_CAP:
                        run.fate = "tampered"
                        break
                else:
                    output_seen += len(chunk)
                    if key.data == "stderr":
                        tail = (tail + chunk)[-4096:]
                    if output_seen > limits.output_bytes:
                        run.fate = "flood"
                        break
            if run.fate != "exited":
                break
            if _exited_unreaped(process.pid):
                # The child is gone; anything it left behind in its session
                # must not keep our pipes open (or keep running).
                _kill_group(process.pid)
    finally:
        _kill_group(process.pid)
        process.wait()
        selector.close()
        for stream in (process.stdin, process.stdout, process.stderr, result_pipe):
            with contextlib.suppress(OSError):
                stream.close()
    run.returncode = process.returncode
    run.stderr_tail = bytes(tail)
    if run.fate != "tampered":
        try:
            _parse_channel(bytes(channel), nonce, trials, run)
        except FrameError:
            run.fate = "tampered"
    return run


def _exited_unreaped(pid: int) -> bool:
    # WNOWAIT leaves the zombie in place, so its process group id cannot be
    # reused by an unrelated process before we kill the group.
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


# --- the result channel's grammar -----------------------------------------------

_STATUSES = {"returned", "saved", "raised", "wrong_type"}


def _parse_channel(data: bytes, nonce: str, trials: Sequence[Trial], run: _Run) -> None:
    """Accept exactly the frames the harness writes, in the order it writes them."""
    lines = data.split(b"\n")
    # The last piece is empty after a complete frame, or a frame cut short by a
    # kill; either way only the complete frames before it count.
    lines.pop()
    expected = [(t, s) for t, trial in enumerate(trials) for s in range(len(trial.steps))]
    position = 0
    stage = "start"
    for line in lines:
        frame = decode_json(line)
        if not isinstance(frame, dict) or frame.get("n") != nonce:
            raise FrameError("frame without this run's nonce")
        kind = frame.get("k")
        if stage == "start" and kind == "start" and frame.keys() == {"n", "k"}:
            stage = "import"
        elif stage == "import" and kind == "imported" and frame.keys() == {"n", "k"}:
            run.imported = True
            stage = "steps"
        elif stage == "import" and kind == "import_failed" and frame.keys() == {"n", "k", "r"}:
            result = _result(frame["r"])
            if result.status != "raised":
                raise FrameError("import failure without an exception")
            run.import_failure = result.raised
            stage = "end"
        elif stage == "steps" and kind == "step" and frame.keys() == {"n", "k", "t", "s", "r"}:
            if position >= len(expected) or (frame["t"], frame["s"]) != expected[position]:
                raise FrameError("step out of order")
            position += 1
            run.results.setdefault(frame["t"], {})[frame["s"]] = _result(frame["r"])
        elif stage == "steps" and kind == "done" and frame.keys() == {"n", "k"}:
            if position != len(expected):
                raise FrameError("done before every step")
            run.done = True
            stage = "end"
        else:
            raise FrameError("unexpected frame")


def _result(raw: Any) -> Result:
    if not isinstance(raw, dict) or raw.get("status") not in _STATUSES:
        raise FrameError("malformed result")
    status = raw["status"]
    if status == "returned" and raw.keys() == {"status", "value"}:
        return Result("returned", raw["value"])
    if status == "raised" and raw.keys() == {"status", "raised"}:
        names = raw["raised"]
        if not isinstance(names, list) or not all(
            isinstance(name, str) and name in EXCEPTION_NAMES for name in names
        ):
            raise FrameError("unknown exception name")
        return Result("raised", None, frozenset(names))
    if status in {"saved", "wrong_type"} and raw.keys() == {"status"}:
        return Result(status)
    raise FrameError("malformed result")
