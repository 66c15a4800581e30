"""The parent side of one harness child: start it, ask it questions, read answers it cannot forge.

The grader writes one question at a time to the child's question pipe and
waits for one line on its answer pipe, while draining (and counting, never
showing) what the child prints. It stops waiting at the question's deadline,
when the child prints past the output limit, or when the child dies; the
check that was asking is charged with what happened (`ChildGone`), and the
caller starts a fresh child for the checks after it.

An answer is one line of strict JSON in one of a handful of shapes; anything
else means something other than the grader's harness wrote to the pipe, and
the child is ended. Nothing the child says is ever shown to anyone: answers
become verdicts the book's checks write, and stderr is read only to tell an
out-of-memory death from another crash.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Any, Literal

from bookproof.grade.child.encoding import FrameError, decode_json, make_encoder
from bookproof.grade.child.harness import EXCEPTION_NAMES
from bookproof.grade.child.limits import READY
from bookproof.grade.questions import Answer
from bookproof.grade.sandbox import Isolation, IsolationFailed, Launch, Limits, start, stop

__all__ = [
    "ANSWER_LIMIT",
    "OUTCOMES",
    "ChildGone",
    "IsolationFailed",
    "Outcome",
    "Session",
    "exception_name",
]

Outcome = Literal["passed", "failed", "locked", "error", "timeout", "out of memory", "crashed"]
OUTCOMES: tuple[Outcome, ...] = (
    "passed",
    "failed",
    "locked",
    "error",
    "timeout",
    "out of memory",
    "crashed",
)
# The harness's longest answer is bounded by its encoder (4 M characters).
ANSWER_LIMIT = 8 * 1024 * 1024

_BOOT = "import sys; sys.path.insert(0, {grader!r}); from gradechild.harness import main; main()"


class ChildGone(Exception):
    """The child can answer no more; `outcome` and `message` are for the check that was asking."""

    def __init__(self, outcome: Outcome, message: str) -> None:
        super().__init__(message)
        self.outcome: Outcome = outcome
        self.message = message


def exception_name(names: frozenset[str]) -> str:
    """The most specific builtin class an exception belongs to; never its text."""
    for name in EXCEPTION_NAMES:
        if name in names:
            return name
    return "an exception"


class Output:
    """stdout and stderr of a child: drained so it never blocks, counted, never shown.

    Only two things are read from it: whether stdout began with the ready
    line every sandboxed process writes once its limits hold (`READY`), and
    the end of stderr, to tell a death by lack of memory from another crash.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen = 0
        self.head = b""
        self.tail = b""

    def started(self) -> bool:
        """Whether stdout began with the ready line (read it afresh: it changes as data comes)."""
        return self.head.startswith(READY)

    def take(self, data: bytes, stream: str) -> bool:
        """Count `data`; False once the child has printed more than the limit."""
        self.seen += len(data)
        if stream == "stdout" and len(self.head) < len(READY):
            self.head += data[: len(READY) - len(self.head)]
        elif stream == "stderr":
            self.tail = (self.tail + data)[-4096:]
        return self.seen <= self.limit

    def drain(self, stream: IO[bytes] | None, name: str) -> None:
        """Read what a dead child left in a pipe (up to the limit), to judge it whole."""
        if stream is None:
            return
        with contextlib.suppress(OSError, ValueError):
            os.set_blocking(stream.fileno(), False)
            while self.seen <= self.limit:
                chunk = os.read(stream.fileno(), 65536)
                if not chunk:
                    return
                self.take(chunk, name)

    def looks_out_of_memory(self) -> bool:
        # Allocation failures inside compiled code abort instead of raising MemoryError.
        return b"MemoryError" in self.tail or b"memory allocation of" in self.tail

    def never_started(self, process: subprocess.Popen[bytes]) -> IsolationFailed:
        """The error for a sandboxed process that ended before its ready line."""
        first = self.tail.decode("utf-8", "replace").strip().splitlines()[:1]
        detail = f": {first[0]}" if first else ""
        return IsolationFailed(
            f"a sandboxed process ended before it started ({exit_text(process.returncode)})"
            + detail
        )


