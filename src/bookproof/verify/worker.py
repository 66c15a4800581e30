"""The chapter worker: runs one chapter's listings in order, in one namespace.

Started by the verifier as a separate process (`python -c "...worker import main..."`),
it reads the chapter's listings as one JSON document on stdin and answers one JSON
line per listing on a private copy of its original stdout. File descriptor 1 is
then pointed at a capture file, so nothing the chapter's code prints (through
`print`, `sys.__stdout__`, `os.write(1, ...)` or a child process) can reach or
corrupt the answers. Only the standard library is imported here: this start-up
cost is paid once per chapter.
"""

from __future__ import annotations
import __future__

import builtins
import fcntl
import json
import os
import sys
import time
import types

# From the C module rather than `ast` and `inspect`, whose imports cost more
# than the rest of the worker's start-up together.
from _ast import PyCF_ALLOW_TOP_LEVEL_AWAIT
from typing import Any

_CO_COROUTINE = 0x0080  # inspect.CO_COROUTINE, stable since Python 3.5

# Past this, printed output is cut: a runaway loop must not exhaust the verifier.
MAX_CAPTURE_BYTES = 1_000_000
# No file the worker writes (the capture file included) may grow past this, so
# a listing that prints in an endless loop fails fast instead of filling memory.
MAX_FILE_BYTES = 128 * 1024 * 1024
_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag


def _send(channel: int, message: dict[str, Any]) -> None:
    data = (json.dumps(message) + "\n").encode("utf-8")
    while data:
        written = os.write(channel, data)
        data = data[written:]


def _frames(error: BaseException, filename: str) -> list[dict[str, Any]]:
    """The traceback from the chapter's first frame on; library frames between are
    counted, not listed, except the innermost one, where the exception was raised."""
    import traceback

    summary = traceback.extract_tb(error.__traceback__)
    frames = list(summary)
    while frames and frames[0].filename != filename:
        frames.pop(0)
    kept: list[dict[str, Any]] = []
    hidden = 0
    for position, frame in enumerate(frames):
        innermost = position == len(frames) - 1
        if frame.filename == filename or innermost:
            if hidden:
                kept.append({"hidden": hidden})
                hidden = 0
            kept.append(
                {
                    "file": frame.filename,
                    "line": frame.lineno,
                    "name": frame.name,
                    "code": (frame.line or "").strip(),
                }
            )
        else:
            hidden += 1
    return kept


def _describe(error: BaseException, filename: str) -> dict[str, Any]:
    import traceback

    return {
        "type": type(error).__name__,
        "qualname": f"{type(error).__module__}.{type(error).__qualname__}",
        "message": "".join(traceback.format_exception_only(type(error), error)).rstrip(),
        "frames": _frames(error, filename),
    }


class _Runner:
    """Holds the chapter's namespace and, when a listing awaits, its event loop."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.future_flags = 0
        self.loop: Any = None
        module = types.ModuleType("__main__")
        module.__dict__["__builtins__"] = builtins
        # Classes defined by listings live in `__main__`, like in a notebook, so
        # that tools resolving `cls.__module__` (dataclasses, Pydantic, pickle)
        # find the chapter's namespace.
        sys.modules["__main__"] = module
        self.namespace = module.__dict__

    def compile(self, source: str, first_line: int) -> types.CodeType:
        # Padding with blank lines puts every statement, traceback frame and
        # syntax error on its real line in the chapter file.
        padded = "\n" * (first_line - 1) + source
        code = compile(
            padded,
            self.filename,
            "exec",
            flags=PyCF_ALLOW_TOP_LEVEL_AWAIT | self.future_flags,
            dont_inherit=True,
        )
        # A `from __future__ import ...` in one listing holds for the rest of the
        # chapter, as it would in a notebook.
        self.future_flags |= code.co_flags & _FUTURE_FLAGS
        return code

    def run(self, code: types.CodeType) -> None:
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
    # disposition in any child a listing starts.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    limit = MAX_FILE_BYTES if hard == resource.RLIM_INFINITY else min(hard, MAX_FILE_BYTES)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))


def main() -> None:
    _limit_file_size()
    # A high, close-on-exec descriptor: child processes never inherit it, and
    # book code that writes to the low numbers it opened itself never hits it.
    channel = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 200)
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    # An anonymous in-memory file, alive as long as the process: every
    # listing's output lands here in turn.
    if hasattr(os, "memfd_create"):
        capture = os.memfd_create("listing-stdout")
    else:
        import tempfile

        capture = os.dup(tempfile.TemporaryFile().fileno())  # noqa: SIM115
    os.dup2(capture, 1)
    os.close(capture)
    original_stdout = sys.stdout
    original_stdout.reconfigure(write_through=True)
    if sys.path and sys.path[0] in ("", os.getcwd()):
        # `-c` put the working directory first; book code sees the repository's
        # src/ (via PYTHONPATH), as a reader's script would, not the repo root.
        sys.path.pop(0)
    filename: str = job["filename"]
    sys.argv = [filename]
    runner = _Runner(filename)
    _send(channel, {"event": "ready"})

    for block in job["blocks"]:
        os.ftruncate(1, 0)
        os.lseek(1, 0, os.SEEK_SET)
        sys.stdout = original_stdout
        started = time.perf_counter()
        result: dict[str, Any] = {"event": "result", "index": block["index"]}
        try:
            code = runner.compile(block["source"], block["first_line"])
        except (SyntaxError, ValueError) as error:
            result["syntax_error"] = _describe(error, filename)
            if isinstance(error, SyntaxError):
                result["syntax_error"]["line"] = error.lineno
        else:
            try:
                runner.run(code)
            except BaseException as error:  # SystemExit too is a listing's verdict
                result["exception"] = _describe(error, filename)
        for stream in (sys.stdout, original_stdout, sys.__stdout__):
            try:
                if stream is not None:
                    stream.flush()
            except Exception:  # a listing may leave a closed stream behind
                pass
        size = os.fstat(1).st_size
        data = os.pread(1, min(size, MAX_CAPTURE_BYTES), 0)
        result["stdout"] = data.decode("utf-8", errors="replace")
        result["truncated"] = size > MAX_CAPTURE_BYTES
        result["flooded"] = size >= MAX_FILE_BYTES
        result["seconds"] = time.perf_counter() - started
        _send(channel, result)
    _send(channel, {"event": "done"})
    os._exit(0)  # no interpreter shutdown: atexit hooks of book code are not ours to run


if __name__ == "__main__":
    main()
