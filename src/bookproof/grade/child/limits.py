"""Limits a sandboxed process sets on itself, as its first act, before any learner code runs.

That moment is the only one at which all of the process is still the
grader's code, and what is set here cannot be undone later: a lowered hard
rlimit cannot be raised again without privileges, and a seccomp filter can
never be removed. Everything the process does afterwards inherits both.

- rlimits: address space, file size, CPU seconds, open files; no core dumps.
- no new processes: a seccomp filter refuses `fork`, `vfork` and any `clone`
  that is not a thread (`clone3` reports itself missing, so the C library falls
  back to `clone`, which the filter can read). Threads stay allowed: they live
  and die with the process. One process is the whole process limit.

The operating-system sandbox adds what a process cannot do for itself
(namespaces, a bounded /tmp, a fixed environment).
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import struct
from collections.abc import Mapping

__all__ = ["KINDS", "READY", "apply", "forbid_new_processes", "start_up"]

# The first bytes every sandboxed process of the grader's writes on its
# stdout, once its limits hold: no learner code can run before them, so a
# process that ends without them never started, which is the machine's
# fault (bubblewrap refused, the interpreter failed), never a learner's.
READY = b"gradechild: limits set\n"

# Which rlimit each key of the limits mapping sets.
KINDS: Mapping[str, int] = {
    "memory_bytes": resource.RLIMIT_AS,
    "file_bytes": resource.RLIMIT_FSIZE,
    "cpu_seconds": resource.RLIMIT_CPU,
    "open_files": resource.RLIMIT_NOFILE,
}


def apply(limits: Mapping[str, int]) -> None:
    """Set each limit given (soft and hard, never above a hard limit in force); no core dumps."""
    for key, kind in KINDS.items():
        if key in limits:
            value = limits[key]
            _, hard = resource.getrlimit(kind)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(kind, (value, value))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# --- the seccomp filter ----------------------------------------------------------

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

# Per architecture: its audit id, the syscalls that only ever make a process,
# and the number of clone and clone3.
_ARCHITECTURES = {
    "x86_64": (0xC000003E, (57, 58), 56, 435),  # fork, vfork; clone; clone3
    "aarch64": (0xC00000B7, (), 220, 435),
}

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def _instruction(code: int, true: int, false: int, k: int) -> bytes:
    return struct.pack("HBBI", code, true, false, k)


def filter_program(machine: str) -> bytes | None:
    """The BPF program for this machine, or None where we have no syscall table for it."""
    if machine not in _ARCHITECTURES:
        return None
    audit_arch, process_only, clone, clone3 = _ARCHITECTURES[machine]
    program = [
        # Another ABI on the same kernel has other syscall numbers: end it.
        _instruction(_LOAD_WORD, 0, 0, _ARCH),
        _instruction(_JUMP_EQUAL, 1, 0, audit_arch),
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
        _instruction(_JUMP_EQUAL, 0, 1, clone3),
        _instruction(_RETURN, 0, 0, _ERRNO | _ENOSYS),
    ]
    for number in process_only:
        program += [
            _instruction(_JUMP_EQUAL, 0, 1, number),
            _instruction(_RETURN, 0, 0, _ERRNO | _EPERM),
        ]
    program += [
        _instruction(_JUMP_EQUAL, 0, 3, clone),
        _instruction(_LOAD_WORD, 0, 0, _FIRST_ARGUMENT),
        _instruction(_JUMP_ANY_BIT, 1, 0, _CLONE_THREAD),
        _instruction(_RETURN, 0, 0, _ERRNO | _EPERM),
        _instruction(_RETURN, 0, 0, _ALLOW),
    ]
    return b"".join(program)


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def forbid_new_processes() -> bool:
    """Install the filter on this process; False where the platform offers no way to."""
    program = filter_program(platform.machine())
    if program is None or platform.system() != "Linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    # No new privileges first: the kernel requires it of an unprivileged filter.
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return bool(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0)


def start_up(
    limits: Mapping[str, int], *, require_filter: bool, forbid_processes: bool = True
) -> None:
    """Limits, the process filter, then the ready line; exit at once if the filter is required
    and cannot be installed (the parent then sees a process that never started).

    Only the oracle, which runs no learner code and forks one server per
    run, starts without the filter; each server installs it for itself.
    """
    apply(limits)
    if forbid_processes and not forbid_new_processes() and require_filter:
        os._exit(1)
    os.write(1, READY)
