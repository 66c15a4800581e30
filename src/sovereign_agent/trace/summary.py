"""Partly printed, in chapter 4: the failure taxonomy, every refusal and stop counted by its layer.

A code tells the model what happened; a class tells the operator whom to ask.
An unknown or hidden tool, invalid arguments and a malformed call are the
model's choice going wrong; a missing authority is the operator's setting; a
failed tool is the shop (or a bug in a handler) saying no; too large a result
is a bound; a budget is the runtime ending the run; a duplicate call id is a
reply no one could answer; a model error is the provider.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from sovereign_agent.trace.format import (
    ModelRequestEvent,
    RecordedRun,
    RunFinishedEvent,
    ToolOutcomeEvent,
)

__all__ = [
    "FAILURE_CLASSES",
    "FailureClass",
    "TraceSummary",
    "failure_class",
    "format_summary",
    "summarize",
]


class FailureClass(StrEnum):
    """Which layer said no: every refusal of a call, and every stop but a final answer."""

    UNKNOWN_TOOL = "unknown or hidden tool"
    INVALID_ARGUMENTS = "invalid arguments"
    MISSING_AUTHORITY = "missing authority"
    TOOL_FAILED = "tool failed"
    RESULT_TOO_LARGE = "result too large"
    MALFORMED_CALL = "malformed call"
    BUDGET = "budget"
    DUPLICATE_CALL_ID = "duplicate call id"
    MODEL_ERROR = "model error"


FAILURE_CLASSES: Mapping[str, FailureClass] = {
    "tool_not_allowed": FailureClass.UNKNOWN_TOOL,
    "invalid_arguments": FailureClass.INVALID_ARGUMENTS,
    "write_authority_required": FailureClass.MISSING_AUTHORITY,
    "tool_failed": FailureClass.TOOL_FAILED,
    "result_too_large": FailureClass.RESULT_TOO_LARGE,
    "malformed_tool_call": FailureClass.MALFORMED_CALL,
    "step_limit": FailureClass.BUDGET,
    "tool_call_limit": FailureClass.BUDGET,
    # Chapter 13's limits on a call: how often and how late it asked (the
    # run's budget), or a handler that outlasted its timeout (the tool).
    "rate_limited": FailureClass.BUDGET,
    "deadline": FailureClass.BUDGET,
    "tool_timeout": FailureClass.TOOL_FAILED,
    # ... and the stops its budgets make (a deadline stop is named as its refusal is).
    "token_budget": FailureClass.BUDGET,
    "money_budget": FailureClass.BUDGET,
    "duplicate_call_id": FailureClass.DUPLICATE_CALL_ID,
    "model_error": FailureClass.MODEL_ERROR,
}


def failure_class(code: str, stage: str | None = None) -> FailureClass | None:
    """The class of a call's code or a run's stop reason; None when nothing failed."""
    if code in ("ok", "final_answer"):
        return None
    if code == "tool_failed" and stage == "before_write":
        # The authority refused before the handler ran: no one authorised the
        # write, which is a different conversation from a tool that broke.
        return FailureClass.MISSING_AUTHORITY
    if code not in FAILURE_CLASSES:
        raise ValueError(f"no failure class for the code {code!r}")
    return FAILURE_CLASSES[code]


# Which classes a call can fall in, and which a run can stop in; a table
# shows "-" where a class cannot happen, so a 0 there is never misread.
CALL_CLASSES = frozenset(FailureClass) - {FailureClass.MODEL_ERROR}
STOP_CLASSES = frozenset(
    {FailureClass.BUDGET, FailureClass.DUPLICATE_CALL_ID, FailureClass.MODEL_ERROR}
)


@dataclass(frozen=True)
class TraceSummary:
    """What a trace's runs came to, counted."""

    runs: int
    complete: int
    requests: int
    calls: int
    ran: int
    calls_by_class: Counter[FailureClass] = field(default_factory=Counter)
    stops_by_class: Counter[FailureClass] = field(default_factory=Counter)
    stop_reasons: Counter[str] = field(default_factory=Counter)
    exceptions: Counter[str] = field(default_factory=Counter)
    # Calls by the source their tool came from; only calls whose event names one.
    sources: Counter[str] = field(default_factory=Counter)
    # Every refusal and stop of chapter 13's limits, by the limit's name.
    limits: Counter[str] = field(default_factory=Counter)


