"""Support the book does not print: a recorded run again, offline, against today's runtime.

The model is not asked: a `_ReplayModel` answers each request with the reply
recorded for that step. Everything else is today's code: the dispatcher is
built again by the known setup the trace names (`setups`), or by the function
the person replaying names, the loop runs, every handler
runs for real, and a recorder hands each new event to a checker that compares
it with the recorded one. The first event that differs stops the replay and
is reported: its line in the trace, what was recorded, what happened now.

What is compared is what the runtime decides: which tools were offered (by
schema fingerprint), how many messages were sent, every call and its outcome
(code, whether the handler ran, the observation, the failure's stage and
type), every narrowing of the run's tools (chapter 7), and how the run
ended. Times, token counts and run ids are not.

A tool whose schema changed is a new version of that tool, and a divergence,
even if every recorded call would still get the same answer: the recorded
replies were chosen by a model that read the old schema. A change to a tool's
description only is a note, not a divergence: the dispatcher treats every
request exactly as before, so the replay still proves what it proves. Whether
a model still chooses well after reading the new words is a question for an
evaluation (`sovereign_agent.evaluate`), not for a replay.

A call to a remote tool (chapter 9; its event's `source` is `mcp:...`) is
answered from the trace: the server is not started or asked. The tool
itself is built from today's declaration, so its schema fingerprint, the
allowlist and the argument checks are today's and are compared; what the
server answered is only repeated (`recorded_remote`).

A run whose calls ran side by side (chapter 13) recorded each batch as its
calls, taken up together, then their outcomes. The replay takes up the same
batches, since the loop forms them from the tools' declared effect classes,
and answers each batch's calls one after another: it compares what the
calls came to, never how long they took.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sovereign_agent.limits import (
    DeadlinePassed,
    MoneyBudgetSpent,
    RunLimitReached,
    TokenBudgetSpent,
)
from sovereign_agent.loop import run_task
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelReply,
    ModelResponseError,
    Usage,
)
from sovereign_agent.tools import Dispatcher, ToolCall, ToolFailure, ToolOutcome
from sovereign_agent.trace.format import (
    ModelReplyEvent,
    ModelRequestEvent,
    RecordedRun,
    RunFinishedEvent,
    RunStartedEvent,
    ScopeNarrowedEvent,
    SetupRecord,
    ToolCallEvent,
    ToolOutcomeEvent,
    TraceEvent,
    parse_event,
    schema_fingerprint,
)
from sovereign_agent.trace.recorded_remote import remote_sources, with_recorded_remote
from sovereign_agent.trace.recorder import Recorder, encode_event
from sovereign_agent.trace.setups import (
    KNOWN_SETUPS,
    ReplaySetupError,
    confined_arguments,
    known_setup,
)

__all__ = ["Divergence", "ReplayReport", "ReplaySetupError", "load_factory", "replay_run"]

_SHOWN_CHARS = 160


@dataclass(frozen=True)
class Divergence:
    """The first recorded event that today's runtime did not repeat."""

    line: int
    seq: int
    kind: str
    what: str
    recorded: str
    now: str
    why: str = ""


