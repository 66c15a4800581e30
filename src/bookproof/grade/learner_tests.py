"""Grading a learner's tests by what they catch: runs against the reference and faulty versions.

For one test file the grader makes a list of runs: the reference solution
`reference_runs` times and each declared faulty version once, shuffled with
this run's seed. Each run is a socket pair between two sandboxes: in the
learner's, pytest runs the learner's file over a copy of their folder in
which the book's module is a stand-in (`gradechild.stand_in`); in the
oracle's (`bookproof.grade.oracle`, one per test file for the batch), a
server forked for this run serves the reference or that faulty version. The
learner's process never holds the code under test, so a test can tell the
versions apart by behaviour only.

The runs share nothing, so a test cannot learn which run it is in (else a
suite could record the first run's behaviour and flag any difference). In
bubblewrap mode, where the kernel allows namespaces inside the sandbox,
every run forks from a warm zygote (`gradechild.zygote`) that the batch
keeps: one per worker (two where some folders name Hypothesis and others
do not), serving every learner-test file of every submission that worker
grades, so a submission starts no sandbox for its tests. The zygote's
sandbox shows one folder holding, under unguessable names, a copy of each
folder being graded (the stand-in in place of the book's module); each run
gets its own copy bound over that folder, so it sees its own and nothing
of another's, and new user, mount, IPC, network, PID and UTS namespaces, a
fresh /tmp, no /proc, no capabilities, its own limits and filter, and only
its own descriptors: what one run leaves (files, shared memory, sockets,
processes) is gone before the next starts, whichever file and submission
the next is, and the zygote is neither visible nor traceable from a run.
Elsewhere (process mode, a kernel that refuses nested namespaces, or
`one_sandbox_per_run`), each run starts a sandbox of its own over a fresh
copy of the folder. Either way a run that runs out of time or floods its
output is ended with its whole sandbox (the zygote's, which the next run
starts again: it had no other run in flight, as a worker sends one run at
a time).

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import bookproof
from bookproof.grade.book import FaultyVersion, LearnerTests
from bookproof.grade.child.test_run import _mentions_hypothesis
from bookproof.grade.sandbox import (
    Isolation,
    Launch,
    Limits,
    exited,
    runs_share_a_sandbox,
    start,
    stop,
)
from bookproof.grade.session import IsolationFailed, Outcome, Output
from bookproof.layout import REPO_ROOT

__all__ = ["ROOT", "close_oracles", "grade_tests"]

# The repository (or autograder) root: the reference solutions live under it.
ROOT = REPO_ROOT
_SOURCE = Path(bookproof.__file__).resolve().parent.parent

_TESTS_BOOT = (
    "import sys; sys.path.insert(0, {grader!r}); from gradechild.test_run import main; main()"
)
_ZYGOTE_BOOT = (
    "import sys; sys.path.insert(0, {grader!r}); from gradechild.zygote import main; main()"
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
    said: bytes = b""  # the end of what it printed, never read for a verdict


def grade_tests(
    group: LearnerTests,
    copy: Path,
    isolation: Isolation,
    limits: Limits,
    seed: str,
    *,
    ran: Callable[[int], None] | None = None,
) -> dict[str, tuple[Outcome, str]]:
    """Per check id of the group: its outcome and the message before the check's hint.

    `ran` is told how many runs of the tests were made (`reuse` counts them).
    """
    if not (copy / group.file).is_file():
        missing = f"No {group.file} in this folder: hand in your tests under exactly that name."
        return {check.id: ("error", missing) for check in group.checks}
    plan: list[FaultyVersion | None] = [None] * group.reference_runs + group.versions()
    random.Random(f"{seed}:{group.file}:order").shuffle(plan)
    runs: list[_Run] = []
    with contextlib.closing(_runner(group, copy, isolation, limits)) as runner:
        for variant in plan:
            runs.append(runner.run(variant, seed))
            if variant is None and runs[-1].status != 0:
                # One failed run against the reference decides every check of the
                # file: the runs left could change nothing, only cost time.
                break
    if ran is not None:
        ran(len(runs))
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
        _wait_until_ready(self._process, limits)

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


def _wait_until_ready(process: subprocess.Popen[bytes], limits: Limits) -> None:
    """Wait for a long-lived child's ready line, then drain its output for good.

    Raises IsolationFailed when it ends (or its clock runs out) before it.
    """
    assert process.stdout is not None
    output = Output(limits.output_bytes)
    deadline = time.monotonic() + limits.tests_timeout
    stdout = process.stdout.fileno()
    while not output.started():
        if exited(process) or time.monotonic() > deadline:
            stop(process, close_streams=False)
            output.drain(process.stdout, "stdout")
            output.drain(process.stderr, "stderr")
            if not output.started():
                raise output.never_started(process)
            break
        # Woken by its first bytes; the bound only rechecks its exit and the clock.
        readable, _, _ = select.select([stdout], [], [], 0.2)
        if readable:
            chunk = os.read(stdout, 4096)
            if chunk:
                output.take(chunk, "stdout")
    # Its tracebacks, if a request breaks it, must never block it.
    threading.Thread(target=_discard_output, args=(process,), daemon=True).start()


def _discard_output(process: subprocess.Popen[bytes]) -> None:
    streams = [s for s in (process.stdout, process.stderr) if s is not None]
    with contextlib.suppress(OSError, ValueError):
        while streams:
            readable, _, _ = select.select(streams, [], [], 1.0)
            for stream in readable:
                if not os.read(stream.fileno(), 65536):
                    streams.remove(stream)


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
    """Stop every oracle and every zygote; the grader calls it once the batch is graded."""
    with _ORACLES_LOCK:
        oracles = list(_ORACLES.values())
        _ORACLES.clear()
    for oracle in oracles:
        oracle.close()
    _ZYGOTES.close()


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
    shared = _scratch_name(group, isolation)
    ours, theirs = socket.socketpair()
    learner = None
    try:
        folder = _learner_folder(group, copy, scratch)
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


def _learner_folder(group: LearnerTests, copy: Path, scratch: Path) -> Path:
    """A copy of the learner's folder in `scratch`, the book's module replaced by the stand-in."""
    # Reached by the child's user through a scratch folder it cannot list.
    os.chmod(scratch, 0o711)
    folder = scratch / f"submission-{secrets.token_hex(8)}"
    _copy_with_stand_in(group, copy, folder)
    return folder


def _copy_with_stand_in(group: LearnerTests, copy: Path, folder: Path) -> None:
    """Copy the learner's folder to `folder`, the book's module replaced by the stand-in."""
    shutil.copytree(copy, folder)
    stand_in = folder / f"{group.book.module}.py"
    stand_in.unlink(missing_ok=True)
    stand_in.write_text(_STAND_IN.format(surface=repr(group.surface.describe())), encoding="utf-8")
    os.chmod(stand_in, 0o644)


def _scratch_name(group: LearnerTests, isolation: Isolation) -> str | None:
    """Where a run's tests keep the folders the code under test must see; None if nowhere.

    In a sandbox of its own, the tests' temporary folder is copied to the
    code under test; the same filesystem needs no copy (process mode). Its
    name is unguessable, so no run can name another's copy.
    """
    if group.surface.files and isolation is Isolation.BUBBLEWRAP:
        return f"/tmp/work-{secrets.token_hex(16)}"
    return None


def _runner(
    group: LearnerTests, copy: Path, isolation: Isolation, limits: Limits
) -> _SandboxPerRun | _ZygoteRuns:
    if runs_share_a_sandbox(isolation):
        return _ZygoteRuns(group, copy, isolation, limits)
    return _SandboxPerRun(group, copy, isolation, limits)


class _SandboxPerRun:
    """Each run in a sandbox of its own, over a fresh copy of the folder: the path of every mode."""

    def __init__(
        self, group: LearnerTests, copy: Path, isolation: Isolation, limits: Limits
    ) -> None:
        self._args = (group, copy)
        self._isolation, self._limits = isolation, limits

    def run(self, variant: FaultyVersion | None, seed: str) -> _Run:
        group, copy = self._args
        return _run(group, copy, variant, self._isolation, self._limits, seed)

    def close(self) -> None:
        pass


class _ZygoteRuns:
    """The runs of one learner-test file of one submission, forked from a zygote of the batch's.

    The folder (a copy with the stand-in) goes below the zygotes' common
    folder under a name of its own, and is removed with this object; the
    zygote is borrowed for the file's runs and given back after them.
    """

    def __init__(
        self, group: LearnerTests, copy: Path, isolation: Isolation, limits: Limits
    ) -> None:
        self._group = group
        self._folder = _ZYGOTES.root() / secrets.token_hex(16)
        try:
            _copy_with_stand_in(group, copy, self._folder)
            # Read in the copy the runs see, the stand-in in place of the module.
            hypothesis = _mentions_hypothesis(str(self._folder))
        except BaseException:
            shutil.rmtree(self._folder, ignore_errors=True)
            raise
        self._zygote = _ZYGOTES.take(isolation, limits, hypothesis)

    def run(self, variant: FaultyVersion | None, seed: str) -> _Run:
        return self._zygote.run(self._group, self._folder.name, variant, seed)

    def close(self) -> None:
        _ZYGOTES.give_back(self._zygote)
        shutil.rmtree(self._folder, ignore_errors=True)


class _Zygote:
    """One warm sandbox whose zygote forks every run it is sent, of any file of any submission.

    The sandbox shows `root`, the folder holding each served folder (a copy
    of a submission's with the stand-in) under an unguessable name, read-only
    at the run's working folder; `gradechild.zygote` binds the run's own
    folder over it, so a run sees its folder and nothing of another's, and
    makes the rest of the run's world (namespaces, /tmp, no /proc, no
    capabilities, its limits). This side sends a run its socket to the
    oracle's server and two fresh pipes, reads its output under the same
    bound as ever and its exit status, and ends the whole sandbox when a run
    runs out of time or floods its output, or finds it gone: the next run
    then gets a new one.
    """

    def __init__(self, root: Path, hypothesis: bool, isolation: Isolation, limits: Limits) -> None:
        self.root, self.hypothesis = root, hypothesis
        self._isolation, self._limits = isolation, limits
        self._scratch = Path(tempfile.mkdtemp(prefix="bookproof-zygote-"))
        self._process: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self.starts = 0

    def _start(self) -> tuple[subprocess.Popen[bytes], socket.socket]:
        ours, theirs = socket.socketpair()
        self.starts += 1
        home = self._scratch / f"zygote-{self.starts}"
        home.mkdir()
        config = {
            "control": theirs.fileno(),
            "workdir": "{workdir}",
            "hypothesis": self.hypothesis,
            # The zygote lives for the batch; each run sets its own clock.
            "limits": self._limits.for_child(24 * 3600),
            "tmp_bytes": self._limits.tmp_bytes,
        }
        try:
            process = start(
                self._isolation,
                Launch(
                    _ZYGOTE_BOOT,
                    config,
                    self.root,
                    (theirs.fileno(),),
                    tmp_bytes=self._limits.tmp_bytes,
                ),
                home,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        assert process.stdin is not None
        process.stdin.close()
        try:
            _wait_until_ready(process, self._limits)
        except BaseException:
            ours.close()
            raise
        self._process, self._control = process, ours
        return process, ours

    def _end(self) -> None:
        if self._control is not None:
            with contextlib.suppress(OSError):
                self._control.close()
        if self._process is not None:
            stop(self._process)
        self._process, self._control = None, None

    def close(self) -> None:
        self._end()
        shutil.rmtree(self._scratch, ignore_errors=True)

    def _running(self) -> tuple[subprocess.Popen[bytes], socket.socket]:
        """The live zygote; a new one when there is none, or the last one died between runs."""
        if self._process is not None and exited(self._process):
            self._end()
        if self._process is not None and self._control is not None:
            return self._process, self._control
        return self._start()

    def run(
        self, group: LearnerTests, folder: str, variant: FaultyVersion | None, seed: str
    ) -> _Run:
        """One run of `group`'s file over the served folder named `folder`."""
        limits = self._limits
        process, control = self._running()
        shared = _scratch_name(group, self._isolation)
        ours, theirs = socket.socketpair()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            _oracle(group, self._isolation, limits).serve(
                ours, variant, seed, limits.tests_timeout, shared
            )
            ours.close()
            config = {
                "file": group.file,
                "scratch": shared,
                "limits": limits.for_child(limits.tests_timeout),
                "require_filter": True,
            }
            try:
                socket.send_fds(
                    control,
                    [json.dumps({"config": config, "folder": folder}).encode()],
                    [theirs.fileno(), out_write, err_write],
                )
            except OSError as exc:
                raise IsolationFailed(f"the sandbox for {group.file} stopped ({exc})") from None
            # The run holds the only copies now: its pipes close when it ends.
            for fd in (out_write, err_write):
                os.close(fd)
            out_write = err_write = -1
            theirs.close()
            return self._watch(group, process, control, variant, out_read, err_read)
        finally:
            ours.close()
            theirs.close()
            for fd in (out_read, err_read, out_write, err_write):
                if fd >= 0:
                    os.close(fd)

    def _watch(
        self,
        group: LearnerTests,
        process: subprocess.Popen[bytes],
        control: socket.socket,
        variant: FaultyVersion | None,
        out_read: int,
        err_read: int,
    ) -> _Run:
        output = _Heard(self._limits.output_bytes)
        selector = selectors.DefaultSelector()
        selector.register(out_read, selectors.EVENT_READ, "stdout")
        selector.register(err_read, selectors.EVENT_READ, "stderr")
        # The zygote writes the run's status here the moment the run has ended.
        selector.register(control, selectors.EVENT_READ, "status")
        deadline = time.monotonic() + self._limits.tests_timeout
        status: int | None = None
        try:
            while status is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self._end()  # the run, with the sandbox it runs in
                    return _Run(variant, None, "timeout", output.said)
                for key, _ in selector.select(timeout=remaining):
                    if key.data == "status":
                        status = self._status(control, process, output)
                        break
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif not output.take(chunk, key.data):
                        self._end()
                        return _Run(variant, None, "flood", output.said)
        finally:
            selector.close()
        for fd, name in ((out_read, "stdout"), (err_read, "stderr")):
            _drain(fd, name, output)
        if not output.started():
            detail = output.tail.decode("utf-8", "replace").strip().splitlines()[:1]
            raise IsolationFailed(
                f"a run of {group.file} ended before it started (status {status})"
                + (f": {detail[0]}" if detail else "")
            )
        return _Run(variant, status, "", output.said)

    def _status(
        self, control: socket.socket, process: subprocess.Popen[bytes], output: Output
    ) -> int:
        """The run's exit status as the zygote reports it; IsolationFailed if the zygote is gone."""
        line = b""
        while not line.endswith(b"\n") and len(line) < 16:
            chunk = control.recv(16 - len(line))
            if not chunk:
                stop(process, close_streams=False)
                output.drain(process.stderr, "stderr")
                self._end()
                raise IsolationFailed(
                    "the learner-test sandbox stopped before a run ended"
                    + (
                        f": {output.tail.decode('utf-8', 'replace').strip()[-200:]}"
                        if output.tail
                        else ""
                    )
                )
            line += chunk
        return int(line)


