"""Partly printed, in chapter 4: the trace format (version 1), what each line holds, how it is read.

A trace is JSON Lines: one event per line, appended as the run goes. Every
event carries the format version (`v`), the id of its run (`run`), its number
within that run (`seq`, from 1), its kind (`event`) and the OpenTelemetry
operation it belongs to (`gen_ai.operation.name`). Field names follow the
OpenTelemetry GenAI semantic conventions where one exists; the others are
ours and plain. `README.md` beside this module describes every field.

Reading is strict on purpose. A trace is evidence: a line that is cut off,
an event with a field this version does not know, a run whose events are out
of order, all stop the reader with the file and the line, instead of being
half-understood. A line written by a newer version of the format is refused
with a message that says so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from sovereign_agent.trace.inputs import MAX_DEPTH, InputError, depth_problem, read_regular_text

__all__ = [
    "FORMAT_VERSION",
    "ModelReplyEvent",
    "ModelRequestEvent",
    "RecordedRun",
    "RunFinishedEvent",
    "RunStartedEvent",
    "ScopeNarrowedEvent",
    "SetupRecord",
    "ToolCallEvent",
    "ToolOutcomeEvent",
    "TraceEvent",
    "TraceFormatError",
    "parse_trace",
    "read_trace",
    "schema_fingerprint",
]

FORMAT_VERSION = 1
EVENT_KINDS = (
    "run_started",
    "model_request",
    "model_reply",
    "tool_call",
    "tool_outcome",
    "scope_narrowed",
    "run_finished",
)


def schema_fingerprint(schema: Mapping[str, Any]) -> str:
    """A name for one exact tool schema: change anything in it, and the name changes.

    The schema is written as canonical JSON (sorted keys, no spaces) so that the
    same schema always gives the same text, then hashed with SHA-256.
    """
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


_EVENT = ConfigDict(extra="forbid", frozen=True, strict=True)
# The values of `sovereign_agent.effects.Effect`, as a trace spells them (a
# test holds the two to each other): strict validation takes no enum from text.
EffectName = Literal["read", "write", "money", "egress", "code"]


class SetupRecord(BaseModel):
    """A dispatcher's `Setup` as written in a trace."""

    model_config = _EVENT

    factory: str = Field(pattern=r"^[\w.]+:[\w.]+$")
    arguments: dict[str, Any]


class _Envelope(BaseModel):
    model_config = _EVENT

    v: Literal[1]
    run: str = Field(min_length=1)
    seq: int = Field(ge=1)
    operation: str = Field(alias="gen_ai.operation.name")


class RunStartedEvent(_Envelope):
    event: Literal["run_started"]
    time_unix_nano: int = Field(ge=0)
    model: str
    request_model: str | None = Field(alias="gen_ai.request.model")
    task: str
    system: str | None = Field(alias="gen_ai.system_instructions")
    max_steps: int
    max_tool_calls: int
    hints: bool
    setup: SetupRecord | None


class ModelRequestEvent(_Envelope):
    event: Literal["model_request"]
    step: int = Field(ge=1)
    messages: int = Field(ge=1)
    tools: dict[str, str]
    definitions: list[dict[str, Any]] = Field(alias="gen_ai.tool.definitions")


class RecordedToolCall(BaseModel):
    model_config = _EVENT

    id: str
    name: str
    arguments: str


class ModelReplyEvent(_Envelope):
    event: Literal["model_reply"]
    step: int = Field(ge=1)
    response_model: str = Field(alias="gen_ai.response.model")
    finish_reasons: list[str] = Field(alias="gen_ai.response.finish_reasons")
    input_tokens: int | None = Field(alias="gen_ai.usage.input_tokens")
    output_tokens: int | None = Field(alias="gen_ai.usage.output_tokens")
    duration_ns: int = Field(ge=0)
    content: str | None
    tool_calls: list[RecordedToolCall]


class ToolCallEvent(_Envelope):
    event: Literal["tool_call"]
    step: int = Field(ge=1)
    tool_name: str = Field(alias="gen_ai.tool.name")
    call_id: str = Field(alias="gen_ai.tool.call.id")
    arguments: str = Field(alias="gen_ai.tool.call.arguments")
    # Optional within version 1: written only when the run's tools came from
    # several sources (chapter 9). Absent means "not recorded", never "local".
    source: str | None = Field(default=None, min_length=1)
    # Optional within version 1 too: the tool's effect classes (chapter 10),
    # written by the recorder SOVEREIGN_TRACE makes. Absent means "not recorded".
    effects: list[EffectName] | None = None


class RecordedProblem(BaseModel):
    model_config = _EVENT

    location: list[str | int]
    kind: str


