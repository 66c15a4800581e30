"""Benchmark the grader against the cost of merely importing a submission.

    uv run python scripts/bench_grade.py [--copies 40] [--book 2]

Makes N copies of the book's reference solution, then measures in the same
run: (baseline) N bare Python processes, one after another, each importing
pydantic and the submission and nothing else; the grader over the N copies
with -j 1; and with -j 2. Prints seconds per submission and two ratios, with
the goals beside them: grading at most 2x the baseline per submission, and
-j 2 at least 1.6x faster than -j 1. Each figure is the best of `--repeat`
runs (default 3), the same for all three, since other work on a shared
machine can only slow a run down.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _baseline(folders: list[Path]) -> float:
    started = time.perf_counter()
    for folder in folders:
        subprocess.run(
            [
                sys.executable,
                "-I",
                "-c",
                "import sys; sys.path.insert(0, '.'); import pydantic, shop_tools",
            ],
            cwd=folder,
            check=True,
        )
    return time.perf_counter() - started


def _grade(folders: list[Path], book: int, jobs: int) -> float:
    started = time.perf_counter()
    completed = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "grade_exercises.py"),
            "--book",
            str(book),
            "-j",
            str(jobs),
            *map(str, folders),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    elapsed = time.perf_counter() - started
    full = completed.stderr.count(": 28/28") if book == 2 else len(folders)
    if full != len(folders):
        raise SystemExit(f"bench: only {full} of {len(folders)} copies got full marks")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--book", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    solution = ROOT / "solutions" / f"book{args.book:02d}"
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        folders = []
        for index in range(args.copies):
            folder = Path(tmp) / f"student{index:02d}"
            shutil.copytree(solution, folder, ignore=shutil.ignore_patterns("__pycache__"))
            folders.append(folder)
        _baseline(folders[:2])  # warm the file cache so the first measurement is not penalised
        # Interleaved, so a burst of other work on the machine hits all three alike.
        runs = [
            (_baseline(folders), _grade(folders, args.book, 1), _grade(folders, args.book, 2))
            for _ in range(args.repeat)
        ]
        baseline, serial, parallel = (min(column) for column in zip(*runs, strict=True))
    n = args.copies
    print(f"submissions: {n}")
    print(f"baseline (import pydantic + submission): {baseline:.2f} s, {baseline / n:.3f} s each")
    print(f"grade -j 1: {serial:.2f} s, {serial / n:.3f} s each")
    print(f"grade -j 2: {parallel:.2f} s, {parallel / n:.3f} s each")
    print(f"grading cost / baseline: {serial / baseline:.2f}x (goal <= 2.0)")
    print(f"-j 2 speed-up over -j 1: {serial / parallel:.2f}x (goal >= 1.6)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
