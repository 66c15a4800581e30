"""Starting a Python process the grader does not trust: in a bubblewrap sandbox, or only limited.

Two isolation modes, chosen by the instructor and recorded in every report:

- `bubblewrap` (the default): the process runs in its own user, mount, PID,
  network, IPC and UTS namespaces. Its filesystem holds the interpreter and
  the libraries it loads (read-only), the book's runtime `sovereign_agent`
  (read-only), the grader's small `gradechild` package (read-only), and one
  folder of files the grader copied for it (read-only, its working folder),
  and, when a book's checks need them, the folders the grader made for those
  checks (read-only, at `/files`). Its only writable place is a size-bounded
  /tmp that disappears with it.
  No other submission, no `solutions/`, no other grader source, no home
  directory; a fixed, minimal environment; no network at all; it cannot see,
  signal or outlive any process outside (`--die-with-parent`, and killing the
  sandbox kills its whole PID namespace).
- `process`: the same process, limits and fixed environment, but in the
  grader's world: it can read whatever the grader's user can read and signal
  the grader's processes. Only for machines without bubblewrap, and only when
  the instructor says so (`--isolation process`).

In both modes the process applies its own limits first (`gradechild.limits`):
memory, file size, CPU time, open files, and no new processes.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from bookproof.grade import child

__all__ = [
    "CHILD_PACKAGE",
    "ENVIRONMENT",
    "GradingStopped",
    "Isolation",
    "Launch",
    "Limits",
    "bubblewrap_problem",
    "exited",
    "files_seen_at",
    "start",
    "stop",
    "stop_everything",
]

CHILD_PACKAGE = Path(child.__file__).resolve().parent
# Where a bubblewrap sandbox shows the copied files, and the grader's package.
_WORKDIR = "/submission"
_FILES = "/files"
_GRADER = "/grader"
_CHILD_NAME = "gradechild"

# The whole environment of a sandboxed process: nothing of the grader's.
ENVIRONMENT: Mapping[str, str] = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    # A learner's tests run with pytest's own plugins only: the same for every
    # run, and no plugin's start-up cost on each of them.
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}
# An unprivileged identity inside the sandbox, whoever runs the grader.
_NOBODY = "65534"


class Isolation(StrEnum):
    BUBBLEWRAP = "bubblewrap"
    PROCESS = "process"


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
        """The rlimits the child sets on itself (`gradechild.limits.apply`)."""
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
    """

    code: str
    config: Mapping[str, Any]
    folder: Path
    fds: tuple[int, ...] = ()
    extra: Mapping[str, Path] = field(default_factory=dict)
    tmp_bytes: int = Limits.tmp_bytes
    files: Path | None = None


def files_seen_at(isolation: Isolation, files: Path) -> str:
    """Where a process started with `Launch(files=files)` finds that folder."""
    return _FILES if isolation is Isolation.BUBBLEWRAP else str(files)


class GradingStopped(RuntimeError):
    """The grader is shutting down (interrupted): no new process may start."""


# Every process started and not yet stopped, so that an interrupted grader
# can end them all before it exits.
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()


def stop_everything() -> None:
    """Refuse new processes from now on, and kill every live one."""
    _STOPPING.set()
    with _LIVE_LOCK:
        live = list(_LIVE)
    for process in live:
        stop(process)


def start(isolation: Isolation, launch: Launch, scratch: Path) -> subprocess.Popen[bytes]:
    """Start the process with three pipes (stdin, stdout, stderr) in its own session.

    `scratch` is an empty folder of the grader's, removed by the caller after
    `stop`: the process-only mode's home and /tmp, and where it finds `gradechild`.
    """
    if isolation is Isolation.BUBBLEWRAP:
        grader, workdir = _GRADER, _WORKDIR
    else:
        grader, workdir = str(scratch / "grader"), str(launch.folder)
        Path(grader).mkdir()
        (Path(grader) / _CHILD_NAME).symlink_to(CHILD_PACKAGE, target_is_directory=True)
        for name, path in launch.extra.items():
            (Path(grader) / name).symlink_to(path, target_is_directory=True)
    extra = {name: f"{grader}/{name}" for name in launch.extra}
    config = _placed(launch.config, {"workdir": workdir, **extra})
    command = [
        sys.executable,
        "-I",
        "-c",
        launch.code.format(grader=grader),
        json.dumps(config),
    ]
    if isolation is Isolation.BUBBLEWRAP:
        argv = [*_bubblewrap(launch, workdir), "--", *command]
        env = dict(ENVIRONMENT)
        cwd: Path | str = "/"
    else:
        home = scratch / "home"
        home.mkdir()
        argv = command
        env = {**ENVIRONMENT, "HOME": str(home), "TMPDIR": str(home)}
        cwd = launch.folder
    with _LIVE_LOCK:
        if _STOPPING.is_set():
            raise GradingStopped("the grader is stopping")
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            close_fds=True,
            pass_fds=launch.fds,
            start_new_session=True,
        )
        _LIVE.add(process)
    return process


