"""Exercise Book 6 starter: chapter 6's reservations and deliveries, ready for the exercises.

This is chapter 6's learner file (the need that counts promised tubs and tubs
on their way, migration 2, and the operator actions) with, at the end, the
three exercises and "the grader's door": small functions through which the
grader, which can only send and receive plain JSON, opens a store file of its
own and calls your code. It runs, and it does none of the exercises yet: look
for the parts marked `Exercise 1`, `Exercise 2` and `Exercise 3`. Like
chapter 6's file, it builds on the book's runtime for chapter 5's store.
"""

import sqlite3
from collections.abc import Mapping
from contextlib import closing
from typing import Any

from sovereign_agent.shop import stock_report
from sovereign_agent.store import (
    APPLICATION_ID,
    SCHEMA_V1,
    open_store,
    read_drafts,
    read_product,
    read_products,
    save_draft,
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


# --- Exercise 1 (Unit A): the van's delivery note -------------------------------


def receive_note(
    connection: sqlite3.Connection, note: Mapping[str, int], *, accept_surplus: bool = False
) -> list[dict[str, Any]]:
    """Exercise 1: the van's delivery note, as Lucy's nephew wrote it: one delivery per line.

    `note` maps each sku on the note to the tubs the van brought. Rewrite this
    function as the unit asks (one transaction, a surplus refused unless
    `accept_surplus`); keep its signature and its return value: the rows of the
    skus on the note, each with its `needed`, in sku order.
    """
    for sku, tubs in note.items():
        receive_delivery(connection, sku, tubs, expected=True)
    return [
        {**row, "needed": replenishment_need(row)}
        for row in read_products(connection)
        if row["sku"] in note
    ]


# --- Exercise 2 (Unit B): writing off tubs ---------------------------------------


def write_off(connection: sqlite3.Connection, sku: str, tubs: int) -> dict[str, Any]:
    """Exercise 2: tubs that melted or were dropped leave the freezer, as the nephew wrote it.

    It passes the nephew's two tests and is wrong in three ways; Unit B has you
    find them with a state machine, then fix it. Keep its signature and its
    return value: the product's row with its `needed`.
    """
    whole_number("tubs", tubs)
    with transaction(connection):
        connection.execute(
            "UPDATE products SET on_hand = max(0, on_hand - ?) WHERE sku = ?", (tubs, sku)
        )
    product = read_product(connection, sku)
    return {**product, "needed": replenishment_need(product)}


# --- Exercise 3 (Unit C): the stock-take, corrected (an open design task) ---------


def stock_take(
    connection: sqlite3.Connection, sheet: Mapping[str, Mapping[str, int]]
) -> list[dict[str, Any]]:
    """Exercise 3: Lucy's count sheet corrects the freezer, as Unit C's list of needs says.

    Each line holds what the sheet showed on hand when she counted (`seen`)
    and what she found (`counted`). The design is yours (Unit C). For now
    this corrects nothing.
    """
    return []


# --- The grader's door (leave this part as it is) --------------------------------
# The grader sends and receives plain JSON. Each function opens the store file
# it is given, does one thing through the code above, and closes it again, as a
# separate process would. The last one writes a file with plain sqlite3 and
# chapter 5's schema, never with the code above, so that the grader can make a
# version-1 file to open.

# The operator actions the grader may ask for by name.
ACTIONS_BY_NAME = ("reserve", "collect", "cancel_reservation", "expect_delivery", "receive")


def seed_file(path: str, shop: dict[str, Any], prices: dict[str, int]) -> None:
    with closing(open_store(path)) as connection:
        seed_store(connection, shop, prices)


def version_of_file(path: str) -> int:
    with closing(open_store(path)) as connection:
        return int(connection.execute("PRAGMA user_version").fetchone()[0])


def stock_in_file(path: str) -> list[dict[str, Any]]:
    with closing(open_store(path)) as connection:
        return stock_report(read_products(connection))


def drafts_in_file(path: str) -> list[dict[str, Any]]:
    with closing(open_store(path)) as connection:
        return read_drafts(connection)


def deliveries_in_file(path: str) -> list[list[Any]]:
    """Every recorded delivery, oldest first, as [sku, tubs]."""
    with closing(open_store(path)) as connection:
        rows = connection.execute("SELECT sku, tubs FROM deliveries ORDER BY id")
        return [[row["sku"], row["tubs"]] for row in rows]


def draft_in_file(path: str, sku: str, quantity: int) -> dict[str, Any]:
    with closing(open_store(path)) as connection:
        return save_draft(connection, sku, quantity)


def act_in_file(
    path: str, action: str, sku: str, tubs: int, expected: bool = False
) -> dict[str, Any]:
    """One of chapter 6's operator actions, named as in ACTIONS_BY_NAME."""
    if action not in ACTIONS_BY_NAME:
        raise ValueError(f"no operator action {action!r}")
    with closing(open_store(path)) as connection:
        if action == "receive":
            return receive_delivery(connection, sku, tubs, expected=expected)
        act = {
            "reserve": reserve,
            "collect": collect,
            "cancel_reservation": cancel_reservation,
            "expect_delivery": expect_delivery,
        }[action]
        return act(connection, sku, tubs)


def note_in_file(
    path: str, note: dict[str, int], accept_surplus: bool = False
) -> list[dict[str, Any]]:
    with closing(open_store(path)) as connection:
        return receive_note(connection, note, accept_surplus=accept_surplus)


def write_off_in_file(path: str, sku: str, tubs: int) -> dict[str, Any]:
    with closing(open_store(path)) as connection:
        return write_off(connection, sku, tubs)


def stock_take_in_file(path: str, sheet: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    with closing(open_store(path)) as connection:
        return stock_take(connection, sheet)


def write_version_1_file(path: str, shop: dict[str, Any], prices: dict[str, int]) -> None:
    """A file as chapter 5's code leaves it, at version 1, holding `shop` and `prices`."""
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.execute("BEGIN")
        for statement in SCHEMA_V1:
            connection.execute(statement)
        connection.executemany(
            "INSERT INTO products (sku, name, on_hand, reorder_point) VALUES (?, ?, ?, ?)",
            [(r["sku"], r["name"], r["on_hand"], r["reorder_point"]) for r in shop["products"]],
        )
        connection.executemany("INSERT INTO prices VALUES (?, ?)", list(prices.items()))
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute("PRAGMA user_version = 1")
        connection.execute("COMMIT")
