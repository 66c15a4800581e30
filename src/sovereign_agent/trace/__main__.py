"""Support the book does not print: `python -m sovereign_agent.trace`, replay, count, show, export.

    python -m sovereign_agent.trace replay TRACE.jsonl [--run ID] [--setup REF] [--root DIR]
    python -m sovereign_agent.trace summary TRACE.jsonl
    python -m sovereign_agent.trace show TRACE.jsonl [--run ID] [--html FILE]
    python -m sovereign_agent.trace export TRACE.jsonl --otlp-json FILE [--run ID] [--content]

Exit status: 0 when every replayed run matches (or the summary, timeline or
export was made), 1 when a replay diverged, 2 when the trace or the command
cannot be used.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from sovereign_agent.trace.format import RecordedRun, TraceFormatError, read_trace
from sovereign_agent.trace.inputs import printable
from sovereign_agent.trace.otlp import export_runs
from sovereign_agent.trace.replay import ReplayReport, ReplaySetupError, replay_run
from sovereign_agent.trace.summary import format_summary, summarize
from sovereign_agent.trace.timeline import (
    SHOWN_CHARACTERS,
    format_timeline,
    timeline,
    timeline_html,
    write_atomically,
)

EPILOG = """\
replay re-runs each recorded run against today's runtime, offline: the model's
replies come from the trace, the tools are built again from the setup the trace
names, and every new event is compared with the recorded one. The first
difference is printed with its line in the trace; later events are not compared.

A trace chooses no code. Its setup is a name replay looks up among the setups
this runtime knows (the shop's tools, an evaluation's variants, the documents
and skills tools); any other name is refused. --setup names a function that
builds the tools instead (module:function, or path/to/file.py:function): it
is your choice of code, called with the recorded setup's arguments. A folder
a setup records (documents_root, skills_root) is read only under --root DIR;
without --root such a setup is refused, and a folder outside DIR is refused
before anything is read. Replay runs the tools' handlers for real: give it a
setup whose tools touch nothing that matters.

Text from the trace is printed with control and invisible characters escaped.

exit status: 0 all match, 1 a run diverged, 2 unusable trace or options.
"""

SHOW_EPILOG = """\
Each run is printed as its steps: the model call (messages and tools sent,
calls asked for, duration), each tool call (arguments, outcome, duration, and
for a failure the exception the model was never shown), narrowings, and the
stop. Long texts are cut short on the terminal; --html writes them whole.

A trace is outside input: text from it is printed with control and invisible
characters escaped, and every text on the page is HTML-escaped; the page loads
nothing and runs no script. It is written through a temporary file and a
rename, so an old page is never left half overwritten, and is readable by
you only, like the trace it comes from should be.

