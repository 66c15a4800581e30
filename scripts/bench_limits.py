"""What streaming costs the runtime, and what running reads together saves it.

Two figures. First, assembling a streamed reply (server-sent events, cut into
chunks as a network delivers them) against parsing the same reply sent whole,
for both dialects, as a ratio: the price of showing text as it arrives.
Second, one turn of three reads that each wait 0.2 s, answered side by side
and one after another, in real time. Goal: the reads side by side at least
2.5x faster than one after another (three waits overlap into one).

    uv run python scripts/bench_limits.py [--calls N] [--repeat R] [--chunk BYTES]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from sovereign_agent.limits import Limits, RunLimits
from sovereign_agent.models.anthropic import parse_message
from sovereign_agent.models.openai_compat import parse_chat_completion
from sovereign_agent.models.streaming import ChatCompletionAssembler, MessagesAssembler, assemble
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall

ROOT = Path(__file__).resolve().parents[1]
# The provider stub's builders write both dialects' replies and streams as the
# providers do (its tests validate them against the official SDKs).
sys.path.insert(0, str(ROOT / "tests"))
from provider_stub import (  # noqa: E402
    anthropic_stream_events,
    anthropic_tool_use,
    openai_stream_events,
    openai_tool_calls,
    server_events,
)

SPEEDUP_GOAL = 2.5
READ_S = 0.2

TEXT = "Vanilla is low and the supplier delivers on Tuesday; checking the other two."
CALLS = [
    ("call_1", "check_availability", {"sku": "VANILLA"}),
    ("call_2", "check_availability", {"sku": "CHOCOLATE"}),
    ("call_3", "check_availability", {"sku": "STRAWBERRY"}),
]


def best_per_call(
    works: dict[str, Callable[[], object]], calls: int, rounds: int
) -> dict[str, float]:
    """Per-call seconds, timed back to back each round; the least disturbed round counts."""
    best = dict.fromkeys(works, float("inf"))
    for _ in range(rounds):
        for label, work in works.items():
            best[label] = min(best[label], timeit.timeit(work, number=calls) / calls)
    return best


def chunks(wire: bytes, size: int) -> list[bytes]:
    return [wire[start : start + size] for start in range(0, len(wire), size)]


class Wait(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: str


async def slow_read(arguments: Wait) -> dict[str, Any]:
    await asyncio.sleep(READ_S)
    return {"sku": arguments.sku, "tubs": 12}


def turn_seconds(read_only: frozenset[str]) -> float:
    tool = ExecutableTool("check_availability", "A supplier read.", Wait, slow_read)
    with RunLimits(Limits(read_only=read_only)) as run:
        dispatcher = run.dispatcher(Dispatcher([tool], allowed=["check_availability"]))
        calls = [
            ToolCall(id=call_id, name=name, arguments=arguments)
            for call_id, name, arguments in CALLS
        ]
        started = time.perf_counter()
        outcomes = dispatcher.attempt_turn(calls)
        took = time.perf_counter() - started
    if not all(outcome.observation["ok"] for outcome in outcomes):
        raise SystemExit("a read failed")
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000, help="parses per timing (default 2000)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    parser.add_argument(
        "--chunk", type=int, default=64, help="bytes per network chunk (default 64)"
    )
    options = parser.parse_args(argv)
    if options.calls < 1 or options.repeat < 1 or options.chunk < 1:
        parser.error("--calls, --repeat and --chunk must be positive")

    raw = [(call_id, name, json.dumps(arguments)) for call_id, name, arguments in CALLS]
    openai_body = json.dumps(openai_tool_calls(raw, content=TEXT).body)
    openai_wire = chunks(server_events(openai_stream_events(TEXT, raw), named=False), options.chunk)
    anthropic_body = json.dumps(anthropic_tool_use(CALLS, text=TEXT).body)
    anthropic_wire = chunks(
        server_events(anthropic_stream_events(TEXT, CALLS), named=True), options.chunk
    )
    works: dict[str, Callable[[], object]] = {
        "openai whole": lambda: parse_chat_completion(
            json.loads(openai_body), source="bench", model="m"
        ),
        "openai streamed": lambda: assemble(openai_wire, ChatCompletionAssembler(model="m")),
        "anthropic whole": lambda: parse_message(
            json.loads(anthropic_body), source="bench", model="m"
        ),
        "anthropic streamed": lambda: assemble(anthropic_wire, MessagesAssembler(model="m")),
    }
    for dialect in ("openai", "anthropic"):
        whole, streamed = works[f"{dialect} whole"](), works[f"{dialect} streamed"]()
        if getattr(whole, "message", None) != getattr(streamed, "message", None):
            print(f"{dialect}: the streamed reply differs from the whole one", file=sys.stderr)
            return 1
    timings = best_per_call(works, options.calls, options.repeat)
    print(f"one reply, text and {len(CALLS)} calls, streamed in {options.chunk}-byte chunks")
    print(f"{'dialect':<10} {'whole us':>9} {'streamed us':>12} {'ratio':>7}")
    for dialect in ("openai", "anthropic"):
        whole, streamed = timings[f"{dialect} whole"], timings[f"{dialect} streamed"]
        print(f"{dialect:<10} {whole * 1e6:9.1f} {streamed * 1e6:12.1f} {streamed / whole:6.2f}x")

    serial = min(turn_seconds(frozenset()) for _ in range(options.repeat))
    together = min(turn_seconds(frozenset({"check_availability"})) for _ in range(options.repeat))
    speedup = serial / together
    met = speedup >= SPEEDUP_GOAL
    print(
        f"three {READ_S:g} s reads: one after another {serial:.3f} s, side by side {together:.3f} s"
    )
    print(
        f"side by side {speedup:.2f}x faster (goal {SPEEDUP_GOAL:g}x): {'met' if met else 'MISSED'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
