"""The chapter worker: runs one chapter's listings in order, in one namespace.

Started by the verifier as a separate process (`python -c "...worker import main..."`),
it reads the chapter's listings, and a key, as one JSON document on stdin, and
answers one frame per listing on a private, close-on-exec copy of its original
stdout. File descriptor 1 is pointed at a capture file before each listing, so
what the chapter's code prints (through `print`, `sys.__stdout__`,
`os.write(1, ...)` or a child process) lands there and nowhere else.

The listings run in this very process, so what the worker reports is only as
sound as the listings let it be. It is built against accidents, not against a
listing written to deceive it (that listing is in the book for every reader to
see, and one that looks for the key in this process's memory finds it):

- every frame carries a keyed hash of its content, so bytes a listing writes
  by mistake to the channel (it can reach every descriptor the process holds)
  are seen by the verifier as a stray write, never read as a result;
- frames are encoded with `marshal`, written with `os.write` and hashed with
  `hashlib.blake2b`, all bound below before any listing runs, and the builtins
  this module uses are a copy taken at import: a listing that replaces
  `json.dumps`, `print`, `os.write` or `builtins.len` changes nothing here;
- a copy of the worker made by a listing's `os.fork()` never reports.

Only the standard library is imported here: this start-up cost is paid once
per chapter.
"""

from __future__ import annotations
import __future__

import builtins
import fcntl
import io
import os
import sys
from _ast import PyCF_ALLOW_TOP_LEVEL_AWAIT
from hashlib import blake2b
from marshal import dumps
from os import SEEK_SET, _exit, dup2, fstat, ftruncate, getpid, lseek, pread, write
from types import CodeType, ModuleType
from typing import Any, TextIO

# Functions look up builtins in the mapping their module held when they were
# defined, so every function below uses this copy, not the `builtins` module
# that a listing may change.
globals()["__builtins__"] = dict(vars(builtins))

__all__ = [
    "FRAME_HEADER_BYTES",
    "LISTING_NAME",
    "LISTING_VARIABLE",
    "MAC_BYTES",
    "MAX_CAPTURE_BYTES",
    "main",
]

_CO_COROUTINE = 0x0080  # inspect.CO_COROUTINE, stable since Python 3.5

# A listing printing more than this fails; the verifier never reads more.
MAX_CAPTURE_BYTES = 1_000_000
# No file the worker writes (the capture file included) may grow past this, so
# a listing that prints in an endless loop fails fast instead of filling memory.
MAX_FILE_BYTES = 128 * 1024 * 1024
# A frame: its payload's length (4 bytes, big-endian), the payload's keyed
# hash, then the payload.
MAC_BYTES = 32
FRAME_HEADER_BYTES = 4 + MAC_BYTES
# An exception's message and traceback are reported up to these sizes.
_MAX_MESSAGE_CHARS = 20_000
_KEPT_FRAMES = 100
# Each listing's index, in what the processes it starts inherit: the
# environment a program it starts gets, the process name a forked copy keeps.
LISTING_VARIABLE = "BOOKPROOF_LISTING"
LISTING_NAME = "listing"
# Exit statuses the verifier explains.
EXIT_OWN_DESCRIPTORS = 3  # a listing closed or replaced the worker's own descriptors

_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag

try:
    from time import CLOCK_BOOTTIME, clock_gettime

    def _boot_seconds() -> float:
        """Seconds since boot, the clock /proc uses for a process's start time."""
        return clock_gettime(CLOCK_BOOTTIME)

except ImportError:  # not Linux: no process is traced back to its listing

    def _boot_seconds() -> float:
        return 0.0


class _Channel:
    """The verifier's end of the conversation: keyed frames on a private descriptor."""

    def __init__(self, descriptor: int, key: bytes) -> None:
        self.descriptor = descriptor
        self.key = key
        self.pid = getpid()

    def send(self, message: dict[str, Any]) -> None:
        if getpid() != self.pid:
            # A listing forked and its child came back here: only the worker reports.
            _exit(0)
        payload = dumps(message)
        mac = blake2b(payload, key=self.key, digest_size=MAC_BYTES).digest()
        data = memoryview(len(payload).to_bytes(4, "big") + mac + payload)
        while data:
            data = data[write(self.descriptor, data) :]


