"""Grading one submission: copy its folder, ask every check's questions, decide every verdict here.

The grading process never imports a submission. It copies the folder's
plain files (`intake`), runs each behaviour check's trial up to its first
question, making on its own side every folder the trials asked for
(`files`), starts one sandboxed child over the copy, those folders shown
read-only beside it (`session`), and goes on with each trial: a generator
that yields questions and receives answers, with data randomised for this
run from the seed and the check's id (so the same seed asks the same
questions and gives the same grade). If the child dies or hangs during a check, that check is
charged with what happened and a fresh child is started for the next one,
so an endless loop costs only the checks that reach it. Learner-test checks
run the learner's tests against the reference and its faulty versions
(`learner_tests`); within a batch, a test file whose runs would be the same
as another folder's gets that folder's verdicts instead (`reuse`). A check
declared with `requires` is credited only once the check it requires has passed.
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookproof.grade.book import Book, Check, Kind, LearnerTests, Trial
from bookproof.grade.files import describe, materialise
from bookproof.grade.intake import copy_submission
from bookproof.grade.learner_tests import grade_tests
from bookproof.grade.questions import Answer, Folder, Question, Ref
from bookproof.grade.reuse import Graded, Reuse, folder_digest, runs_key
from bookproof.grade.sandbox import Isolation, Limits, files_seen_at
from bookproof.grade.session import ChildGone, Outcome, Session, exception_name

__all__ = ["CheckOutcome", "Prepared", "SubmissionReport", "grade_submission", "prepare"]


@dataclass(frozen=True)
class CheckOutcome:
    """One line of a submission's report."""

    id: str
    kind: Kind
    label: str  # "chapter baseline" or "exercise N"
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
    isolation: Isolation
    checks: tuple[CheckOutcome, ...]
    seconds: float = 0.0
    # Runs of the learner's tests made for this folder, and runs whose
    # verdicts came from an identical folder's runs in the batch (`reuse`).
    test_runs: int = 0
    reused_runs: int = 0

    @property
    def total(self) -> int:
        return sum(check.points for check in self.checks)

    @property
    def max(self) -> int:
        return sum(check.max_points for check in self.checks)

    def subtotal(self, kind: Kind) -> tuple[int, int]:
        """(points, max points) over the checks of one kind."""
        chosen = [check for check in self.checks if check.kind == kind]
        return sum(c.points for c in chosen), sum(c.max_points for c in chosen)


