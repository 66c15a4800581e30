"""The runtime's sandbox, through its general API: a folder read-only, a bounded /tmp, no network,
no new process and, when asked, no exec. The grader's tests prove the same boundary with
submissions (tests/bookproof/test_grade_isolation.py and test_grade_hostile.py)."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest
from system_components import require_executable

from sovereign_agent.sandbox import Isolation, View, filter_program, seen_at, start, stop

_PROBE = """
import json, os, socket, sys
from sovereign_agent.sandbox import confine
confine({"memory_bytes": 512 * 1024 * 1024, "cpu_seconds": 20}, forbid_exec=True)
here = sys.argv[1]
seen = {"read": open(os.path.join(here, "data.txt")).read()}
try:
    open(os.path.join(here, "planted.txt"), "w").write("x")
    seen["write_shown"] = "written"
except OSError as exc:
    seen["write_shown"] = type(exc).__name__
with open(os.path.join(os.environ["TMPDIR"], "scratch.txt"), "w") as handle:
    seen["write_tmp"] = handle.write("ok")
try:
    socket.create_connection(("127.0.0.1", 9), timeout=2)
    seen["network"] = "connected"
except OSError as exc:
    seen["network"] = type(exc).__name__
try:
    os.fork()
    seen["fork"] = "forked"
except OSError as exc:
    seen["fork"] = exc.errno
try:
    os.execv("/bin/true", ["true"])
except OSError as exc:
    seen["exec"] = exc.errno
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
# A new user namespace (CLONE_NEWUSER), and io_uring_setup (425 on x86_64 and aarch64 alike).
seen["unshare"] = (libc.unshare(0x10000000), ctypes.get_errno())
seen["io_uring"] = (libc.syscall(425, 8, ctypes.create_string_buffer(120)), ctypes.get_errno())
print(json.dumps(seen))
"""


def _run(isolation: Isolation, folder: Path, scratch: Path) -> dict[str, object]:
    view = View({"/data": folder}, "/data")
    argv = [sys.executable, "-I", "-B", "-c", _PROBE, seen_at(isolation, view, "/data")]
    process = start(isolation, view, argv, scratch)
    try:
        out, err = process.communicate(timeout=60)
    finally:
        stop(process)
    assert process.returncode == 0, err.decode()
    seen: dict[str, object] = json.loads(out)
    return seen


def test_a_bubblewrap_sandbox_reads_its_folder_and_writes_only_its_tmp(tmp_path: Path) -> None:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "data.txt").write_text("secret-token-shown-on-purpose")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    seen = _run(Isolation.BUBBLEWRAP, folder, scratch)
    assert seen["read"] == "secret-token-shown-on-purpose"
    assert seen["write_shown"] == "OSError"  # EROFS: the folder is shown read-only
    assert seen["write_tmp"] == 2
    assert seen["network"] != "connected"
    assert seen["fork"] == 1  # EPERM from the filter
    assert seen["exec"] == 1
    # The kernel's least-needed doors stay shut for every sandboxed process: EPERM.
    assert seen["unshare"] == [-1, 1]
    assert seen["io_uring"] == [-1, 1]
    assert not (folder / "planted.txt").exists()


def test_the_filter_refuses_io_uring_and_namespaces_on_every_machine_it_knows() -> None:
    # Five refusals (io_uring_setup, _enter, _register, unshare, setns), two instructions each,
    # whether or not exec is refused too.
    for machine in ("x86_64", "aarch64"):
        program = filter_program(machine)
        assert program is not None
        for number in {"x86_64": (425, 426, 427, 272, 308), "aarch64": (425, 426, 427, 97, 268)}[
            machine
        ]:
            # BPF_JMP|BPF_JEQ|BPF_K on the number, then return ERRNO|EPERM.
            jump = struct.pack("HBBI", 0x15, 0, 1, number)
            refuse = struct.pack("HBBI", 0x06, 0, 0, 0x00050000 | 1)
            assert jump + refuse in program, (machine, number)


def test_the_filter_refuses_exec_only_when_asked() -> None:
    plain = filter_program("x86_64")
    strict = filter_program("x86_64", forbid_exec=True)
    assert plain is not None and strict is not None
    # Two more refusals (execve, execveat), two instructions each.
    assert len(strict) - len(plain) == 2 * 2 * 8
    assert filter_program("sparc") is None


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_every_filter_is_whole_instructions(machine: str) -> None:
    program = filter_program(machine, forbid_exec=True)
    assert program is not None and len(program) % 8 == 0
