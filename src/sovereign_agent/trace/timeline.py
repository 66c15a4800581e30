"""Support the book does not print: one recorded run as a timeline, for a terminal or a web page.

`summary` counts and `replay` compares; neither lets an operator look at one
run. A timeline lays its events out as the loop lived them: the run's start,
then per step the model call (what was sent, what came back, how long it
took) and each tool call (its arguments, its outcome, how long it took, and
for a failure the exception the model was never shown), any narrowing of the
run's tools, and the stop.

Both renderings are built from the same rows, so the page and the terminal
say the same thing. Every text in a row came from a trace, which is outside
input: the terminal's lines go through `printable`, and the page escapes every
text for HTML after that (a task holding `<script>` is shown, never run).
The page holds its style inline and loads nothing, so it opens the same
offline, in a mail attachment, or years later.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from sovereign_agent.trace.format import (
    ModelReplyEvent,
    ModelRequestEvent,
    RecordedRun,
    RunFinishedEvent,
    RunStartedEvent,
    ScopeNarrowedEvent,
    ToolCallEvent,
    ToolOutcomeEvent,
)
from sovereign_agent.trace.inputs import printable

__all__ = [
    "SHOWN_CHARACTERS",
    "Row",
    "format_duration",
    "format_timeline",
    "timeline",
    "timeline_html",
    "write_atomically",
]

# A terminal line shows this much of each text it holds (arguments, a result,
# the model's words, an exception's message), so that a long result does not
# push the outcome of the call off the line; the page shows every text whole.
SHOWN_CHARACTERS = 60

Tone = Literal["plain", "ok", "refused", "failed"]


@dataclass(frozen=True)
class Row:
    """One line of a timeline: its step, what it is, its duration, and what it says."""

    step: str
    what: str
    duration: str
    text: str
    tone: Tone = "plain"


def format_duration(nanoseconds: int | None) -> str:
    """A duration in the unit that keeps it short: microseconds, milliseconds or seconds."""
    if nanoseconds is None:
        return ""
    if nanoseconds < 1_000_000:
        return f"{nanoseconds / 1_000:.1f} us"
    if nanoseconds < 1_000_000_000:
        return f"{nanoseconds / 1_000_000:.1f} ms"
    return f"{nanoseconds / 1_000_000_000:.2f} s"


def _started_at(event: RunStartedEvent) -> str:
    moment = datetime.fromtimestamp(event.time_unix_nano / 1_000_000_000, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _tokens(input_tokens: int | None, output_tokens: int | None) -> str:
    if input_tokens is None and output_tokens is None:
        return ""
    return f"; tokens {input_tokens if input_tokens is not None else '-'} in, " + (
        f"{output_tokens if output_tokens is not None else '-'} out"
    )


def _tone(code: str) -> Tone:
    if code == "ok":
        return "ok"
    return "failed" if code == "tool_failed" else "refused"


def _cut(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    # One ellipsis character: three dots could be part of the text itself.
    return text[: limit - 1] + "\u2026"


def _quoted(text: str, limit: int | None) -> str:
    return _cut(json.dumps(text, ensure_ascii=False), limit)


def _outcome(event: ToolOutcomeEvent, limit: int | None) -> str:
    said = event.code if event.handler_ran else f"{event.code} (handler did not run)"
    if event.code == "ok":
        value = json.dumps(event.observation.get("value"), ensure_ascii=False)
        said += f" {_cut(value, limit)}"
    if event.failure_stage is not None:
        said += f", at {event.failure_stage}"
    if event.exception_type is not None:
        message = _cut(event.exception_message or "", limit)
        said += f": {event.exception_type}: {message}".rstrip()
    if event.argument_problems:
        problems = ", ".join(
            f"{'.'.join(str(part) for part in problem.location) or '(arguments)'} {problem.kind}"
            for problem in event.argument_problems
        )
        said += f" [{problems}]"
    return said


def _source(source: str | None, limit: int | None) -> str:
    # Quoted as JSON: the label is the trace's text, and a hostile one must
    # not pass for part of the line around it.
    return "" if source is None else f" via {_quoted(source, limit)}"


def _reply(event: ModelReplyEvent, limit: int | None) -> str:
    if event.tool_calls:
        said = f"{len(event.tool_calls)} call(s): " + ", ".join(
            f"{call.name} [{call.id}]" for call in event.tool_calls
        )
    else:
        said = "no calls"
    if event.content:
        said += f"; says {_quoted(event.content, limit)}"
    reasons = ", ".join(event.finish_reasons)
    if reasons:
        said += f"; finish {reasons}"
    return said + _tokens(event.input_tokens, event.output_tokens)


def timeline(run: RecordedRun, *, limit: int | None = None) -> list[Row]:
    """The rows of one run, in the order its events were written.

    With `limit`, each text from the run is cut to that many characters
    (`SHOWN_CHARACTERS` on a terminal); without, every text is whole.
    """
    start = run.started
    first, last = run.lines[0], run.lines[-1]
    rows = [
        Row("", "run", "", f"{run.run_id} (trace lines {first}-{last})"),
        Row("", "model", "", f"{start.model}; started {_started_at(start)}"),
        Row("", "task", "", _quoted(start.task, limit)),
        Row(
            "",
            "bounds",
            "",
            f"{start.max_steps} steps, {start.max_tool_calls} tool calls; hints "
            f"{'on' if start.hints else 'off'}; setup "
            f"{start.setup.factory if start.setup else '(none recorded)'}",
        ),
    ]
    asked: ModelRequestEvent | None = None
    # The calls taken up and not yet answered, by id: one, or a batch of them.
    waiting: dict[str, ToolCallEvent] = {}
    for previous, event in zip(run.events, run.events[1:], strict=False):
        if isinstance(event, ModelRequestEvent):
            asked = event
        elif isinstance(event, ModelReplyEvent):
            sent = f"{asked.messages} message(s), {len(asked.tools)} tool(s) -> " if asked else ""
            rows.append(
                Row(
                    str(event.step),
                    f"chat {event.response_model}",
                    format_duration(event.duration_ns),
                    sent + _reply(event, limit),
                )
            )
            asked = None
        elif isinstance(event, ToolCallEvent):
            waiting[event.call_id] = event  # Shown with its outcome, which holds its duration.
        elif isinstance(event, ToolOutcomeEvent):
            if len(waiting) > 1 and isinstance(previous, ToolCallEvent):
                # The first outcome of a batch: say which calls ran side by side.
                together = ", ".join(f"[{call_id}]" for call_id in waiting)
                rows.append(
                    Row(str(event.step), "side by side", "", f"{len(waiting)} calls: {together}")
                )
            # The reader holds every outcome to the first call still waiting.
            called = waiting.pop(event.call_id, None)
            arguments = called.arguments if called is not None else ""
            rows.append(
                Row(
                    str(event.step),
                    f"tool {event.tool_name}",
                    format_duration(event.duration_ns),
                    f"[{event.call_id}]{_source(event.source, limit)} {_cut(arguments, limit)} "
                    f"-> {_outcome(event, limit)}",
                    _tone(event.code),
                )
            )
        elif isinstance(event, ScopeNarrowedEvent):
            said = f"by {event.tool_name} [{event.call_id}]: {event.reason}; kept "
            said += ", ".join(event.kept) or "(nothing)"
            if event.removed:
                said += f"; removed {', '.join(event.removed)}"
            if event.ignored:
                said += f"; asked for but not allowed {', '.join(event.ignored)}"
            rows.append(Row(str(event.step), "narrowed", "", said))
        elif isinstance(event, RunFinishedEvent):
            if asked is not None:
                # A request the model never answered: the run stopped on it.
                rows.append(Row(str(asked.step), "chat", "", "no reply", "failed"))
            stop = f"{event.stop_reason} after {event.steps} step(s)"
            if event.error_type is not None:
                stop += f" ({event.error_type})"
            if event.refused:
                stop += "; refused " + ", ".join(f"{name} {code}" for name, code in event.refused)
            stop += _tokens(event.input_tokens, event.output_tokens)
            tone: Tone = "ok" if event.stop_reason == "final_answer" else "failed"
            rows.append(Row("", "finished", format_duration(event.duration_ns), stop, tone))
            if event.answer is not None:
                rows.append(Row("", "answer", "", _quoted(event.answer, limit)))
    if not run.complete:
        rows.append(
            Row(
                "",
                "unfinished",
                "",
                "no run_finished: the trace was cut off, or the run's process stopped",
                "failed",
            )
        )
    return rows


def format_timeline(rows: Sequence[Row]) -> list[str]:
    """The rows as terminal lines, in columns; still to be passed through `printable`."""
    what_width = max(len(row.what) for row in rows)
    duration_width = max(len(row.duration) for row in rows)
    lines = []
    for row in rows:
        head = f"{row.step:>2}  {row.what:<{what_width}}  {row.duration:>{duration_width}}"
        lines.append(f"{head}  {row.text}".rstrip())
    return lines


_STYLE = """\
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.2em; }
table { border-collapse: collapse; margin-bottom: 2em; width: 100%; }
td, th { border-bottom: 1px solid #ddd; padding: 0.3em 0.6em; vertical-align: top;
  text-align: left; }