def _frames(error: BaseException) -> list[dict[str, Any]]:
    """Where the exception passed: file, line and function of each frame, outermost first.

    Read from the traceback objects themselves, not through `traceback`,
    which a listing may have replaced. The verifier keeps the chapter's
    frames and the innermost one, and quotes their source lines itself.
    """
    frames: list[dict[str, Any]] = []
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append({"file": code.co_filename, "line": tb.tb_lineno, "name": code.co_name})
        tb = tb.tb_next
    if len(frames) > 2 * _KEPT_FRAMES:
        # Runaway recursion: its start and its end say what happened.
        hidden = {"hidden": len(frames) - 2 * _KEPT_FRAMES}
        frames = [*frames[:_KEPT_FRAMES], hidden, *frames[-_KEPT_FRAMES:]]
    return frames


def _text(value: object, fallback: str) -> str:
    """`str(value)`, which runs the listing's own code, or `fallback` when that fails."""
    try:
        text = str(value)
    except BaseException:
        return fallback
    return text if type(text) is str else fallback


def _describe(error: BaseException) -> dict[str, Any]:
    kind = type(error)
    name = _text(kind.__qualname__, "<unnamed>")
    module = _text(kind.__module__, "")
    shown = name if module in ("builtins", "__main__", "") else f"{module}.{name}"
    detail = _text(error, "<exception str() failed>")
    if len(detail) > _MAX_MESSAGE_CHARS:
        cut = len(detail) - _MAX_MESSAGE_CHARS
        detail = f"{detail[:_MAX_MESSAGE_CHARS]}... ({cut} more characters)"
    return {
        "type": _text(kind.__name__, "<unnamed>"),
        "message": f"{shown}: {detail}" if detail else shown,
        "frames": _frames(error),
    }


def _syntax_error(error: Exception, offset: int) -> dict[str, Any]:
    """A compile error on the chapter's own line numbers."""
    if not isinstance(error, SyntaxError):
        return {"type": type(error).__name__, "message": _text(error, ""), "line": None}
    line = error.lineno + offset if error.lineno is not None else None
    message = f"{type(error).__name__}: {error.msg} (line {line})"
    if error.text:
        message += "\n    " + error.text.strip()
    return {"type": type(error).__name__, "message": message, "line": line}


def _shifted(code: CodeType, offset: int) -> CodeType:
    """`code` and every code object inside it, moved down by `offset` lines.

    Line numbers in a code object count from its `co_firstlineno`, so moving
    that one number moves every line of it, tracebacks included.
    """
    constants = tuple(
        _shifted(constant, offset) if isinstance(constant, CodeType) else constant
        for constant in code.co_consts
    )
    return code.replace(co_firstlineno=code.co_firstlineno + offset, co_consts=constants)


class _Runner:
    """Holds the chapter's namespace and, when a listing awaits, its event loop."""

    def __init__(self, filename: str, stdout: TextIO) -> None:
        self.filename = filename
        # One stream for the whole chapter, as in a script: an object that a
        # listing keeps (a logging handler, say) keeps writing where it did.
        self.stdout = stdout
        self.future_flags = 0
        self.loop: Any = None
        module = ModuleType("__main__")
        module.__dict__["__builtins__"] = builtins
        # Classes defined by listings live in `__main__`, like in a notebook, so
        # that tools resolving `cls.__module__` (dataclasses, Pydantic, pickle)
        # find the chapter's namespace.
        sys.modules["__main__"] = module
        self.namespace = module.__dict__

    def compile(self, source: str | Any, first_line: int) -> CodeType:
        """The listing compiled on its real lines in the chapter file.

        Compiled as written, then moved down: padding the source with blank
        lines instead would make each listing cost as much as the chapter
        before it.
        """
        code = compile(
            source,
            self.filename,
            "exec",
            flags=PyCF_ALLOW_TOP_LEVEL_AWAIT | self.future_flags,
            dont_inherit=True,
        )
        # A `from __future__ import ...` in one listing holds for the rest of the
        # chapter, as it would in a notebook.
        self.future_flags |= code.co_flags & _FUTURE_FLAGS
        return _shifted(code, first_line - 1)

    def run(self, code: CodeType) -> None:
        if code.co_flags & _CO_COROUTINE:
            if self.loop is None:
                import asyncio

                # One loop for the whole chapter: objects bound to a loop in one
                # listing stay usable in the next.
                self.loop = asyncio.new_event_loop()
            self.loop.run_until_complete(eval(code, self.namespace))
        else:
            exec(code, self.namespace)


