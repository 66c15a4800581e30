"""Purchases per second through chapter 11's client against bare `urllib` requests to the same desk.

One supplier desk (the book's server, a real process on 127.0.0.1, its
ledger on disk) serves both sides in the same run, in alternating rounds.
The bare side posts each order once under a fresh key and reads the answer:
what the network and the desk cost. Our side purchases orders already
approved and recorded in a store: the `PREPARED` record, the request under
the operation id (with its deadline-bound transport), then the `CONFIRMED`
record. Each step of each purchase is timed, so the report says where the
difference goes: the two durable records, each a transaction that waits for
the disk (`synchronous = FULL`), and the client's own overhead on the request.

    uv run python scripts/bench_purchase.py [--purchases N] [--repeat R] [--dir PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

from sovereign_agent.approvals import (
    OrderArguments,
    add_operator,
    approve,
    canonical_arguments,
    place_order,
    set_weekly_limit,
)
from sovereign_agent.approvals.ledger import request_approval, seconds, utc_now
from sovereign_agent.purchasing import SupplierDesk, purchase
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import open_store, seed_store, transaction

ROOT = Path(__file__).resolve().parents[1]
DESK = ROOT / "book/textbook/servers/supplier_http.py"
SHOP: dict[str, Any] = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
BODY = json.dumps({"sku": "SKU-VANILLA", "quantity": 1}).encode()


def recorded_orders(path: Path, count: int) -> list[int]:
    """A store holding `count` approved, recorded, unsent orders (set up, never timed)."""
    with closing(open_store(path)) as store:
        seed_store(store, SHOP, PRICES_PENCE)
        add_operator(store, "lucy")
        set_weekly_limit(store, 10**9)
        ids = []
        arguments = OrderArguments(sku="SKU-VANILLA", quantity=1)
        for number in range(count):
            with transaction(store):
                approval = request_approval(
                    store,
                    "place_order",
                    canonical_arguments(arguments),
                    PRICES_PENCE["SKU-VANILLA"],
                    f"bench-{number}",
                    now=seconds(utc_now),
                )
            approve(store, approval.id, "lucy")
            ids.append(int(place_order(store, arguments)["order_id"]))
        return ids


def bare_round(url: str, count: int) -> float:
    """Seconds for `count` orders posted once each under a fresh key, answers read."""
    started = time.perf_counter()
    for _ in range(count):
        request = urllib.request.Request(
            f"{url}/orders",
            data=BODY,
            headers={"Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            answer.read()
    return time.perf_counter() - started


def our_round(store_path: Path, url: str, orders: list[int]) -> tuple[float, dict[str, float]]:
    """Seconds for purchasing `orders`, and the seconds spent in each step, summed."""
    steps = {"prepare": 0.0, "send": 0.0, "confirm": 0.0}
    mark = [0.0]
    names = {"prepared": "prepare", "answered": "send", "confirmed": "confirm"}

    def step(name: str, order: int) -> None:
        now = time.perf_counter()
        steps[names[name]] += now - mark[0]
        mark[0] = now

    desk = SupplierDesk(url)
    with closing(open_store(store_path)) as store:
        started = time.perf_counter()
        for order in orders:
            mark[0] = time.perf_counter()
            bought = purchase(store, order, desk, step=step)
            assert bought.status == "CONFIRMED", bought
        return time.perf_counter() - started, steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_purchase", description=__doc__.splitlines()[0])
    parser.add_argument("--purchases", type=int, default=200, help="purchases per round")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of each side")
    parser.add_argument("--dir", type=Path, help="where the store and ledger live (a temp dir)")
    arguments = parser.parse_args(argv)
    if arguments.purchases < 1 or arguments.repeat < 1:
        parser.error("--purchases and --repeat must be at least 1")
    with tempfile.TemporaryDirectory(dir=arguments.dir) as folder:
        store_path = Path(folder) / "lucy.db"
        count, rounds = arguments.purchases, arguments.repeat
        orders = recorded_orders(store_path, count * rounds)
        desk = subprocess.Popen(
            [sys.executable, str(DESK), "--port", "0", "--ledger", str(Path(folder) / "l.db")],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert desk.stdout is not None
            url = desk.stdout.readline().strip()
            bare: list[float] = []
            ours: list[float] = []
            spent = {"prepare": 0.0, "send": 0.0, "confirm": 0.0}
            for index in range(rounds):
                # Alternating rounds: a slower moment of a shared machine hits both sides.
                bare.append(bare_round(url, count))
                elapsed, steps = our_round(
                    store_path, url, orders[index * count : (index + 1) * count]
                )
                ours.append(elapsed)
                for name, seconds_spent in steps.items():
                    spent[name] += seconds_spent
        finally:
            desk.terminate()
            desk.wait()
    bare_each = statistics.median(bare) / count
    ours_each = statistics.median(ours) / count
    total = count * rounds
    print(f"{count} purchases a round, {rounds} rounds, one desk on 127.0.0.1")
    print(f"bare urllib POST:  {1 / bare_each:8.1f} purchases/s  ({bare_each * 1000:.2f} ms each)")
    print(f"our purchase():    {1 / ours_each:8.1f} purchases/s  ({ours_each * 1000:.2f} ms each)")
    print(f"ours / bare: {ours_each / bare_each:.2f}x the time per purchase")
    print("where our time goes, per purchase (all rounds):")
    for name, label in (
        ("prepare", "PREPARED record (operation id, a transaction)"),
        ("send", "request under the key (our transport)"),
        ("confirm", "CONFIRMED record (a transaction)"),
    ):
        print(f"  {label:48} {spent[name] / total * 1000:6.2f} ms")
    print(f"  {'the bare request, for comparison':48} {bare_each * 1000:6.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