td.text { font-family: ui-monospace, monospace; white-space: pre-wrap;
  overflow-wrap: anywhere; }
td.duration, td.what { white-space: nowrap; }
td.duration { text-align: right; }
tr.ok td.what { color: #1a7f37; }
tr.refused td.what { color: #9a6700; }
tr.failed td.what { color: #cf222e; font-weight: bold; }
"""


def _cell(text: str, kind: str) -> str:
    # printable first (an invisible or bidirectional character could reorder
    # what the reader sees), then HTML escaping, quotes included.
    return f'<td class="{kind}">{html.escape(printable(text), quote=True)}</td>'


def timeline_html(runs: Sequence[RecordedRun], *, title: str) -> str:
    """A self-contained page of the runs' timelines: every text escaped, nothing loaded."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        # No script, no fetch, no external style: the page can do nothing but show.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">",
        f"<title>{html.escape(printable(title), quote=True)}</title>",
        f"<style>\n{_STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{html.escape(printable(title), quote=True)}</h1>",
    ]
    for run in runs:
        parts.append("<table>")
        parts.append(
            "<thead><tr><th>step</th><th>what</th><th>duration</th><th>detail</th></tr></thead>"
        )
        parts.append("<tbody>")
        for row in timeline(run):
            parts.append(
                f'<tr class="{row.tone}">'
                + _cell(row.step, "step")
                + _cell(row.what, "what")
                + _cell(row.duration, "duration")
                + _cell(row.text, "text")
                + "</tr>"
            )
        parts.append("</tbody>")
        parts.append("</table>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def write_atomically(path: Path, text: str) -> None:
    """Write `text` through a temporary file beside `path` and a rename: never half a file.

    A crash or a full disk leaves the old file whole (or none), never a page
    or an export cut off in the middle that a tool would half-read. The file
    is readable by its owner only (the temporary file's mode): it holds what
    the trace holds, and a trace is not a public file.
    """
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