class ToolOutcomeEvent(_Envelope):
    event: Literal["tool_outcome"]
    step: int = Field(ge=1)
    tool_name: str = Field(alias="gen_ai.tool.name")
    call_id: str = Field(alias="gen_ai.tool.call.id")
    code: str
    handler_ran: bool
    duration_ns: int = Field(ge=0)
    schema_fingerprint: str | None
    observation: dict[str, Any] = Field(alias="gen_ai.tool.call.result")
    failure_stage: Literal["before_write", "handler", "result"] | None
    exception_type: str | None = Field(alias="exception.type")
    exception_message: str | None = Field(alias="exception.message")
    argument_problems: list[RecordedProblem]
    source: str | None = Field(default=None, min_length=1)
    effects: list[EffectName] | None = None


class ScopeNarrowedEvent(_Envelope):
    """A tool narrowed its run (chapter 7): written right after that tool's outcome."""

    event: Literal["scope_narrowed"]
    step: int = Field(ge=1)
    tool_name: str = Field(alias="gen_ai.tool.name")
    call_id: str = Field(alias="gen_ai.tool.call.id")
    reason: str
    kept: list[str]
    removed: list[str]
    ignored: list[str]


class RunFinishedEvent(_Envelope):
    event: Literal["run_finished"]
    stop_reason: str
    steps: int = Field(ge=0)
    answer: str | None
    error_type: str | None = Field(alias="error.type")
    requested: list[str]
    executed: list[str]
    refused: list[Annotated[list[str], Field(min_length=2, max_length=2)]]
    duration_ns: int = Field(ge=0)
    input_tokens: int | None = Field(alias="gen_ai.usage.input_tokens")
    output_tokens: int | None = Field(alias="gen_ai.usage.output_tokens")


TraceEvent = Annotated[
    RunStartedEvent
    | ModelRequestEvent
    | ModelReplyEvent
    | ToolCallEvent
    | ToolOutcomeEvent
    | ScopeNarrowedEvent
    | RunFinishedEvent,
    Field(discriminator="event"),
]
_EVENTS: TypeAdapter[TraceEvent] = TypeAdapter(TraceEvent)

# Which kinds may follow which, within one run: the loop's order, written down.
# Calls run side by side (chapter 13) are a batch: consecutive `tool_call`
# events, then their outcomes in the same order, each perhaps followed by
# the narrowing it made. `_calls_problem` holds the outcomes to their calls.
_NEXT: Mapping[str, frozenset[str]] = {
    "run_started": frozenset({"model_request"}),
    "model_request": frozenset({"model_reply", "run_finished"}),
    "model_reply": frozenset({"tool_call", "run_finished"}),
    "tool_call": frozenset({"tool_call", "tool_outcome"}),
    "tool_outcome": frozenset(
        {"tool_call", "tool_outcome", "scope_narrowed", "model_request", "run_finished"}
    ),
    "scope_narrowed": frozenset({"tool_call", "tool_outcome", "model_request", "run_finished"}),
    "run_finished": frozenset(),
}


def _calls_problem(event: TraceEvent, previous: str, waiting: list[str]) -> str | None:
    """What is wrong with `event` given the calls taken up and not yet answered, or None.

    `waiting` holds their ids in the order they were taken up; it is updated.
    An outcome answers the first call still waiting; a batch is taken up
    whole before any of its outcomes; nothing else happens while one waits.
    """
    if isinstance(event, ToolCallEvent):
        if waiting and previous != "tool_call":
            return "tool_call while an earlier call still waits for its outcome"
        waiting.append(event.call_id)
    elif isinstance(event, ToolOutcomeEvent):
        if not waiting:
            return "tool_outcome answers no call that was taken up"
        if event.call_id != waiting[0]:
            shown = json.dumps(waiting[0])[:40]
            return f"tool_outcome answers {json.dumps(event.call_id)[:40]}, but {shown} waits first"
        waiting.pop(0)
    elif waiting and not isinstance(event, ScopeNarrowedEvent):
        # A narrowing follows the outcome that made it, even within a batch.
        return f"{event.event} while a call still waits for its outcome"
    return None


class TraceFormatError(Exception):
    """A trace that cannot be read as version 1: says where, and what is wrong."""

    def __init__(self, source: str, line: int, message: str) -> None:
        # Line 0 is the file as a whole: one that cannot be opened or read.
        super().__init__(f"{source}, line {line}: {message}" if line else f"{source}: {message}")
        self.source = source
        self.line = line
        self.reason = message


@dataclass(frozen=True)
class RecordedRun:
    """One run's events in the order they were written, with the line each came from."""

    run_id: str
    events: tuple[TraceEvent, ...]
    lines: tuple[int, ...]

    @property
    def complete(self) -> bool:
        """Whether the run reached `run_finished`; a killed process leaves it False."""
        return self.events[-1].event == "run_finished"

    @property
    def started(self) -> RunStartedEvent:
        first = self.events[0]
        assert isinstance(first, RunStartedEvent)  # parse_trace guarantees it
        return first


