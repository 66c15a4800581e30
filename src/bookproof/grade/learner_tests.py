"""Grading a learner's tests by what they catch: runs against the reference and faulty versions.

For one test file the grader makes a list of runs: the reference solution
`reference_runs` times and each declared faulty version once, shuffled with
this run's seed. Each run is two sandboxes joined by a socket pair: in one,
pytest runs the learner's file over a fresh copy of their folder in which the
book's module is a stand-in (`gradechild.stand_in`); in the other, the oracle
(`bookproof.grade.oracle`) serves the reference or that faulty version. The
learner's process never holds the code under test, so a test can tell the
versions apart by behaviour only; the runs share nothing (fresh copies, fresh
/tmp), so a test cannot learn which run it is in.

Verdicts: the grader takes pytest's exit status and nothing else. A faulty
version is caught when a test failed against it (status 1) while every run
against the reference passed (status 0). A suite that asserts nothing passes
everywhere and catches nothing; a suite that passes or fails by chance rarely
passes all the reference runs.
"""

from __future__ import annotations

import os
import random
import selectors
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import bookproof
from bookproof.grade.book import Check, LearnerTests
from bookproof.grade.sandbox import Isolation, Launch, Limits, exited, start, stop
from bookproof.grade.session import Outcome, Output

__all__ = ["ROOT", "grade_tests"]

# The repository (or autograder) root: the reference solutions live under it.
ROOT = Path(bookproof.__file__).resolve().parents[2]
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
    variant: Check | None  # None: the reference
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
    plan: list[Check | None] = [None] * group.reference_runs + list(group.checks)
    random.Random(f"{seed}:{group.file}:order").shuffle(plan)
    runs = [_run(group, copy, variant, isolation, limits, seed) for variant in plan]
    reference = [run for run in runs if run.variant is None]
    problem = _reference_problem(group, reference, limits)
    verdicts: dict[str, tuple[Outcome, str]] = {}
    for run in runs:
        if run.variant is None:
            continue
        if problem is not None:
            verdicts[run.variant.id] = ("failed", problem)
        elif run.status == 1:
            verdicts[run.variant.id] = ("passed", "")
        elif run.fate == "timeout":
            verdicts[run.variant.id] = (
                "timeout",
                f"Against this faulty version your tests did not finish within "
                f"{limits.tests_timeout:g} s.",
            )
        else:
            verdicts[run.variant.id] = ("failed", "Your tests passed against this faulty version.")
    return verdicts


def _reference_problem(group: LearnerTests, runs: Sequence[_Run], limits: Limits) -> str | None:
    module = group.book.module
    statuses = [run.status for run in runs]
    if all(status == 0 for status in statuses):
        return None
    if any(status == 0 for status in statuses):
        return (
            f"Your tests passed against a correct {module} in some runs and not in others: "
            "a test that depends on chance proves nothing."
        )
    first = runs[0]
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
        f"Your tests may import only these names from {module}: {names}."
    )


def _run(
    group: LearnerTests,
    copy: Path,
    variant: Check | None,
    isolation: Isolation,
    limits: Limits,
    seed: str,
) -> _Run:
    scratch = Path(tempfile.mkdtemp(prefix="bookproof-tests-"))
    ours, theirs = socket.socketpair()
    learner = oracle = None
    try:
        folder = scratch / "submission"
        shutil.copytree(copy, folder)
        stand_in = folder / f"{group.book.module}.py"
        stand_in.unlink(missing_ok=True)
        stand_in.write_text(
            _STAND_IN.format(surface=repr(group.surface.describe())), encoding="utf-8"
        )
        os.chmod(stand_in, 0o644)
        (scratch / "oracle").mkdir()
        (scratch / "learner").mkdir()
        reference = group.book.reference(ROOT)
        oracle_config = {
            "book": group.book.number,
            "file": group.file,
            "variant": None if variant is None else variant.id,
            "seed": f"{seed}:{group.file}:{'reference' if variant is None else variant.id}",
            "reference": f"{{workdir}}/{reference.name}",
            "channel": ours.fileno(),
            "limits": limits.for_child(limits.tests_timeout),
            "require_filter": isolation is Isolation.BUBBLEWRAP,
        }
        oracle = start(
            isolation,
            Launch(
                _ORACLE_BOOT,
                oracle_config,
                reference.parent,
                (ours.fileno(),),
                extra={"src": _SOURCE},
            ),
            scratch / "oracle",
        )
        learner_config = {
            "workdir": "{workdir}",
            "file": group.file,
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
        ours.close()
        theirs.close()
        return _watch(learner, oracle, variant, limits)
    finally:
        ours.close()
        theirs.close()
        for process in (learner, oracle):
            if process is not None:
                stop(process)
        shutil.rmtree(scratch, ignore_errors=True)


def _watch(
    learner: subprocess.Popen[bytes],
    oracle: subprocess.Popen[bytes],
    variant: Check | None,
    limits: Limits,
) -> _Run:
    outputs = {"learner": Output(limits.output_bytes), "oracle": Output(limits.output_bytes)}
    selector = selectors.DefaultSelector()
    for name, process in (("learner", learner), ("oracle", oracle)):
        assert process.stdin is not None and process.stdout is not None
        assert process.stderr is not None
        process.stdin.close()
        selector.register(process.stdout, selectors.EVENT_READ, (name, "stdout"))
        selector.register(process.stderr, selectors.EVENT_READ, (name, "stderr"))
    deadline = time.monotonic() + limits.tests_timeout
    try:
        # Until the learner's run ends, and the oracle has shown it started
        # (a run against an oracle that never started proves nothing).
        while not exited(learner) or not (outputs["oracle"].ready or exited(oracle)):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _Run(variant, None, "timeout")
            for key, _ in selector.select(timeout=min(remaining, 0.2)):
                name, stream = key.data
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif not outputs[name].take(chunk, stream) and name == "learner":
                    return _Run(variant, None, "flood")
    finally:
        selector.close()
    status = learner.wait()
    for name, process in (("learner", learner), ("oracle", oracle)):
        if exited(process):
            outputs[name].drain(process.stdout, "stdout")
            outputs[name].drain(process.stderr, "stderr")
            if not outputs[name].ready:
                raise outputs[name].never_started(process)
    return _Run(variant, status)