def _limit_file_size() -> None:
    import resource
    import signal

    # With SIGXFSZ ignored, a write past the limit raises OSError (EFBIG) in the
    # listing instead of killing the worker. subprocess restores the default
    # disposition in any child a listing starts. The hard limit too, so that
    # no listing can lift it.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    limit = MAX_FILE_BYTES if hard == resource.RLIM_INFINITY else min(hard, MAX_FILE_BYTES)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _capture_file() -> int:
    """An anonymous file, alive as long as the process, on a private high descriptor."""
    if hasattr(os, "memfd_create"):
        created = os.memfd_create("listing-stdout")
    else:
        import tempfile

        created = os.dup(tempfile.TemporaryFile().fileno())  # noqa: SIM115
    private = fcntl.fcntl(created, fcntl.F_DUPFD_CLOEXEC, 200)
    os.close(created)
    return private


def _stdout() -> TextIO:
    """A new text stream on fd 1, unbuffered as the verifier runs Python
    (PYTHONUNBUFFERED): for a listing that closed `sys.stdout`."""
    return io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", write_through=True)


def _flush_streams(*streams: Any) -> None:
    for stream in streams:
        try:
            if stream is not None:
                stream.flush()
        except BaseException:  # a listing may leave a closed or broken stream behind
            pass


def _tag_processes(index: int) -> None:
    """Name this listing in what the processes it starts inherit, so that the
    verifier can trace one left running back to it: the environment (for a
    program it starts) and the process name (for a copy it forks)."""
    os.environ[LISTING_VARIABLE] = str(index)
    try:
        with open("/proc/thread-self/comm", "w") as name:
            name.write(f"{LISTING_NAME} {index}")
    except OSError:
        pass  # not Linux: the verifier falls back on start times


def _run_block(runner: _Runner, block: dict[str, Any], capture: int) -> dict[str, Any]:
    """Run one listing with fd 1 on the capture file; what it did, as a result message."""
    # A listing may have closed fd 1 or pointed it elsewhere: every listing
    # starts with its output going to the capture file again.
    ftruncate(capture, 0)
    lseek(capture, 0, SEEK_SET)
    dup2(capture, 1)
    if runner.stdout.closed:
        runner.stdout = _stdout()
    sys.stdout = runner.stdout
    _tag_processes(block["index"])
    result: dict[str, Any] = {"event": "result", "index": block["index"]}
    result["started"] = _boot_seconds()
    offset = block["first_line"] - 1
    try:
        if "tree" in block:
            # A `changes=` listing made whole: its tree already has the chapter's lines.
            offset = 0
            code = runner.compile(block["tree"], 1)
        else:
            code = runner.compile(block["source"], block["first_line"])
    except Exception as error:  # SyntaxError mostly; ValueError, RecursionError too
        result["syntax_error"] = _syntax_error(error, offset)
    else:
        try:
            runner.run(code)
        except BaseException as error:  # SystemExit too is a listing's verdict
            result["exception"] = _describe(error)
    _flush_streams(sys.stdout, runner.stdout, sys.__stdout__)
    size = fstat(capture).st_size
    data = pread(capture, min(size, MAX_CAPTURE_BYTES), 0)
    result["stdout"] = data.decode("utf-8", errors="replace")
    result["stdout_bytes"] = size
    result["flooded"] = size >= MAX_FILE_BYTES
    return result


def main() -> None:
    _limit_file_size()
    import json  # read before any listing runs, so a patched `json` is no concern

    # A high, close-on-exec descriptor: child processes never inherit it, and
    # book code that writes to the low numbers it opened itself never hits it.
    descriptor = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 200)
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    channel = _Channel(descriptor, bytes.fromhex(job["key"]))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    capture = _capture_file()
    if sys.path and sys.path[0] in ("", os.getcwd()):
        # `-c` put the working directory first; book code sees the repository's
        # src/ (via PYTHONPATH), as a reader's script would, not the repo root.
        sys.path.pop(0)
    filename: str = job["filename"]
    sys.argv = [filename]
    runner = _Runner(filename, sys.stdout)
    if any("tree" in block for block in job["blocks"]):
        import pickle  # before any listing runs, like json above

        for block in job["blocks"]:
            if "tree" in block:
                block["tree"] = pickle.loads(bytes.fromhex(block["tree"]))
    # Its pid as it sees itself: in a sandbox, the verifier finds it by that.
    channel.send({"event": "ready", "pid": getpid()})
    for block in job["blocks"]:
        try:
            result = _run_block(runner, block, capture)
        except OSError:
            # The listing closed the capture file's private descriptor: the worker
            # cannot read what it printed, and says so with its exit status.
            _exit(EXIT_OWN_DESCRIPTORS)
        try:
            channel.send(result)
        except OSError:
            _exit(EXIT_OWN_DESCRIPTORS)
    channel.send({"event": "done"})
    _exit(0)  # no interpreter shutdown: atexit hooks of book code are not ours to run


if __name__ == "__main__":
    main()