def _problem(error: ValidationError, kind: str) -> str:
    first = error.errors(include_url=False, include_input=False)[0]
    # The union's tag comes first in the location; the message names the kind already.
    location = first["loc"][1:] if first["loc"][:1] == (kind,) else first["loc"]
    where = ".".join(str(part) for part in location)
    count = error.error_count()
    more = f" (and {count - 1} more)" if count > 1 else ""
    return f"{where}: {first['msg']}{more}"


def parse_event(text: str, *, source: str = "<trace>", line: int = 1) -> TraceEvent:
    """One line of a trace as a typed event, or a TraceFormatError naming what is wrong."""
    try:
        data = json.loads(text)
    except ValueError:
        raise TraceFormatError(source, line, "not a complete JSON object") from None
    except RecursionError:
        # The parser recurses once per level; a line of a few thousand
        # brackets reaches Python's limit before any depth check could run.
        raise TraceFormatError(source, line, f"nested deeper than {MAX_DEPTH} levels") from None
    if not isinstance(data, dict):
        raise TraceFormatError(source, line, "an event is a JSON object")
    # Shallower than the parser's limit, but still deeper than any event:
    # refused here, before validation or a replay's comparison walks it.
    too_deep = depth_problem(data)
    if too_deep is not None:
        raise TraceFormatError(source, line, too_deep)
    version = data.get("v")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise TraceFormatError(
            source,
            line,
            f"written in trace format version {version}; this runtime reads version "
            f"{FORMAT_VERSION} only (a newer sovereign_agent wrote it)",
        )
    if data.get("event") not in EVENT_KINDS:
        shown = json.dumps(data.get("event"))[:40]
        raise TraceFormatError(source, line, f"unknown event kind {shown}")
    try:
        event = _EVENTS.validate_python(data, strict=True)
    except ValidationError as error:
        raise TraceFormatError(
            source, line, f"{data['event']}: {_problem(error, data['event'])}"
        ) from None
    if isinstance(event, ModelRequestEvent):
        # A definition stands for the fingerprint it hashes to; one that hashes
        # to none of those offered was edited, and would explain a change wrongly.
        offered = set(event.tools.values())
        for schema in event.definitions:
            if schema_fingerprint(schema) not in offered:
                raise TraceFormatError(
                    source,
                    line,
                    "model_request: a tool definition matches none of the fingerprints "
                    "offered (the line was edited, or is corrupt)",
                )
    return event


def parse_trace(lines: Iterable[str], *, source: str = "<trace>") -> list[RecordedRun]:
    """The runs in a trace's lines, each checked for order; see `read_trace`."""
    runs: dict[str, tuple[list[TraceEvent], list[int]]] = {}
    waiting: dict[str, list[str]] = {}
    finished: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        text = raw.rstrip("\n")
        if not text.strip():
            raise TraceFormatError(source, number, "an empty line; every line holds one event")
        try:
            event = parse_event(text, source=source, line=number)
        except TraceFormatError as error:
            if raw.endswith("\n"):
                raise
            raise TraceFormatError(
                source, number, f"{error.reason} (the line has no end: the trace was cut off)"
            ) from None
        if event.run in finished:
            raise TraceFormatError(source, number, f"run {event.run} has already finished")
        events, numbers = runs.setdefault(event.run, ([], []))
        if not events and event.event != "run_started":
            raise TraceFormatError(
                source, number, f"run {event.run} starts with {event.event}, not run_started"
            )
        if events and event.event not in _NEXT[events[-1].event]:
            raise TraceFormatError(
                source, number, f"{event.event} cannot follow {events[-1].event} in one run"
            )
        if event.seq != len(events) + 1:
            raise TraceFormatError(
                source, number, f"event {event.seq} of run {event.run}, expected {len(events) + 1}"
            )
        if events:
            problem = _calls_problem(event, events[-1].event, waiting.setdefault(event.run, []))
            if problem is not None:
                raise TraceFormatError(source, number, problem)
        events.append(event)
        numbers.append(number)
        if event.event == "run_finished":
            finished.add(event.run)
    return [
        RecordedRun(run_id, tuple(events), tuple(numbers))
        for run_id, (events, numbers) in runs.items()
    ]


def read_trace(path: Path) -> list[RecordedRun]:
    """Every run in a trace file, in the order their first events appear.

    Runs from several processes may interleave in one file (each appends), so
    events are grouped by run id, and each run's own order is checked. Only a
    regular file is read: a FIFO or a device is refused without waiting.
    """
    try:
        text = read_regular_text(path)
    except InputError as error:
        raise TraceFormatError(error.source, error.line, error.reason) from None
    return parse_trace(text.splitlines(keepends=True), source=str(path))
