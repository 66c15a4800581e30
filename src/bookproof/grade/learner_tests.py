"""Grading a learner's tests by what they catch: runs against the reference and faulty versions.

For one test file the grader makes a list of runs: the reference solution
`reference_runs` times and each declared faulty version once, shuffled with
this run's seed. Each run is a socket pair between two sandboxes: in a fresh
one, pytest runs the learner's file over a fresh copy of their folder in
which the book's module is a stand-in (`gradechild.stand_in`); in the
oracle's (`bookproof.grade.oracle`, one per test file for the batch), a
server forked for this run serves the reference or that faulty version. The
learner's process never holds the code under test, so a test can tell the
versions apart by behaviour only; the runs share nothing (fresh copies, fresh
/tmp), so a test cannot learn which run it is in.

Where the tests make folders for the code they test (`Surface.files`), the
learner's sandbox gets a temporary folder under a name chosen for the run
(`/tmp/work-...`, its `TMPDIR`, where pytest's `tmp_path` lives); before each
call, the stand-in sends that folder's contents along, and the server makes
it again at the same path in its own sandbox (`files.materialise`), so paths
and links mean the same on both sides.

Verdicts: the grader takes pytest's exit status and nothing else. A faulty
version is caught when a test failed against it (status 1) while every run
against the reference passed (status 0); a check passes when every faulty
version it declares is caught. A suite that asserts nothing passes
everywhere and catches nothing; a suite that passes or fails by chance rarely
passes all the reference runs.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import random
import secrets
import select
import selectors
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import bookproof
from bookproof.grade.book import FaultyVersion, LearnerTests
from bookproof.grade.sandbox import Isolation, Launch, Limits, exited, start, stop
from bookproof.grade.session import IsolationFailed, Outcome, Output
from bookproof.layout import REPO_ROOT

__all__ = ["ROOT", "close_oracles", "grade_tests"]

# The repository (or autograder) root: the reference solutions live under it.
ROOT = REPO_ROOT
_SOURCE = Path(bookproof.__file__).resolve().parent.parent

_TESTS_BOOT = (
    "import sys; sys.path.insert(0, {grader!r}); from gradechild.test_run import main; main()"
)
_ORACLE_BOOT = (
    "import sys; sys.path.insert(0, {grader!r} + '/src'); "
    "from bookproof.grade.oracle import main; main()"
)

_STAND_IN = '''"""A stand-in the grader wrote: each name passes plain values to the code tested."""

from gradechild.stand_in import install

install(globals(), {surface})
'''


@dataclass(frozen=True)
class _Run:
    variant: FaultyVersion | None  # None: the reference
    status: int | None  # pytest's exit status; None when the run did not finish
    fate: str = ""  # "timeout" | "flood" | "" (finished)


def grade_tests(
    group: LearnerTests,
    copy: Path,
    isolation: Isolation,
    limits: Limits,
    seed: str,
) -> dict[str, tuple[Outcome, str]]:
    """Per check id of the group: its outcome and the message before the check's hint."""
    if not (copy / group.file).is_file():
        missing = f"No {group.file} in this folder: hand in your tests under exactly that name."
        return {check.id: ("error", missing) for check in group.checks}
    plan: list[FaultyVersion | None] = [None] * group.reference_runs + group.versions()
    random.Random(f"{seed}:{group.file}:order").shuffle(plan)
    runs: list[_Run] = []
    for variant in plan:
        runs.append(_run(group, copy, variant, isolation, limits, seed))
        if variant is None and runs[-1].status != 0:
            # One failed run against the reference decides every check of the
            # file: the runs left could change nothing, only cost time.
            break
    reference = [run for run in runs if run.variant is None]
    problem = _reference_problem(group, reference, limits)
    if problem is not None:
        return {check.id: ("failed", problem) for check in group.checks}
    fates = {run.variant.id: run for run in runs if run.variant is not None}
    verdicts: dict[str, tuple[Outcome, str]] = {}
    for check in group.checks:
        missed = [v for v in check.versions if fates[v.id].status != 1]
        slow = [v for v in missed if fates[v.id].fate == "timeout"]
        module = group.book.module
        if not missed:
            verdicts[check.id] = ("passed", "")
        elif len(check.versions) == 1 and slow:
            verdicts[check.id] = (
                "timeout",
                f"Against this faulty version your tests did not finish within "
                f"{limits.tests_timeout:g} s.",
            )
        elif len(check.versions) == 1:
            verdicts[check.id] = ("failed", "Your tests passed against this faulty version.")
        else:
            named = "; ".join(f"one that {version.behaviour}" for version in missed)
            outcome: Outcome = "timeout" if len(slow) == len(missed) else "failed"
            verdicts[check.id] = (
                outcome,
                f"Your tests did not catch {len(missed)} of {len(check.versions)} faulty "
                f"{module} modules: {named}.",
            )
    return verdicts


