"""What our remote-tool client costs per call, against the SDK's bare `call_tool` and a local tool.

Two copies of the supplier's server run side by side over stdio. One is
called through `sovereign_agent.mcp.remote` and chapter 2's dispatcher (a
sync call handed to the connection's event-loop thread, validated, bounded);
the other with the SDK's `ClientSession.call_tool` alone, timed inside its own
event loop, with no thread to cross and no checks. Both call `next_delivery`,
which the supplier never changes. A local tool through the same dispatcher is
printed as well, to show what going over a pipe costs at all (no goal).

Goal (issue 24): ours at most 1.10x the bare call, unless its floor makes that
out of reach. Our client is synchronous (chapter 3's loop calls a handler and
waits) and the SDK's session lives in an event loop, so every call is handed
to the loop's thread and its answer handed back; the bare call, awaited
inside the loop, crosses no thread. The floor is the bare call made from
synchronous code by the cheaper of two standard crossings, each timed in the
same rounds on the bare session and with none of our checks: the standard
library's (`asyncio.run_coroutine_threadsafe(...).result()`) and anyio's
blocking portal (the SDK's own dependency's bridge from a thread into an
event loop). When ours is above 1.10x, the goal is what ours adds beyond the
floor: at most 0.10x the bare call (the same tenth issue 24 left for our
checks: validation, the bound, the dispatcher), so no synchronous client is
asked to cross for nothing. Exit status 0 when the goal is met, 1 when it is
missed.

The floor is timed in real calls, not on an idle loop. The cheapest
crossing alone (the same `run_coroutine_threadsafe` of a coroutine that does
nothing, on a loop thread with nothing else to do) is printed too, with no
goal: it takes about 23 us here, but in the middle of a call, when the caller,
the loop thread and the server all want the two cores at once, a crossing
costs two to four times that. A floor built from the idle figure (this
script's until issue 31) was missed by the portal itself, a crossing with no
checks at all, in three runs of six.

The goal is judged on figures each taken within one round, the median over
the rounds: ours / bare, the floor / bare, and ours minus the floor over
bare. Paths timed back to back share whatever the machine was doing then;
the best of each path, each from its own round, do not: the bare call itself
moved from 770 to 940 us between runs (where the scheduler put the server
against the client), and taken that way the floor fell below the bare call in
two runs of eight. The best times are printed as before. The client
process's CPU time per call is printed too: on a loaded machine the wall
times swing with the load, the CPU times much less.

Noise: with the defaults (10 interleaved rounds of 300 calls), over six runs
on two quiet cores, ours / bare was 1.09x to 1.11x, the floor 1.05x to 1.07x,
and ours beyond the floor +0.03x to +0.08x of the bare call.

    uv run python scripts/bench_mcp.py [--calls N] [--repeat R]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from anyio.from_thread import start_blocking_portal
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from sovereign_agent.mcp.remote import connect
from sovereign_agent.mcp.supplier import SUPPLIER_DECLARATIONS, SUPPLIER_SOURCE
from sovereign_agent.shop import NoArguments
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall

ROOT = Path(__file__).resolve().parents[1]
SUPPLIER = [sys.executable, str(ROOT / "book/textbook/servers/supplier_mcp.py")]
GOAL = 1.10
FLOOR_ALLOWANCE = 0.10
CALL = ToolCall(id="bench", name="next_delivery", arguments={})


async def bare_calls(session: ClientSession, calls: int) -> None:
    """The SDK's own call, awaited back to back inside its loop: no thread crossed between them."""
    for _ in range(calls):
        await session.call_tool("next_delivery", {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per timing (default 300)")
    parser.add_argument(
        "--repeat", type=int, default=10, help="rounds, each timing every path once (default 10)"
    )
    options = parser.parse_args(argv)
    if options.calls < 1 or options.repeat < 1:
        parser.error("--calls and --repeat must be positive")

    local = Dispatcher(
        [
            ExecutableTool(
                name="next_delivery",
                description="The weekday of the supplier's next delivery.",
                arguments=NoArguments,
                handler=lambda _: {"weekday": "Tuesday"},
            )
        ],
        allowed=["next_delivery"],
    )
    parameters = StdioServerParameters(command=SUPPLIER[0], args=SUPPLIER[1:])
    paths = ("bare", "threadsafe", "portal", "ours", "local", "hop")
    # Each path's wall time per call in every round, and its CPU time (every
    # thread of this process: ours, the portal's, the hop's). On a machine busy
    # with other work, wall time mostly measures waiting for a core, CPU time
    # what each path costs.
    wall: dict[str, list[float]] = {path: [] for path in paths}
    cpu: dict[str, list[float]] = {path: [] for path in paths}
    # A loop thread of its own for the idle crossing, so it shares nothing with either side.
    hop_loop = asyncio.new_event_loop()
    hop_thread = threading.Thread(target=hop_loop.run_forever, name="hop", daemon=True)
    hop_thread.start()

    async def nothing() -> None:
        return None

    def hop() -> None:
        asyncio.run_coroutine_threadsafe(nothing(), hop_loop).result()

    def timed(path: str, work: Callable[[], object], runs: int = options.calls) -> None:
        """Time `runs` runs of `work`, which make `options.calls` calls in all."""
        started, cpu_started = time.perf_counter(), time.process_time()
        for _ in range(runs):
            work()
        wall[path].append((time.perf_counter() - started) / options.calls)
        cpu[path].append((time.process_time() - cpu_started) / options.calls)

    with (
        connect(SUPPLIER, SUPPLIER_DECLARATIONS, source=SUPPLIER_SOURCE) as supplier,
        start_blocking_portal() as portal,
    ):
        ours = Dispatcher(supplier.tools.values(), allowed=["next_delivery"])
        expected = {"ok": True, "value": {"weekday": "Tuesday"}}
        if ours.invoke(CALL) != expected or local.invoke(CALL) != expected:
            print("next_delivery did not answer as expected", file=sys.stderr)
            return 1
        with portal.wrap_async_context_manager(stdio_client(parameters)) as (read, write):
            session = portal.wrap_async_context_manager(ClientSession(read, write))
            with session as bare:
                portal.call(bare.initialize)
                portal.call(bare_calls, bare, 3)  # warm both paths alike
                ours.invoke(CALL)
                # The bare session's loop (the portal's), for the standard library's crossing.
                bare_loop = portal.call(asyncio.get_running_loop)

                def threadsafe() -> None:
                    call = bare.call_tool("next_delivery", {})
                    asyncio.run_coroutine_threadsafe(call, bare_loop).result()

                threadsafe()
                # Interleaved rounds: paths timed back to back share whatever
                # the machine was doing then, and each round is judged on its own.
                for _ in range(options.repeat):
                    # Every bare call in one hand-over to the loop and back: a
                    # crossing per round, a fifth of a microsecond per call.
                    timed("bare", lambda: portal.call(bare_calls, bare, options.calls), runs=1)
                    timed("threadsafe", threadsafe)
                    timed("portal", lambda: portal.call(bare.call_tool, "next_delivery", {}))
                    timed("ours", lambda: ours.invoke(CALL))
                    timed("local", lambda: local.invoke(CALL))
                    timed("hop", hop)
    hop_loop.call_soon_threadsafe(hop_loop.stop)
    hop_thread.join()
    hop_loop.close()

    # Each round's wall times by path, with the round's cheaper crossing as "floor".
    rounds = [dict(zip(paths, times, strict=True)) for times in zip(*wall.values(), strict=True)]
    for times in rounds:
        times["floor"] = min(times["threadsafe"], times["portal"])

    def median(figure: Callable[[dict[str, float]], float]) -> float:
        """A figure taken within each round, the median over the rounds."""
        return statistics.median(figure(times) for times in rounds)

    ratio = median(lambda t: t["ours"] / t["bare"])
    floor = median(lambda t: t["floor"] / t["bare"])
    beyond = median(lambda t: (t["ours"] - t["floor"]) / t["bare"])
    best = {path: min(wall[path]) for path in paths}
    print(f"wall time per call, best of {options.repeat} interleaved rounds of {options.calls}")
    print(f"bare SDK call_tool:           {best['bare'] * 1e6:9.1f} us/call")
    print(f"bare, from a thread (stdlib): {best['threadsafe'] * 1e6:9.1f} us/call")
    print(f"bare, from a thread (portal): {best['portal'] * 1e6:9.1f} us/call")
    print(f"through our client:           {best['ours'] * 1e6:9.1f} us/call")
    print(f"local tool, same dispatcher:  {best['local'] * 1e6:9.1f} us/call")
    print(f"one crossing on an idle loop thread and back: {best['hop'] * 1e6:.1f} us (no goal)")
    print(f"medians over the rounds of each round's own figures ({options.repeat} rounds):")
    print(f"  floor (bare from a thread, the cheaper crossing): {floor:.2f}x bare")
    if ratio <= GOAL:
        verdict = "met"
        print(f"  ours / bare SDK: {ratio:.2f}x (goal <= {GOAL:.2f}x, issue 24's goal) met")
    else:
        verdict = "met" if beyond <= FLOOR_ALLOWANCE else "MISSED"
        print(f"  ours / bare SDK: {ratio:.2f}x, above issue 24's {GOAL:.2f}x")
        print(
            f"  ours beyond the floor: {beyond:+.3f}x bare "
            f"(goal <= +{FLOOR_ALLOWANCE:.2f}x, the tenth for our checks) {verdict}"
        )
    per_floor = median(lambda t: t["ours"] / t["floor"])
    print(f"  ours / bare from a thread: {per_floor:.2f}x (reported, no goal)")
    print(f"remote / local: {best['ours'] / best['local']:.0f}x (reported, no goal)")
    cpu_best = {path: min(cpu[path]) for path in paths}
    print(
        f"client CPU per call, best: bare {cpu_best['bare'] * 1e6:.0f} us, from a thread "
        f"(stdlib) {cpu_best['threadsafe'] * 1e6:.0f} us, (portal) {cpu_best['portal'] * 1e6:.0f} "
        f"us, ours {cpu_best['ours'] * 1e6:.0f} us; ours / bare "
        f"{cpu_best['ours'] / cpu_best['bare']:.2f}x (reported, no goal)"
    )
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    sys.exit(main())
