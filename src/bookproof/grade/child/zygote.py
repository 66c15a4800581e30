"""A warm start for learners' test runs: one interpreter for many runs, a fresh world per run.

Starting an interpreter and importing pytest (and Hypothesis) costs more than
most learners' tests take to run, nine times a test file. The zygote pays it
once for a batch's worker: in one bubblewrap sandbox, it imports pytest,
Hypothesis when the grader asks (it keeps a zygote for folders that name it
and one for those that do not), and this package (never a learner's code),
then forks one process per run the grader sends it, of any test file of any
submission. Its sandbox shows, read-only at the run's working folder, a
folder holding a copy of each folder it serves under a name of the
grader's (a random token); a run is told its folder's name, and sees that
folder alone.

The runs must still share nothing (exercises/GRADING.md): a test that could
tell the first run from the next could record how the reference behaved and
flag any difference. So before a run touches learner code, its fork makes a
world of its own, as bubblewrap would:

- new user, mount, IPC, network, PID and UTS namespaces (`unshare`), the
  user mapped to itself, so that nothing it creates (a SysV segment, an
  abstract socket, a process) is seen by the next run;
- its own folder bound over the folder of every served folder, so that the
  others are hidden beneath it (a run keeps no capability to lift a mount);
- in the PID namespace a small init (PID 1, the grader's code) that waits
  for the run (PID 2): when the run ends, the kernel ends everything left in
  its namespace;
- a fresh size-bounded tmpfs on /tmp (its HOME and TMPDIR), and an empty
  read-only tmpfs over /proc: the sandbox's /proc shows the zygote and the
  process numbers that grow with each run, and a new /proc cannot be mounted
  under bubblewrap's;
- every capability dropped, then the run's own limits and seccomp filter
  (`limits.start_up`: no new process, no new namespace), a fresh seed for
  `random`, and only its own three descriptors (the pipes the grader reads
  and the socket to the code under test), always at the same numbers.

The run's folder is a bind of the sandbox's read-only mount, which the new mount
namespace cannot make writable (the kernel locks a mount's read-only flag
for a namespace owned by a less privileged user). The zygote itself is
non-dumpable, so no run may trace it or open its memory even where it could
name it; of the runs it served, its memory holds what the grader sent it (a
test file's name, a folder's name, a path for the tests' folders), never a
verdict or which version a run was against (that goes to the oracle). What
stays common to the runs of one zygote is what it held before its first
run, the same in each: the modules it imported (frozen out of the garbage
collector's walks, `gc.freeze`, so that pytest's collections in a run walk
only the run's own objects), and what an interpreter fixes at start, the
hash seed of `str` and `bytes` (set and dict order of strings is the same
in every run it forks, where separate interpreters would each draw one).

`probe` performs the same isolation once and exits 0: the grader's test of
whether this kernel allows namespaces inside its sandbox.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import json
import os
import random
import re
import socket
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from .limits import READY, start_up

__all__ = ["main", "probe"]

# linux/sched.h
_NEWNS, _NEWUTS, _NEWIPC = 0x00020000, 0x04000000, 0x08000000
_NEWUSER, _NEWPID, _NEWNET = 0x10000000, 0x20000000, 0x40000000
_NAMESPACES = _NEWUSER | _NEWNS | _NEWIPC | _NEWNET | _NEWPID | _NEWUTS
# linux/mount.h
_RDONLY, _NOSUID, _NODEV, _NOEXEC = 1, 2, 4, 8
_BIND, _REC, _PRIVATE = 4096, 16384, 1 << 18
_PR_SET_DUMPABLE = 4
_CAPABILITY_VERSION_3 = 0x20080522
# The descriptors a run holds: its pipes, then its socket to the code under test.
CHANNEL = 3
# Bounds what a message from the grader may be; a run's config is a few hundred bytes.
_MESSAGE_BYTES = 65536
# Modules every pytest.main imports when none has yet (seen in a run's
# sys.modules), imported by the zygote instead of nine times a file.
_IMPORTED_BY_EACH_RUN = ("pdb", "readline", "_pytest._argcomplete", "faulthandler")
# A folder's name below the zygote's workdir, as the grader makes it (a token).
_FOLDER_NAME = re.compile(r"[0-9a-f]{32}")
# The status a run's init reports when the run could not be set up (never pytest's).
_SETUP_FAILED = 125

_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _mount(source: str, target: str, kind: str | None, flags: int, data: str | None) -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            None if kind is None else kind.encode(),
            flags,
            None if data is None else data.encode(),
        ),
        f"mount {target}",
    )


def _drop_capabilities() -> None:
    """Empty every capability set: the run keeps none of what its new user namespace gave."""
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def _setup_failed(exc: BaseException) -> NoReturn:
    """A run that could not be isolated says why on its stderr (the grader's to read), and ends."""
    with contextlib.suppress(OSError):
        os.write(2, f"gradechild: the run could not be isolated: {exc!r}\n".encode())
    os._exit(_SETUP_FAILED)


def _exit_code(status: int) -> int:
    """A wait status as one byte, the way a shell reports it (128 + signal for a killed run)."""
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def _enter_namespaces() -> None:
    """This process into new namespaces, its user mapped to itself (so files keep their owner)."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(_NAMESPACES), "unshare")
    # An unprivileged map must refuse setgroups first.
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
            handle.write(text)


def _mounts_below(top: str) -> list[str]:
    """The mount points strictly below `top`, outermost first (from this process's mountinfo)."""
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            # The fifth field, with spaces and the like escaped as octal (\\040).
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point.startswith(top + "/"):
                points.append(point)
    return sorted(set(points), key=lambda point: point.count("/"))


def _fresh_tmp(tmp_bytes: int) -> None:
    """A new, empty, size-bounded /tmp, with what the sandbox showed below /tmp shown again.

    The sandbox binds some folders below /tmp (the interpreter's environment,
    when the project lives there) and makes links there; they are the
    system's, read-only, and must stay. Everything else of the sandbox's /tmp
    is hidden under the new one. The old tree is reached through a
    descriptor opened before it was covered.
    """
    points = _mounts_below("/tmp")
    outermost = [p for p in points if not any(p.startswith(q + "/") for q in points)]
    old = os.open("/tmp", os.O_PATH | os.O_DIRECTORY)
    held = {point: os.open(point, os.O_PATH) for point in outermost}
    _mount("tmpfs", "/tmp", "tmpfs", _NOSUID | _NODEV, f"size={tmp_bytes},mode=1777")
    root = f"/proc/self/fd/{old}"
    for folder, folders, files in os.walk(root):
        inside = "/tmp" + folder[len(root) :]
        for name in [*folders, *files]:
            path, there = os.path.join(inside, name), os.path.join(folder, name)
            if path in held:
                if os.path.isdir(there):
                    os.mkdir(path)
                else:
                    open(path, "x").close()
            elif os.path.islink(there):
                os.symlink(os.readlink(there), path)
            elif os.path.isdir(there):
                os.mkdir(path)
        # Never into a mount: it is bound whole below, with what it holds.
        folders[:] = [f for f in folders if os.path.join(inside, f) not in held]
    for point, fd in held.items():
        # A bind keeps the mount's read-only flag, which this namespace cannot lift.
        _mount(f"/proc/self/fd/{fd}", point, None, _BIND | _REC, None)
        os.close(fd)
    os.close(old)


def _show_only(workdir: str, folder: str) -> None:
    """Show the run's own folder at `workdir`, over the folder of every submission's folders.

    The sandbox shows all the folders the zygote serves below `workdir`; the
    run's is bound over that whole folder, so the others are hidden beneath
    it, and no run can lift a mount (it keeps no capability). The bind keeps
    the sandbox's read-only flag, which this namespace cannot lift either.
    """
    if not _FOLDER_NAME.fullmatch(folder):
        raise ValueError(f"not a folder name of the grader's: {folder!r}")
    _mount(f"{workdir}/{folder}", workdir, None, _BIND | _REC, None)
    # The zygote's working folder was the one below: a run must not keep it.
    os.chdir(workdir)


def _make_world(tmp_bytes: int, workdir: str | None, folder: str | None) -> None:
    """In the new mount namespace: nothing propagates out, the run's own folder only,
    a fresh /tmp, /proc hidden."""
    _mount("none", "/", None, _REC | _PRIVATE, None)
    if workdir is not None and folder is not None:
        _show_only(workdir, folder)
    _fresh_tmp(tmp_bytes)
    # Last: /proc is read above, through the sandbox's own.
    _mount("tmpfs", "/proc", "tmpfs", _RDONLY | _NOSUID | _NODEV | _NOEXEC, "size=4k,mode=555")


def _isolated(
    body: Callable[[], object],
    tmp_bytes: int,
    workdir: str | None = None,
    folder: str | None = None,
) -> None:
    """Fork, isolate, fork again; `body` runs as PID 2 of its namespace. Exits with its status.

    `folder`: the name below `workdir` of the folder the run sees at
    `workdir`. Called in a fresh fork of the zygote; never returns.
    """
    try:
        _enter_namespaces()
        init = os.fork()
    except BaseException as exc:
        _setup_failed(exc)
    if init != 0:
        # Still in the zygote's PID namespace: hand the zygote the run's status.
        _, status = os.waitpid(init, 0)
        os._exit(_exit_code(status))
    # PID 1 of the new namespace: when it exits, every process left in it is killed.
    try:
        _make_world(int(tmp_bytes), workdir, folder)
        run = os.fork()
    except BaseException as exc:
        _setup_failed(exc)
    if run != 0:
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == run:
                os._exit(_exit_code(status))
    try:
        _drop_capabilities()
        # A fork shares the zygote's random state; a fresh interpreter draws its own.
        random.seed()
        gc.collect()
        body()
    except BaseException as exc:
        _setup_failed(exc)
    os._exit(0)


def _descriptors(channel: int, out: int, err: int) -> None:
    """The run's descriptors at fixed numbers, and no other: nothing of the zygote's crosses."""
    # Moved above every number first, so that no dup2 below overwrites one not yet moved.
    high = [os.dup(fd) for fd in (out, err, channel)]  # as the grader sends them: socket, pipes
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    for fd, number in zip(high, (1, 2, CHANNEL), strict=True):
        os.dup2(fd, number)
    os.closerange(CHANNEL + 1, os.sysconf("SC_OPEN_MAX"))


def _warm(with_hypothesis: bool) -> None:
    """Import what every run needs, so that a run only collects and runs the learner's tests.

    Hypothesis only in a zygote that serves folders naming it (the grader
    keeps one of each kind), as a run of its own would: a run's
    address-space limit counts what the zygote loaded.
    """
    import importlib

    import pytest
    from _pytest.config import default_plugins

    # pytest's plugins, and what every pytest.main imports on its way
    # (its debugger and the debugger's line editing, its shell completion).
    for name in (*(f"_pytest.{plugin}" for plugin in default_plugins), *_IMPORTED_BY_EACH_RUN):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    if with_hypothesis:
        with contextlib.suppress(ImportError):
            # Its state machines too: a module of its own, which book 6's tests use.
            import hypothesis.stateful  # noqa: F401
    from . import stand_in, test_run  # noqa: F401

    del pytest


def main() -> None:
    """Serve runs until the grader closes the control socket; one message is one run."""
    config = json.loads(sys.argv[1])
    # Before anything else: no process of this sandbox may trace the zygote.
    _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl")
    # The zygote must fork and unshare; each run installs the filter for itself.
    start_up(config["limits"], require_filter=False, forbid_processes=False)
    _warm(bool(config["hypothesis"]))
    # What the zygote holds now lives as long as it does: frozen, so that no
    # collection in a run walks it again (pytest collects several times per
    # run). The same in every run, as everything the zygote holds.
    gc.collect()
    gc.freeze()
    control = socket.socket(fileno=config["control"])
    while True:
        message, fds, _, _ = socket.recv_fds(control, _MESSAGE_BYTES, 3)
        if not message:
            os._exit(0)
        if len(fds) != 3:
            os._exit(2)  # not the grader's message: end, and the grader sees why
        run = json.loads(message)
        pid = os.fork()
        if pid == 0:
            control.close()
            _descriptors(*fds)
            _isolated(
                functools.partial(_run, run["config"], config["workdir"]),
                config["tmp_bytes"],
                config["workdir"],
                str(run["folder"]),
            )
        for fd in fds:
            os.close(fd)
        _, status = os.waitpid(pid, 0)
        control.sendall(f"{_exit_code(status)}\n".encode("ascii"))


def _run(config: dict[str, Any], workdir: str) -> None:
    from .test_run import run

    run({**config, "channel": CHANNEL, "workdir": workdir})


def probe() -> None:
    """Exit 0 when a run could be isolated here, 1 when the kernel refused (said on stderr)."""
    pid = os.fork()
    if pid == 0:
        _isolated(lambda: os.write(1, READY), 1024 * 1024)
    _, status = os.waitpid(pid, 0)
    os._exit(0 if os.waitstatus_to_exitcode(status) == 0 else 1)