def _reference_problem(group: LearnerTests, runs: Sequence[_Run], limits: Limits) -> str | None:
    module = group.book.module_file
    statuses = [run.status for run in runs]
    if all(status == 0 for status in statuses):
        return None
    if any(status == 0 for status in statuses):
        return (
            f"Your tests passed against a correct {module} in some runs and not in others: "
            "a test that depends on chance proves nothing."
        )
    first = next(run for run in runs if run.status != 0)
    if first.fate == "timeout":
        return (
            f"Against a correct {module} your tests did not finish within "
            f"{limits.tests_timeout:g} s."
        )
    if first.fate == "flood":
        return f"Your tests printed more than {limits.output_bytes:,} bytes; they were stopped."
    if first.status == 1:
        return (
            f"A test failed against a correct {module}: every test must pass on correct code "
            "before it can catch a wrong one."
        )
    if first.status == 5:
        return f"pytest found no test in {group.file} (name them test_...)."
    names = ", ".join(group.surface.names())
    return (
        f"pytest could not run {group.file} (exit status {first.status}). "
        f"Your tests may import only these names from {group.book.module}: {names}."
    )


class _Oracle:
    """One oracle sandbox for one learner-test file: it forks a server for each run sent to it."""

    def __init__(self, group: LearnerTests, isolation: Isolation, limits: Limits) -> None:
        self.group = group
        self._scratch = Path(tempfile.mkdtemp(prefix="bookproof-oracle-"))
        self._control, theirs = socket.socketpair()
        reference = group.book.reference(ROOT)
        config = {
            "book": group.book.number,
            "file": group.file,
            "reference": f"{{workdir}}/{reference.name}",
            "control": theirs.fileno(),
            # The oracle lives for the batch; each server it forks gets its own clock.
            "limits": limits.for_child(24 * 3600),
            "require_filter": isolation is Isolation.BUBBLEWRAP,
        }
        try:
            self._process = start(
                isolation,
                Launch(
                    _ORACLE_BOOT,
                    config,
                    reference.parent,
                    (theirs.fileno(),),
                    extra={"src": _SOURCE},
                    learner_code=False,
                ),
                self._scratch,
            )
        finally:
            theirs.close()
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._output = Output(limits.output_bytes)
        self._wait_until_ready(limits.tests_timeout)
        # Its tracebacks, if a request breaks the code under test, must never block it.
        threading.Thread(target=self._discard_output, daemon=True).start()

    def _wait_until_ready(self, timeout: float) -> None:
        assert self._process.stdout is not None
        deadline = time.monotonic() + timeout
        stdout = self._process.stdout.fileno()
        while not self._output.started():
            if exited(self._process) or time.monotonic() > deadline:
                stop(self._process, close_streams=False)
                self._output.drain(self._process.stdout, "stdout")
                self._output.drain(self._process.stderr, "stderr")
                if not self._output.started():
                    raise self._output.never_started(self._process)
                break
            readable, _, _ = select.select([stdout], [], [], 0.2)
            if readable:
                chunk = os.read(stdout, 4096)
                if chunk:
                    self._output.take(chunk, "stdout")

    def _discard_output(self) -> None:
        streams = [s for s in (self._process.stdout, self._process.stderr) if s is not None]
        with contextlib.suppress(OSError, ValueError):
            while streams:
                readable, _, _ = select.select(streams, [], [], 1.0)
                for stream in readable:
                    if not os.read(stream.fileno(), 65536):
                        streams.remove(stream)

    def serve(
        self,
        channel: socket.socket,
        variant: FaultyVersion | None,
        seed: str,
        timeout: float,
        scratch: str | None,
    ) -> None:
        """Have the oracle fork a server for one run, on the oracle's end of that run's socket.

        `scratch`: where the learner's tests keep their folders, which the
        server makes again at the same path whenever they change.
        """
        run = {
            "variant": None if variant is None else variant.id,
            "seed": f"{seed}:{self.group.file}:{'reference' if variant is None else variant.id}",
            "timeout": timeout,
            "scratch": scratch,
        }
        try:
            socket.send_fds(self._control, [json.dumps(run).encode()], [channel.fileno()])
        except OSError as exc:
            raise IsolationFailed(f"the oracle for {self.group.file} stopped ({exc})") from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._control.close()
        stop(self._process)
        shutil.rmtree(self._scratch, ignore_errors=True)


