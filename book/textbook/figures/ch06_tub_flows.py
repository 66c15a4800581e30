"""Figure 6.1: where tubs move, and Lucy's Friday counts in each place.

The counts are read from a store that has lived Lucy's Friday exactly as
section 6.5 records it: seeded from chapter 1's shop, then two reservations
and one expected delivery, applied with the store's own actions.
"""

from __future__ import annotations

import runpy
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

from bookproof.figures.diagrams import ACCENT, INK, MUTED, Canvas
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import (
    expect_delivery,
    open_store,
    read_products,
    reserve,
    seed_store,
)

CHAPTER_1 = (
    Path(__file__).resolve().parent.parent
    / "checkpoints"
    / "profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
)
FRIDAY = (
    (reserve, "SKU-VANILLA", 3),
    (reserve, "SKU-CHOCOLATE", 2),
    (expect_delivery, "SKU-STRAWBERRY", 4),
)


def friday_counts() -> list[dict[str, Any]]:
    """Every product's row after section 6.5's Friday, read back from the store."""
    with tempfile.TemporaryDirectory(prefix="figure-") as folder:
        store: sqlite3.Connection
        with closing(open_store(Path(folder) / "lucy.db")) as store:
            seed_store(store, runpy.run_path(str(CHAPTER_1))["SHOP"], PRICES_PENCE)
            for action, sku, tubs in FRIDAY:
                action(store, sku, tubs)
            return read_products(store)


def _flavour(sku: str) -> str:
    return sku.removeprefix("SKU-").lower()


def _counts(rows: list[dict[str, Any]], column: str) -> str:
    return "\n".join(f"{_flavour(row['sku'])}: {row[column]}" for row in rows)


def draw() -> Any:
    rows = friday_counts()
    canvas = Canvas(7.4, 3.5)
    # The places tubs can be, left to right as a tub travels.
    places = {
        "supplier": (0.2, 2.0, None),
        "incoming": (1.75, 2.0, "incoming"),
        "on hand": (3.55, 2.0, "on_hand"),
        "customer": (5.9, 2.0, None),
        "reserved": (4.7, 0.15, "reserved"),
    }
    width, height = 1.3, 1.15
    for name, (x, y, column) in places.items():
        outside = column is None
        canvas.box(x, y, width, height, dashed=outside, fill="white" if outside else "#eef4f8")
        canvas.text(x + width / 2, y + height - 0.18, name, fontweight="bold")
        if column is not None:
            canvas.text(x + width / 2, y + height / 2 - 0.12, _counts(rows, column), fontsize=8)
        else:
            canvas.text(x + width / 2, y + height / 2 - 0.1, "outside\nthe store", color=MUTED)

    def edge(
        start: tuple[float, float], end: tuple[float, float], label: str, **style: Any
    ) -> None:
        canvas.arrow(start, end, **style)
        canvas.text(
            (start[0] + end[0]) / 2,
            (start[1] + end[1]) / 2 + 0.15,
            label,
            fontsize=7.5,
            color=style.get("color", INK),
        )

    mid = 2.0 + height / 2
    edge((1.5, mid + 0.2), (1.75, mid + 0.2), "")
    canvas.text(1.62, mid + 0.72, "expect_delivery", fontsize=7.5)
    edge((3.05, mid + 0.2), (3.55, mid + 0.2), "")
    canvas.text(3.3, mid + 0.72, "receive, expected", fontsize=7.5)
    # An unannounced delivery skips `incoming`.
    canvas.arrow((0.85, 2.0), (4.2, 2.0), curve=0.25, color=MUTED)
    canvas.text(2.5, 1.4, "receive, unannounced", fontsize=7.5, color=MUTED)
    edge((4.85, mid), (5.9, mid), "collect")
    canvas.text(5.37, mid - 0.2, "(reserved too)", fontsize=7, color=MUTED)
    # A reservation is a promise, not a move: dashed, into `reserved`.
    canvas.arrow((6.55, 2.0), (6.0, 0.75), dashed=True, color=ACCENT)
    canvas.text(6.55, 1.25, "reserve", fontsize=7.5, color=ACCENT, ha="left")
    canvas.arrow((4.7, 0.45), (3.6, 0.45), dashed=True, color=ACCENT)
    canvas.text(3.1, 0.62, "cancel_reservation", fontsize=7.5, color=ACCENT)
    canvas.text(
        0.2,
        0.25,
        "Friday, after section 6.5\nsolid: tubs move\ndashed: a promise changes",
        ha="left",
        fontsize=7.5,
        color=MUTED,
        va="bottom",
    )
    return canvas.figure
