"""The grader's use of the runtime's sandbox (`sovereign_agent.sandbox`): what a child sees.

The boundary itself (bubblewrap's namespaces, the unprivileged user of
process mode, rlimits, the seccomp filter) is the runtime's, shared with any
tool that runs untrusted Python. This module holds the grader's policy:

- what a grading child sees, read-only: its copied folder at `/submission`,
  the folders the grader made for its checks at `/files`, the grader's small
  `gradechild` package under `/grader`, and for the oracle the grader's source
  and the reference under `/grader` too;
- a fixed environment (pytest's own plugins only) and no network;
- as whom it runs in process mode: a child that runs learner code as the
  unprivileged user `nobody` when the grader is root and `nobody` can start
  the interpreter; where it cannot, `start` refuses such a child unless the
  caller accepted running it as root (`root_children_accepted`), and then
  `describe` says so; the oracle, which runs none, as the grader;
- the limits of a grading run (`Limits`): a clock per question, output and
  memory bounds;
- how a learner's test file runs (`runs_share_a_sandbox`): in bubblewrap
  mode, every run forks from a warm zygote the batch keeps in one sandbox
  per worker, serving every test file of every submission, each run in
  namespaces of its own over its own folder (`gradechild.zygote`),
  wherever the kernel allows namespaces inside the sandbox
  (`nested_runs_problem`); elsewhere, or when the caller asks
  (`one_sandbox_per_run`), each run gets a sandbox of its own.

In process mode a child finds its folders at their real paths; `gradechild`
is copied into its scratch folder, so that it never needs to read the
grader's source.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookproof.grade import child
from sovereign_agent import sandbox as runtime
from sovereign_agent.sandbox import (
    NOBODY,
    Isolation,
    SandboxStopping,
    View,
    bubblewrap_problem,
    drops_privileges,
    exited,
    stop,
    stop_everything,
)

__all__ = [
    "CHILD_PACKAGE",
    "ENVIRONMENT",
    "GradingStopped",
    "Isolation",
    "IsolationFailed",
    "Launch",
    "Limits",
    "bubblewrap_problem",
    "describe",
    "exited",
    "files_seen_at",
    "nested_runs_problem",
    "one_sandbox_per_run",
    "root_children_accepted",
    "runs_share_a_sandbox",
    "start",
    "stop",
    "stop_everything",
    "unprivileged_problem",
]

CHILD_PACKAGE = Path(child.__file__).resolve().parent
# Where a bubblewrap sandbox shows the copied files, and the grader's package.
_WORKDIR = "/submission"
_FILES = "/files"
_GRADER = "/grader"
_CHILD_NAME = "gradechild"

# The whole environment of a grading child: nothing of the grader's.
ENVIRONMENT: Mapping[str, str] = {
    **runtime.ENVIRONMENT,
    # A learner's tests run with pytest's own plugins only: the same for every
    # run, and no plugin's start-up cost on each of them.
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}

GradingStopped = SandboxStopping


class IsolationFailed(RuntimeError):
    """The sandbox could not be set up as promised: a fault of the machine, not of a submission."""


@dataclass(frozen=True)
class Limits:
    """What one sandboxed process may use.

    `timeout` is wall-clock seconds for importing a submission and for each
    question after that: the clock restarts with every answer, so a class's
    slow-but-honest submissions are not cut off by the number of checks. A run
    of a learner's tests gets `tests_timeout` in all.
    """

    timeout: float = 10.0
    memory_bytes: int = 1024 * 1024 * 1024
    output_bytes: int = 1024 * 1024
    file_bytes: int = 8 * 1024 * 1024
    open_files: int = 256
    tmp_bytes: int = 64 * 1024 * 1024

    @property
    def tests_timeout(self) -> float:
        return max(30.0, 3 * self.timeout)

    def for_child(self, cpu_seconds: float) -> dict[str, int]:
        """The rlimits the child sets on itself (`gradechild.limits.start_up`)."""
        return {
            "memory_bytes": self.memory_bytes,
            "file_bytes": self.file_bytes,
            "cpu_seconds": int(cpu_seconds) + 1,
            "open_files": self.open_files,
        }


@dataclass(frozen=True)
class Launch:
    """One interpreter to start: what it runs, and what it may see.

    `code` is a format string for `python -c`: `{grader}` becomes the folder
    that holds `gradechild`. `config` travels as the process's one argument
    (JSON), after `{workdir}` placeholders in its string values are replaced by
    where the copied folder appears. `folder` is that copied folder (shown
    read-only); `extra` are more read-only folders, each shown at a name under
    the grader's folder (for the oracle: the grader's source and the reference).
    `files` is the folder of the grader's own folders for a submission's checks
    (`bookproof.grade.files`), shown read-only where `files_seen_at` says.
    `learner_code` is False only for the oracle, which runs none: in process
    mode it keeps the grader's user, so that it can read the reference.
    """

    code: str
    config: Mapping[str, Any]
    folder: Path
    fds: tuple[int, ...] = ()
    extra: Mapping[str, Path] = field(default_factory=dict)
    tmp_bytes: int = Limits.tmp_bytes
    files: Path | None = None
    learner_code: bool = True


# Whether a child running learner code may run as root where `nobody` cannot
# start the interpreter. A plain flag, not a context variable: the grader's
# worker threads must see what the command accepted.
_ROOT_CHILDREN_ACCEPTED = [False]


@contextlib.contextmanager
def root_children_accepted(accepted: bool = True) -> Iterator[None]:
    """While inside, `start` runs learner code as root where it cannot run it as `nobody`.

    Only an explicit choice (`--run-submissions-as-root`) may say so: a silent
    fallback would hand a submission the environment, the runtime and the
    grader that every later run relies on.
    """
    before = _ROOT_CHILDREN_ACCEPTED[0]
    _ROOT_CHILDREN_ACCEPTED[0] = accepted
    try:
        yield
    finally:
        _ROOT_CHILDREN_ACCEPTED[0] = before


# Whether each run of a learner's tests gets a bubblewrap sandbox of its own
# even where the zygote could serve it: the old path, kept as the benchmark's
# baseline. A plain flag, like the one above, for the grader's worker threads.
_ONE_SANDBOX_PER_RUN = [False]


@contextlib.contextmanager
def one_sandbox_per_run(chosen: bool = True) -> Iterator[None]:
    """While inside, every run of a learner's tests starts a bubblewrap sandbox of its own."""
    before = _ONE_SANDBOX_PER_RUN[0]
    _ONE_SANDBOX_PER_RUN[0] = chosen
    try:
        yield
    finally:
        _ONE_SANDBOX_PER_RUN[0] = before