# The codes a call gets from a limit, and the stop reasons a run ends with when
# a limit refuses its next model request (`sovereign_agent.limits`).
LIMIT_CODES = frozenset({"rate_limited", "deadline", "tool_timeout"})
LIMIT_STOP_REASONS = frozenset({"deadline", "token_budget", "money_budget"})
# A trace recorded before those stops had names of their own says `model_error`,
# and the error's class names the limit: it is still counted by that limit.
LIMIT_STOPS: Mapping[str, str] = {
    "DeadlinePassed": "deadline",
    "TokenBudgetSpent": "token_budget",
    "MoneyBudgetSpent": "money_budget",
}


def summarize(runs: Sequence[RecordedRun]) -> TraceSummary:
    """Count every call by class, every stop by reason and class, every failed tool by exception."""
    calls_by_class: Counter[FailureClass] = Counter()
    stops_by_class: Counter[FailureClass] = Counter()
    stop_reasons: Counter[str] = Counter()
    exceptions: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    limits: Counter[str] = Counter()
    requests = calls = ran = 0
    for run in runs:
        for event in run.events:
            if isinstance(event, ModelRequestEvent):
                requests += 1
            elif isinstance(event, ToolOutcomeEvent):
                calls += 1
                ran += event.handler_ran
                if event.source is not None:
                    sources[event.source] += 1
                if event.code in LIMIT_CODES:
                    limits[event.code] += 1
                found = failure_class(event.code, event.failure_stage)
                if found is not None:
                    calls_by_class[found] += 1
                if found is FailureClass.TOOL_FAILED and event.exception_type:
                    exceptions[event.exception_type] += 1
            elif isinstance(event, RunFinishedEvent):
                stop_reasons[event.stop_reason] += 1
                stopped_by = LIMIT_STOPS.get(event.error_type or "")
                if event.stop_reason in LIMIT_STOP_REASONS:
                    limits[event.stop_reason] += 1
                elif event.stop_reason == "model_error" and stopped_by is not None:
                    limits[stopped_by] += 1
                stopped = failure_class(event.stop_reason)
                if stopped is not None:
                    stops_by_class[stopped] += 1
                # A reply reusing an id is never taken up call by call: its
                # calls are counted from the run's refused list instead.
                duplicates = sum(code == "duplicate_call_id" for _, code in event.refused)
                calls += duplicates
                calls_by_class[FailureClass.DUPLICATE_CALL_ID] += duplicates
    return TraceSummary(
        runs=len(runs),
        complete=sum(run.complete for run in runs),
        requests=requests,
        calls=calls,
        ran=ran,
        calls_by_class=calls_by_class,
        stops_by_class=stops_by_class,
        stop_reasons=stop_reasons,
        exceptions=exceptions,
        sources=sources,
        limits=limits,
    )


def format_summary(summary: TraceSummary) -> list[str]:
    """The summary as the command line prints it: a header, the table, the stops."""
    lines = [
        f"{summary.runs} run(s) ({summary.complete} complete), {summary.requests} model "
        f"request(s), {summary.calls} tool call(s) ({summary.ran} ran)",
        f"{'class':<24}{'calls':>7}{'stops':>7}",
    ]
    for kind in FailureClass:
        calls = str(summary.calls_by_class[kind]) if kind in CALL_CLASSES else "-"
        stops = str(summary.stops_by_class[kind]) if kind in STOP_CLASSES else "-"
        lines.append(f"{kind.value:<24}{calls:>7}{stops:>7}")
    reasons = ", ".join(
        f"{reason} {count}" for reason, count in sorted(summary.stop_reasons.items())
    )
    lines.append(f"stops: {reasons or '(none)'}")
    if summary.exceptions:
        kinds = ", ".join(f"{name} {count}" for name, count in sorted(summary.exceptions.items()))
        lines.append(f"tool failed, by exception: {kinds}")
    if summary.sources:
        # Quoted as JSON: a label is the trace's text, not ours.
        by_source = ", ".join(
            f"{json.dumps(name, ensure_ascii=False)} {count}"
            for name, count in sorted(summary.sources.items())
        )
        lines.append(f"calls by source: {by_source}")
    if summary.limits:
        by_limit = ", ".join(f"{name} {count}" for name, count in sorted(summary.limits.items()))
        lines.append(f"limits: {by_limit}")
    incomplete = summary.runs - summary.complete
    if incomplete:
        lines.append(f"{incomplete} run(s) without run_finished: cut off, or their process stopped")
    return lines
