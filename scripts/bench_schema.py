"""What a tool's schema costs: chapter 2's cached copy against asking Pydantic each time.

The baseline, measured in the same run, is `model_json_schema()`: Pydantic
walking the argument model, as `ExecutableTool.schema()` did before the cache.
Each row prints `parameters_schema` (a fresh dict parsed from the cached text)
as a ratio of it, per shop argument model, and then one step's `schemas()` of
the morning dispatcher against the walks that step used to make. Goal: the
copy at most a tenth of the walk.

    uv run python scripts/bench_schema.py [--calls N] [--repeat R]
"""

from __future__ import annotations

import argparse
import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Run as a script, this folder is on the import path: one way of timing for both.
from bench_dispatch import interleaved_per_call_seconds

from sovereign_agent.shop import build_tools
from sovereign_agent.tools import parameters_schema

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_1 = (
    ROOT / "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
)
GOAL = 0.10


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000, help="calls per timing (default 2000)")
    parser.add_argument(
        "--repeat", type=int, default=7, help="rounds, each timing every row once (default 7)"
    )
    options = parser.parse_args(argv)
    if options.calls < 1 or options.repeat < 1:
        parser.error("--calls and --repeat must be positive")

    dispatcher = build_tools(runpy.run_path(str(CHAPTER_1))["SHOP"])
    offered = [dispatcher.tools[name] for name in sorted(dispatcher.allowed)]

    # (row, the walk it replaces, the cached copy); each pair must agree first.
    rows: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        (
            tool.arguments.__name__,
            tool.arguments.model_json_schema,
            lambda model=tool.arguments: parameters_schema(model),
        )
        for tool in offered
    ]

    def step_before() -> list[dict[str, Any]]:
        # What `schemas()` built before the cache: the same records, each walk afresh.
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.arguments.model_json_schema(),
                },
            }
            for tool in offered
        ]

    rows.append((f"one step's schemas() ({len(offered)})", step_before, dispatcher.schemas))
    works: dict[str, Callable[[], object]] = {}
    for label, walk, copy in rows:
        if walk() != copy():
            print(f"{label}: the cached schema is not Pydantic's")
            return 1
        works[f"{label} walk"], works[f"{label} copy"] = walk, copy
    timings = interleaved_per_call_seconds(works, options.calls, options.repeat)

    print(f"{'row':<28} {'walk us':>8} {'copy us':>8} {'ratio':>7} {'goal':>6}  verdict")
    all_met = True
    for label, _, _ in rows:
        walk, copy = timings[f"{label} walk"], timings[f"{label} copy"]
        met = copy / walk <= GOAL
        all_met &= met
        verdict = "met" if met else "MISSED"
        print(
            f"{label:<28} {walk * 1e6:8.2f} {copy * 1e6:8.2f} "
            f"{copy / walk:6.3f}x {GOAL:5.2f}x  {verdict}"
        )
    print("all goals met" if all_met else "some goals missed")
    return 0 if all_met else 1


if __name__ == "__main__":
    raise SystemExit(main())
