"""Reading what a submission's door sent back: a trace's events, failures found, pass rates.

Each reader either gives the value a check compares or a sentence saying what
is wrong with the answer, so that a check's feedback never quotes the
submission's text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bookproof.grade.questions import same
from sovereign_agent.trace import TraceFormatError, parse_trace

# The fields of an event that differ between two runs of the same thing.
VOLATILE = frozenset({"run", "time_unix_nano", "duration_ns"})
# The longest trace or suite text the grader reads back or reads in.
TEXT_LIMIT = 256 * 1024
UNREADABLE = "The door did not return a trace as text (did record_run or run_task raise?)."


def events(text: Any) -> list[dict[str, Any]] | str:
    """A trace text of exactly one complete run, as its events; or what is wrong with it."""
    if not isinstance(text, str) or len(text) > TEXT_LIMIT:
        return UNREADABLE
    try:
        runs = parse_trace(text.splitlines(keepends=True))
    except TraceFormatError as error:
        return f"Your run's trace cannot be read as trace format version 1 (line {error.line})."
    except RecursionError:
        # A line nested deeper than any event: JSON's parser gives up before the format's.
        return "Your run's trace cannot be read as trace format version 1."
    if len(runs) != 1 or not runs[0].complete:
        return "Your run's trace should hold exactly one run, from run_started to run_finished."
    return [json.loads(line) for line in text.splitlines()]


def steady(event: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in event.items() if key not in VOLATILE}


def differs(wanted: Sequence[Mapping[str, Any]], got: Sequence[Mapping[str, Any]]) -> str | None:
    """Where a submission's events part from the runtime's, ignoring ids, clocks and durations."""
    for expected, event in zip(wanted, got, strict=False):
        if not same(steady(expected), steady(event)):
            return (
                f"Event {expected['seq']} ({expected['event']}) is not what chapter 4's "
                "run_task writes at that point."
            )
    if len(wanted) != len(got):
        return f"Your run wrote {len(got)} events where chapter 4's run_task writes {len(wanted)}."
    return None


FAILURE_KEYS = ("line", "run", "tool", "call_id", "exception", "message")


def failed_handlers(
    lines: Sequence[str], stages: tuple[str, ...] = ("handler", "result")
) -> list[dict[str, Any]]:
    """The grader's own answer to Exercise 1: every failed handler's outcome, in line order."""
    found = []
    for number, line in enumerate(lines, start=1):
        event = json.loads(line)
        if event["event"] == "tool_outcome" and event["failure_stage"] in stages:
            found.append(
                {
                    "line": number,
                    "run": event["run"],
                    "tool": event["gen_ai.tool.name"],
                    "call_id": event["gen_ai.tool.call.id"],
                    "exception": event["exception.type"],
                    "message": event["exception.message"],
                }
            )
    return found


def failures_view(answer: Any) -> list[dict[str, Any]] | None:
    """The graded keys of each failure a submission found; keys it adds are fine."""
    if not isinstance(answer, list) or not all(
        isinstance(item, dict) and all(key in item for key in FAILURE_KEYS) for item in answer
    ):
        return None
    return [{key: item[key] for key in FAILURE_KEYS} for item in answer]


def judge_failures(expected: list[dict[str, Any]], answer: Any) -> str | None:
    view = failures_view(answer)
    if view is None:
        return (
            "failures_in should give a list of dicts with line, run, tool, call_id, "
            "exception and message."
        )
    if len(view) != len(expected):
        return f"The trace holds {len(expected)} failed handler(s); {len(view)} came back."
    if same(expected, view):
        return None
    if all(item in view for item in expected):
        return "The failed handlers are right, but not in the order of the file's lines."
    return "A failed handler's line, run, tool, call id, exception or message is not the trace's."


def rate(value: Any) -> float | None:
    # A pass rate is a number; True is not one.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def same_rate(expected: float, value: Any) -> bool:
    got = rate(value)
    return got is not None and abs(got - expected) < 1e-9
