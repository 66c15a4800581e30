"""Writing a run down as it happens: the recorder `run_task` talks to, and where its events go.

`run_task` tells its recorder six things, in the loop's order: a run started,
the model is asked, the model replied, a call is taken up, a call's outcome,
the run finished; and a seventh when a call narrowed the run's tools. The
recorder turns each into one event (see `format.py`) and hands it to a sink:
a trace file, a list, or the replay's comparison.
Without a sink it returns at once, so a run nobody traces pays next to nothing.

`SOVEREIGN_TRACE=path.jsonl` gives every run a sink that appends to that file,
one line per event (see `JsonLinesFile` for when the lines reach the disk).
What a trace must never hold is an API key: no eight characters in a row of
the value of any variable named `*_API_KEY`, `*_TOKEN`, `*_SECRET` or
`*_PASSWORD` are written; and since a provider's error text may quote a
shorter piece of a key, only a model error's class is written, never its words.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic_core

from sovereign_agent.models import AssistantToolCall, Message, ModelClient, ModelReply
from sovereign_agent.tools import Dispatcher, Narrowing, ToolOutcome
from sovereign_agent.trace.format import FORMAT_VERSION, schema_fingerprint

if TYPE_CHECKING:
    # Only for the annotation: the loop imports this module, not the other way round.
    from sovereign_agent.loop import RunRecord

__all__ = [
    "MIN_SECRET_FRAGMENT",
    "TRACE_VARIABLE",
    "WRITE_EVERY_S",
    "JsonLinesFile",
    "Recorder",
    "Sink",
    "TraceWriteError",
    "append_lines",
    "encode_event",
    "holds_secret",
    "recorder_from_env",
    "redact",
    "secrets_from_env",
]

TRACE_VARIABLE = "SOVEREIGN_TRACE"
# A key is redacted wherever any run of this many of its characters appears.
# Shorter pieces (a provider's "...a1b2") are kept out another way: the
# provider's error text is never written at all.
MIN_SECRET_FRAGMENT = 8
_SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
_REDACTED = "***"
# The longest a trace file may lag behind a run that is waiting on its model.
WRITE_EVERY_S = 1.0

Sink = Callable[[dict[str, Any]], None]


class TraceWriteError(Exception):
    """The trace could not be written: a run is never traced in part without saying so."""


def secrets_from_env(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values of variables that by their names hold keys, long enough to be one."""
    # Names first, values only for the few that match: decoding every value of
    # the environment for every run would cost a noticeable part of the run.
    names = [name for name in environ if name.upper().endswith(_SECRET_SUFFIXES)]
    values = (environ[name].strip() for name in names)
    return tuple(value for value in values if len(value) >= MIN_SECRET_FRAGMENT)