@functools.cache
def nested_runs_problem() -> str | None:
    """None when a bubblewrap sandbox here can give each run namespaces of its own; else why not.

    The zygote's runs need new user, mount, PID, network and IPC namespaces
    inside the sandbox, and a tmpfs mounted in them: some kernels and
    containers refuse a user namespace inside another. Tried once, for real.
    """
    problem = bubblewrap_problem()
    if problem is not None:
        return problem
    view = View({f"{_GRADER}/{_CHILD_NAME}": CHILD_PACKAGE}, _GRADER, environment=dict(ENVIRONMENT))
    code = (
        f"import sys; sys.path.insert(0, {_GRADER!r}); from gradechild.zygote import probe; probe()"
    )
    with tempfile.TemporaryDirectory(prefix="bookproof-probe-") as scratch:
        try:
            process = runtime.start(
                Isolation.BUBBLEWRAP,
                view,
                [sys.executable, "-I", "-B", "-c", code],
                Path(scratch),
            )
        except OSError as exc:
            return f"the nested namespaces could not be tried ({type(exc).__name__})"
        try:
            _, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            return "trying the nested namespaces did not finish within 60 s"
        finally:
            stop(process)
    if process.returncode != 0:
        said = err.decode("utf-8", "replace").strip().splitlines()
        return "this kernel refuses namespaces inside the sandbox" + (
            f": {said[-1]}" if said else ""
        )
    return None


def runs_share_a_sandbox(isolation: Isolation) -> bool:
    """Whether a learner's test runs fork from the batch's zygotes (True) or get a sandbox each."""
    return (
        isolation is Isolation.BUBBLEWRAP
        and not _ONE_SANDBOX_PER_RUN[0]
        and nested_runs_problem() is None
    )


def files_seen_at(isolation: Isolation, files: Path) -> str:
    """Where a process started with `Launch(files=files)` finds that folder."""
    return _FILES if isolation is Isolation.BUBBLEWRAP else str(files)


def child_user(learner_code: bool = True) -> int | None:
    """As whom a child runs in process mode when the grader is root (None: as the grader).

    A child that runs learner code runs as `nobody` wherever that user can
    start the interpreter; the oracle, which runs none, as the grader.
    """
    if not learner_code or os.geteuid() != 0 or unprivileged_problem() is not None:
        return None
    return NOBODY


