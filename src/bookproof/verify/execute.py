"""Running book code in child processes, each under a time limit, in bounded memory.

Three kinds of run: a chapter's listings (in the worker, one process per
chapter), a checkpoint script, and the import of a learner file, each in a
sandbox of its own when the verification is isolated. Whatever the code does
by accident (print gigabytes, write to every descriptor it holds, scribble on
the worker's channel, fork a child that never exits), the verifier reads at
most a bounded amount of it, ends the run by its time limit, and reports what
went wrong at the listing or file that did it.
"""

from __future__ import annotations

import hmac
import json
import marshal
import os
import secrets
import select
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bookproof.verify.chapter import Listing
from bookproof.verify.compose import worker_fields
from bookproof.verify.environment import python_executable
from bookproof.verify.isolation import Isolation
from bookproof.verify.processes import (
    Head,
    Leftover,
    Tail,
    finish,
    host_pid,
    start,
    stop_all,
)
from bookproof.verify.worker import (
    EXIT_OWN_DESCRIPTORS,
    FRAME_HEADER_BYTES,
    MAC_BYTES,
    MAX_CAPTURE_BYTES,
)

__all__ = [
    "MAX_CAPTURE_BYTES",
    "MAX_PROCESS_OUTPUT",
    "ListingRun",
    "ListingsRun",
    "ProcessRun",
    "import_learner",
    "run_checkpoint",
    "run_listings",
    "stop_all",
]

# How much of a child's stderr a failure message quotes.
_STDERR_TAIL = 2_000
# A checkpoint or learner import printing more than this fails, and is stopped.
MAX_PROCESS_OUTPUT = 1_000_000
# No honest frame is larger: the captured output, a traceback, bounded texts.
_MAX_FRAME = 8 * 1024 * 1024
# How often a run whose pipes stay open is checked for having exited.
_POLL_S = 0.1
# How long the pipes of a run that has exited are still read.
_DRAIN_S = 0.5

_IMPORT_LEARNER = """\
import importlib.util, os, sys
path = sys.argv[1]
sys.path[0] = os.path.dirname(path)
spec = importlib.util.spec_from_file_location("learner_under_test", path)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
"""


@dataclass(frozen=True)
class ListingRun:
    """What one listing did: its printed output and, if any, what it raised."""

    stdout: str  # at most MAX_CAPTURE_BYTES of it
    stdout_bytes: int = 0  # how much it printed in all
    exception: dict[str, Any] | None = None
    syntax_error: dict[str, Any] | None = None
    flooded: bool = False  # printed so much that the worker's file-size limit stopped it
    started: float = 0.0  # seconds since boot, to trace a leftover process to its listing

    @property
    def truncated(self) -> bool:
        return self.stdout_bytes > MAX_CAPTURE_BYTES


@dataclass(frozen=True)
class ListingsRun:
    """The runs of a chapter's listings, in order; `stopped` explains a missing tail."""

    runs: tuple[ListingRun, ...]
    stopped: str | None = None  # why the listings after the last run never ran
    stopped_kind: Literal["timeout", "crash"] | None = None
    partial_stdout: str = ""  # what the stopped listing had printed by then
    seconds: float = 0.0
    # Processes still running when the listings ended, each with the index of
    # the listing that started it.
    leftovers: tuple[tuple[int, Leftover], ...] = ()


@dataclass(frozen=True)
class ProcessRun:
    """A checkpoint run or a learner import."""

    returncode: int | None  # None when it was stopped (time limit, flood)
    stdout: str  # at most MAX_PROCESS_OUTPUT bytes of it
    stderr: str  # its last bytes
    timed_out: bool = False
    stdout_bytes: int = 0
    seconds: float = 0.0
    leftovers: tuple[Leftover, ...] = ()

    @property
    def flooded(self) -> bool:
        return self.stdout_bytes > MAX_PROCESS_OUTPUT


class _Tampered(Exception):
    """The worker's channel carried bytes the worker did not write."""


