"""Figure 11.1: the crash points on the timeline of one purchase, and what resolving did at each.

Measured, not drawn from a table: the book's supplier desk runs in this
process on 127.0.0.1 (its own ledger in a temporary folder), and for each
crash point a fresh store holds one approved order. The purchase is stopped
at that point (an exception from its step observer, or the desk dropping the
answer to its only attempt); then `resolve_purchases` runs with a client that
counts what it does. Each label says whether resolving found the order by
asking, how many requests it sent, and how many orders the ledger then holds.
"""

from __future__ import annotations

import runpy
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookproof.figures.diagrams import ACCENT, MUTED, WARN, Canvas
from sovereign_agent.approvals import (
    OrderArguments,
    add_operator,
    approve,
    canonical_arguments,
    set_weekly_limit,
)
from sovereign_agent.approvals.authority import place_order
from sovereign_agent.approvals.ledger import request_approval, seconds, utc_now
from sovereign_agent.purchasing import (
    Attempt,
    DeskSettings,
    PlacedOrder,
    PurchaseFailed,
    SupplierDesk,
    purchase,
    resolve_purchases,
)
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import open_store, seed_store, transaction

SERVER = Path(__file__).resolve().parent.parent / "servers" / "supplier_http.py"
SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}

# The purchase's moments, left to right.
EVENTS = (
    "order\nrecorded",
    "PREPARED\ncommitted",
    "request\nsent",
    "supplier\ncommits",
    "answer\nreceived",
    "CONFIRMED\ncommitted",
)


class Crash(Exception):
    """Stands for the process dying here: nothing after this line of the purchase runs."""


@dataclass(frozen=True)
class Point:
    """A crash point: after which event it falls, and how the purchase is stopped there."""

    after: int
    name: str
    stop_at: str | None  # the step at which the observer raises; None: no purchase at all
    drop: bool = False  # the desk commits, then drops its answer to the only attempt


POINTS = (
    Point(0, "after ordering", None),
    Point(1, "after preparing", "prepared"),
    Point(3, "answer lost", "never", drop=True),
    Point(4, "after the answer", "answered"),
    Point(5, "after confirming", "confirmed"),
)


@dataclass(frozen=True)
class Outcome:
    unfinished: bool
    found: bool
    sent: int
    ledger: int


@contextmanager
def desk(ledger: Path) -> Iterator[tuple[str, Any]]:
    """The supplier's desk serving `ledger` on a free port, in a thread of this process."""
    server = runpy.run_path(str(SERVER))
    server["create_ledger"](ledger)
    state = server["Desk"](ledger, [], 0.0)
    running = server["DeskServer"](("127.0.0.1", 0), state)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = running.server_address[:2]
        yield f"http://{host}:{port}", state
    finally:
        running.shutdown()
        running.server_close()


class CountingDesk(SupplierDesk):
    """The real client, counting the look-ups that found an order."""

    found = 0

    def look_up(self, key: str) -> PlacedOrder | None:
        order = super().look_up(key)
        self.found += order is not None
        return order


def one_order(path: Path) -> int:
    with closing(open_store(path)) as store:
        seed_store(store, SHOP, PRICES_PENCE)
        add_operator(store, "lucy")
        set_weekly_limit(store, 5000)
        arguments = OrderArguments(sku="SKU-VANILLA", quantity=9)
        with transaction(store):
            approval = request_approval(
                store,
                "place_order",
                canonical_arguments(arguments),
                2250,
                "figure",
                now=seconds(utc_now),
            )
        approve(store, approval.id, "lucy")
        return int(place_order(store, arguments)["order_id"])


def crash_at(point: Point) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="figure-") as folder:
        ledger = Path(folder) / "ledger.db"
        order = one_order(Path(folder) / "lucy.db")
        with desk(ledger) as (url, state), closing(open_store(Path(folder) / "lucy.db")) as store:

            def step(name: str, order_id: int) -> None:
                if name == point.stop_at:
                    raise Crash(name)

            if point.stop_at is not None:
                state.set_faults(["drop"] if point.drop else [])
                once = SupplierDesk(url, settings=DeskSettings(max_attempts=1))
                # The purchase stops here, as a killed process would.
                with suppress(Crash, PurchaseFailed):
                    purchase(store, order, once, step=step)
            state.set_faults([])
            sends: list[Attempt] = []
            counting = CountingDesk(url, observe=sends.append)
            settled = resolve_purchases(store, counting)
            assert [p.status for p in settled] in ([], ["CONFIRMED"])
            with closing(sqlite3.connect(ledger)) as connection:
                count = int(connection.execute("SELECT count(*) FROM orders").fetchone()[0])
            return Outcome(bool(settled), bool(counting.found), len(sends), count)


def label(outcome: Outcome) -> str:
    if not outcome.unfinished:
        return "nothing to\nresolve"
    asked = "asked: found" if outcome.found else "asked: none"
    return f"{asked}\n{outcome.sent} request{'' if outcome.sent == 1 else 's'} sent"


def draw() -> Any:
    outcomes = [crash_at(point) for point in POINTS]
    canvas = Canvas(7.8, 2.6)
    left, step = 0.5, 1.2
    axis_y = 1.75
    xs = [left + step * index for index in range(len(EVENTS))]
    canvas.line([xs[0], xs[-1]], [axis_y, axis_y], color=ACCENT, linewidth=1.4)
    for x, event in zip(xs, EVENTS, strict=True):
        canvas.line([x, x], [axis_y - 0.06, axis_y + 0.06], color=ACCENT, linewidth=1.4)
        canvas.text(x, axis_y + 0.38, event, fontsize=7.5)
    for number, (point, outcome) in enumerate(zip(POINTS, outcomes, strict=True), start=1):
        x = xs[point.after] + step / 2 if point.after < len(EVENTS) - 1 else xs[-1] + 0.6
        canvas.text(
            x,
            axis_y,
            str(number),
            fontsize=8,
            color="white",
            fontweight="bold",
            bbox={"boxstyle": "circle,pad=0.18", "facecolor": WARN, "edgecolor": WARN},
        )
        canvas.text(x, axis_y - 0.42, point.name, fontsize=7, color=WARN)
        canvas.text(x, axis_y - 0.85, label(outcome), fontsize=6.8)
        canvas.text(
            x,
            axis_y - 1.3,
            f"ledger: {outcome.ledger} order{'' if outcome.ledger == 1 else 's'}",
            fontsize=6.8,
            color=MUTED,
        )
    return canvas.figure
