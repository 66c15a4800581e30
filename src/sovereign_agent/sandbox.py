"""Support the book does not print: running Python the caller does not trust, sandboxed or limited.

The boundary has two halves, both here because each is useless alone:

- the parent's (`start`, `stop`): which folders the process sees (each
  read-only), its one writable place (a size-bounded /tmp, or a scratch
  folder), its environment, and whether it has a network;
- the process's own (`confine`), its first act: rlimits (memory, file size,
  CPU seconds, open files) and a seccomp filter that refuses new processes,
  io_uring and new namespaces and, when asked, `exec`. What it sets there
  cannot be undone later: a lowered hard rlimit cannot be raised without
  privileges, and a seccomp filter can never be removed.

Two isolation modes, chosen by the caller:

- `bubblewrap`: the process runs in its own user, mount, PID, network, IPC
  and UTS namespaces. Its filesystem holds the interpreter and the libraries
  it loads, the runtime `sovereign_agent`, and the folders the caller names,
  all read-only; its only writable place is a size-bounded /tmp that
  disappears with it. No network unless asked; it cannot see, signal or
  outlive any process outside (`--die-with-parent`; killing the sandbox kills
  its whole PID namespace).
- `process`: the same command, environment and limits, in the caller's
  world, at the folders' real paths. Started by root, the process runs as an
  unprivileged user (`View.user`, by default `nobody`), switched to in the
  child before `exec`: it can read only what that user can read and write
  only what that user can write. Started by anyone else, it runs as the
  caller's user and can read and write what the caller can. It has the
  machine's network either way: only a namespace could take it away.

Standard library only, like the rest of the runtime's boundaries.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import platform
import resource
import secrets
import shutil
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

__all__ = [
    "ENVIRONMENT",
    "NOBODY",
    "Isolation",
    "SandboxStopping",
    "View",
    "apply_limits",
    "bubblewrap_problem",
    "confine",
    "drops_privileges",
    "exited",
    "filter_program",
    "forbid_new_processes",
    "seen_at",
    "start",
    "stop",
    "stop_everything",
]

# The whole environment of a sandboxed process unless the caller adds to it.
ENVIRONMENT: Mapping[str, str] = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
}
# The conventional unprivileged identity: owns nothing, belongs to no group.
NOBODY = 65534


class Isolation(StrEnum):
    BUBBLEWRAP = "bubblewrap"
    PROCESS = "process"


@dataclass(frozen=True)
class View:
    """What one sandboxed process sees, and as whom it runs.

    `read_only` maps where a folder appears inside a bubblewrap sandbox (an
    absolute path) to the folder outside; in process mode the process finds
    each at its real path (`seen_at`). `workdir` is one of those inside paths:
    where the process starts. `tmp_bytes` bounds the sandbox's /tmp. `user` is
    the uid (and gid) a process started by root runs as in process mode; None
    keeps the caller's, for a process that runs none of the untrusted code.
    `proc` False gives a bubblewrap sandbox no /proc at all: nothing to list,
    and a sandbox that can start inside another one, whose /proc the kernel
    will not let it mount again.
    """

    read_only: Mapping[str, Path]
    workdir: str
    tmp_bytes: int = 64 * 1024 * 1024
    network: bool = False
    environment: Mapping[str, str] = field(default_factory=lambda: dict(ENVIRONMENT))
    user: int | None = NOBODY
    proc: bool = True


def seen_at(isolation: Isolation, view: View, inside: str) -> str:
    """Where the process started with `view` finds the folder shown at `inside`."""
    if isolation is Isolation.BUBBLEWRAP:
        return inside
    return str(view.read_only[inside])


def drops_privileges(isolation: Isolation, view: View) -> bool:
    """Whether `start` will switch the process to `view.user` (process mode, started by root)."""
    return isolation is Isolation.PROCESS and view.user is not None and os.geteuid() == 0


class SandboxStopping(RuntimeError):
    """The caller is shutting down (interrupted): no new process may start."""


# Every process started and not yet stopped, so that an interrupted caller
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


def start(
    isolation: Isolation,
    view: View,
    argv: Sequence[str],
    scratch: Path,
    *,
    fds: tuple[int, ...] = (),
) -> subprocess.Popen[bytes]:
    """Start `argv` with three pipes (stdin, stdout, stderr) in its own session.

    `scratch` is an empty folder of the caller's, removed by the caller after
    `stop`: in process mode, the process's home and TMPDIR.
    """
    if isolation is Isolation.BUBBLEWRAP:
        full = [*_bubblewrap(view), "--", *argv]
        env = dict(view.environment)
        cwd = "/"
        user: int | None = None
    else:
        # A name no other process of the same user can guess: the scratch
        # folder can be traversed but not listed.
        home = scratch / f"home-{secrets.token_hex(8)}"
        home.mkdir(mode=0o700)
        user = None
        if drops_privileges(isolation, view):
            user = view.user
            assert user is not None
            # The user must reach its home through the scratch folder, and
            # find nothing else there: traverse, never list.
            os.chmod(scratch, 0o711)
            os.chown(home, user, user)
        full = list(argv)
        env = {**view.environment, "HOME": str(home), "TMPDIR": str(home)}
        cwd = str(view.read_only[view.workdir])
    with _LIVE_LOCK:
        if _STOPPING.is_set():
            raise SandboxStopping("stopping: no new sandboxed process")
        process = subprocess.Popen(
            full,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            close_fds=True,
            pass_fds=fds,
            start_new_session=True,
            # Switched to in the child before exec: the untrusted code never
            # runs with the caller's identity or its supplementary groups.
            user=user,
            group=user,
            extra_groups=[] if user is not None else None,
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


# --- bubblewrap ------------------------------------------------------------------


def _bubblewrap(view: View) -> list[str]:
    argv = [
        _bwrap(),
        "--unshare-all",
        "--unshare-user",
        "--uid",
        str(NOBODY),
        "--gid",
        str(NOBODY),
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]
    if view.network:
        argv.append("--share-net")
    for name, value in view.environment.items():
        argv += ["--setenv", name, value]
    argv += ["--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp"]
    # The scratch /tmp first: a bind below /tmp (a project checked out there)
    # must land on top of it, not be hidden by it.
    argv += ["--size", str(view.tmp_bytes), "--tmpfs", "/tmp"]
    if view.proc:
        argv += ["--proc", "/proc"]
    argv += ["--dev", "/dev", "--remount-ro", "/dev"]
    argv += _system_view()
    for inside, outside in view.read_only.items():
        argv += ["--ro-bind", str(outside), inside]
    argv += ["--remount-ro", "/", "--chdir", view.workdir]
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
    # The runtime, which a sandboxed program may import; nothing else of the project.
    bind(os.path.dirname(os.path.realpath(__file__)))
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
def bubblewrap_problem(*, proc: bool = True) -> str | None:
    """None when bubblewrap sandboxes (with or without a /proc) work here; otherwise why not."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (Debian and Ubuntu: sudo apt-get install bubblewrap)"
    here = os.path.dirname(os.path.realpath(__file__))
    try:
        completed = subprocess.run(
            [
                *_bubblewrap(View({"/probe": Path(here)}, "/probe", proc=proc)),
                "--",
                sys.executable,
                "-I",
                "-c",
                "import sovereign_agent.sandbox",
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


# --- the process's own side: rlimits and the seccomp filter ------------------------

# Which rlimit each key of a limits mapping sets.
LIMIT_KINDS: Mapping[str, int] = {
    "memory_bytes": resource.RLIMIT_AS,
    "file_bytes": resource.RLIMIT_FSIZE,
    "cpu_seconds": resource.RLIMIT_CPU,
    "open_files": resource.RLIMIT_NOFILE,
}


def apply_limits(limits: Mapping[str, int]) -> None:
    """Set each limit given (soft and hard, never above a hard limit in force); no core dumps."""
    for key, kind in LIMIT_KINDS.items():
        if key in limits:
            value = limits[key]
            _, hard = resource.getrlimit(kind)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(kind, (value, value))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# Classic BPF, as the kernel's seccomp reads it (linux/filter.h, linux/seccomp.h).
_LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JUMP_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JUMP_ANY_BIT = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_KILL = 0x80000000  # SECCOMP_RET_KILL_PROCESS
_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000
_X32_BIT = 0x40000000
# Offsets in struct seccomp_data: nr, arch, then args[0] at 16 (low word, little-endian).
_NR, _ARCH, _FIRST_ARGUMENT = 0, 4, 16


@dataclass(frozen=True)
class _Table:
    audit_arch: int
    process_only: tuple[int, ...]  # syscalls that only ever make a process (fork, vfork)
    clone: int
    clone3: int
    execs: tuple[int, ...]  # execve, execveat
    # io_uring_setup, io_uring_enter, io_uring_register, unshare, setns: doors
    # into the kernel no sandboxed program needs, io_uring being where many
    # of its recent privilege-escalation bugs were found, and a new user
    # namespace being where a program would find capabilities again.
    kernel_doors: tuple[int, ...]


_ARCHITECTURES = {
    "x86_64": _Table(0xC000003E, (57, 58), 56, 435, (59, 322), (425, 426, 427, 272, 308)),
    "aarch64": _Table(0xC00000B7, (), 220, 435, (221, 281), (425, 426, 427, 97, 268)),
}

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def _instruction(code: int, true: int, false: int, k: int) -> bytes:
    return struct.pack("HBBI", code, true, false, k)


def filter_program(machine: str, *, forbid_exec: bool = False) -> bytes | None:
    """The BPF program for this machine, or None where we have no syscall table for it.

    It refuses `fork`, `vfork` and any `clone` that is not a thread (`clone3`
    reports itself missing, so the C library falls back to `clone`, whose
    flags the filter can read); with `forbid_exec`, `execve` and `execveat`
    too. It refuses io_uring and new namespaces (`unshare`, `setns`) always:
    a new user namespace would hand the program a full set of capabilities
    inside it, and io_uring is the kernel's most bug-prone door.
    Threads stay allowed: they live and die with the process.
    """
    table = _ARCHITECTURES.get(machine)
    if table is None:
        return None
    program = [
        # Another ABI on the same kernel has other syscall numbers: end it.
        _instruction(_LOAD_WORD, 0, 0, _ARCH),
        _instruction(_JUMP_EQUAL, 1, 0, table.audit_arch),
        _instruction(_RETURN, 0, 0, _KILL),
        _instruction(_LOAD_WORD, 0, 0, _NR),
    ]
    if machine == "x86_64":
        # The x32 ABI shares the architecture id; its numbers carry this bit.
        program += [
            _instruction(_JUMP_AT_LEAST, 0, 1, _X32_BIT),
            _instruction(_RETURN, 0, 0, _ERRNO | _ENOSYS),
        ]
    program += [
        _instruction(_JUMP_EQUAL, 0, 1, table.clone3),
        _instruction(_RETURN, 0, 0, _ERRNO | _ENOSYS),
    ]
    refused = table.process_only + table.kernel_doors + (table.execs if forbid_exec else ())
    for number in refused:
        program += [
            _instruction(_JUMP_EQUAL, 0, 1, number),
            _instruction(_RETURN, 0, 0, _ERRNO | _EPERM),
        ]
    program += [
        _instruction(_JUMP_EQUAL, 0, 3, table.clone),
        _instruction(_LOAD_WORD, 0, 0, _FIRST_ARGUMENT),
        _instruction(_JUMP_ANY_BIT, 1, 0, _CLONE_THREAD),
        _instruction(_RETURN, 0, 0, _ERRNO | _EPERM),
        _instruction(_RETURN, 0, 0, _ALLOW),
    ]
    return b"".join(program)


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def forbid_new_processes(*, forbid_exec: bool = False) -> bool:
    """Install the filter on this process; False where the platform offers no way to."""
    program = filter_program(platform.machine(), forbid_exec=forbid_exec)
    if program is None or platform.system() != "Linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    # No new privileges first: the kernel requires it of an unprivileged filter.
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return bool(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0)


def confine(
    limits: Mapping[str, int], *, forbid_processes: bool = True, forbid_exec: bool = False
) -> bool:
    """The process's first act: its limits, then (unless told not to) the filter.

    True when everything asked for holds; False when the filter could not be
    installed here (the limits hold either way), for the caller to decide
    whether to go on without it.
    """
    apply_limits(limits)
    if not forbid_processes:
        return True
    return forbid_new_processes(forbid_exec=forbid_exec)