# One oracle per learner-test file, isolation mode and limits, for the whole batch.
_ORACLES: dict[tuple[str, int, str, Limits], _Oracle] = {}
_ORACLES_LOCK = threading.Lock()


def _oracle(group: LearnerTests, isolation: Isolation, limits: Limits) -> _Oracle:
    key = (isolation.value, group.book.number, group.file, limits)
    with _ORACLES_LOCK:
        if key not in _ORACLES:
            _ORACLES[key] = _Oracle(group, isolation, limits)
        return _ORACLES[key]


def close_oracles() -> None:
    """Stop every oracle; the grader calls it once the batch is graded."""
    with _ORACLES_LOCK:
        oracles = list(_ORACLES.values())
        _ORACLES.clear()
    for oracle in oracles:
        oracle.close()


atexit.register(close_oracles)


def _run(
    group: LearnerTests,
    copy: Path,
    variant: FaultyVersion | None,
    isolation: Isolation,
    limits: Limits,
    seed: str,
) -> _Run:
    scratch = Path(tempfile.mkdtemp(prefix="bookproof-tests-"))
    # In a sandbox of its own, the tests' temporary folder is copied to the
    # code under test; the same filesystem needs no copy (process mode).
    # Its name is unguessable, so no run can name another's copy.
    shared = None
    if group.surface.files and isolation is Isolation.BUBBLEWRAP:
        shared = f"/tmp/work-{secrets.token_hex(16)}"
    ours, theirs = socket.socketpair()
    learner = None
    try:
        # Reached by the child's user through a scratch folder it cannot list.
        os.chmod(scratch, 0o711)
        folder = scratch / f"submission-{secrets.token_hex(8)}"
        shutil.copytree(copy, folder)
        stand_in = folder / f"{group.book.module}.py"
        stand_in.unlink(missing_ok=True)
        stand_in.write_text(
            _STAND_IN.format(surface=repr(group.surface.describe())), encoding="utf-8"
        )
        os.chmod(stand_in, 0o644)
        (scratch / "learner").mkdir()
        _oracle(group, isolation, limits).serve(ours, variant, seed, limits.tests_timeout, shared)
        ours.close()
        learner_config = {
            "workdir": "{workdir}",
            "file": group.file,
            "scratch": shared,
            "channel": theirs.fileno(),
            "limits": limits.for_child(limits.tests_timeout),
            "require_filter": isolation is Isolation.BUBBLEWRAP,
        }
        learner = start(
            isolation,
            Launch(
                _TESTS_BOOT, learner_config, folder, (theirs.fileno(),), tmp_bytes=limits.tmp_bytes
            ),
            scratch / "learner",
        )
        theirs.close()
        return _watch(learner, variant, limits)
    finally:
        ours.close()
        theirs.close()
        if learner is not None:
            stop(learner)
        shutil.rmtree(scratch, ignore_errors=True)


def _exit_descriptor(process: subprocess.Popen[bytes]) -> int | None:
    """A descriptor that becomes readable when `process` ends, without reaping it; None if none.

    Linux's pidfd. Without it the watcher notices an exit at its next poll,
    up to 0.2 s later: after a run's pipes close, nothing else wakes it.
    """
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        descriptor: int = pidfd_open(process.pid)
    except OSError:
        return None
    return descriptor


def _watch(learner: subprocess.Popen[bytes], variant: FaultyVersion | None, limits: Limits) -> _Run:
    output = Output(limits.output_bytes)
    assert learner.stdin is not None and learner.stdout is not None
    assert learner.stderr is not None
    learner.stdin.close()
    selector = selectors.DefaultSelector()
    selector.register(learner.stdout, selectors.EVENT_READ, "stdout")
    selector.register(learner.stderr, selectors.EVENT_READ, "stderr")
    # The run's end wakes the watcher at once: the next run starts without
    # waiting out a poll. The process is not reaped here, so `stop` can still
    # kill whatever it left running in its group.
    ended = _exit_descriptor(learner)
    if ended is not None:
        selector.register(ended, selectors.EVENT_READ, "exit")
    deadline = time.monotonic() + limits.tests_timeout
    try:
        while not exited(learner):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _Run(variant, None, "timeout")
            for key, _ in selector.select(timeout=min(remaining, 0.2)):
                if key.data == "exit":
                    continue  # `exited` sees it now; what is left in the pipes is drained below
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif not output.take(chunk, key.data):
                    return _Run(variant, None, "flood")
    finally:
        selector.close()
        if ended is not None:
            os.close(ended)
    status = learner.wait()
    output.drain(learner.stdout, "stdout")
    output.drain(learner.stderr, "stderr")
    if not output.started():
        raise output.never_started(learner)
    return _Run(variant, status)
