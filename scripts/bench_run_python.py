"""What the boundary costs: one `run_python` call against the same code run by a bare `python -c`.

Both sides run the same program, the Saturday analysis of chapter 14 over the
shop's sales file, in the same run, interleaved. The bare side starts the
same interpreter (`-I -B`, as the sandbox does) with no namespace, no mount,
no filter and no limit; the other is the whole tool: bubblewrap's
namespaces and mounts, the prelude's rlimits and seccomp filter, the parent's
clock and output bound. The ratio of the two is the boundary's cost. A third
line is the sandbox's start-up alone: an empty program through `run_python`,
less an empty program run bare.

Wall-clock seconds, not CPU seconds: most of a sandboxed run happens in
other processes (bubblewrap, the interpreter), which this process's CPU
clock does not see. The minimum over rounds is the figure least disturbed by
the rest of a shared machine. Exits 1 when no sandbox can be made here.

    uv run python scripts/bench_run_python.py [--repeat N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sovereign_agent.generated_code import Outcome, run_python

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "book/textbook/data"

SATURDAY = """
import csv
from collections import defaultdict

saturdays = defaultdict(list)
with open(DATA + "/sales.csv") as sales:
    for row in csv.DictReader(sales):
        if row["weekday"] == "Saturday":
            saturdays[row["sku"]].append(int(row["tubs"]))
best = max(saturdays, key=lambda sku: sum(saturdays[sku]))
print(best, max(saturdays[best]))
"""


def seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def bare(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", code], capture_output=True, text=True, check=True
    )
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="rounds (default 20)")
    options = parser.parse_args(argv)
    if options.repeat < 1:
        parser.error("--repeat must be positive")

    inside = f"DATA = '/data'\n{SATURDAY}"
    outside = f"DATA = {str(DATA)!r}\n{SATURDAY}"
    sandboxed = run_python(inside, DATA)
    if sandboxed.outcome is not Outcome.PRINTED:
        print(f"no measurement: {sandboxed.outcome.value}: {sandboxed.error}", file=sys.stderr)
        return 1
    if sandboxed.output != bare(outside):
        print("the two sides printed different answers", file=sys.stderr)
        return 1

    works: dict[str, Callable[[], object]] = {
        "run_python": lambda: run_python(inside, DATA),
        "bare python -c": lambda: bare(outside),
        "run_python, empty program": lambda: run_python("pass", DATA),
        "bare python -c, empty program": lambda: bare("pass"),
    }
    best = dict.fromkeys(works, float("inf"))
    for _ in range(options.repeat):
        # Interleaved, so a change of machine load lands on every side.
        for label, work in works.items():
            best[label] = min(best[label], seconds(work))

    print(f"the Saturday analysis, best of {options.repeat} rounds (wall clock):")
    for label, figure in best.items():
        print(f"  {label:30} {figure * 1000:8.1f} ms")
    ratio = best["run_python"] / best["bare python -c"]
    start_up = best["run_python, empty program"] - best["bare python -c, empty program"]
    print(f"boundary cost: run_python / bare python -c = {ratio:.2f}x")
    print(f"sandbox start-up alone: {start_up * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