def grade_submission(
    folder: Path,
    book: Book,
    *,
    isolation: Isolation,
    limits: Limits,
    seed: int,
    name: str,
    reuse: Reuse | None = None,
) -> SubmissionReport:
    """Grade one folder against one book; never raises for anything the submission did.

    With `reuse`, the batch's memo, a learner-test file graded before with
    the same key is not run again (`reuse`).
    """
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="bookproof-grade-"))
    try:
        # In process mode the child finds these folders at their real paths, as
        # its own user: it may pass through the scratch folder (never list it)
        # to names no other submission's child can guess.
        os.chmod(scratch, 0o711)
        token = secrets.token_hex(8)
        copy = scratch / f"submission-{token}"
        problem = copy_submission(folder, copy, book.files)
        runs = _Runs()
        if problem is not None:
            outcomes = {check.id: _charge(check, "error", problem) for check in book.checks}
        else:
            files = scratch / f"files-{token}"
            outcomes = _grade_copy(copy, files, book, isolation, limits, seed)
            outcomes |= _grade_learner_tests(copy, book, isolation, limits, seed, reuse, runs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    ordered = tuple(_credit(check, outcomes) for check in book.checks)
    return SubmissionReport(
        name, isolation, ordered, time.monotonic() - started, runs.made, runs.reused
    )


def _grade_copy(
    copy: Path, files: Path, book: Book, isolation: Isolation, limits: Limits, seed: int
) -> dict[str, CheckOutcome]:
    outcomes: dict[str, CheckOutcome] = {}
    behaviour = [check for check in book.checks if check.trial is not None]
    folders = _Folders(files, files_seen_at(isolation, files))
    hand_in = _HandIn(copy, book.files)
    session: Session | None = None
    # Every trial up to its first question, and so every folder made, before
    # any of the submission's code runs: none of it can watch them being made.
    prepared = {
        check.id: prepare(check, _rng(seed, book, check.id), folders.make) for check in behaviour
    }
    try:
        for index, check in enumerate(behaviour):
            if session is None:
                session = Session(
                    copy,
                    book.module,
                    isolation,
                    limits,
                    len(behaviour) - index,
                    files=files if folders.made else None,
                )
                try:
                    session.imported()
                except ChildGone as gone:
                    # Nothing after an import that fails can be asked: every
                    # check left is charged with the same fate.
                    for rest in behaviour[index:]:
                        outcomes[rest.id] = _charge(rest, gone.outcome, gone.message)
                    session = None
                    break
            try:
                outcomes[check.id] = _run_trial(check, session, prepared[check.id], hand_in)
            except ChildGone as gone:
                outcomes[check.id] = _charge(check, gone.outcome, gone.message)
                session = None
    finally:
        if session is not None:
            session.close()
        for ready in prepared.values():
            ready.trial.close()
    return outcomes


@dataclass
class _Runs:
    """How many runs of one folder's learner tests were made, and how many reused."""

    made: int = 0
    reused: int = 0


def _grade_learner_tests(
    copy: Path,
    book: Book,
    isolation: Isolation,
    limits: Limits,
    seed: int,
    reuse: Reuse | None,
    runs: _Runs,
) -> dict[str, CheckOutcome]:
    """Every learner-test check's outcome: each file's runs made, or reused from the batch."""
    outcomes: dict[str, CheckOutcome] = {}
    tests_seed = f"{seed}:{book.number}"
    # One digest of the folder serves every test file: no sandbox can write the copy.
    folder = folder_digest(copy, book.module_file) if reuse is not None and book.groups() else ""
    for group in book.groups():
        grade = functools.partial(_run_tests, group, copy, isolation, limits, tests_seed)
        if reuse is None:
            graded = grade()
            runs.made += graded.runs
        else:
            key = runs_key(
                group,
                folder,
                isolation=isolation,
                limits=limits,
                seed=tests_seed,
                options=reuse.options,
            )
            graded, reused = reuse.graded(key, grade)
            if reused:
                runs.reused += graded.runs
            else:
                runs.made += graded.runs
        for check in group.checks:
            outcome, message = graded.verdicts[check.id]
            outcomes[check.id] = (
                _passed(check) if outcome == "passed" else _charge(check, outcome, message)
            )
    return outcomes


def _run_tests(
    group: LearnerTests, copy: Path, isolation: Isolation, limits: Limits, seed: str
) -> Graded:
    """Run one learner-test file's tests (`learner_tests`): its verdicts and how many runs."""
    counted = [0]

    def ran(number: int) -> None:
        counted[0] = number

    verdicts = grade_tests(group, copy, isolation, limits, seed, ran=ran)
    return Graded(verdicts, counted[0])


def _rng(seed: int, book: Book, check_id: str) -> random.Random:
    # Derived from the seed and the check alone: the same seed asks the same
    # questions, whichever checks ran before and however often a child restarted.
    return random.Random(f"{seed}:{book.number}:{check_id}")


class _Folders:
    """The folders a submission's checks asked for: made here, under `root`, one per request."""

    def __init__(self, root: Path, seen_at: str) -> None:
        self.root = root
        self.seen_at = seen_at
        self.made = 0

    def make(self, request: Folder) -> str:
        # Numbered in the order asked: a name that says nothing about the check.
        name = f"f{self.made}"
        if not self.made:
            self.root.mkdir(mode=0o755)
        seen = f"{self.seen_at}/{name}"
        materialise(describe(request.tree, seen_at=seen), self.root / name)
        self.made += 1
        return seen


# --- one trial ---------------------------------------------------------------------


@dataclass
class Prepared:
    """A check's trial, run up to its first question: its folders made, nothing asked yet.

    `first` is that question; None when the trial ended without asking any,
    with `verdict` its result.
    """

    trial: Trial
    first: Question | None
    verdict: str | None = None


def prepare(check: Check, rng: random.Random, make: Callable[[Folder], str]) -> Prepared:
    """Start `check`'s trial and answer its `folder` requests with `make`, up to a question."""
    assert check.trial is not None
    trial = check.trial(rng)
    sent: str | None = None
    while True:
        try:
            step = trial.send(sent)
        except StopIteration as done:
            return Prepared(trial, None, done.value)
        if isinstance(step, Question):
            return Prepared(trial, step)
        if not isinstance(step, Folder):
            raise TypeError(f"{check.id} yielded {type(step).__name__}, not a question")
        sent = make(step)


@dataclass(frozen=True)
class _HandIn:
    """The grader's copy of a folder, for the data files a check reads itself."""

    folder: Path
    files: tuple[str, ...]

    def text(self, name: str) -> str | None:
        if name not in self.files:
            # A check may read only what the book tells learners to hand in.
            raise ValueError(f"{name!r} is not one of the book's files {self.files}")
        try:
            return (self.folder / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return None


_NOT_PLAIN = (
    "Returned something that is not plain data "
    "(only exact dict, list, str, int, float, bool and None count)."
)
_SHAPE = "Returned values of an unexpected shape."


def _run_trial(
    check: Check, session: Session, prepared: Prepared, hand_in: _HandIn
) -> CheckOutcome:
    """Go on with a prepared trial: ask its questions of the child, and judge what it returns."""
    if prepared.first is None:
        reason = prepared.verdict
        return _passed(check) if reason is None else _charge(check, "failed", reason)
    session.begin()
    trial = prepared.trial
    names = (f"h{number}" for number in itertools.count())
    step: Question | Folder = prepared.first
    try:
        while True:
            if not isinstance(step, Question):
                # A folder asked for now could only be made inside the running
                # sandbox, in reach of the submission: a defect of the book.
                raise TypeError(f"{check.id} asked for a folder after its first question")
            question = step
            op = dict(question.op)
            sent: Any
            if op["op"] == "handed_in":
                # Answered from the grader's copy: no learner code runs.
                sent = hand_in.text(op["name"])
            else:
                kept = next(names) if question.keep else None
                if kept is not None:
                    op["keep"] = kept
                answer = session.ask(op)
                if answer.raised_a("MemoryError"):
                    return _charge(check, "out of memory", "Ran out of memory during this check.")
                if answer.status == "kept" and kept is not None:
                    answer = Answer("kept", Ref(kept))
                if question.raises:
                    sent = answer
                elif answer.status == "raised":
                    return _charge(check, "error", f"Raised {exception_name(answer.raised)}.")
                elif answer.status == "wrong_type":
                    return _charge(check, "failed", _NOT_PLAIN)
                elif (answer.status == "kept") != (kept is not None):
                    return _charge(check, "failed", _SHAPE)
                else:
                    sent = answer.value
            try:
                step = trial.send(sent)
            except StopIteration as done:
                reason = done.value
                return _passed(check) if reason is None else _charge(check, "failed", reason)
            except (LookupError, TypeError, ValueError, AttributeError):
                # The values are the submission's: a shape the check never
                # expected is a wrong answer, not a reason to stop grading.
                return _charge(check, "failed", _SHAPE)
    finally:
        trial.close()


# --- verdicts ------------------------------------------------------------------------


def _passed(check: Check) -> CheckOutcome:
    return CheckOutcome(
        check.id, check.kind, check.label, check.points, check.points, "passed", check.asks
    )


def _charge(check: Check, outcome: Outcome, message: str) -> CheckOutcome:
    feedback = f"{message} {check.hint} Re-read {check.section}."
    return CheckOutcome(check.id, check.kind, check.label, 0, check.points, outcome, feedback)


def _credit(check: Check, outcomes: dict[str, CheckOutcome]) -> CheckOutcome:
    """The check's outcome, held back ("locked") while a check it requires has not passed."""
    outcome = outcomes[check.id]
    required = check.requires
    if required is None or not outcome.passed or outcomes[required.id].passed:
        return outcome
    feedback = (
        f"{check.asks} The unchanged starter already behaves this way, so this counts "
        f"once {required.id} passes. Re-read {required.section}."
    )
    return CheckOutcome(check.id, check.kind, check.label, 0, check.points, "locked", feedback)
