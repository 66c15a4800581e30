"""Benchmark the grader: what the sandbox costs, what the zygote saves, what a second worker buys.

    uv run python scripts/bench_grade.py [--book 2] [--copies 16] [--rounds 3]

Makes N copies of the book's reference solution (with its tests), each
made distinct by one comment line naming the copy at the end of each of its
test files: the comment changes no verdict (every copy must still get full
marks), but it changes the bytes a run of the learner's tests sees, so the
grader cannot give one copy's runs to another (`bookproof.grade.reuse`) and
every copy is graded as the distinct submission a class would hand in. Each
run's report must say that no run was reused, or the figures mean nothing.
It then measures in the same run, interleaved round by round so that other work on
a shared machine hits every variant alike: the grader in process-only mode
with -j 1 (the baseline: the same checks, no sandbox), in bubblewrap mode
with -j 1 starting a sandbox for every run of a learner's tests
(`--one-sandbox-per-run`, the grader before the zygote), in bubblewrap mode
with -j 1, and in bubblewrap mode with -j 2. Each figure is the best of the
rounds, since other work can only slow a run down. Prints seconds per
submission and three ratios with their goals:

- the sandbox costs at most 1.5x the baseline per submission;
- a submission costs at most 0.5x what it cost with one sandbox per run of
  the learner's tests (issue 31), both measured here at -j 1; where this
  machine's kernel refuses namespaces inside the sandbox, the grader takes
  the old path either way and the goal is reported as missed;
- -j 2 is at least 1.7x faster than -j 1 (issue 31), on a machine that can
  give two workers two cores. On a shared machine it may not: each round
  also measures the machine's own ceiling, the speed-up of two identical
  CPU-bound processes started together over one alone, and when that
  ceiling minus 0.1 is below 1.7 no grader could reach 1.7x then, so the goal
  becomes the ceiling minus 0.1 (what two workers' start-up and the shared
  report cost on two free cores), printed with the ceiling it came from.

Every run must give every copy full marks and reuse no run, or the
figures mean nothing.
Exit status 0 when every goal is met, 1 when one is missed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SANDBOX_GOAL = 1.5
ZYGOTE_GOAL = 0.5
SPEED_UP_GOAL = 1.7
CEILING_MARGIN = 0.1
# About a quarter of a second of pure Python work: long enough to time, short
# enough to run twice in every round.
_BUSY = "n = 0\nfor i in range(4_000_000):\n    n += i\n"


def _busy(copies: int) -> float:
    """Wall seconds for `copies` identical CPU-bound processes started together."""
    started = time.perf_counter()
    running = [subprocess.Popen([sys.executable, "-S", "-c", _BUSY]) for _ in range(copies)]
    for process in running:
        process.wait()
    return time.perf_counter() - started


# (isolation, jobs, one sandbox per run): the variants measured, the baseline first.
Variant = tuple[str, int, bool]


def _name(variant: Variant) -> str:
    isolation, jobs, per_run = variant
    return f"{isolation}, -j {jobs}" + (", one sandbox per run" if per_run else "")


def _grade(folders: list[Path], book: int, variant: Variant, report: Path) -> float:
    isolation, jobs, per_run = variant
    started = time.perf_counter()
    completed = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "grade_exercises.py"),
            "--book",
            str(book),
            "--isolation",
            isolation,
            # The baseline grades our own reference copies: running them as
            # root, where nobody cannot start Python, is accepted.
            *(["--run-submissions-as-root"] if isolation == "process" else []),
            *(["--one-sandbox-per-run"] if per_run else []),
            "-j",
            str(jobs),
            "--seed",
            "1",
            "--json",
            str(report),
            *map(str, folders),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise SystemExit(f"bench: the grader failed ({_name(variant)}):\n{completed.stderr}")
    entries = json.loads(report.read_text(encoding="utf-8"))["submissions"]
    short = [e["submission"] for e in entries if e["total"] != e["max"]]
    if short or len(entries) != len(folders):
        raise SystemExit(f"bench: not every copy got full marks ({_name(variant)}): {short}")
    reused = [e["submission"] for e in entries if e["test_runs"]["reused"]]
    if reused:
        raise SystemExit(f"bench: copies reused another's runs ({_name(variant)}): {reused}")
    return elapsed


def _make_distinct(folder: Path, index: int) -> None:
    """End each of the copy's test files with a comment naming it: the same tests, new bytes."""
    for test_file in sorted(folder.glob("test_*.py")):
        with test_file.open("a", encoding="utf-8") as handle:
            handle.write(f"# benchmark copy {index}: distinct bytes, the same tests\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", type=int, default=2)
    parser.add_argument("--copies", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.copies < 1 or args.rounds < 1:
        parser.error("--copies and --rounds must be positive")
    solution = ROOT / "solutions" / f"book{args.book:02d}"
    variants: list[Variant] = [
        ("process", 1, False),
        ("bubblewrap", 1, True),
        ("bubblewrap", 1, False),
        ("bubblewrap", 2, False),
    ]
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        folders = []
        for index in range(args.copies):
            folder = Path(tmp) / f"student{index:02d}"
            shutil.copytree(solution, folder, ignore=shutil.ignore_patterns("__pycache__", "*.md"))
            _make_distinct(folder, index)
            folders.append(folder)
        report = Path(tmp) / "report.json"
        _grade(folders[:2], args.book, ("bubblewrap", 2, False), report)  # warm the file cache
        times: dict[Variant, list[float]] = {variant: [] for variant in variants}
        ceilings: list[float] = []
        for round_number in range(args.rounds):
            # Two copies of the work in the time of `two` against one in `one`;
            # three tries a round, as one try is easily caught by other work.
            for _ in range(3):
                one, two = _busy(1), _busy(2)
                ceilings.append(2 * one / two)
            # Rotate the order each round, so no variant always runs first.
            turn = round_number % len(variants)
            for variant in variants[turn:] + variants[:turn]:
                times[variant].append(_grade(folders, args.book, variant, report))
    best = {variant: min(values) for variant, values in times.items()}
    n = args.copies
    baseline, per_run, isolated, parallel = (best[variant] for variant in variants)
    print(f"book {args.book}, {n} submissions, best of {args.rounds} interleaved rounds")
    for label, variant in zip(("(baseline)", "(before the zygote)", "", ""), variants, strict=True):
        spread = max(times[variant]) / best[variant]
        print(
            f"{_name(variant) + ' ' + label:<50} {best[variant]:6.2f} s, "
            f"{best[variant] / n:.3f} s each (slowest round {spread:.2f}x the best)"
        )
    # The best round's ceiling: other work can only lower it.
    ceiling = max(ceilings)
    speed_up_goal, why = SPEED_UP_GOAL, "issue 31's goal"
    if ceiling - CEILING_MARGIN < SPEED_UP_GOAL:
        speed_up_goal = ceiling - CEILING_MARGIN
        why = f"this machine's ceiling now, {ceiling:.2f}x, minus {CEILING_MARGIN}"
    sandbox_met = isolated / baseline <= SANDBOX_GOAL
    zygote_met = isolated / per_run <= ZYGOTE_GOAL
    speed_up_met = isolated / parallel >= speed_up_goal
    print(
        f"sandbox cost per submission: {isolated / baseline:.2f}x the baseline "
        f"(goal <= {SANDBOX_GOAL}) {'met' if sandbox_met else 'MISSED'}"
    )
    print(
        f"submission against one sandbox per run: {isolated / per_run:.2f}x "
        f"(goal <= {ZYGOTE_GOAL}) {'met' if zygote_met else 'MISSED'}"
    )
    print(
        f"-j 2 speed-up over -j 1:     {isolated / parallel:.2f}x "
        f"(goal >= {speed_up_goal:.2f}, {why}) {'met' if speed_up_met else 'MISSED'}"
    )
    return 0 if sandbox_met and zygote_met and speed_up_met else 1


if __name__ == "__main__":
    raise SystemExit(main())
