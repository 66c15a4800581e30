"""Figure 12.1: two workers, one run, a lease that runs out, and the fence that refuses a write.

Measured, not drawn from a table: a real store in a temporary folder holds
one queued run; two connections stand for two workers, each fenced with the
lease it claimed, exactly as a worker's connection is. The clock is a number
this script moves, so the lease runs out when the figure says it does. Each
mark on the timeline is a claim, a renewal or an attempted write, and says
what the store answered.
"""

from __future__ import annotations

import sqlite3
import tempfile
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookproof.figures.diagrams import ACCENT, MUTED, WARN, Canvas
from sovereign_agent.fencing import fence, fenced_writes
from sovereign_agent.leases import Lease, LeaseLost, claim_next, renew
from sovereign_agent.runs import submit_run
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import open_store, seed_store, transaction

SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
LEASE_S = 2.0
# When each thing happens, in seconds on the figure's clock.
FIRST_CLAIMS, FIRST_WRITES, FIRST_RENEWS, FIRST_PAUSES = 0.0, 0.8, 1.4, 1.7
SECOND_CLAIMS, SECOND_WRITES, FIRST_WAKES = 3.8, 4.5, 5.2
END_S = 6.2


@dataclass(frozen=True)
class Mark:
    """One thing a worker did at `at` seconds, and what the store said."""

    worker: int
    at: float
    words: str
    refused: bool = False


def write(connection: sqlite3.Connection) -> bool:
    """One write through a fenced connection: whether the store took it."""
    try:
        with fenced_writes(), transaction(connection):
            connection.execute("UPDATE products SET on_hand = on_hand WHERE sku = 'SKU-VANILLA'")
    except LeaseLost:
        return False
    return True


def written(taken: bool) -> str:
    return "written" if taken else "refused"


def measure() -> tuple[list[Mark], Lease, Lease]:
    """Both workers' story on a real store: their marks, and each one's last lease."""
    with tempfile.TemporaryDirectory(prefix="figure-") as folder:
        path = Path(folder) / "lucy.db"
        with closing(open_store(path)) as setup:
            seed_store(setup, SHOP, PRICES_PENCE)
            submit_run(setup, "Order what the shop needs.", clock=lambda: 0.0)
        with closing(open_store(path)) as first, closing(open_store(path)) as second:
            marks: list[Mark] = []
            lease = claim_next(first, "worker A", lease_seconds=LEASE_S, clock=lambda: FIRST_CLAIMS)
            assert lease is not None
            fence(first, lease)
            marks.append(Mark(0, FIRST_CLAIMS, f"claims:\ngeneration {lease.generation}"))
            marks.append(Mark(0, FIRST_WRITES, f"writes:\n{written(write(first))}"))
            lease = renew(first, lease, lease_seconds=LEASE_S, clock=lambda: FIRST_RENEWS)
            marks.append(Mark(0, FIRST_RENEWS, "renews"))
            early = claim_next(
                second, "worker B", lease_seconds=LEASE_S, clock=lambda: FIRST_PAUSES + 1.0
            )
            assert early is None, "the lease still runs: nobody else may claim"
            other = claim_next(
                second, "worker B", lease_seconds=LEASE_S, clock=lambda: SECOND_CLAIMS
            )
            assert other is not None
            fence(second, other)
            marks.append(Mark(1, SECOND_CLAIMS, f"claims:\ngeneration {other.generation}"))
            marks.append(Mark(1, SECOND_WRITES, f"writes:\n{written(write(second))}"))
            taken = write(first)
            marks.append(Mark(0, FIRST_WAKES, f"wakes, writes:\n{written(taken)}", not taken))
            return marks, lease, other


LEFT, SCALE = 1.1, 0.9  # inches: where 0 s sits, and inches per second


def draw() -> Any:
    marks, first, second = measure()
    canvas = Canvas(7.4, 2.7)
    lanes = (1.95, 0.9)
    x = lambda seconds: LEFT + seconds * SCALE  # noqa: E731 - one conversion, used throughout
    for lane, name in zip(lanes, ("worker A", "worker B"), strict=True):
        canvas.text(0.15, lane, name, ha="left", fontweight="bold", fontsize=8.5)
        canvas.line([x(0), x(END_S)], [lane, lane], color=MUTED)
    # The leases as bars above each lane, from the claim to the expiry they last set.
    for lane, start, lease in ((lanes[0], FIRST_CLAIMS, first), (lanes[1], SECOND_CLAIMS, second)):
        end = lease.expires_ms / 1000
        canvas.box(x(start), lane + 0.12, (end - start) * SCALE, 0.14, fill="#dbe7f0")
        canvas.text(
            x(end) + 0.05,
            lane + 0.19,
            f"lease to {end:.1f} s",
            ha="left",
            fontsize=6.8,
            color=ACCENT,
        )
    # Worker A's pause: it neither renews nor writes, and believes it still holds the run.
    canvas.box(
        x(FIRST_PAUSES), lanes[0] - 0.07, (FIRST_WAKES - FIRST_PAUSES) * SCALE, 0.14, dashed=True
    )
    canvas.text(
        x((FIRST_PAUSES + FIRST_WAKES) / 2), lanes[0] - 0.2, "paused", fontsize=6.8, color=MUTED
    )
    # The fence: from worker B's claim on, only generation 2 may write.
    canvas.line(
        [x(SECOND_CLAIMS), x(SECOND_CLAIMS)],
        [lanes[1] - 0.5, lanes[0] + 0.42],
        color=WARN,
        linestyle="--",
    )
    canvas.text(
        x(SECOND_CLAIMS),
        lanes[0] + 0.52,
        f"fence: generation {first.generation} \u2192 {second.generation}",
        fontsize=7,
        color=WARN,
    )
    for mark in marks:
        lane = lanes[mark.worker]
        colour = WARN if mark.refused else ACCENT
        canvas.text(x(mark.at), lane, "\u25cf", fontsize=8, color=colour)
        canvas.text(x(mark.at), lane - 0.36, mark.words, fontsize=6.8, color=colour)
    for tick in range(7):
        canvas.text(x(tick), 0.12, f"{tick} s", fontsize=7, color=MUTED)
    return canvas.figure