def stop(process: subprocess.Popen[bytes], *, close_streams: bool = True) -> None:
    """Kill the process and everything it started, and reap it. Safe to call twice.

    With `close_streams=False` its pipes stay open, for the caller to read what
    it left in them before closing them.

    In a bubblewrap sandbox, killing bwrap kills the sandbox's PID namespace
    (`--die-with-parent` all the way down); in process mode, its session's group.
    """
    if process.returncode is None:
        # Not reaped yet, so its pid (and its group's id) cannot have been reused.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    process.wait()
    with _LIVE_LOCK:
        _LIVE.discard(process)
    if not close_streams:
        return
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def exited(process: subprocess.Popen[bytes]) -> bool:
    """Whether the process has ended, without reaping it (so `stop` can still kill its group)."""
    if process.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _placed(value: Any, places: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return value.format_map(places) if "{" in value else value
    if isinstance(value, dict):
        return {key: _placed(item, places) for key, item in value.items()}
    if isinstance(value, list):
        return [_placed(item, places) for item in value]
    return value


# --- bubblewrap ------------------------------------------------------------------


def _bubblewrap(launch: Launch, workdir: str) -> list[str]:
    argv = [
        _bwrap(),
        "--unshare-all",
        "--unshare-user",
        "--uid",
        _NOBODY,
        "--gid",
        _NOBODY,
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]
    for name, value in ENVIRONMENT.items():
        argv += ["--setenv", name, value]
    argv += ["--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp"]
    # The scratch /tmp first: a bind below /tmp (a project checked out there)
    # must land on top of it, not be hidden by it.
    argv += ["--size", str(launch.tmp_bytes), "--tmpfs", "/tmp"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
    argv += _system_view()
    argv += ["--ro-bind", str(CHILD_PACKAGE), f"{_GRADER}/{_CHILD_NAME}"]
    for name, path in launch.extra.items():
        argv += ["--ro-bind", str(path), f"{_GRADER}/{name}"]
    argv += ["--ro-bind", str(launch.folder), workdir]
    if launch.files is not None:
        argv += ["--ro-bind", str(launch.files), _FILES]
    argv += ["--remount-ro", "/", "--chdir", workdir]
    return argv


@functools.cache
def _bwrap() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise FileNotFoundError("bwrap")
    return path


@functools.cache
def _system_view() -> tuple[str, ...]:
    """The read-only binds of every sandbox: the interpreter, what it loads, the runtime."""
    binds: list[str] = []
    seen: set[str] = set()

    def bind(path: str) -> None:
        if path not in seen and os.path.exists(path):
            seen.add(path)
            binds.extend(["--ro-bind", path, path])

    # The system's shared libraries; top-level links (/lib -> usr/lib) kept as links.
    for path in ("/usr/lib", "/usr/lib64", "/usr/lib32"):
        bind(path)
    for path in ("/lib", "/lib64", "/lib32", "/libx32"):
        if os.path.islink(path):
            binds.extend(["--symlink", os.readlink(path), path])
        elif os.path.isdir(path):
            bind(path)
    bind("/etc/ld.so.cache")
    # The interpreter: every link from the venv's `python` to the real file.
    for kind, source, target in _link_chain(os.path.join(sys.prefix, "bin", "python")):
        if kind == "link":
            binds.extend(["--symlink", source, target])
        else:
            bind(target)
    stdlib = os.path.dirname(os.__file__)
    bind(stdlib)
    import sysconfig

    library = sysconfig.get_config_var("INSTSONAME")
    if sysconfig.get_config_var("Py_ENABLE_SHARED") and library:
        bind(os.path.join(str(sysconfig.get_config_var("LIBDIR")), str(library)))
    # The environment's packages (pydantic, pytest ...) and its marker file.
    if sys.prefix != sys.base_prefix:
        bind(os.path.join(sys.prefix, "pyvenv.cfg"))
        bind(os.path.join(sys.prefix, "lib"))
        bind(os.path.join(sys.prefix, "lib64"))
    # The book's runtime, which a submission may import; nothing else of the repository.
    import sovereign_agent

    bind(os.path.dirname(os.path.realpath(sovereign_agent.__file__)))
    return tuple(binds)


def _link_chain(path: str) -> list[tuple[str, str, str]]:
    """("link", target, path) for each link on the way to a file, then ("file", "", file)."""
    chain: list[tuple[str, str, str]] = []
    current = os.path.abspath(path)
    for _ in range(40):
        if not os.path.islink(current):
            chain.append(("file", "", current))
            return chain
        target = os.readlink(current)
        chain.append(("link", target, current))
        current = os.path.normpath(os.path.join(os.path.dirname(current), target))
    raise OSError(f"too many links from {path}")


@functools.cache
def bubblewrap_problem() -> str | None:
    """None when bubblewrap sandboxes work here; otherwise why not, in one line."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (Debian and Ubuntu: sudo apt-get install bubblewrap)"
    try:
        completed = subprocess.run(
            [
                *_bubblewrap(Launch("", {}, CHILD_PACKAGE), _WORKDIR),
                "--",
                sys.executable,
                "-I",
                "-c",
                "import pydantic, sovereign_agent",
            ],
            capture_output=True,
            env=dict(ENVIRONMENT),
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start a sandbox ({type(exc).__name__})"
    if completed.returncode != 0:
        reason = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        return "bubblewrap could not start a sandbox here" + (f": {reason[-1]}" if reason else "")
    return None


def describe(isolation: Isolation) -> str:
    """One line for the terminal and the reports' readers: what a submission could reach."""
    if isolation is Isolation.BUBBLEWRAP:
        return "bubblewrap sandbox: each submission sees only its own files"
    return "process only: submissions run as the grader's user and can read what it can read"
