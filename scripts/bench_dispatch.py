"""What the dispatcher's checks cost, per call, against doing the work bare.

The baseline, measured in the same run, is the least any tool call must do:
validate the arguments strictly, run the handler, encode the result as JSON.
Each dispatcher path is printed as a ratio of that baseline. Goals (issue 2):
the valid path at most 1.30x; every refusal at most 1.00x.

    uv run python scripts/bench_dispatch.py [--calls N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

from sovereign_agent.shop import (
    PRICES_PENCE,
    DraftArguments,
    ProductArguments,
    build_tools,
    draft_order,
)
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_1 = (
    ROOT / "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
)
VALID_PATH_GOAL = 1.30
REFUSAL_GOAL = 1.00


def per_call_seconds(work: Callable[[], object], calls: int, repeat: int) -> float:
    # The minimum over repeats is the figure least disturbed by the rest of the machine.
    return min(timeit.repeat(work, number=calls, repeat=repeat)) / calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls", type=int, default=20_000, help="calls per timing (default 20000)"
    )
    parser.add_argument("--repeat", type=int, default=7, help="timings per path (default 7)")
    options = parser.parse_args(argv)
    if options.calls < 1 or options.repeat < 1:
        parser.error("--calls and --repeat must be positive")

    shop = runpy.run_path(str(CHAPTER_1))["SHOP"]
    products = [dict(row) for row in shop["products"]]
    prices = dict(PRICES_PENCE)
    tools = build_tools(shop)
    arguments = {"sku": "SKU-VANILLA", "quantity": 6}

    def baseline() -> object:
        parsed = DraftArguments.model_validate(arguments, strict=True)
        value = draft_order(products, prices, parsed.sku, parsed.quantity)
        return json.dumps({"ok": True, "value": value}, allow_nan=False)

    probe = ExecutableTool("place_order", "Probe.", ProductArguments, lambda a: "x", True)
    unguarded = Dispatcher([probe], allowed=["place_order"])
    small = build_tools(shop)
    small_bound = Dispatcher(small.tools.values(), allowed=small.allowed, max_result_bytes=128)

    def request(name: str, **given: object) -> ToolCall:
        return ToolCall(id="call-1", name=name, arguments=given)

    paths: list[tuple[str, Dispatcher, ToolCall, str]] = [
        ("valid draft", tools, request("draft_order", **arguments), "ok"),
        ("tool_not_allowed", tools, request("run_shell", command="ls"), "tool_not_allowed"),
        (
            "invalid_arguments",
            tools,
            request("draft_order", sku="SKU-VANILLA", quantity=True),
            "invalid_arguments",
        ),
        (
            "write_authority_required",
            unguarded,
            request("place_order", sku="SKU-VANILLA"),
            "write_authority_required",
        ),
        (
            "tool_failed",
            tools,
            request("draft_order", sku="SKU-VANILLA", quantity=8),
            "tool_failed",
        ),
        ("result_too_large", small_bound, request("draft_order", **arguments), "result_too_large"),
    ]

    base = per_call_seconds(baseline, options.calls, options.repeat)
    print(f"baseline (validate + handler + json.dumps): {base * 1e6:8.2f} us/call")
    print(f"{'path':<26} {'us/call':>8} {'ratio':>7} {'goal':>6}  verdict")
    all_met = True
    for label, dispatcher, call, expected in paths:
        observation = dispatcher.invoke(call)
        outcome = "ok" if observation["ok"] else observation["error"]
        if outcome != expected:
            print(f"{label}: expected {expected}, got {outcome}", file=sys.stderr)
            return 1
        cost = per_call_seconds(
            lambda d=dispatcher, c=call: d.invoke(c), options.calls, options.repeat
        )
        goal = VALID_PATH_GOAL if expected == "ok" else REFUSAL_GOAL
        met = cost / base <= goal
        all_met &= met
        verdict = "met" if met else "MISSED"
        print(f"{label:<26} {cost * 1e6:8.2f} {cost / base:6.2f}x {goal:5.2f}x  {verdict}")
    print("all goals met" if all_met else "some goals missed")
    return 0 if all_met else 1


if __name__ == "__main__":
    raise SystemExit(main())