@functools.cache
def unprivileged_problem() -> str | None:
    """None when process mode here runs submissions as `nobody`; otherwise why not, in one line.

    The grader must be root (only root can switch users), and `nobody` must be
    able to start this interpreter and import the runtime and Pydantic from
    where they are installed: an interpreter under a private home (a 0700
    /root) is out of its reach.
    """
    if os.geteuid() != 0:
        return "the grader is not root, so it cannot run a submission as another user"
    try:
        completed = subprocess.run(
            [sys.executable, "-I", "-B", "-c", "import pydantic, sovereign_agent.sandbox"],
            capture_output=True,
            cwd="/",
            env=dict(ENVIRONMENT),
            user=NOBODY,
            group=NOBODY,
            extra_groups=[],
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"user {NOBODY} cannot start {sys.executable} ({type(exc).__name__})"
    if completed.returncode != 0:
        return f"user {NOBODY} cannot start {sys.executable} and import the runtime"
    return None


def start(isolation: Isolation, launch: Launch, scratch: Path) -> subprocess.Popen[bytes]:
    """Start the child with three pipes (stdin, stdout, stderr) in its own session.

    `scratch` is an empty folder of the grader's, removed by the caller after
    `stop`: in process mode, the child's home and where it finds `gradechild`.
    """
    if (
        isolation is Isolation.PROCESS
        and launch.learner_code
        and os.geteuid() == 0
        and unprivileged_problem() is not None
        and not _ROOT_CHILDREN_ACCEPTED[0]
    ):
        # Checked here as well as by the command: every caller of the grader
        # gets the refusal, not only `grade-exercises`.
        raise IsolationFailed(
            f"{unprivileged_problem()}, and running a submission as root was not accepted"
        )
    if isolation is Isolation.BUBBLEWRAP:
        grader_folder = CHILD_PACKAGE.parent  # not shown: only its `gradechild` is
        shown: dict[str, Path] = {f"{_GRADER}/{_CHILD_NAME}": CHILD_PACKAGE}
    else:
        grader_folder = scratch / "grader"
        grader_folder.mkdir(mode=0o755)
        # A copy, not a link: the grader's own source may be closed to the
        # child's user (the Gradescope image closes it).
        shutil.copytree(
            CHILD_PACKAGE,
            grader_folder / _CHILD_NAME,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        for name, path in launch.extra.items():
            (grader_folder / name).symlink_to(path, target_is_directory=True)
        shown = {_GRADER: grader_folder}
    for name, path in launch.extra.items():
        shown.setdefault(f"{_GRADER}/{name}", path)
    shown[_WORKDIR] = launch.folder
    if launch.files is not None:
        shown[_FILES] = launch.files
    view = View(
        shown,
        _WORKDIR,
        tmp_bytes=launch.tmp_bytes,
        environment=dict(ENVIRONMENT),
        user=child_user(launch.learner_code),
    )
    grader = _GRADER if isolation is Isolation.BUBBLEWRAP else str(grader_folder)
    workdir = runtime.seen_at(isolation, view, _WORKDIR)
    extra = {name: f"{grader}/{name}" for name in launch.extra}
    config = _placed(launch.config, {"workdir": workdir, **extra})
    # -I: no user site, no environment variables of Python's, no script folder
    # on the path; -B: no bytecode written anywhere the child can reach.
    argv = [sys.executable, "-I", "-B", "-c", launch.code.format(grader=grader), json.dumps(config)]
    try:
        return runtime.start(isolation, view, argv, scratch, fds=launch.fds)
    except SandboxStopping:
        raise
    except OSError as exc:
        # The interpreter or a folder is out of the child user's reach: the
        # machine's setup, never the submission's doing.
        who = f"user {view.user}" if drops_privileges(isolation, view) else "the grader"
        raise IsolationFailed(
            f"could not start a sandboxed process as {who} ({type(exc).__name__}: {exc})"
        ) from None


def _placed(value: Any, places: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return value.format_map(places) if "{" in value else value
    if isinstance(value, dict):
        return {key: _placed(item, places) for key, item in value.items()}
    if isinstance(value, list):
        return [_placed(item, places) for item in value]
    return value


def describe(isolation: Isolation) -> str:
    """One line for the terminal and the reports' readers: what a submission could reach."""
    if isolation is Isolation.BUBBLEWRAP:
        runs = (
            "each run of a learner's tests in namespaces of its own, forked in one sandbox "
            "per worker"
            if runs_share_a_sandbox(isolation)
            else "each run of a learner's tests in a sandbox of its own"
        )
        return f"bubblewrap sandbox: each submission sees only its own files; {runs}"
    if child_user() is not None:
        return (
            f"process isolation as the unprivileged user {NOBODY} (nobody): a submission "
            "can read only what that user can read and write nothing of the grader's, "
            "with the same limits, but it has the machine's network"
        )
    if os.geteuid() == 0:
        return (
            f"process only, as root ({unprivileged_problem()}): submissions can read and "
            "write what root can; a batch that finds its environment changed fails"
        )
    return "process only: submissions run as the grader's user and can read what it can read"
