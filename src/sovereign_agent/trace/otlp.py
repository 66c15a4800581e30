"""Support the book does not print: a trace as OpenTelemetry spans, in OTLP's JSON encoding.

Our trace is a file of flat events; the tools an operator already runs
(Jaeger, Grafana Tempo, any OpenTelemetry collector) read spans. This module
writes each recorded run as one OpenTelemetry trace, in the JSON form of an
OTLP `ExportTraceServiceRequest`:

- a run span, `invoke_agent`, the root;
- a span per model call, `chat {model}`, child of the run span;
- a span per tool execution, `execute_tool {tool}`, child of the run span
  (the GenAI conventions' shape: the model proposes, the agent executes),
  naming the source the call went to when the trace recorded one (chapter 9:
  a remote server's label, `sovereign_agent.source`);
  a narrowing of the run's tools is an event on the span of the call that
  asked for it.

Attribute names are those of the OpenTelemetry GenAI semantic conventions
where one exists (the list we write is pinned in `README.md`), ours under
`sovereign_agent.` otherwise. Content (the task, the system message, the
model's words, tool arguments and results, exception messages) is written
only when asked for (`content=True`): the conventions make it opt-in for the
same reason we do, it is the part of a trace most likely to hold what must not
travel. Without it, a span says what happened and how long it took, never what
was said.

Ids are derived from the run's content with SHA-256, so the same trace always
exports the same bytes, and an export can be compared with an earlier one.
Times: the run span starts at the recorded start and lasts the recorded
duration; the trace records each call's duration but not the gaps between
calls (the loop's own work, microseconds), so child spans are laid end to end
from the run's start, each with its exact duration. Calls run side by side
(a batch: several `tool_call` events before their outcomes) all start where
the batch starts, each lasting its own duration, and the next span starts
where the longest of them ends.

The JSON is written by hand, without the OpenTelemetry SDK: the runtime depends
on Pydantic only. The tests parse it with the official schema (the
`opentelemetry-proto` package).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from sovereign_agent.trace.format import (
    FORMAT_VERSION,
    ModelReplyEvent,
    ModelRequestEvent,
    RecordedRun,
    RunFinishedEvent,
    ScopeNarrowedEvent,
    ToolCallEvent,
    ToolOutcomeEvent,
)

__all__ = ["SCOPE_NAME", "export_runs", "span_id", "trace_id"]

SCOPE_NAME = "sovereign_agent.trace"
SERVICE_NAME = "sovereign_agent"

# OTLP's SpanKind and StatusCode, as the JSON encoding writes enums: integers.
KIND_INTERNAL = 1
KIND_CLIENT = 3
STATUS_UNSET = 0
STATUS_ERROR = 2


def _run_digest(run: RecordedRun) -> bytes:
    """A digest of everything the run recorded: equal runs, equal ids; any change, new ids."""
    events = [event.model_dump(mode="json", by_alias=True) for event in run.events]
    canonical = json.dumps(events, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).digest()


def _nonzero(raw: bytes) -> bytes:
    # An all-zero id is invalid in OTLP; one SHA-256 in 2**64 starts with
    # eight zero bytes, and then the last byte is set instead.
    return raw if any(raw) else raw[:-1] + b"\x01"


def trace_id(run: RecordedRun) -> str:
    """The run's trace id: 16 bytes from its content, as OTLP JSON writes it (hex)."""
    return _nonzero(hashlib.sha256(b"trace\x00" + _run_digest(run)).digest()[:16]).hex()


def span_id(run: RecordedRun, seq: int) -> str:
    """The id of the span that starts at event `seq` of the run: 8 bytes, hex."""
    seed = b"span\x00" + _run_digest(run) + seq.to_bytes(8, "big")
    return _nonzero(hashlib.sha256(seed).digest()[:8]).hex()


def _value(value: str | int | bool | Sequence[str]) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        # int64 is written as a string in OTLP JSON: JavaScript loses digits past 2**53.
        return {"intValue": str(value)}
    if isinstance(value, str):
        return {"stringValue": value}
    return {"arrayValue": {"values": [{"stringValue": item} for item in value]}}


