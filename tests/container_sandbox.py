"""A container like Gradescope's, made for a test: where the grader's own sandbox cannot be had.

What it reproduces of a Docker container with the default profile, which is
what Gradescope runs an autograder in:

- a fresh root: a tmpfs, with the system's programs and libraries and the
  interpreter bound read-only, /etc's user database, and the folders the test
  names (read-only or writable);
- the processes run as real root, with every capability but CAP_SYS_ADMIN
  (so root can switch to another user, but cannot mount anything);
- new user namespaces refused, as Docker's seccomp profile refuses them: a
  filter answers EPERM to `unshare` and `clone` with CLONE_NEWUSER, and
  ENOSYS to `clone3`; bubblewrap inside can then make no sandbox at all;
- a masked /proc (kernel files hidden behind /dev/null, /proc/sys read-only);
- its own PID, IPC, UTS and network namespaces: no network inside.

Only x86_64 has the filter's syscall numbers here; elsewhere the tests skip.
"""

from __future__ import annotations

import os
import platform
import struct
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from system_components import require_executable

__all__ = ["PYTHON_HOME", "container_argv", "run_in_container"]

# The interpreter's installation (the venv's python links into it).
PYTHON_HOME = Path(os.path.realpath(sys.executable)).parent.parent
_CLONE_NEWUSER = 0x10000000
# x86_64: unshare, clone, clone3; the audit id of the architecture.
_UNSHARE, _CLONE, _CLONE3 = 272, 56, 435
_AUDIT_X86_64 = 0xC000003E


def _bpf(code: int, true: int, false: int, k: int) -> bytes:
    return struct.pack("HBBI", code, true, false, k)


def no_user_namespaces_filter() -> bytes:
    """Classic BPF for seccomp: no new user namespace, whichever call asks for one."""
    load, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050001, 0x00050026
    return b"".join(
        [
            _bpf(load, 0, 0, 4),  # arch
            _bpf(jeq, 1, 0, _AUDIT_X86_64),
            _bpf(ret, 0, 0, allow),
            _bpf(load, 0, 0, 0),  # nr
            _bpf(jeq, 0, 1, _CLONE3),
            _bpf(ret, 0, 0, enosys),
            _bpf(jeq, 1, 0, _UNSHARE),
            _bpf(jeq, 0, 3, _CLONE),
            _bpf(load, 0, 0, 16),  # the flags, args[0]'s low word
            _bpf(jset, 0, 1, _CLONE_NEWUSER),
            _bpf(ret, 0, 0, eperm),
            _bpf(ret, 0, 0, allow),
        ]
    )


def container_argv(
    binds: Mapping[str, Path],
    read_only: Mapping[str, Path],
    seccomp_fd: int,
    *,
    python_for_all: bool = True,
) -> list[str]:
    """bwrap's arguments for the container; the command follows."""
    argv = [
        require_executable("bwrap", install="sudo apt-get install bubblewrap"),
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--cap-drop",
        "CAP_SYS_ADMIN",
        "--tmpfs",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        # Docker's masked paths: /proc/sys read-only, kernel files behind /dev/null.
        "--ro-bind",
        "/proc/sys",
        "/proc/sys",
        "--tmpfs",
        "/tmp",
        "--chmod",
        "1777",
        "/tmp",
    ]
    for name in ("kcore", "keys", "timer_list", "sched_debug"):
        if os.path.exists(f"/proc/{name}"):
            argv += ["--ro-bind", "/dev/null", f"/proc/{name}"]
    for path in ("/usr", "/etc/passwd", "/etc/group", "/etc/ld.so.cache", "/etc/alternatives"):
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    for path in ("/bin", "/sbin", "/lib", "/lib64", "/lib32"):
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
    argv += ["--ro-bind", str(PYTHON_HOME), str(PYTHON_HOME)]
    if python_for_all:
        # As an image's Python is installed (/usr, /opt): every user may reach it.
        # Here it lives under /root, whose folders the container makes 0700.
        for parent in reversed(PYTHON_HOME.parents[:-1]):
            argv += ["--chmod", "0755", str(parent)]
    for inside, outside in read_only.items():
        argv += ["--ro-bind", str(outside), inside]
    for inside, outside in binds.items():
        argv += ["--bind", str(outside), inside]
    argv += ["--seccomp", str(seccomp_fd), "--chdir", "/"]
    return argv


def run_in_container(
    command: Sequence[str],
    *,
    binds: Mapping[str, Path],
    read_only: Mapping[str, Path] | None = None,
    env: Mapping[str, str],
    timeout: float,
    python_for_all: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run `command` in a fresh container; skip where this test's container cannot be made."""
    if platform.machine() != "x86_64" or os.geteuid() != 0:
        pytest.skip("the container-like sandbox needs root on x86_64")
    program = no_user_namespaces_filter()
    with tempfile.TemporaryFile() as handle:
        handle.write(program)
        handle.flush()
        handle.seek(0)
        fd = handle.fileno()
        argv = container_argv(binds, read_only or {}, fd, python_for_all=python_for_all)
        return subprocess.run(
            [*argv, "--", *command],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", **env},
            timeout=timeout,
            pass_fds=(fd,),
            check=False,
        )
