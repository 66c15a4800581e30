"""Chapter 6 checkpoint: a need that counts the tubs promised and the tubs on their way.

In a temporary folder: a store seeded from chapter 1's SHOP; Friday's news
recorded with the operator actions (3 vanilla reserved for the party, 2
chocolate for the cafe, 4 strawberry expected on the van); the morning plan run
through chapter 3's loop against the store's tools, saving its drafts; the van
received and the cafe's tubs collected, neither of which changes a need or a
draft; and the party, a day early, refused because the freezer holds 2 of its 3
tubs, with the store left exactly as it was.

Offline by default. With SOVEREIGN_MODEL set (see chapter 1) the plan is made
by that provider; every line but the model, stop and step lines comes from the
store, so a provider that drafts the same prints the same.
"""

import runpy
import sqlite3
import sys
import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import ModelError, model_from_env
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import (
    build_store_tools,
    collect,
    expect_delivery,
    open_store,
    read_drafts,
    read_products,
    receive_delivery,
    reserve,
    seed_store,
)

# Located beside this file, so the checkpoint runs from any working directory.
CHECKPOINTS = Path(__file__).parent
CHAPTER_1 = CHECKPOINTS / "profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
CHAPTER_3 = CHECKPOINTS / "profrod_sovereign_agent_ch03_bounded_agent_loop_checkpoint.py"

TASK = "Plan this morning's re-order."


def tubs(count: int) -> str:
    return f"{count} tub" if count == 1 else f"{count} tubs"


def everything(connection: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table: what "changed nothing" is checked against."""
    tables = ("products", "prices", "deliveries", "drafts")
    return {
        table: [tuple(row) for row in connection.execute(f"SELECT * FROM {table} ORDER BY 1")]
        for table in tables
    }


def show_open_drafts(connection: sqlite3.Connection, heading: str) -> None:
    drafts = [d for d in read_drafts(connection) if d["status"] == "DRAFT"]
    listed = ", ".join(f"{d['sku']} {tubs(d['quantity'])}" for d in drafts) or "no open draft"
    print(f"{heading}: {listed}: {sum(d['total_pence'] for d in drafts):,} pence in all")


def main() -> int:
    chapter_3 = runpy.run_path(str(CHAPTER_3))
    try:
        model = model_from_env(offline_script=chapter_3["SHOP_SCRIPT"])
    except ModelError as error:
        # A provider named but not configured: say so, and run nothing.
        print(f"cannot start: {error}", file=sys.stderr)
        return 2
    with (
        tempfile.TemporaryDirectory(prefix="lucy-") as folder,
        closing(open_store(Path(folder) / "lucy.db")) as store,
    ):
        seed_store(store, runpy.run_path(str(CHAPTER_1))["SHOP"], PRICES_PENCE)
        seeded = [
            f"{row['sku']} {row['on_hand']}/{row['reorder_point']}" for row in read_products(store)
        ]
        print("seeded from SHOP (on hand/target):", ", ".join(seeded))

        # Friday's news, recorded by the operator: two promises and a van.
        for action, sku, count in (
            (reserve, "SKU-VANILLA", 3),
            (reserve, "SKU-CHOCOLATE", 2),
            (expect_delivery, "SKU-STRAWBERRY", 4),
        ):
            row = action(store, sku, count)
            print(
                f"{action.__name__} {count} {sku}: on hand {row['on_hand']},"
                f" reserved {row['reserved']}, incoming {row['incoming']}, need {row['needed']}"
            )

        record = run_task(
            model,
            build_store_tools(store),
            TASK,
            max_steps=6,
            max_tool_calls=8,
            system=chapter_3["SYSTEM"],
        )
        print("model:", model.label)
        print(f"stop: {record.stop_reason} after {record.steps} step(s)")
        for draft in read_drafts(store):
            print(
                f"saved draft {draft['id']}: {draft['sku']} {tubs(draft['quantity'])},"
                f" {draft['total_pence']:,} pence, {draft['status']}"
            )
        show_open_drafts(store, "morning plan")

        # Saturday: the van and the cafe. Neither moves a need, so no draft goes stale.
        strawberry = receive_delivery(store, "SKU-STRAWBERRY", 4, expected=True)
        print(
            f"receive 4 SKU-STRAWBERRY, expected: on hand {strawberry['on_hand']},"
            f" incoming {strawberry['incoming']}, need {strawberry['needed']}"
        )
        chocolate = collect(store, "SKU-CHOCOLATE", 2)
        print(
            f"collect 2 SKU-CHOCOLATE: on hand {chocolate['on_hand']},"
            f" reserved {chocolate['reserved']}, need {chocolate['needed']}"
        )

        # The party comes a day early, for 3 tubs; the freezer holds 2.
        before = everything(store)
        try:
            collect(store, "SKU-VANILLA", 3)
            print("collect 3 SKU-VANILLA: accepted")
        except ValueError as error:
            print("collect 3 SKU-VANILLA refused:", error)
        print("the refusal changed nothing:", everything(store) == before)
        show_open_drafts(store, "still open")
    if record.error is not None:
        print("error:", record.error)
    return 0 if record.stop_reason is StopReason.FINAL_ANSWER else 1


if __name__ == "__main__":
    sys.exit(main())
