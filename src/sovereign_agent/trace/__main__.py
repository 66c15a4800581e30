"""Support the book does not print: `python -m sovereign_agent.trace`, replay or count a trace.

    python -m sovereign_agent.trace replay TRACE.jsonl [--run ID] [--setup REF] [--root DIR]
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
from sovereign_agent.trace.inputs import printable
from sovereign_agent.trace.replay import ReplayReport, ReplaySetupError, replay_run
from sovereign_agent.trace.summary import format_summary, summarize

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


def _replay(
    runs: Sequence[RecordedRun], only: str | None, setup: str | None, root: Path | None
) -> int:
    chosen = [run for run in runs if only is None or run.run_id.startswith(only)]
    if not chosen:
        _show([f"no run whose id starts with {only!r}"], error=True)
        return 2
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
        return _replay(runs, options.run, options.setup, options.root)
    except (TraceFormatError, ReplaySetupError, ValueError) as error:
        _show([f"error: {error}"], error=True)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
