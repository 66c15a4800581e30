"""What the purchasing tests share: the supplier's desk as a real process, its ledger, a store.

The desk is the book's own server, `book/textbook/servers/supplier_http.py`,
started as a child process on 127.0.0.1 with a port the system picks; its
first line of output is its address. The ledger is read with plain sqlite3,
so a test's count of orders never comes from the code under test.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from shop_store import PRICES, SHOP

from sovereign_agent.approvals import (
    OrderArguments,
    add_operator,
    approve,
    canonical_arguments,
    set_weekly_limit,
)
from sovereign_agent.approvals.authority import place_order
from sovereign_agent.approvals.ledger import request_approval, seconds, utc_now
from sovereign_agent.store import open_store, seed_store, transaction

__all__ = ["DESK", "RunningDesk", "ledger_orders", "ordered_store", "running_desk"]

DESK = Path(__file__).resolve().parents[1] / "book/textbook/servers/supplier_http.py"


@dataclass
class RunningDesk:
    url: str
    ledger: Path
    process: subprocess.Popen[str]

    def set_faults(self, schedule: Sequence[str], late_seconds: float | None = None) -> None:
        body: dict[str, object] = {"schedule": list(schedule)}
        if late_seconds is not None:
            body["late_seconds"] = late_seconds
        request = urllib.request.Request(
            f"{self.url}/faults", data=json.dumps(body).encode(), method="PUT"
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert answer.status == 200

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)


def start_desk(ledger: Path, *arguments: str) -> RunningDesk:
    process = subprocess.Popen(
        [sys.executable, str(DESK), "--port", "0", "--ledger", str(ledger), *arguments],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), url
    return RunningDesk(url, ledger, process)


@contextmanager
def running_desk(ledger: Path, *arguments: str) -> Iterator[RunningDesk]:
    """The desk serving `ledger` until the block ends; stopped as an operator stops it."""
    desk = start_desk(ledger, *arguments)
    try:
        yield desk
    finally:
        if desk.process.poll() is None:
            desk.process.send_signal(signal.SIGINT)
            try:
                desk.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                desk.kill()
        if desk.process.stdout is not None:
            desk.process.stdout.close()


def ledger_orders(ledger: Path) -> list[tuple[str, str, int, int]]:
    """(idempotency key, sku, quantity, unit price) of every order the supplier holds."""
    with closing(sqlite3.connect(ledger)) as connection:
        return [
            tuple(row)
            for row in connection.execute(
                "SELECT idempotency_key, sku, quantity, unit_price_pence"
                " FROM orders ORDER BY number"
            )
        ]


def ordered_store(path: Path, orders: Sequence[tuple[str, int]]) -> list[int]:
    """A seeded store holding approved, used orders (chapter 10's ORDERED): their order ids."""
    with closing(open_store(path)) as store:
        seed_store(store, SHOP, PRICES)
        add_operator(store, "lucy")
        set_weekly_limit(store, 1_000_000)
        ids = []
        for number, (sku, quantity) in enumerate(orders):
            arguments = OrderArguments(sku=sku, quantity=quantity)
            with transaction(store):
                approval = request_approval(
                    store,
                    "place_order",
                    canonical_arguments(arguments),
                    quantity * PRICES[sku],
                    f"run-{number}",
                    now=seconds(utc_now),
                )
            approve(store, approval.id, "lucy")
            ids.append(place_order(store, arguments)["order_id"])
        return ids