@dataclass(frozen=True)
class ReplayReport:
    """One recorded run replayed: how many events matched, the divergence if any, and notes."""

    run_id: str
    lines: tuple[int, int]
    matched: int
    divergence: Divergence | None
    notes: tuple[str, ...] = ()


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def load_factory(reference: str) -> Callable[..., Any]:
    """The function `package.module:function` or `path/to/file.py:function` names.

    For references the person replaying (or a suite's author) wrote: this
    imports and runs code. A trace's setup is never passed here; replay looks
    it up in `setups.KNOWN_SETUPS` instead.
    """
    where, _, name = reference.rpartition(":")
    if not where or not name:
        raise ReplaySetupError(f"{reference!r} is not module:function or path/to/file.py:function")
    try:
        if where.endswith(".py"):
            path = Path(where)
            spec = importlib.util.spec_from_file_location(f"_replay_setup_{path.stem}", path)
            if spec is None or spec.loader is None or not path.is_file():
                raise ReplaySetupError(f"no Python file at {where}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except (ImportError, SyntaxError) as error:
        raise ReplaySetupError(f"cannot import {where}: {error}") from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ReplaySetupError(f"{where} has no function {name!r}")
    return factory  # type: ignore[no-any-return]


def _dispatcher_for(
    setup: SetupRecord | None,
    override: str | Callable[..., Dispatcher] | None = None,
    *,
    root: Path | None = None,
) -> Dispatcher:
    """The dispatcher a recorded run started with, built again.

    The trace's setup names a known setup (`setups.KNOWN_SETUPS`); nothing
    else in it is code. `override` (the --setup option, or a function from
    Python) is the factory to call instead, chosen by the person replaying;
    it gets the recorded arguments. Whenever the recorded name is a known
    setup, its arguments are checked and its folders resolved under `root`
    first, whoever builds the tools: a trace's folder is read only under a
    root the person replaying gave.
    """
    arguments: Mapping[str, Any] = {}
    if setup is not None:
        arguments = setup.arguments
        if setup.factory in KNOWN_SETUPS or override is None:
            known = known_setup(setup.factory)
            arguments = confined_arguments(setup.factory, known, setup.arguments, root)
    if callable(override):
        factory: Callable[..., Any] = override
    elif override is not None:
        factory = load_factory(override)
    elif setup is None:
        raise ReplaySetupError(
            "the trace records no setup (its dispatcher did not say how it was built, or it "
            "had a before_write authority, which is code, not data); pass --setup "
            "module:function naming a function that builds the same tools"
        )
    else:
        factory = KNOWN_SETUPS[setup.factory].factory()
    # A known setup's arguments come from the trace: whatever they make the
    # runtime's factory raise is a setup that cannot be built, said in one
    # line. The replayer's own function may raise as it likes; a mistake of
    # the three kinds a wrong argument causes is said in one line as well.
    refused = Exception if override is None else (TypeError, ValueError, KeyError)
    try:
        dispatcher = factory(**arguments)
    except refused as error:
        raise ReplaySetupError(
            f"the setup could not build the tools: {type(error).__name__}: {_shown(str(error))}"
        ) from None
    # The loop asks a dispatcher for two things; a copy of the class (a
    # learner's, say) that has both serves as well as the runtime's own.
    if not all(callable(getattr(dispatcher, name, None)) for name in ("schemas", "attempt")):
        raise ReplaySetupError(
            f"the setup returned {type(dispatcher).__name__}, which is not a dispatcher"
        )
    return dispatcher  # type: ignore[no-any-return]


# The stops a run's limits make (chapter 13), by the stop reason they record.
LIMIT_STOPS: Mapping[str, type[RunLimitReached]] = {
    kind.limit: kind for kind in (TokenBudgetSpent, MoneyBudgetSpent, DeadlinePassed)
}


# The codes a call gets from a limit (chapter 13): from the clock, a bucket or a timeout.
LIMIT_CODES = frozenset({"rate_limited", "deadline", "tool_timeout"})


class _LimitsAsRecorded(Dispatcher):
    """A dispatcher that answers from the trace each call a limit answered when it was recorded.

    Whether a call was rate limited, late or too slow depended on the recorded
    run's clock and buckets, which the trace does not hold: replayed without
    them, the call would run and the replay would diverge for no fault of the
    tools. Every other call goes through the dispatcher's checks and runs.
    """

    def __init__(self, dispatcher: Dispatcher, answers: Mapping[str, ToolOutcome]) -> None:
        super().__init__(
            dispatcher.tools.values(),
            allowed=dispatcher.allowed,
            before_write=dispatcher._before_write,
            max_result_bytes=dispatcher.max_result_bytes,
            hints=dispatcher.hints,
            setup=dispatcher.setup,
        )
        self._answers = answers

    def scoped(self, names: Iterable[str]) -> Dispatcher:
        return _LimitsAsRecorded(super().scoped(names), self._answers)

    def attempt(self, call: ToolCall) -> ToolOutcome:
        answer = self._answers.get(call.id)
        return super().attempt(call) if answer is None else answer


class _InBatches(Dispatcher):
    """A dispatcher that takes up a turn's reads together, as the recorded run's did.

    Its batches run one call after another, through the dispatcher it wraps:
    the loop forms the same batches and writes the same events, and a replay
    compares outcomes, not times.
    """

    def __init__(self, dispatcher: Dispatcher) -> None:
        super().__init__(
            dispatcher.tools.values(),
            allowed=dispatcher.allowed,
            before_write=dispatcher._before_write,
            max_result_bytes=dispatcher.max_result_bytes,
            hints=dispatcher.hints,
            setup=dispatcher.setup,
        )
        self._inner = dispatcher

    def scoped(self, names: Iterable[str]) -> Dispatcher:
        return _InBatches(self._inner.scoped(names))

    def attempt(self, call: ToolCall) -> ToolOutcome:
        return self._inner.attempt(call)

    def attempt_turn(
        self, calls: Sequence[ToolCall], *, answered: Callable[[str], None] | None = None
    ) -> list[ToolOutcome]:
        outcomes = []
        for call in calls:
            outcomes.append(self._inner.attempt(call))
            if answered is not None:
                answered(call.id)
        return outcomes


def batches_of(run: RecordedRun) -> int:
    """How many batches of calls `run` took up together: a tool_call right after a tool_call."""
    events = run.events
    return sum(
        events[index].event == "tool_call"
        and events[index - 1].event == "tool_call"
        and (index < 2 or events[index - 2].event != "tool_call")
        for index in range(1, len(events))
    )


def _limit_answers(run: RecordedRun) -> dict[str, ToolOutcome]:
    """The outcome of every call a limit answered in `run`, by call id (unique in a run)."""
    answers: dict[str, ToolOutcome] = {}
    for event in run.events:
        if isinstance(event, ToolOutcomeEvent) and event.code in LIMIT_CODES:
            failure = None
            if event.failure_stage is not None:
                failure = ToolFailure(
                    event.failure_stage, event.exception_type or "", event.exception_message or ""
                )
            answers[event.call_id] = ToolOutcome(
                event.observation, handler_ran=event.handler_ran, failure=failure
            )
    return answers


class _ReplayModel:
    """Answers each step with the reply recorded for it; past the last one, what stopped the run.

    That is a model error, or, for a run its limits stopped, the same limit:
    the replay has no limits of its own (the trace does not record them), so
    the stop is taken from the trace, as a remote call's outcome is.
    """

    def __init__(
        self,
        started: RunStartedEvent,
        replies: Sequence[ModelReplyEvent],
        stopped_by: type[RunLimitReached] | None = None,
    ) -> None:
        self._label = f"replay of {started.model}"
        self.model = started.request_model
        self._replies = list(replies)
        self._stopped_by = stopped_by
        self.asked = 0

    @property
    def label(self) -> str:
        return self._label

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        self.asked += 1
        if self.asked > len(self._replies):
            if self._stopped_by is not None:
                raise self._stopped_by("as the trace recorded; the replay applies no limits")
            # Where the recorded run met a model error, so does the replay.
            raise ModelResponseError(f"the trace holds no reply for step {self.asked}")
        recorded = self._replies[self.asked - 1]
        usage = None
        if recorded.input_tokens is not None and recorded.output_tokens is not None:
            usage = Usage(input_tokens=recorded.input_tokens, output_tokens=recorded.output_tokens)
        message = AssistantMessage(
            content=recorded.content,
            tool_calls=tuple(
                AssistantToolCall(id=call.id, name=call.name, arguments_json=call.arguments)
                for call in recorded.tool_calls
            ),
        )
        return ModelReply(
            message=message,
            model=recorded.response_model,
            finish_reason=recorded.finish_reasons[0] if recorded.finish_reasons else None,
            usage=usage,
        )


class _Diverged(Exception):
    """Raised by the checker inside the loop, to stop a replay at its first divergence."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.what)
        self.divergence = divergence


def schema_difference(recorded: Any, now: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place two schemas differ, as (path, recorded value, value now), or None."""
    if isinstance(recorded, dict) and isinstance(now, dict):
        for key in sorted(recorded.keys() | now.keys()):
            where = f"{path}.{key}" if path else key
            if key not in recorded or key not in now:
                return where, recorded.get(key, "(absent)"), now.get(key, "(absent)")
            found = schema_difference(recorded[key], now[key], where)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(now, list) and len(recorded) == len(now):
        for index, (old, new) in enumerate(zip(recorded, now, strict=True)):
            found = schema_difference(old, new, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    return None if recorded == now else (path, recorded, now)


def _without_description(schema: Mapping[str, Any]) -> dict[str, Any]:
    function = {key: value for key, value in schema["function"].items() if key != "description"}
    return {**schema, "function": function}


@dataclass
class _Checker:
    """The sink of the replay's recorder: each new event against the recorded one, in order."""

    run: RecordedRun
    position: int = 0
    notes: list[str] = field(default_factory=list)
    recorded_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    schemas_now: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Fingerprints that differ only in the description, recorded -> now.
    renamed: dict[str, str] = field(default_factory=dict)

    def __call__(self, event: dict[str, Any]) -> None:
        now = parse_event(encode_event(event).decode("utf-8"))
        if self.position >= len(self.run.events):
            last = self.run.events[-1]
            raise _Diverged(
                Divergence(
                    self.run.lines[-1],
                    last.seq,
                    last.event,
                    "event",
                    "(the run had ended)",
                    now.event,
                )
            )
        recorded = self.run.events[self.position]
        line = self.run.lines[self.position]
        self.position += 1
        if recorded.event != now.event:
            self._diverge(line, recorded, "event", recorded.event, now.event)
        self._compare(line, recorded, now)

    def _diverge(
        self, line: int, recorded: TraceEvent, what: str, old: Any, new: Any, why: str = ""
    ) -> None:
        raise _Diverged(
            Divergence(line, recorded.seq, recorded.event, what, _shown(old), _shown(new), why)
        )

    def _same(self, line: int, recorded: TraceEvent, what: str, old: Any, new: Any) -> None:
        if old != new:
            self._diverge(line, recorded, what, old, new)

    def _compare(self, line: int, recorded: TraceEvent, now: TraceEvent) -> None:
        if isinstance(recorded, RunStartedEvent) and isinstance(now, RunStartedEvent):
            self._same(line, recorded, "hints", recorded.hints, now.hints)
        elif isinstance(recorded, ModelRequestEvent) and isinstance(now, ModelRequestEvent):
            self._same(line, recorded, "step", recorded.step, now.step)
            self._same(line, recorded, "messages", recorded.messages, now.messages)
            self._compare_tools(line, recorded, now)
        elif isinstance(recorded, ToolCallEvent) and isinstance(now, ToolCallEvent):
            self._same(line, recorded, "gen_ai.tool.name", recorded.tool_name, now.tool_name)
            self._same(line, recorded, "gen_ai.tool.call.id", recorded.call_id, now.call_id)
            self._same(
                line, recorded, "gen_ai.tool.call.arguments", recorded.arguments, now.arguments
            )
            if recorded.source is not None:
                self._same(line, recorded, "source", recorded.source, now.source)
            if recorded.effects is not None:
                # A tool that can now do more (or less) than when it was recorded
                # is not the tool the run used: a divergence, as a new schema is.
                self._same(line, recorded, "effects", recorded.effects, now.effects)
        elif isinstance(recorded, ToolOutcomeEvent) and isinstance(now, ToolOutcomeEvent):
            self._compare_outcome(line, recorded, now)
        elif isinstance(recorded, ScopeNarrowedEvent) and isinstance(now, ScopeNarrowedEvent):
            self._same(line, recorded, "gen_ai.tool.call.id", recorded.call_id, now.call_id)
            for name in ("reason", "kept", "removed", "ignored"):
                self._same(line, recorded, name, getattr(recorded, name), getattr(now, name))
        elif isinstance(recorded, RunFinishedEvent) and isinstance(now, RunFinishedEvent):
            for name in ("stop_reason", "steps", "answer", "requested", "executed", "refused"):
                self._same(line, recorded, name, getattr(recorded, name), getattr(now, name))

    def _compare_tools(
        self, line: int, recorded: ModelRequestEvent, now: ModelRequestEvent
    ) -> None:
        for schema in recorded.definitions:
            self.recorded_schemas[schema_fingerprint(schema)] = schema
        for schema in now.definitions:
            self.schemas_now[schema_fingerprint(schema)] = schema
        self._same(line, recorded, "tools offered", sorted(recorded.tools), sorted(now.tools))
        for name, old in recorded.tools.items():
            self._compare_fingerprint(line, recorded, name, old, now.tools[name])

    def _compare_fingerprint(
        self, line: int, recorded: TraceEvent, name: str, old: str | None, new: str | None
    ) -> None:
        if old == new or (old is not None and self.renamed.get(old) == new):
            return
        before = self.recorded_schemas.get(old or "")
        after = self.schemas_now.get(new or "")
        if before is None or after is None:
            self._diverge(
                line,
                recorded,
                f"schema of {name}",
                old,
                new,
                "a changed schema is a new version of the tool",
            )
        assert before is not None and after is not None
        difference = schema_difference(_without_description(before), _without_description(after))
        if difference is None:
            assert old is not None and new is not None
            self.renamed[old] = new
            was = _shown(before["function"].get("description"))
            is_now = _shown(after["function"].get("description"))
            self.notes.append(
                f"line {line}: only the description of {name} changed (was {was}, now "
                f"{is_now}): every recorded request means what it meant"
            )
            return
        path, was, is_now = difference
        self._diverge(
            line,
            recorded,
            f"schema of {name}: {path}",
            was,
            is_now,
            "a changed schema is a new version of the tool: "
            "the recorded replies answered the old one",
        )

    def _compare_outcome(
        self, line: int, recorded: ToolOutcomeEvent, now: ToolOutcomeEvent
    ) -> None:
        self._same(line, recorded, "code", recorded.code, now.code)
        self._same(line, recorded, "handler_ran", recorded.handler_ran, now.handler_ran)
        self._same(line, recorded, "gen_ai.tool.call.result", recorded.observation, now.observation)
        self._same(line, recorded, "failure_stage", recorded.failure_stage, now.failure_stage)
        self._same(line, recorded, "exception.type", recorded.exception_type, now.exception_type)
        self._same(
            line, recorded, "argument_problems", recorded.argument_problems, now.argument_problems
        )
        if recorded.source is not None:
            self._same(line, recorded, "source", recorded.source, now.source)
        if recorded.effects is not None:
            self._same(line, recorded, "effects", recorded.effects, now.effects)
        self._compare_fingerprint(
            line, recorded, recorded.tool_name, recorded.schema_fingerprint, now.schema_fingerprint
        )
        if recorded.exception_message != now.exception_message:
            self.notes.append(
                f"line {line}: the failure's message changed "
                f"(was {_shown(recorded.exception_message)}, now {_shown(now.exception_message)})"
            )


def replay_run(
    run: RecordedRun,
    *,
    setup: str | Callable[..., Dispatcher] | None = None,
    root: Path | None = None,
) -> ReplayReport:
    """Replay one complete recorded run; `setup` overrides its setup, `root` holds its folders.

    See `_dispatcher_for`: a trace's setup is only ever a known one, and a
    folder it records is read only under `root`.

    Raises ReplaySetupError when the tools cannot be built again; a
    difference in behaviour is never an exception, it is the report's divergence.
    """
    if not run.complete:
        raise ReplaySetupError(
            f"run {run.run_id} (line {run.lines[0]}) has no run_finished event: the trace "
            "was cut off or its process stopped, and an unfinished run cannot be replayed"
        )
    started = run.started
    dispatcher = _dispatcher_for(started.setup, setup, root=root)
    # The remote part is never rebuilt by connecting: its calls are answered
    # from the trace, through today's declarations (see `recorded_remote`).
    dispatcher, sources = with_recorded_remote(run, dispatcher)
    replies = [event for event in run.events if isinstance(event, ModelReplyEvent)]
    checker = _Checker(run)
    finished = run.events[-1]
    stopped_by = (
        LIMIT_STOPS.get(finished.stop_reason) if isinstance(finished, RunFinishedEvent) else None
    )
    limited = _limit_answers(run)
    if limited:
        dispatcher = _LimitsAsRecorded(dispatcher, limited)
        checker.notes.append(
            f"{len(limited)} call(s) a limit answered (rate_limited, deadline, tool_timeout) "
            "were answered from the trace: the replay applies no limits"
        )
    if stopped_by is not None:
        checker.notes.append(
            f"the run stopped {stopped_by.limit}, a limit the trace does not record: "
            "its stop was taken from the trace, not reached again"
        )
    batches = batches_of(run)
    if batches and isinstance(dispatcher, Dispatcher):
        dispatcher = _InBatches(dispatcher)
        checker.notes.append(
            f"{batches} batch(es) of calls ran side by side when recorded; replayed as batches, "
            "one call after another: their outcomes are compared, not their times"
        )
    remote = remote_sources(run)
    if remote:
        checker.notes.append(
            f"calls to {', '.join(remote)} were answered from the trace (recorded outcomes): "
            "the server was not asked, so its behaviour is not re-checked"
        )
    span = (run.lines[0], run.lines[-1])
    try:
        run_task(
            _ReplayModel(started, replies, stopped_by),
            dispatcher,
            started.task,
            max_steps=started.max_steps,
            max_tool_calls=started.max_tool_calls,
            system=started.system,
            recorder=Recorder(checker, sources=sources, effects=True),
        )
    except _Diverged as stop:
        matched = stop.divergence.seq - 1
        return ReplayReport(run.run_id, span, matched, stop.divergence, tuple(checker.notes))
    except Exception as error:
        # Whatever today's code raised is what happened now: a defect, or a
        # setup refused by check_setup, is reported where the replay reached.
        position = min(checker.position, len(run.events) - 1)
        recorded = run.events[position]
        divergence = Divergence(
            run.lines[position],
            recorded.seq,
            recorded.event,
            "exception",
            "(nothing raised)",
            f"{type(error).__name__}: {error}",
            "today's code raised where the recorded run went on",
        )
        return ReplayReport(run.run_id, span, position, divergence, tuple(checker.notes))
    return ReplayReport(run.run_id, span, checker.position, None, tuple(checker.notes))