def _attributes(pairs: dict[str, str | int | bool | Sequence[str] | None]) -> list[dict[str, Any]]:
    """OTLP key-value pairs, in the order given, leaving out what the trace did not record."""
    return [
        {"key": key, "value": _value(value)} for key, value in pairs.items() if value is not None
    ]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _span(
    run: RecordedRun,
    seq: int,
    *,
    parent: str,
    name: str,
    kind: int,
    start: int,
    end: int,
    attributes: dict[str, str | int | bool | Sequence[str] | None],
    error: str | None = None,
    events: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": trace_id(run),
        "spanId": span_id(run, seq),
        "parentSpanId": parent,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": _attributes(attributes),
    }
    if events:
        span["events"] = list(events)
    span["status"] = (
        {"code": STATUS_ERROR, "message": error} if error is not None else {"code": STATUS_UNSET}
    )
    return span


def _output_message(reply: ModelReplyEvent) -> str:
    """The reply in the conventions' shape for `gen_ai.output.messages`."""
    parts: list[dict[str, Any]] = []
    if reply.content is not None:
        parts.append({"type": "text", "content": reply.content})
    parts += [
        {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
        for call in reply.tool_calls
    ]
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if reply.finish_reasons:
        message["finish_reason"] = reply.finish_reasons[0]
    return _json([message])


def run_spans(run: RecordedRun, *, content: bool = False) -> list[dict[str, Any]]:
    """The spans of one run: the run span first, then its children in the loop's order."""
    started = run.started
    root = span_id(run, started.seq)
    begin = started.time_unix_nano
    cursor = begin
    children: list[dict[str, Any]] = []
    asked: ModelRequestEvent | None = None
    # The calls taken up and not yet answered, by id; a batch's start and end.
    waiting: dict[str, ToolCallEvent] = {}
    batch_start = batch_end = cursor
    last_tool: dict[str, Any] | None = None
    finished: RunFinishedEvent | None = None
    for event in run.events[1:]:
        if isinstance(event, ModelRequestEvent):
            asked = event
        elif isinstance(event, ModelReplyEvent):
            assert asked is not None  # the reader holds every reply right after its request
            model = started.request_model or event.response_model
            attributes: dict[str, str | int | bool | Sequence[str] | None] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": started.request_model,
                "gen_ai.response.model": event.response_model,
                "gen_ai.response.finish_reasons": event.finish_reasons,
                "gen_ai.usage.input_tokens": event.input_tokens,
                "gen_ai.usage.output_tokens": event.output_tokens,
                "sovereign_agent.step": event.step,
                "sovereign_agent.messages": asked.messages,
                "sovereign_agent.tools": sorted(asked.tools),
            }
            if content:
                attributes["gen_ai.output.messages"] = _output_message(event)
                if asked.definitions:
                    attributes["gen_ai.tool.definitions"] = _json(asked.definitions)
            children.append(
                _span(
                    run,
                    asked.seq,
                    parent=root,
                    name=f"chat {model}",
                    kind=KIND_CLIENT,
                    start=cursor,
                    end=cursor + event.duration_ns,
                    attributes=attributes,
                )
            )
            cursor += event.duration_ns
            asked = None
        elif isinstance(event, ToolCallEvent):
            if not waiting:
                batch_start = batch_end = cursor
            waiting[event.call_id] = event
        elif isinstance(event, ToolOutcomeEvent):
            # The reader holds every outcome to the first call still waiting.
            called = waiting.pop(event.call_id, None)
            start = batch_start
            batch_end = max(batch_end, start + event.duration_ns)
            failed = event.code != "ok"
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": event.tool_name,
                "gen_ai.tool.call.id": event.call_id,
                "gen_ai.tool.type": "function",
                "error.type": (event.exception_type or event.code) if failed else None,
                "sovereign_agent.step": event.step,
                "sovereign_agent.code": event.code,
                "sovereign_agent.handler_ran": event.handler_ran,
                "sovereign_agent.schema_fingerprint": event.schema_fingerprint,
                "sovereign_agent.failure_stage": event.failure_stage,
                # Where the call went (chapter 9): the joined toolset's label,
                # "shop" or "mcp:supplier", written only when the trace has it.
                # No OpenTelemetry name fits, so it is ours: the MCP conventions'
                # `mcp.*` attributes describe the protocol exchange (method,
                # session, protocol version), none names the server; `server.address`
                # is a network address, which a server on stdio has not; and
                # `service.peer.name` must equal the peer's own `service.name`,
                # while this is the shop's name for the server, not the server's.
                "sovereign_agent.source": event.source or (called.source if called else None),
            }
            if content:
                attributes["gen_ai.tool.call.arguments"] = called.arguments if called else None
                attributes["gen_ai.tool.call.result"] = _json(event.observation)
            span_events = []
            if event.exception_type is not None:
                exception: dict[str, str | int | bool | Sequence[str] | None] = {
                    "exception.type": event.exception_type,
                    "exception.message": event.exception_message if content else None,
                }
                span_events.append(
                    {
                        "timeUnixNano": str(start + event.duration_ns),
                        "name": "exception",
                        "attributes": _attributes(exception),
                    }
                )
            last_tool = _span(
                run,
                called.seq if called is not None else event.seq,
                parent=root,
                name=f"execute_tool {event.tool_name}",
                kind=KIND_INTERNAL,
                start=start,
                end=start + event.duration_ns,
                attributes=attributes,
                error=event.code if failed else None,
                events=span_events,
            )
            children.append(last_tool)
            if not waiting:
                cursor = batch_end
        elif isinstance(event, ScopeNarrowedEvent) and last_tool is not None:
            narrowed: dict[str, str | int | bool | Sequence[str] | None] = {
                "sovereign_agent.reason": event.reason,
                "sovereign_agent.kept": event.kept,
                "sovereign_agent.removed": event.removed,
                "sovereign_agent.ignored": event.ignored,
            }
            last_tool.setdefault("events", []).append(
                {
                    "timeUnixNano": last_tool["endTimeUnixNano"],
                    "name": "sovereign_agent.scope_narrowed",
                    "attributes": _attributes(narrowed),
                }
            )
        elif isinstance(event, RunFinishedEvent):
            finished = event
    end = begin + finished.duration_ns if finished is not None else cursor
    if asked is not None:
        # A request the model never answered: the span lasts until the run stopped.
        children.append(
            _span(
                run,
                asked.seq,
                parent=root,
                name=f"chat {started.request_model or started.model}",
                kind=KIND_CLIENT,
                start=cursor,
                end=max(cursor, end),
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": started.request_model,
                    "error.type": finished.error_type if finished else None,
                    "sovereign_agent.step": asked.step,
                    "sovereign_agent.messages": asked.messages,
                },
                error="no reply",
            )
        )
    stop = finished.stop_reason if finished is not None else None
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.request.model": started.request_model,
        "gen_ai.usage.input_tokens": finished.input_tokens if finished else None,
        "gen_ai.usage.output_tokens": finished.output_tokens if finished else None,
        "error.type": (finished.error_type or stop)
        if finished is not None and stop != "final_answer"
        else None,
        "sovereign_agent.run.id": run.run_id,
        "sovereign_agent.model": started.model,
        "sovereign_agent.stop_reason": stop,
        "sovereign_agent.steps": finished.steps if finished else None,
        "sovereign_agent.max_steps": started.max_steps,
        "sovereign_agent.max_tool_calls": started.max_tool_calls,
        "sovereign_agent.setup": started.setup.factory if started.setup else None,
    }
    if content:
        attributes["gen_ai.system_instructions"] = (
            None if started.system is None else _json([{"type": "text", "content": started.system}])
        )
        attributes["gen_ai.input.messages"] = _json(
            [{"role": "user", "parts": [{"type": "text", "content": started.task}]}]
        )
        if finished is not None and finished.answer is not None:
            attributes["gen_ai.output.messages"] = _json(
                [{"role": "assistant", "parts": [{"type": "text", "content": finished.answer}]}]
            )
    if finished is None:
        error: str | None = "unfinished: no run_finished in the trace"
    else:
        error = None if stop == "final_answer" else stop
    run_span = _span(
        run,
        started.seq,
        parent="",
        name="invoke_agent",
        kind=KIND_INTERNAL,
        start=begin,
        end=max(end, begin),
        attributes=attributes,
        error=error,
    )
    return [run_span, *children]


def export_runs(runs: Sequence[RecordedRun], *, content: bool = False) -> dict[str, Any]:
    """The runs as one OTLP `ExportTraceServiceRequest`, in its JSON encoding."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes({"service.name": SERVICE_NAME})},
                "scopeSpans": [
                    {
                        "scope": {"name": SCOPE_NAME, "version": str(FORMAT_VERSION)},
                        "spans": [span for run in runs for span in run_spans(run, content=content)],
                    }
                ],
            }
        ]
    }
