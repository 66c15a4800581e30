"""What the SQLite store costs per tool call, against chapter 2's in-memory shop, and how many
drafts per second one and two processes save into one file.

Per call, each of the model's tools goes through a dispatcher over the store
and through a dispatcher over the dict, timed back to back in every round;
the store's cost is printed as a ratio of the dict's. `draft_order` is timed
twice over the store: asking again for an open draft (a transaction that
writes nothing) and saving a new draft (a transaction that commits a row,
and with `synchronous = FULL` waits for the disk).

Drafts per second: real processes, each saving new drafts for its own skus in
one shared file, started together; one process against two, in alternating
rounds. Two writers share one write lock, so the second process adds
concurrency, not throughput: the figure to read is that nothing is lost and
how much the lock hand-over costs.

    uv run python scripts/bench_store.py [--calls N] [--repeat R] [--drafts D] [--dir PATH]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
import timeit
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from sovereign_agent.shop import PRICES_PENCE, build_tools
from sovereign_agent.store import build_store_tools, open_store, read_drafts, seed_store
from sovereign_agent.tools import Dispatcher, ToolCall

SHOP: dict[str, Any] = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
DRAFT = {"sku": "SKU-VANILLA", "quantity": 6}

# A writer process: open the shared store, say so, wait for the start, save a
# new draft for each of its skus (each needs 1 tub), report its clock.
WRITER = """
    import sys, time
    from sovereign_agent.store import open_store, save_draft

    store = open_store(sys.argv[1], timeout=60)
    skus = sys.argv[2:]
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.monotonic()
    for sku in skus:
        save_draft(store, sku, 1)
    print(started, time.monotonic(), flush=True)
"""


def interleaved_per_call_seconds(
    works: dict[str, Callable[[], object]], calls: int, rounds: int
) -> dict[str, float]:
    """Per-call seconds of each work, timed back to back in every round; the minimum over rounds."""
    best = dict.fromkeys(works, float("inf"))
    for _ in range(rounds):
        for label, work in works.items():
            best[label] = min(best[label], timeit.timeit(work, number=calls) / calls)
    return best


def many_skus(count: int) -> list[str]:
    return [f"SKU-BENCH-{number:06d}" for number in range(count)]


def store_of_many(path: Path, skus: list[str]) -> None:
    """A store in which every sku needs exactly 1 tub and has a price: one new draft each."""
    rows = [{"sku": sku, "name": sku, "on_hand": 0, "reorder_point": 1} for sku in skus]
    with closing(open_store(path)) as store:
        seed_store(store, {"products": rows}, dict.fromkeys(skus, 100))


def new_draft_seconds(folder: Path, drafts: int, rounds: int) -> float:
    """Per-call seconds of saving a new draft through the store's dispatcher (best round)."""
    best = float("inf")
    for number in range(rounds):
        path = folder / f"new-drafts-{number}.db"
        skus = many_skus(drafts)
        store_of_many(path, skus)
        with closing(open_store(path)) as store:
            tools = build_store_tools(store)
            calls = [
                ToolCall(id="c", name="draft_order", arguments={"sku": sku, "quantity": 1})
                for sku in skus
            ]
            started = timeit.default_timer()
            for call in calls:
                tools.invoke(call)
            best = min(best, (timeit.default_timer() - started) / drafts)
            assert len(read_drafts(store)) == drafts
    return best


def drafts_per_second(folder: Path, label: str, drafts: int, processes: int) -> float:
    """New drafts per second saved by `processes` writers into one file, all started together."""
    path = folder / f"{label}.db"
    skus = many_skus(drafts)
    store_of_many(path, skus)
    share = len(skus) // processes
    shares = [skus[i * share : (i + 1) * share] for i in range(processes)]
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(WRITER), str(path), *mine],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for mine in shares
    ]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    clocks = []
    for writer in writers:
        out, _ = writer.communicate(timeout=600)
        if writer.returncode != 0:
            raise RuntimeError(f"a writer process failed with status {writer.returncode}")
        clocks.append(tuple(map(float, out.split())))
    with closing(open_store(path)) as store:
        saved = len(read_drafts(store))
    if saved != share * processes:
        raise RuntimeError(f"{saved} drafts saved, {share * processes} expected")
    elapsed = max(end for _, end in clocks) - min(start for start, _ in clocks)
    return saved / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000, help="calls per timing (default 2000)")
    parser.add_argument(
        "--repeat", type=int, default=5, help="rounds, each timing every path once (default 5)"
    )
    parser.add_argument(
        "--drafts", type=int, default=400, help="new drafts per throughput run (default 400)"
    )
    parser.add_argument(
        "--dir", type=Path, default=None, help="where the store files go (default: a temp folder)"
    )
    options = parser.parse_args(argv)
    if options.calls < 1 or options.repeat < 1 or options.drafts < 2:
        parser.error("--calls and --repeat must be positive, --drafts at least 2")

    with tempfile.TemporaryDirectory(prefix="bench-store-", dir=options.dir) as name:
        folder = Path(name)
        print(f"store files in {folder}")
        with closing(open_store(folder / "lucy.db")) as store:
            seed_store(store, SHOP, PRICES_PENCE)
            stored = build_store_tools(store)
            in_memory = build_tools(SHOP)

            def invoke(tools: Dispatcher, name: str, **arguments: object) -> Callable[[], object]:
                call = ToolCall(id="call-1", name=name, arguments=arguments)
                return lambda: tools.invoke(call)

            works = {
                "list_stock (dict)": invoke(in_memory, "list_stock"),
                "list_stock (store)": invoke(stored, "list_stock"),
                "supplier (dict)": invoke(in_memory, "supplier", sku="SKU-VANILLA"),
                "supplier (store)": invoke(stored, "supplier", sku="SKU-VANILLA"),
                "draft_order (dict)": invoke(in_memory, "draft_order", **DRAFT),
                "draft_order, open draft (store)": invoke(stored, "draft_order", **DRAFT),
            }
            for label, work in works.items():
                observation: Any = work()
                if observation["ok"] is not True:
                    print(f"{label}: {observation}", file=sys.stderr)
                    return 1
            timings = interleaved_per_call_seconds(works, options.calls, options.repeat)
        timings["draft_order, new draft (store)"] = new_draft_seconds(
            folder, max(50, options.calls // 10), options.repeat
        )

        print(f"{'call':<32} {'us/call':>10} {'x dict':>8}")
        for tool in ("list_stock", "supplier", "draft_order"):
            base = timings[f"{tool} (dict)"]
            for label, cost in timings.items():
                if label.startswith(tool):
                    print(f"{label:<32} {cost * 1e6:10.1f} {cost / base:7.1f}x")

        one = two = 0.0
        for number in range(options.repeat):
            one = max(one, drafts_per_second(folder, f"one-{number}", options.drafts, 1))
            two = max(two, drafts_per_second(folder, f"two-{number}", options.drafts, 2))
        print(f"new drafts per second, 1 process:  {one:8.0f}")
        print(f"new drafts per second, 2 processes: {two:8.0f} ({two / one:.2f}x one process)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
