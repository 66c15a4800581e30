"""Support the book does not print: an evaluation's results as the command prints them, and as JSON.

Everything printed is computed from the runs, with fixed formats and in the
suite's order, so the same seed prints the same bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from sovereign_agent.evaluate.run import VariantResult

__all__ = ["confusion_table", "failed_runs", "format_report", "percent", "to_json"]


def percent(value: float | None) -> str:
    """A rate as the table shows it; "-" where there was nothing to count."""
    return "-" if value is None else f"{100 * value:.1f}%"


def confusion_table(confusion: Counter[tuple[str, str]]) -> list[str]:
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


def failed_runs(result: VariantResult) -> str:
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
    lines = [
        f"{'variant':<{name_width}}  {'runs':>4}  {'pass rate':>9}  {'steps':>5}  "
        f"{'tool calls':>10}  {'invalid choices':>15}  {'recovery':>8}"
    ]
    for result in results:
        lines.append(
            f"{result.variant.name:<{name_width}}  {len(result.runs):>4}  "
            f"{percent(result.pass_rate):>9}  {result.mean_steps:>5.2f}  "
            f"{result.mean_calls:>10.2f}  {percent(result.invalid_choice_rate):>15}  "
            f"{percent(result.recovery_rate):>8}"
        )
    lines += ["", "failed runs by task, and the expectations they broke"]
    for result in results:
        lines.append(f"  {result.variant.name}: {failed_runs(result) or 'none'}")
    lines += ["", "tool confusion (rows: the tool the arguments fit; columns: the tool asked for)"]
    for result in results:
        lines.append(result.variant.name)
        lines += confusion_table(result.confusion)
    return lines


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
            "mean_steps": result.mean_steps,
            "mean_tool_calls": result.mean_calls,
            "invalid_choice_rate": result.invalid_choice_rate,
            "recovery_rate": result.recovery_rate,
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
