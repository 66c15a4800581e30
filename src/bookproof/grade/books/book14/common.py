"""Exercise Book 14's shared part: the book, its sections, invented sales files, running programs.

A program a submission hands over is run here, by the grader, never by the
submission: `run_program` writes the check's sales file into a folder of its
own, runs the program with the runtime's `run_python` on `LIMITS` (the
grader's, whatever the submission might wish), and removes the folder.
"""

from __future__ import annotations

import csv
import io
import random
import tempfile
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Book
from sovereign_agent.generated_code import CodeLimits, CodeResult, Outcome, run_python

BOOK = Book(
    14,
    "Exercise Book 14: running generated code",
    module="code_answers",
    chapter="Chapter 14",
)

S_ANSWERS = BOOK.section("14.4 The model's code answers Lucy")
S_CANNOT = BOOK.section("14.6 What the boundary cannot prevent")
S_UNIT_A = BOOK.section("14.10 Exercises") + " (Exercise Book 14, Unit A)"
S_UNIT_B = BOOK.section("14.10 Exercises") + " (Exercise Book 14, Unit B)"
S_OUTCOMES = BOOK.section("14.5 Seven hostile programs") + " (Exercise Book 14, Unit C)"

# The grader's terms for every program it runs: the runtime's defaults, which
# a submission can neither see nor change.
LIMITS = CodeLimits()
SHOP_SKUS = ("SKU-CHOCOLATE", "SKU-STRAWBERRY", "SKU-VANILLA")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

# One row of an invented file: (date, weekday, sku, tubs).
Row = tuple[date, str, str, int]


def invented_sales(
    rng: random.Random, *, weeks: int | None = None, extra_skus: int | None = None
) -> list[Row]:
    """A sales file of this run's own: a random Monday, 2 to 6 weeks, the shop's skus and more."""
    first = date(2025, 1, 6) + timedelta(weeks=rng.randint(0, 150))  # always a Monday
    skus = list(SHOP_SKUS) + [
        f"SKU-{fx.token(rng, 6).upper()}"
        for _ in range(rng.randint(0, 2) if extra_skus is None else extra_skus)
    ]
    rows: list[Row] = []
    for offset in range(7 * (rng.randint(2, 6) if weeks is None else weeks)):
        day = first + timedelta(days=offset)
        rng.shuffle(skus)
        rows.extend((day, WEEKDAYS[day.weekday()], sku, rng.randint(0, 30)) for sku in skus)
    return rows


def sales_text(rows: Sequence[Row]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["date", "weekday", "sku", "tubs"])
    writer.writerows([day.isoformat(), weekday, sku, tubs] for day, weekday, sku, tubs in rows)
    return buffer.getvalue()


def best_on(rows: Sequence[Row], weekday: str) -> dict[str, object]:
    """The expected answer: the sku with most tubs on `weekday` (ties: first by name), its best."""
    totals: dict[str, int] = {}
    best_day: dict[str, int] = {}
    for _, day_name, sku, tubs in rows:
        if day_name == weekday:
            totals[sku] = totals.get(sku, 0) + tubs
            best_day[sku] = max(best_day.get(sku, 0), tubs)
    sku = min(totals, key=lambda name: (-totals[name], name))
    return {"sku": sku, "tubs": best_day[sku]}


def run_program(program: object, rows: Sequence[Row]) -> CodeResult | str:
    """Run a submission's program over `rows` at /data/sales.csv; a learner-facing line if not."""
    if not isinstance(program, str) or not program.strip():
        return "Your function should return the program's text, a non-empty string."
    if len(program) > 20_000:
        return "The program is longer than run_python accepts (20,000 characters)."
    with tempfile.TemporaryDirectory(prefix="book14-") as folder:
        (Path(folder) / "sales.csv").write_text(sales_text(rows), encoding="utf-8")
        result = run_python(program, Path(folder), LIMITS)
    if result.outcome is Outcome.NO_SANDBOX:
        # The machine's fault, not the learner's: said as such.
        return f"The grader could not make a sandbox to run your program here: {result.error}"
    return result
