"""Support the book does not print: `python -m sovereign_agent.trace`, replay or count a trace.

    python -m sovereign_agent.trace replay TRACE.jsonl [--run ID] [--setup REF]
    python -m sovereign_agent.trace summary TRACE.jsonl

Exit status: 0 when every replayed run matches (or the summary was printed),
1 when a replay diverged, 2 when the trace or the command cannot be used.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from sovereign_agent.trace.format import RecordedRun, TraceFormatError, read_trace
from sovereign_agent.trace.replay import ReplayReport, ReplaySetupError, replay_run
from sovereign_agent.trace.summary import format_summary, summarize

EPILOG = """\
replay re-runs each recorded run against today's runtime, offline: the model's
replies come from the trace, the tools are built again from the setup the trace
recorded, and every new event is compared with the recorded one. The first
difference is printed with its line in the trace; later events are not compared.

--setup names a function that builds the tools instead (module:function, or
path/to/file.py:function); it is called with the recorded setup's arguments.
Replay runs the tools' handlers for real: give it a setup whose tools touch
nothing that matters. A trace may name only setups inside sovereign_agent;
any other runs only when you name it yourself with --setup.

exit status: 0 all match, 1 a run diverged, 2 unusable trace or options.
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
    )
    replay.add_argument("trace", type=Path, metavar="TRACE.jsonl")
    replay.add_argument(
        "--run", metavar="ID", help="replay only the run with this id (or id prefix)"
    )
    replay.add_argument(
        "--setup",
        metavar="REF",
        help="build the tools with this function instead of the recorded one",
    )
    summary = commands.add_parser(
        "summary",
        help="count every refusal and stop by failure class",
        description="Count every refusal and every stop in a trace by failure class.",
    )
    summary.add_argument("trace", type=Path, metavar="TRACE.jsonl")
    return parser


def _read(path: Path) -> list[RecordedRun]:
    if not path.is_file():
        raise TraceFormatError(str(path), 0, "no such file")
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


def _replay(runs: Sequence[RecordedRun], only: str | None, setup: str | None) -> int:
    chosen = [run for run in runs if only is None or run.run_id.startswith(only)]
    if not chosen:
        print(f"no run whose id starts with {only!r}", file=sys.stderr)
        return 2
    diverged = 0
    for run in chosen:
        report = replay_run(run, setup=setup)
        diverged += report.divergence is not None
        print("\n".join(_report(report, run.started.model)))
    matched = len(chosen) - diverged
    print(f"replayed {len(chosen)} run(s): {matched} match, {diverged} diverged")
    return 1 if diverged else 0


def main(argv: Sequence[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    try:
        runs = _read(options.trace)
        if options.command == "summary":
            print(f"{options.trace}:")
            print("\n".join(format_summary(summarize(runs))))
            return 0
        return _replay(runs, options.run, options.setup)
    except (TraceFormatError, ReplaySetupError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