class _Zygotes:
    """The batch's idle zygotes, by what they serve, and the folder every one of them shows.

    A worker borrows one for a file's runs and gives it back, so that each
    worker has a zygote of its own and a batch starts about one per worker
    (one more where some folders name Hypothesis and others do not), not one
    per submission.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, Limits, bool], list[_Zygote]] = {}
        self._lent: set[_Zygote] = set()
        self._root: Path | None = None

    def root(self) -> Path:
        """The folder every zygote's sandbox shows, where each served folder goes."""
        with self._lock:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix="bookproof-served-"))
            return self._root

    def take(self, isolation: Isolation, limits: Limits, hypothesis: bool) -> _Zygote:
        root = self.root()
        with self._lock:
            idle = self._idle.setdefault((isolation.value, limits, hypothesis), [])
            zygote = idle.pop() if idle else _Zygote(root, hypothesis, isolation, limits)
            self._lent.add(zygote)
            return zygote

    def give_back(self, zygote: _Zygote) -> None:
        with self._lock:
            if zygote not in self._lent:
                return  # closed with the batch meanwhile
            self._lent.discard(zygote)
            key = (zygote._isolation.value, zygote._limits, zygote.hypothesis)
            self._idle.setdefault(key, []).append(zygote)

    def close(self) -> None:
        with self._lock:
            zygotes = [z for idle in self._idle.values() for z in idle] + list(self._lent)
            self._idle.clear()
            self._lent.clear()
            root, self._root = self._root, None
        for zygote in zygotes:
            zygote.close()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)


