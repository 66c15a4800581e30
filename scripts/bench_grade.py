"""Benchmark the grader: what the bubblewrap sandbox costs, and what a second worker buys.

    uv run python scripts/bench_grade.py [--book 2] [--copies 16] [--rounds 3]

Makes N copies of the book's reference solution (with its tests), then
measures in the same run, interleaved round by round so that other work on
a shared machine hits every variant alike: the grader in process-only mode
with -j 1 (the baseline: the same checks, no sandbox), in bubblewrap mode
with -j 1, and in bubblewrap mode with -j 2. Each figure is the best of the
rounds, since other work can only slow a run down. Prints seconds per
submission and two ratios with their goals: the sandbox costs at most 1.5x
the baseline per submission, and -j 2 is at least 1.6x faster than -j 1.
Every run must give every copy full marks, or the figures mean nothing.
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


def _grade(folders: list[Path], book: int, isolation: str, jobs: int, report: Path) -> float:
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
        raise SystemExit(f"bench: the grader failed ({isolation}, -j {jobs}):\n{completed.stderr}")
    entries = json.loads(report.read_text(encoding="utf-8"))["submissions"]
    short = [e["submission"] for e in entries if e["total"] != e["max"]]
    if short or len(entries) != len(folders):
        raise SystemExit(f"bench: not every copy got full marks ({isolation}, -j {jobs}): {short}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", type=int, default=2)
    parser.add_argument("--copies", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    solution = ROOT / "solutions" / f"book{args.book:02d}"
    variants = [("process", 1), ("bubblewrap", 1), ("bubblewrap", 2)]
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        folders = []
        for index in range(args.copies):
            folder = Path(tmp) / f"student{index:02d}"
            shutil.copytree(solution, folder, ignore=shutil.ignore_patterns("__pycache__", "*.md"))
            folders.append(folder)
        report = Path(tmp) / "report.json"
        _grade(folders[:2], args.book, "bubblewrap", 2, report)  # warm the file cache
        times: dict[tuple[str, int], list[float]] = {variant: [] for variant in variants}
        for round_number in range(args.rounds):
            # Rotate the order each round, so no variant always runs first.
            order = variants[round_number % 3 :] + variants[: round_number % 3]
            for isolation, jobs in order:
                times[(isolation, jobs)].append(_grade(folders, args.book, isolation, jobs, report))
    best = {variant: min(values) for variant, values in times.items()}
    n = args.copies
    baseline, isolated, parallel = (best[variant] for variant in variants)
    print(f"book {args.book}, {n} submissions, best of {args.rounds} interleaved rounds")
    print(f"process only, -j 1 (baseline): {baseline:.2f} s, {baseline / n:.3f} s each")
    print(f"bubblewrap,   -j 1:            {isolated:.2f} s, {isolated / n:.3f} s each")
    print(f"bubblewrap,   -j 2:            {parallel:.2f} s, {parallel / n:.3f} s each")
    print(f"sandbox cost per submission: {isolated / baseline:.2f}x the baseline (goal <= 1.5)")
    print(f"-j 2 speed-up over -j 1:     {isolated / parallel:.2f}x (goal >= 1.6)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