class _Frames:
    """Reads the worker's keyed frames; anything else is a listing's stray write.

    The key guards against accidents only: it lives in the worker, in the same
    interpreter as the listings, where a listing written to find it can.
    """

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> Iterator[dict[str, Any]]:
        self._buffer += chunk
        while len(self._buffer) >= FRAME_HEADER_BYTES:
            length = int.from_bytes(self._buffer[:4], "big")
            if length > _MAX_FRAME:
                raise _Tampered(f"a frame announced {length} bytes")
            end = FRAME_HEADER_BYTES + length
            if len(self._buffer) < end:
                return
            mac = bytes(self._buffer[4:FRAME_HEADER_BYTES])
            payload = bytes(self._buffer[FRAME_HEADER_BYTES:end])
            del self._buffer[:end]
            expected = _mac(self._key, payload)
            if not hmac.compare_digest(mac, expected):
                raise _Tampered("a frame's signature did not match")
            try:
                message = marshal.loads(payload)
            except (EOFError, ValueError, TypeError):
                raise _Tampered("a signed frame did not decode") from None
            if not isinstance(message, dict):
                raise _Tampered("a signed frame was not a message")
            yield message


def _mac(key: bytes, payload: bytes) -> bytes:
    import hashlib

    return hashlib.blake2b(payload, key=key, digest_size=MAC_BYTES).digest()


def _text(value: object) -> str:
    """A string from the worker, fit for any report: lone surrogates become U+FFFD."""
    if not isinstance(value, str):
        raise _Tampered("a text field was not text")
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _number(value: object, kind: type[int] | type[float]) -> Any:
    if isinstance(value, bool) or not isinstance(value, kind | int):
        raise _Tampered("a number field was not a number")
    return value


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Tampered("a flag field was not true or false")
    return value


def _frame_list(value: object) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise _Tampered("the frames were not a list")
    frames: list[dict[str, Any]] = []
    for frame in value:
        if not isinstance(frame, dict):
            raise _Tampered("a frame entry was not a record")
        if "hidden" in frame:
            frames.append({"hidden": _number(frame["hidden"], int)})
            continue
        frames.append(
            {
                "file": _text(frame.get("file")),
                "line": _number(frame.get("line"), int),
                "name": _text(frame.get("name")),
            }
        )
    return frames


