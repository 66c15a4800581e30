"""Chapter 6, as you saved it: a need that counts the tubs promised and the tubs on their way.

`replenishment_need` counts reserved and incoming tubs, in the one place the
stock report, the drafts and the store's supersede rule all read. Migration 2
gives every product the two counts, keeping every row a chapter 5 file holds.
Five operator actions move tubs between the counts, each in one transaction,
each refusing a change that would take a count below zero before it writes
anything. It builds on the book's runtime for chapters 2 and 5 (the shop, the
dispatcher and the store), whose `MIGRATIONS` is the one below.
Importing this file defines things and prints nothing.
"""

import sqlite3
from collections.abc import Mapping
from typing import Any

from sovereign_agent.store import (
    SCHEMA_V1,
    read_product,
    supersede_stale_draft,
    transaction,
    whole_number,
)


def replenishment_need(row: Mapping[str, Any]) -> int:
    """Tubs to order so that, once every promise is kept and the van is in, stock is at target.

    Reserved tubs will leave the freezer and incoming tubs will arrive. A row
    without those counts (chapters 1 to 5 wrote none) has none of either. A
    shop above target needs 0, never a negative.
    """
    reserved = row.get("reserved", 0)
    incoming = row.get("incoming", 0)
    shortfall: int = row["reorder_point"] + reserved - row["on_hand"] - incoming
    return max(0, shortfall)


# Migration 2: every product also counts the tubs promised to customers and the
# tubs on their way from the supplier. Rows already in the file get 0 of each,
# which is what they meant: chapter 5 knew of no promise and no van.
RESERVATIONS_V2 = (
    "ALTER TABLE products ADD COLUMN reserved INTEGER NOT NULL DEFAULT 0"
    " CONSTRAINT reserved_not_negative CHECK (reserved >= 0)",
    "ALTER TABLE products ADD COLUMN incoming INTEGER NOT NULL DEFAULT 0"
    " CONSTRAINT incoming_not_negative CHECK (incoming >= 0)",
)

# Migration N brings a file from version N-1 to N. Append, never edit: a file
# already at version N has run migration N exactly as it was written.
MIGRATIONS: tuple[tuple[str, ...], ...] = (SCHEMA_V1, RESERVATIONS_V2)


def seed_store(
    connection: sqlite3.Connection, shop: Mapping[str, Any], prices: Mapping[str, int]
) -> None:
    """Copy a shop snapshot and its prices into an empty store: every row, or none.

    A row without `reserved` or `incoming` (chapter 1's snapshot) has none of either.
    """
    products = [
        (
            row["sku"],
            row["name"],
            whole_number("on_hand", row["on_hand"]),
            whole_number("reorder_point", row["reorder_point"]),
            whole_number("reserved", row.get("reserved", 0)),
            whole_number("incoming", row.get("incoming", 0)),
        )
        for row in shop["products"]
    ]
    price_list = [(sku, whole_number("unit_cost_pence", pence)) for sku, pence in prices.items()]
    with transaction(connection):
        if connection.execute("SELECT 1 FROM products LIMIT 1").fetchone() is not None:
            # Seeding twice would overwrite today's stock with an old snapshot.
            raise ValueError("the store already holds products")
        connection.executemany(
            "INSERT INTO products (sku, name, on_hand, reorder_point, reserved, incoming)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            products,
        )
        connection.executemany(
            "INSERT INTO prices (sku, unit_cost_pence) VALUES (?, ?)", price_list
        )


def at_least_one_tub(action: str, tubs: object) -> int:
    """The tubs an action moves: a whole number (checked at the door), and at least one."""
    count = whole_number("tubs", tubs)
    if count < 1:
        raise ValueError(f"cannot {action} {count} tubs: an action moves at least one tub")
    return count


def refuse_below_zero(
    product: Mapping[str, Any], action: str, tubs: int, changes: Mapping[str, int]
) -> None:
    """Refuse, by name and before anything is written, a change that would leave a count below 0."""
    for count, change in changes.items():
        if product[count] + change < 0:
            raise ValueError(
                f"cannot {action} {tubs} tub{'' if tubs == 1 else 's'} of {product['sku']}:"
                f" only {product[count]} {count.replace('_', ' ')}"
            )


def move_tubs(
    connection: sqlite3.Connection,
    action: str,
    sku: str,
    tubs: int,
    *,
    on_hand: int = 0,
    reserved: int = 0,
    incoming: int = 0,
) -> dict[str, Any]:
    """One operator action: `tubs` times what one tub does to each count, in one transaction.

    The keyword arguments say what one tub does (+1, -1 or 0). The product is
    read under the write lock, so the refusal and the change see the same row.
    """
    at_least_one_tub(action, tubs)
    changes = {"on_hand": on_hand * tubs, "reserved": reserved * tubs, "incoming": incoming * tubs}
    with transaction(connection):
        refuse_below_zero(read_product(connection, sku), action, tubs, changes)
        connection.execute(
            "UPDATE products SET on_hand = on_hand + :on_hand, reserved = reserved + :reserved,"
            " incoming = incoming + :incoming WHERE sku = :sku",
            {**changes, "sku": sku},
        )
        supersede_stale_draft(connection, sku)
        product = read_product(connection, sku)
    return {**product, "needed": replenishment_need(product)}


def reserve(connection: sqlite3.Connection, sku: str, tubs: int) -> dict[str, Any]:
    """A customer orders tubs to collect later: promised tubs raise the need."""
    return move_tubs(connection, "reserve", sku, tubs, reserved=+1)


def collect(connection: sqlite3.Connection, sku: str, tubs: int) -> dict[str, Any]:
    """The customer takes reserved tubs: they leave the freezer and the promises together."""
    return move_tubs(connection, "collect", sku, tubs, on_hand=-1, reserved=-1)


def cancel_reservation(connection: sqlite3.Connection, sku: str, tubs: int) -> dict[str, Any]:
    """The customer no longer wants reserved tubs: the promise goes, and the need with it."""
    return move_tubs(connection, "cancel", sku, tubs, reserved=-1)


def expect_delivery(connection: sqlite3.Connection, sku: str, tubs: int) -> dict[str, Any]:
    """The supplier confirms tubs on the van: tubs on their way lower the need."""
    return move_tubs(connection, "expect", sku, tubs, incoming=+1)


def receive_delivery(
    connection: sqlite3.Connection, sku: str, tubs: int, *, expected: bool = False
) -> dict[str, Any]:
    """Tubs arrive: record them, put them in the freezer, retire a draft they made stale.

    An expected delivery comes off `incoming`, so no need changes, and more
    than is incoming is refused. One nobody announced (chapter 5's kind) adds
    to the freezer alone, and lowers the need.
    """
    at_least_one_tub("receive", tubs)
    with transaction(connection):
        if expected:
            refuse_below_zero(read_product(connection, sku), "receive", tubs, {"incoming": -tubs})
        connection.execute("INSERT INTO deliveries (sku, tubs) VALUES (?, ?)", (sku, tubs))
        connection.execute(
            "UPDATE products SET on_hand = on_hand + ?, incoming = incoming - ? WHERE sku = ?",
            (tubs, tubs if expected else 0, sku),
        )
        supersede_stale_draft(connection, sku)
        product = read_product(connection, sku)
    return {**product, "needed": replenishment_need(product)}