@functools.lru_cache(maxsize=32)
def _fragments(secrets: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(
        dict.fromkeys(
            secret[start : start + MIN_SECRET_FRAGMENT]
            for secret in secrets
            for start in range(len(secret) - MIN_SECRET_FRAGMENT + 1)
        )
    )


@functools.lru_cache(maxsize=32)
def _spelled_fragments(secrets: tuple[str, ...]) -> tuple[bytes, ...]:
    # How each fragment may appear in a line: as it is, and as JSON escapes it.
    return tuple(
        dict.fromkeys(
            spelling
            for fragment in _fragments(secrets)
            for spelling in (
                fragment.encode("utf-8", "surrogatepass"),
                json.dumps(fragment)[1:-1].encode("ascii"),
            )
        )
    )


def holds_secret(line: bytes, secrets: Sequence[str]) -> bool:
    """Whether any `MIN_SECRET_FRAGMENT` characters in a row of a secret appear in `line`."""
    return any(fragment in line for fragment in _spelled_fragments(tuple(secrets)))


def _redact_text(text: str, fragments: tuple[str, ...]) -> str:
    # Every stretch of text covered by fragments, overlapping or touching, goes
    # as a whole: replacing fragment by fragment would leave a key's last few
    # characters behind, the very ones providers print to identify a key.
    covered: list[tuple[int, int]] = []
    for fragment in fragments:
        start = text.find(fragment)
        while start != -1:
            covered.append((start, start + len(fragment)))
            start = text.find(fragment, start + 1)
    if not covered:
        return text
    pieces, end = [], 0
    for start, stop in sorted(covered):
        if start > end:
            pieces += [text[end:start], _REDACTED]
        elif not pieces:
            pieces.append(_REDACTED)
        end = max(end, stop)
    pieces.append(text[end:])
    return "".join(pieces)


def redact(value: Any, secrets: Sequence[str]) -> Any:
    """`value` with every run of `MIN_SECRET_FRAGMENT` characters of a secret replaced.

    It works on the values, keys included, not on the JSON text, so a redacted
    event is still valid JSON whatever characters the secret holds.
    """
    fragments = _fragments(tuple(secrets))
    if isinstance(value, str):
        return _redact_text(value, fragments)
    if isinstance(value, dict):
        return {redact(key, secrets): redact(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item, secrets) for item in value]
    return value


def encode_event(event: Mapping[str, Any]) -> bytes:
    """One event as a line of compact JSON in UTF-8.

    Pydantic's serializer, four times faster than the standard library's here,
    which matters: a run writes a dozen events. Text a provider sent may hold a
    lone surrogate, which UTF-8 cannot carry; then the standard library writes
    the line with escapes instead.
    """
    try:
        return pydantic_core.to_json(event) + b"\n"
    except pydantic_core.PydanticSerializationError:
        pass
    try:
        return json.dumps(event, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"
    except (TypeError, ValueError) as error:
        # A setup whose arguments are not plain data: a defect to report, not to skip.
        raise TraceWriteError(
            f"a {event['event']} event holds data that is not JSON: {error}"
        ) from None


# One descriptor per trace file for the whole process. Opening and closing
# the file for every run cost more than recording the run; like the standard
# library's WatchedFileHandler, the descriptor is kept, and opened again when
# the path no longer names the file it points at (deleted, or rotated away).
_DESCRIPTORS: dict[str, int] = {}
_CHECKED: dict[str, float] = {}
_DESCRIPTORS_LOCK = threading.Lock()


def _close_descriptors() -> None:
    with _DESCRIPTORS_LOCK:
        for descriptor in _DESCRIPTORS.values():
            os.close(descriptor)
        _DESCRIPTORS.clear()


atexit.register(_close_descriptors)


def _descriptor(path: str) -> int:
    # Called with the lock held.
    descriptor = _DESCRIPTORS.get(path)
    now = time.monotonic()
    if descriptor is not None and now - _CHECKED.get(path, now) >= WRITE_EVERY_S:
        # Whether the path still names our file, looked at once a second at
        # most: two system calls per run would cost a noticeable part of it.
        _CHECKED[path] = now
        try:
            current = os.path.samestat(os.fstat(descriptor), os.stat(path))
        except OSError:
            current = False
        if not current:
            os.close(descriptor)
            del _DESCRIPTORS[path]
            descriptor = None
    if descriptor is None:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        descriptor = _DESCRIPTORS[path] = os.open(path, flags, 0o644)
        _CHECKED[path] = now
    return descriptor


def append_lines(path: str, lines: list[bytes]) -> None:
    """Append `lines` to the file at `path` (absolute) in one write, and empty the list.

    One write with O_APPEND: the batch lands whole at the end of the file, even
    when several processes append to the same trace. With no lines, the file
    is only opened: a path that cannot be written fails now, not at the end.
    """
    data = b"".join(lines)
    lines.clear()
    try:
        with _DESCRIPTORS_LOCK:
            descriptor = _descriptor(path)
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise TraceWriteError(f"{TRACE_VARIABLE}: cannot append to {path}: {reason}") from None


def _write_left_over(path: str, lines: list[bytes]) -> None:
    # Runs when a sink is dropped or the interpreter exits, where an exception
    # would reach nobody: say what was lost instead.
    if not lines:
        return
    count = len(lines)
    try:
        append_lines(path, lines)
    except TraceWriteError as error:
        print(f"{error} ({count} events not written)", file=sys.stderr)


class JsonLinesFile:
    """A sink that appends events to a file, one line of JSON each.

    Lines are written in batches, because a write per event would cost more
    than the run it records: when the run finishes, and before a model request
    if a second has passed since the last write. Against a real model, whose
    replies take seconds, that is before every request, so the file is never
    behind a run that is waiting on its model, the wait a process is most
    likely to die in. Lines still pending when the sink is dropped (an
    exception escaped `run_task`) or when the interpreter exits are written then.
    """

    def __init__(
        self,
        path: Path,
        *,
        secrets: Sequence[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        # Absolute now: a later change of directory must not move the trace.
        self._where = os.path.abspath(path)
        self._secrets = tuple(secrets)
        self._clock = clock
        self._written_at = clock()
        self._lines: list[bytes] = []
        weakref.finalize(self, _write_left_over, self._where, self._lines)

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "run_started":
            # Opens the file (once per process): a trace that cannot be written
            # stops the run here, before the model is asked anything.
            append_lines(self._where, [])
        line = encode_event(event)
        if self._secrets and holds_secret(line, self._secrets):
            line = encode_event(redact(event, self._secrets))
        self._lines.append(line)
        if kind == "run_finished" or (
            kind == "model_request" and self._clock() - self._written_at >= WRITE_EVERY_S
        ):
            append_lines(self._where, self._lines)
            self._written_at = self._clock()


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _new_run_id() -> str:
    return os.urandom(16).hex()


# Fingerprints of the tools offered, by the offer's compact JSON: a run offers
# the same schemas at every step, and that JSON costs a fraction of the
# canonical JSON a fingerprint hashes. Equal JSON is equal data, so the cache
# never answers wrongly; it is only emptied when it grows past its bound.
_OFFERS: dict[bytes, tuple[str, ...]] = {}
_OFFERS_KEPT = 256


def _fingerprints(tools: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    key = pydantic_core.to_json(tools)
    fingerprints = _OFFERS.get(key)
    if fingerprints is None:
        if len(_OFFERS) >= _OFFERS_KEPT:
            _OFFERS.clear()
        fingerprints = _OFFERS[key] = tuple(schema_fingerprint(schema) for schema in tools)
    return fingerprints


class Recorder:
    """Turns what `run_task` tells it into trace events, in order, for one run at a time.

    The clock, the wall clock and the run ids are parameters so that a test,
    or a chapter's listing, can make a trace that is the same on every run.
    """

    def __init__(
        self,
        sink: Sink | None,
        *,
        clock: Callable[[], int] = time.perf_counter_ns,
        now: Callable[[], datetime] = _utc_now,
        new_run_id: Callable[[], str] = _new_run_id,
    ) -> None:
        self._sink = sink
        self._clock = clock
        self._now = now
        self._new_run_id = new_run_id
        self._run = ""
        self._seq = 0
        self._step = 0
        self._model_name: str | None = None
        self._offered: dict[str, str] = {}
        self._last_offer: Sequence[dict[str, Any]] | None = None
        self._defined: set[str] = set()
        self._tokens: list[int | None] = [None, None]
        self._started_ns = self._asked_ns = self._called_ns = 0

    @property
    def enabled(self) -> bool:
        return self._sink is not None

    def _emit(self, kind: str, operation: str, fields: dict[str, Any]) -> None:
        assert self._sink is not None
        self._seq += 1
        event = {
            "v": FORMAT_VERSION,
            "run": self._run,
            "seq": self._seq,
            "event": kind,
            "gen_ai.operation.name": operation,
        }
        event.update(fields)
        self._sink(event)

    def run_started(
        self,
        model: ModelClient,
        dispatcher: Dispatcher,
        task: str,
        *,
        system: str | None,
        max_steps: int,
        max_tool_calls: int,
    ) -> None:
        if self._sink is None:
            return
        self._run = self._new_run_id()
        self._seq = self._step = 0
        self._offered, self._last_offer, self._defined = {}, None, set()
        self._tokens = [None, None]
        name = getattr(model, "model", None)
        self._model_name = name if isinstance(name, str) else None
        self._started_ns = self._clock()
        setup = dispatcher.setup
        self._emit(
            "run_started",
            "invoke_agent",
            {
                "time": self._now().isoformat(timespec="milliseconds"),
                "model": model.label,
                "gen_ai.request.model": self._model_name,
                "task": task,
                "gen_ai.system_instructions": system,
                "max_steps": max_steps,
                "max_tool_calls": max_tool_calls,
                "hints": dispatcher.hints,
                # The setup's own objects, not a copy: a sink writes the event at
                # once (a file, the replay), so it records the stock the run began with.
                "setup": None
                if setup is None
                else {"factory": setup.factory, "arguments": setup.arguments},
            },
        )

    def model_request(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> None:
        if self._sink is None:
            return
        self._step += 1
        self._asked_ns = self._clock()
        definitions: list[dict[str, Any]] = []
        # Most steps offer what the step before offered: equal data, equal fingerprints.
        if tools != self._last_offer:
            self._offered = {}
            for schema, fingerprint in zip(tools, _fingerprints(tools), strict=True):
                self._offered[schema["function"]["name"]] = fingerprint
                # Each schema is written in full once per run, the first time it
                # is offered; after that its fingerprint stands for it.
                if fingerprint not in self._defined:
                    self._defined.add(fingerprint)
                    definitions.append(schema)
            self._last_offer = tools
        self._emit(
            "model_request",
            "chat",
            {
                "step": self._step,
                "messages": len(messages),
                "tools": self._offered,
                "gen_ai.tool.definitions": definitions,
            },
        )

    def model_reply(self, reply: ModelReply) -> None:
        if self._sink is None:
            return
        usage = reply.usage
        if usage is not None:
            self._tokens = [
                (self._tokens[0] or 0) + usage.input_tokens,
                (self._tokens[1] or 0) + usage.output_tokens,
            ]
        self._emit(
            "model_reply",
            "chat",
            {
                "step": self._step,
                "gen_ai.response.model": reply.model,
                "gen_ai.response.finish_reasons": [reply.finish_reason]
                if reply.finish_reason
                else [],
                "gen_ai.usage.input_tokens": None if usage is None else usage.input_tokens,
                "gen_ai.usage.output_tokens": None if usage is None else usage.output_tokens,
                "duration_ns": self._clock() - self._asked_ns,
                "content": reply.message.content,
                "tool_calls": [
                    {"id": call.id, "name": call.name, "arguments": call.arguments_json}
                    for call in reply.message.tool_calls
                ],
            },
        )

    def tool_call(self, raw: AssistantToolCall) -> None:
        if self._sink is None:
            return
        self._called_ns = self._clock()
        self._emit(
            "tool_call",
            "execute_tool",
            {
                "step": self._step,
                "gen_ai.tool.name": raw.name,
                "gen_ai.tool.call.id": raw.id,
                "gen_ai.tool.call.arguments": raw.arguments_json,
            },
        )

    def tool_outcome(self, raw: AssistantToolCall, outcome: ToolOutcome) -> None:
        if self._sink is None:
            return
        observation = outcome.observation
        failure = outcome.failure
        self._emit(
            "tool_outcome",
            "execute_tool",
            {
                "step": self._step,
                "gen_ai.tool.name": raw.name,
                "gen_ai.tool.call.id": raw.id,
                "code": "ok" if observation.get("ok") is True else str(observation["error"]),
                "handler_ran": outcome.handler_ran,
                "duration_ns": self._clock() - self._called_ns,
                "schema_fingerprint": self._offered.get(raw.name),
                "gen_ai.tool.call.result": observation,
                # What the model is never told, written for the operator.
                "failure_stage": None if failure is None else failure.stage,
                "exception.type": None if failure is None else failure.error_type,
                "exception.message": None if failure is None else failure.message,
                "argument_problems": [
                    {"location": list(problem.location), "kind": problem.kind}
                    for problem in outcome.argument_problems
                ],
            },
        )

    def scope_narrowed(self, narrowing: Narrowing) -> None:
        if self._sink is None:
            return
        self._emit(
            "scope_narrowed",
            "execute_tool",
            {
                "step": self._step,
                "gen_ai.tool.name": narrowing.tool,
                "gen_ai.tool.call.id": narrowing.call_id,
                "reason": narrowing.reason,
                "kept": list(narrowing.kept),
                "removed": list(narrowing.removed),
                "ignored": list(narrowing.ignored),
            },
        )

    def run_finished(self, record: RunRecord) -> None:
        if self._sink is None:
            return
        self._emit(
            "run_finished",
            "invoke_agent",
            {
                "stop_reason": str(record.stop_reason),
                "steps": record.steps,
                "answer": record.answer,
                # The class only: a provider's own words may quote part of a key.
                "error.type": None if record.error is None else record.error.split(":")[0],
                "requested": list(record.requested),
                "executed": list(record.executed),
                "refused": [list(pair) for pair in record.refused],
                "duration_ns": self._clock() - self._started_ns,
                "gen_ai.usage.input_tokens": self._tokens[0],
                "gen_ai.usage.output_tokens": self._tokens[1],
            },
        )


def recorder_from_env(environ: Mapping[str, str] | None = None) -> Recorder:
    """A recorder that appends to the file `SOVEREIGN_TRACE` names, or one that records nothing."""
    env = os.environ if environ is None else environ
    path = env.get(TRACE_VARIABLE, "").strip()
    if not path:
        return Recorder(None)
    return Recorder(JsonLinesFile(Path(path), secrets=secrets_from_env(env)))