def _error_record(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Tampered("an error record was not a record")
    line = value.get("line")
    return {
        "type": _text(value.get("type")),
        "message": _text(value.get("message")),
        "frames": _frame_list(value.get("frames", [])),
        "line": None if line is None else _number(line, int),
    }


def _listing_run(message: dict[str, Any], index: int) -> ListingRun:
    """A result message, checked field by field: its shape is part of the signature."""
    if message.get("index") != index:
        raise _Tampered(f"a result for listing {message.get('index')!r} came in place of {index}")
    return ListingRun(
        stdout=_text(message.get("stdout")),
        stdout_bytes=_number(message.get("stdout_bytes"), int),
        exception=_error_record(message.get("exception")),
        syntax_error=_error_record(message.get("syntax_error")),
        flooded=_flag(message.get("flooded")),
        started=float(_number(message.get("started"), float)),
    )


class _Replies:
    """The worker's messages so far, in the only order it sends them:
    `ready`, one `result` per listing, `done`."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.started = False
        self.done = False
        self.runs: list[ListingRun] = []
        self.pid: int | None = None  # the worker's, as it sees itself

    def take(self, message: dict[str, Any]) -> None:
        event = message.get("event")
        if event == "ready" and not self.started:
            self.started = True
            self.pid = _number(message.get("pid"), int)
        elif event == "result" and self.started and not self.done:
            self.runs.append(_listing_run(message, len(self.runs)))
        elif event == "done" and self.started and len(self.runs) == self.expected:
            self.done = True
        else:
            raise _Tampered(f"an unexpected {event!r} message")


def _drain(descriptor: int, feed: Callable[[bytes], object]) -> None:
    """Read what is already in a pipe, without waiting for more."""
    while select.select([descriptor], [], [], 0)[0]:
        chunk = os.read(descriptor, 65536)
        if not chunk:
            return
        feed(chunk)


def _read_rest(descriptor: int, frames: _Frames, replies: _Replies) -> bool:
    """Take every message already in the channel, without waiting for more;
    whether the worker had reported everything. A frame that is not the
    worker's raises `_Tampered`, as in the main loop."""

    def take(chunk: bytes) -> None:
        for message in frames.feed(chunk):
            replies.take(message)

    _drain(descriptor, take)
    return replies.done


def _ended(status: int) -> str:
    if status == EXIT_OWN_DESCRIPTORS:
        return "the listing closed or replaced the worker's own file descriptors"
    if status < 0:
        return f"the worker process was killed by signal {-status} while running it"
    return f"the worker process ended (exit status {status}) while running it"


def _owner(runs: tuple[ListingRun, ...], leftover: Leftover) -> int:
    """The listing that started `leftover`: the one it is tagged with, else the
    last one that began before it did."""
    if leftover.listing is not None and 0 <= leftover.listing < len(runs):
        return leftover.listing
    tick = 1 / os.sysconf("SC_CLK_TCK")  # /proc gives start times in whole ticks
    owner = 0
    for index, run in enumerate(runs):
        if run.started <= leftover.started + tick:
            owner = index
    return owner


def run_listings(
    path: Path, listings: tuple[Listing, ...], timeout: float, isolation: Isolation
) -> ListingsRun:
    """Run `listings` in one worker process; each listing gets `timeout` seconds."""
    began = time.perf_counter()
    key = secrets.token_bytes(32)
    job = {
        "filename": str(path),
        "key": key.hex(),
        "blocks": [
            {
                "index": i,
                "source": listing.fence.content,
                "first_line": listing.fence.line + 1,
                **worker_fields(listing),
            }
            for i, listing in enumerate(listings)
        ],
    }
    child = start(
        # `-c` rather than `-m`: runpy's import is a measurable share of start-up.
        [python_executable(), "-c", "from bookproof.verify.worker import main; main()"],
        stdin=subprocess.PIPE,
        isolation=isolation,
    )
    assert child.process.stdin is not None
    try:
        child.process.stdin.write(json.dumps(job).encode("utf-8"))
        child.process.stdin.close()
    except BrokenPipeError:
        pass  # the worker died at start; its exit status says how
    channel, errors = child.stdout.fileno(), child.stderr.fileno()
    frames = _Frames(key)
    stderr = Tail(_STDERR_TAIL)
    replies = _Replies(expected=len(listings))
    stopped: str | None = None
    stopped_kind: Literal["timeout", "crash"] | None = None
    deadline = time.monotonic() + timeout
    open_streams = {channel, errors}
    while not replies.done and stopped is None:
        remaining = deadline - time.monotonic()
        wakers = child.wakers()
        ready, _, _ = select.select(
            [*open_streams, *wakers], [], [], max(min(remaining, _POLL_S), 0)
        )
        # The status pipe only wakes this loop when the worker ends; child.poll() reads it.
        ready = [descriptor for descriptor in ready if descriptor not in wakers]
        for descriptor in ready:
            chunk = os.read(descriptor, 65536)
            if not chunk:
                open_streams.discard(descriptor)
            elif descriptor == errors:
                stderr.feed(chunk)
            else:
                try:
                    for message in frames.feed(chunk):
                        replies.take(message)
                        deadline = time.monotonic() + timeout
                except _Tampered as error:
                    stopped_kind = "crash"
                    stopped = (
                        "the listing wrote to the verifier's private channel, so nothing the "
                        f"worker reported after it can be relied on ({error})"
                    )
        if replies.done or stopped is not None:
            break
        # A listing writing to stderr without end must not outlast its time
        # limit; and a process it forked may hold the channel open after the
        # worker died, so the worker itself is asked whenever nothing came.
        late = time.monotonic() >= deadline
        status = child.poll() if late or not ready else None
        if status is not None and channel in open_streams:
            # The worker may have written its last results and ended between
            # the select above and this poll (a busy machine can hold this
            # process back that long): read what it left before judging it.
            try:
                if _read_rest(channel, frames, replies):
                    break
            except _Tampered as error:
                stopped_kind = "crash"
                stopped = (
                    "the listing wrote to the verifier's private channel, so nothing the "
                    f"worker reported after it can be relied on ({error})"
                )
                break
        if status is not None:
            _drain(errors, stderr.feed)
            tail = stderr.data.decode("utf-8", errors="replace")
            stopped_kind = "crash"
            stopped = _ended(status) + (f"; its stderr ends with:\n{tail}" if tail else "")
        elif late:
            stopped_kind = "timeout"
            stopped = (
                f"the listing did not finish within {timeout:g} s (--timeout)"
                if replies.started
                else f"the worker did not start within {timeout:g} s"
            )
    partial = ""
    if stopped_kind == "timeout" and replies.pid is not None:
        worker = host_pid(child, replies.pid)
        partial = "" if worker is None else _salvage_stdout(worker)
    done = replies.done
    _, leftovers = finish(child, kill=not done)
    finished = tuple(replies.runs)
    return ListingsRun(
        runs=finished,
        stopped=None if done else stopped,
        stopped_kind=None if done else stopped_kind,
        partial_stdout=partial,
        seconds=time.perf_counter() - began,
        leftovers=(
            tuple((_owner(finished, leftover), leftover) for leftover in leftovers) if done else ()
        ),
    )


def _salvage_stdout(pid: int) -> str:
    """What a listing about to be stopped has printed so far, read from the worker's
    capture file through /proc (Linux); empty where that is not possible."""
    try:
        with open(f"/proc/{pid}/fd/1", "rb") as capture:
            return capture.read(MAX_CAPTURE_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _run_process(command: list[str], timeout: float, isolation: Isolation) -> ProcessRun:
    """Run `command` to its end or its time limit, keeping the head of its stdout
    (it fails, and is stopped, past MAX_PROCESS_OUTPUT) and the tail of its stderr."""
    began = time.perf_counter()
    child = start(command, stdin=subprocess.DEVNULL, isolation=isolation)
    stdout, stderr = Head(MAX_PROCESS_OUTPUT), Tail(_STDERR_TAIL)
    sinks: dict[int, Head | Tail] = {child.stdout.fileno(): stdout, child.stderr.fileno(): stderr}
    deadline = time.monotonic() + timeout
    timed_out = False
    while sinks and not stdout.overflowed:
        now = time.monotonic()
        if now >= deadline:
            timed_out = child.poll() is None
            break
        exited = child.poll() is not None
        if exited:
            # It exited, so all it wrote is in its pipes; a process it left
            # behind may hold them open (and keep writing), and so does bwrap
            # around a sandbox: what is already there is read, no more.
            deadline = min(deadline, now + _DRAIN_S)
        wait = 0.0 if exited else min(deadline - now, _POLL_S)
        # The status pipe wakes the select when the command ends; poll() reads it.
        wakers = [] if exited else child.wakers()
        ready, _, _ = select.select([*sinks, *wakers], [], [], wait)
        ready = [descriptor for descriptor in ready if descriptor in sinks]
        if exited and not ready:
            break
        for descriptor in ready:
            chunk = os.read(descriptor, 65536)
            if chunk:
                sinks[descriptor].feed(chunk)
            else:
                del sinks[descriptor]
    stopped = timed_out or stdout.overflowed
    status, leftovers = finish(child, kill=stopped)
    return ProcessRun(
        returncode=None if stopped else status,
        stdout=stdout.data.decode("utf-8", errors="replace"),
        stderr=stderr.data.decode("utf-8", errors="replace"),
        timed_out=timed_out,
        stdout_bytes=stdout.total,
        seconds=time.perf_counter() - began,
        leftovers=leftovers,
    )


def run_checkpoint(path: Path, timeout: float, isolation: Isolation) -> ProcessRun:
    """Run a checkpoint as a reader would: `python path`, from the repository root."""
    return _run_process([python_executable(), str(path)], timeout, isolation)


def import_learner(path: Path, timeout: float, isolation: Isolation) -> ProcessRun:
    """Import a learner file as a module (not as __main__) in a fresh process."""
    return _run_process([python_executable(), "-c", _IMPORT_LEARNER, str(path)], timeout, isolation)