_ZYGOTES = _Zygotes()


class _Heard(Output):
    """A run's output, which also keeps the last few kilobytes of both streams, as they came.

    Never read for a verdict (only the exit status is): it is there to say
    what a run printed when the grader's own tests or a defect need it.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.said = b""

    def take(self, data: bytes, stream: str) -> bool:
        self.said = (self.said + data)[-8192:]
        return super().take(data, stream)


def _drain(fd: int, name: str, output: Output) -> None:
    """What a finished run left in a pipe, up to the bound (every writer is closed by now)."""
    os.set_blocking(fd, False)
    with contextlib.suppress(BlockingIOError):
        while output.seen <= output.limit:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            output.take(chunk, name)


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
    output = _Heard(limits.output_bytes)
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
                return _Run(variant, None, "timeout", output.said)
            for key, _ in selector.select(timeout=min(remaining, 0.2)):
                if key.data == "exit":
                    continue  # `exited` sees it now; what is left in the pipes is drained below
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif not output.take(chunk, key.data):
                    return _Run(variant, None, "flood", output.said)
    finally:
        selector.close()
        if ended is not None:
            os.close(ended)
    status = learner.wait()
    output.drain(learner.stdout, "stdout")
    output.drain(learner.stderr, "stderr")
    if not output.started():
        raise output.never_started(learner)
    return _Run(variant, status, "", output.said)
