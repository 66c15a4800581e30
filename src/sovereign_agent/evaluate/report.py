"""Support the book does not print: an evaluation's results as the command prints them, and as JSON.

Everything printed is computed from the runs, with fixed formats and in the
suite's order, so the same seed prints the same bytes. Every rate is printed
with Wilson's 95% interval (`interval.py`): a rate without one invites
reading a difference of a few runs as a finding.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from sovereign_agent.evaluate.interval import CONFIDENCE, Rate
from sovereign_agent.evaluate.run import VariantResult

__all__ = ["format_report", "run_records", "to_json"]


def _confusion_table(confusion: Counter[tuple[str, str]]) -> list[str]:
    """Rows: the tool the arguments were written for. Columns: the tool asked for."""
    rows = sorted({meant for meant, _ in confusion})
    columns = sorted({asked for _, asked in confusion})
    first = max([len(row) for row in rows] + [4])
    widths = [max(len(column), 5) for column in columns]
    header = " " * (first + 2) + "  ".join(
        f"{column:>{width}}" for column, width in zip(columns, widths, strict=True)
    )
    lines = [header.rstrip()]
    for row in rows:
        cells = "  ".join(
            f"{confusion[(row, column)]:>{width}}"
            for column, width in zip(columns, widths, strict=True)
        )
        lines.append(f"  {row:<{first}}{cells}")
    return lines


def _failed_runs(result: VariantResult) -> str:
    """Per task: how many runs failed, of how many, and which expectations broke."""
    parts = []
    for task in dict.fromkeys(run.task for run in result.runs):
        runs = [run for run in result.runs if run.task == task]
        failed = [run for run in runs if not run.passed]
        if failed:
            broken = sorted({name for run in failed for name in run.failed})
            parts.append(f"{task} {len(failed)}/{len(runs)} ({', '.join(broken)})")
    return "; ".join(parts)


def format_report(results: Sequence[VariantResult]) -> list[str]:
    """The metrics table, the broken expectations, and one confusion table per variant."""
    name_width = max(len(result.variant.name) for result in results)
    rate_width = 19  # "100.0% (91.2-100.0)"
    lines = [
        f"{'variant':<{name_width}}  {'runs':>4}  {'pass rate':>{rate_width}}  {'steps':>5}  "
        f"{'tool calls':>10}  {'invalid choices':>{rate_width}}  {'recovery':>{rate_width}}"
    ]
    for result in results:
        lines.append(
            f"{result.variant.name:<{name_width}}  {len(result.runs):>4}  "
            f"{result.passes.shown():>{rate_width}}  {result.mean_steps:>5.2f}  "
            f"{result.mean_calls:>10.2f}  {result.invalid.shown():>{rate_width}}  "
            f"{result.recovered.shown():>{rate_width}}"
        )
    lines.append(
        f"(in parentheses: each rate's {100 * CONFIDENCE:.0f}% interval, Wilson's; "
        "pass rate over runs, the others over calls)"
    )
    lines += ["", "failed runs by task, and the expectations they broke"]
    for result in results:
        lines.append(f"  {result.variant.name}: {_failed_runs(result) or 'none'}")
    lines += ["", "tool confusion (rows: the tool the arguments fit; columns: the tool asked for)"]
    for result in results:
        lines.append(result.variant.name)
        lines += _confusion_table(result.confusion)
    return lines


def _interval(rate: Rate) -> list[float] | None:
    interval = rate.interval
    return None if interval is None else [interval[0], interval[1]]


def to_json(results: Sequence[VariantResult]) -> list[dict[str, Any]]:
    """The same figures as plain data, one object per variant."""
    return [
        {
            "variant": result.variant.name,
            "descriptions": result.variant.descriptions,
            "hints": result.variant.hints,
            "runs": len(result.runs),
            "passed": sum(run.passed for run in result.runs),
            "pass_rate": result.pass_rate,
            "pass_rate_interval": _interval(result.passes),
            "mean_steps": result.mean_steps,
            "mean_tool_calls": result.mean_calls,
            "invalid_choices": result.invalid.successes,
            "tool_calls": result.invalid.trials,
            "invalid_choice_rate": result.invalid_choice_rate,
            "invalid_choice_rate_interval": _interval(result.invalid),
            "mistakes": result.recovered.trials,
            "recovered": result.recovered.successes,
            "recovery_rate": result.recovery_rate,
            "recovery_rate_interval": _interval(result.recovered),
            "expectations_broken": [
                {"task": task, "expectation": name, "runs": count}
                for (task, name), count in sorted(result.failures.items())
            ],
            "confusion": [
                {"arguments_fit": meant, "asked_for": asked, "calls": count}
                for (meant, asked), count in sorted(result.confusion.items())
            ],
            "stop_reasons": dict(
                sorted(Counter(str(run.record.stop_reason) for run in result.runs).items())
            ),
        }
        for result in results
    ]


def run_records(
    results: Sequence[VariantResult],
    *,
    trace: str | None = None,
    trace_lines: Mapping[str, tuple[int, int]] | None = None,
) -> list[dict[str, Any]]:
    """One object per run, in the order they ran: enough to find it again, or replay it.

    `seed` is what the run's dice were seeded with (null with a real model);
    `trace` names the run in the trace file, with its first and last line
    there when the file could be read back (`trace_lines`, by run id).
    """
    lines = trace_lines or {}
    records = []
    for result in results:
        for run in result.runs:
            where = lines.get(run.trace_run) if run.trace_run is not None else None
            records.append(
                {
                    "variant": result.variant.name,
                    "task": run.task,
                    "repeat": run.repeat,
                    "seed": run.seed,
                    "passed": run.passed,
                    "stop_reason": str(run.record.stop_reason),
                    "steps": run.record.steps,
                    "tool_calls": len(run.calls),
                    "expectations_broken": list(run.failed),
                    "trace": None
                    if run.trace_run is None
                    else {
                        "file": trace,
                        "run": run.trace_run,
                        "lines": None if where is None else [where[0], where[1]],
                    },
                }
            )
    return records