def exit_text(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class Session:
    """One child process holding one submission, answering questions until closed."""

    def __init__(
        self,
        folder: Path,
        module: str,
        isolation: Isolation,
        limits: Limits,
        questions: int,
        *,
        files: Path | None = None,
    ) -> None:
        """Start the child over the copied `folder`; `questions` bounds its CPU time in all.

        `files` holds the folders the grader made for the checks, shown read-only.
        """
        self.module = module
        self.limits = limits
        self._scratch = Path(tempfile.mkdtemp(prefix="bookproof-session-"))
        ask_read, self._ask = os.pipe()
        self._answers, answer_write = os.pipe()
        config = {
            "module": module,
            "submission": "{workdir}",
            "questions": ask_read,
            "answers": answer_write,
            "limits": limits.for_child(limits.timeout * (questions + 1)),
            "require_filter": isolation is Isolation.BUBBLEWRAP,
        }
        try:
            self._process = start(
                isolation,
                Launch(
                    _BOOT,
                    config,
                    folder,
                    (ask_read, answer_write),
                    tmp_bytes=limits.tmp_bytes,
                    files=files,
                ),
                self._scratch,
            )
        finally:
            os.close(ask_read)
            os.close(answer_write)
        assert self._process.stdout is not None and self._process.stderr is not None
        assert self._process.stdin is not None
        self._process.stdin.close()
        os.set_blocking(self._ask, False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._answers, selectors.EVENT_READ, "answers")
        self._selector.register(self._process.stdout, selectors.EVENT_READ, "stdout")
        self._selector.register(self._process.stderr, selectors.EVENT_READ, "stderr")
        self._buffer = bytearray()
        self._encode = make_encoder()
        self._output = Output(limits.output_bytes)
        self._closed = False

    # --- the conversation ------------------------------------------------------

    def imported(self) -> None:
        """Wait for the import; raise ChildGone (with the import's fate) when it failed."""
        where = f"while importing {self.module}.py"
        try:
            raw = self._next_answer(b"", self.limits.timeout)
        except ChildGone as gone:
            raise ChildGone(gone.outcome, _during_import(gone, where, self.limits)) from None
        if raw.get("status") == "imported" and raw.keys() == {"status"}:
            return
        if raw.get("status") == "import_failed" and raw.keys() == {"status", "raised"}:
            self.close()
            try:
                failure = _raised(raw["raised"])
            except FrameError:
                raise ChildGone("crashed", _GARBLED) from None
            if "MemoryError" in failure:
                raise ChildGone("out of memory", f"Ran out of memory {where}.")
            if "SystemExit" in failure:
                raise ChildGone(
                    "crashed", f"Called exit {where}; a module must only define things."
                )
            raise ChildGone("error", f"Raised {exception_name(failure)} {where}.")
        self.close()
        raise ChildGone("crashed", _GARBLED)

    def begin(self) -> None:
        """A new check starts: the child forgets the last one's objects and stand-ins."""
        self._send(b'{"op":"begin"}\n', self.limits.timeout)

    def ask(self, op: dict[str, Any]) -> Answer:
        """Send one question; the child's validated answer, or ChildGone."""
        text = self._encode(op)
        if text is None:
            raise RuntimeError(f"a check asked a question that is not plain JSON: {op!r}")
        raw = self._next_answer((text + "\n").encode("utf-8"), self.limits.timeout)
        try:
            return _answer(raw)
        except FrameError:
            self.close()
            raise ChildGone("crashed", _GARBLED) from None

    def _stop_and_drain(self) -> None:
        if self._closed:
            return
        stop(self._process, close_streams=False)
        self._output.drain(self._process.stdout, "stdout")
        self._output.drain(self._process.stderr, "stderr")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            os.close(self._ask)
        stop(self._process)
        self._selector.close()
        with contextlib.suppress(OSError):
            os.close(self._answers)
        shutil.rmtree(self._scratch, ignore_errors=True)

    # --- the pipes ---------------------------------------------------------------

    def _send(self, data: bytes, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        view = memoryview(data)
        while view:
            try:
                sent = os.write(self._ask, view)
            except BlockingIOError:
                sent = 0
            except BrokenPipeError:
                # The child stopped reading; its death shows on the answer pipe.
                return
            view = view[sent:]
            if view:
                if time.monotonic() > deadline:
                    self._gone("timeout")
                self._pump(0.05)

    def _next_answer(self, question: bytes, timeout: float) -> dict[str, Any]:
        if self._closed:
            raise ChildGone("crashed", "The submission's process had already ended.")
        if question:
            self._send(question, timeout)
        deadline = time.monotonic() + timeout
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                try:
                    raw = decode_json(line)
                except FrameError:
                    self.close()
                    raise ChildGone("crashed", _GARBLED) from None
                if not isinstance(raw, dict):
                    self.close()
                    raise ChildGone("crashed", _GARBLED)
                return raw
            if len(self._buffer) > ANSWER_LIMIT:
                self._gone("garbled")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._gone("timeout")
            self._pump(min(remaining, 0.5))

    def _pump(self, wait: float) -> None:
        """Read whatever is ready; end the child on a flood or when its answer pipe closes."""
        for key, _ in self._selector.select(timeout=wait):
            chunk = os.read(key.fd, 65536)
            if key.data == "answers":
                if not chunk:
                    self._gone("ended")
                self._buffer += chunk
            elif not chunk:
                self._selector.unregister(key.fileobj)
            elif not self._output.take(chunk, key.data):
                self._gone("flood")

    def _gone(self, how: str) -> None:
        process = self._process
        self._stop_and_drain()
        self.close()
        if how == "ended" and not self._output.started():
            raise self._output.never_started(process)
        if how == "timeout":
            raise ChildGone(
                "timeout", f"Did not finish within {self.limits.timeout:g} s (an endless loop?)."
            )
        if how == "flood":
            raise ChildGone(
                "crashed", f"Printed more than {self.limits.output_bytes:,} bytes; stopped."
            )
        if how == "garbled":
            raise ChildGone("crashed", _GARBLED)
        if self._output.looks_out_of_memory():
            raise ChildGone("out of memory", "Ran out of memory during this check.")
        raise ChildGone(
            "crashed", f"The process ended during this check ({exit_text(process.returncode)})."
        )


_GARBLED = (
    "Something other than the grader's harness wrote to its answer pipe; "
    "the submission's process was ended."
)


def _during_import(gone: ChildGone, where: str, limits: Limits) -> str:
    if gone.outcome == "timeout":
        return f"Did not finish importing within {limits.timeout:g} s."
    if gone.outcome == "out of memory":
        return f"Ran out of memory {where}."
    if gone.message.startswith("Printed more"):
        return f"Printed more than {limits.output_bytes:,} bytes {where}; stopped."
    if gone.message.startswith("The process ended"):
        return gone.message.replace("during this check", where)
    return gone.message


def _raised(names: Any) -> frozenset[str]:
    if not isinstance(names, list) or not all(
        isinstance(name, str) and name in EXCEPTION_NAMES for name in names
    ):
        raise FrameError("unknown exception name")
    return frozenset(names)


def _answer(raw: dict[str, Any]) -> Answer:
    status = raw.get("status")
    if status == "returned" and raw.keys() == {"status", "value"}:
        return Answer("returned", raw["value"])
    if status == "raised" and raw.keys() == {"status", "raised"}:
        return Answer("raised", None, _raised(raw["raised"]))
    if status in ("kept", "wrong_type") and raw.keys() == {"status"}:
        return Answer(status)
    raise FrameError("malformed answer")