exit status: 0 shown, 2 unusable trace, options, or no such run.
"""

EXPORT_EPILOG = """\
Writes each run as an OpenTelemetry trace in OTLP's JSON encoding (an
ExportTraceServiceRequest): a run span (invoke_agent), a span per model call
(chat MODEL) and per tool execution (execute_tool TOOL), both children of the
run span, with the GenAI semantic conventions' attribute names. Any OTLP tool
can load it (a collector's otlpjsonfile receiver, for one).

Ids come from the run's content (SHA-256), so the same trace always exports the
same file. Child spans carry their recorded durations laid end to end from the
run's start: the trace does not record the gaps between calls.

Without --content no message text, tool arguments, tool results or exception
messages are written: only what happened and how long it took. The file is
written through a temporary file and a rename, readable by you only.

exit status: 0 written, 2 unusable trace, options, or no such run.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sovereign_agent.trace",
        description="Replay recorded runs offline, or count their failures by class.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    replay = commands.add_parser(
        "replay",
        help="re-run recorded runs against today's runtime; exit 1 at the first divergence",
        description="Re-run recorded runs against today's runtime with the recorded replies.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.add_argument("trace", type=Path, metavar="TRACE.jsonl")
    replay.add_argument(
        "--run", metavar="ID", help="replay only the run with this id (or id prefix)"
    )
    replay.add_argument(
        "--setup",
        metavar="REF",
        help="build the tools with this function (module:function or file.py:function) "
        "instead of the known setup the trace names",
    )
    replay.add_argument(
        "--root",
        type=Path,
        metavar="DIR",
        help="the folder under which the setup's recorded folders must lie "
        "(without it, a setup that reads files is refused)",
    )
    summary = commands.add_parser(
        "summary",
        help="count every refusal and stop by failure class",
        description="Count every refusal and every stop in a trace by failure class.",
    )
    summary.add_argument("trace", type=Path, metavar="TRACE.jsonl")
    show = commands.add_parser(
        "show",
        help="print runs as timelines: steps, calls, outcomes, narrowings, durations",
        description="Print recorded runs as timelines, or write them as a web page.",
        epilog=SHOW_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    show.add_argument("trace", type=Path, metavar="TRACE.jsonl")
    show.add_argument("--run", metavar="ID", help="only the run with this id (or id prefix)")
    show.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="write a self-contained page of the timelines to FILE instead of printing them",
    )
    export = commands.add_parser(
        "export",
        help="write runs as OpenTelemetry spans (OTLP JSON)",
        description="Write recorded runs as OpenTelemetry spans, in OTLP's JSON encoding.",
        epilog=EXPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    export.add_argument("trace", type=Path, metavar="TRACE.jsonl")
    export.add_argument(
        "--otlp-json",
        type=Path,
        metavar="FILE",
        required=True,
        help="the file to write (an ExportTraceServiceRequest in OTLP JSON)",
    )
    export.add_argument("--run", metavar="ID", help="only the run with this id (or id prefix)")
    export.add_argument(
        "--content",
        action="store_true",
        help="also write the sensitive content: the task, system message, the model's words, "
        "tool arguments and results, exception messages (off by default)",
    )
    return parser


def _read(path: Path) -> list[RecordedRun]:
    runs = read_trace(path)
    if not runs:
        raise TraceFormatError(str(path), 0, "the trace holds no run")
    return runs


def _report(report: ReplayReport, label: str) -> list[str]:
    first, last = report.lines
    head = f"run {report.run_id[:12]} (lines {first}-{last}, {label})"
    lines = [f"note: {note}" for note in report.notes]
    divergence = report.divergence
    if divergence is None:
        return [*lines, f"{head}: {report.matched} events match"]
    lines += [
        f"{head}: diverged at line {divergence.line}, event {divergence.seq} ({divergence.kind})",
        f"  {divergence.what}",
        f"    recorded: {divergence.recorded}",
        f"    now:      {divergence.now}",
    ]
    if divergence.why:
        lines.append(f"  {divergence.why}")
    return lines


def _show(lines: Sequence[str], *, error: bool = False) -> None:
    # Every line may hold text from the trace (a run id, a task, an observation,
    # a field name): escaped, so that no byte of it reaches the terminal as a command.
    for line in lines:
        print(printable(line), file=sys.stderr if error else sys.stdout)


class NoSuchRun(Exception):
    """`--run` named an id that no run in the trace starts with."""


def _chosen(runs: Sequence[RecordedRun], only: str | None) -> list[RecordedRun]:
    chosen = [run for run in runs if only is None or run.run_id.startswith(only)]
    if not chosen:
        raise NoSuchRun(f"no run whose id starts with {only!r}")
    return chosen


def _timeline(runs: Sequence[RecordedRun], trace: Path, page: Path | None) -> int:
    if page is not None:
        write_atomically(page, timeline_html(runs, title=f"{trace.name}: {len(runs)} run(s)"))
        _show([f"wrote {page}: {len(runs)} run(s)"])
        return 0
    lines: list[str] = []
    for run in runs:
        if lines:
            lines.append("")
        lines += format_timeline(timeline(run, limit=SHOWN_CHARACTERS))
    _show(lines)
    return 0


def _export(runs: Sequence[RecordedRun], target: Path, content: bool) -> int:
    document = export_runs(runs, content=content)
    write_atomically(target, json.dumps(document, indent=1) + "\n")
    spans = sum(len(scope["spans"]) for scope in document["resourceSpans"][0]["scopeSpans"])
    held = "with content" if content else "without content"
    _show([f"wrote {target}: {len(runs)} run(s), {spans} span(s), {held}"])
    return 0


def _replay(
    runs: Sequence[RecordedRun], only: str | None, setup: str | None, root: Path | None
) -> int:
    chosen = _chosen(runs, only)
    diverged = 0
    for run in chosen:
        report = replay_run(run, setup=setup, root=root)
        diverged += report.divergence is not None
        _show(_report(report, run.started.model))
    matched = len(chosen) - diverged
    _show([f"replayed {len(chosen)} run(s): {matched} match, {diverged} diverged"])
    return 1 if diverged else 0


def main(argv: Sequence[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    try:
        runs = _read(options.trace)
        if options.command == "summary":
            _show([f"{options.trace}:", *format_summary(summarize(runs))])
            return 0
        if options.command == "show":
            return _timeline(_chosen(runs, options.run), options.trace, options.html)
        if options.command == "export":
            return _export(_chosen(runs, options.run), options.otlp_json, options.content)
        return _replay(runs, options.run, options.setup, options.root)
    except (TraceFormatError, ReplaySetupError, NoSuchRun, ValueError) as error:
        _show([f"error: {error}"], error=True)
        return 2
    except OSError as error:
        # The page or the export could not be written: a full disk, a missing folder.
        target = options.html if options.command == "show" else options.otlp_json
        _show([f"error: cannot write {target}: {error.strerror or error}"], error=True)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
