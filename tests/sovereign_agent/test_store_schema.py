"""The schema refuses every row that breaks a shop rule, whoever writes it, and says which rule."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from shop_store import contents, seeded_store

from sovereign_agent.store import (
    open_store,
    save_draft,
    seed_store,
    whole_number,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[sqlite3.Connection, Path]]:
    path = seeded_store(tmp_path / "lucy.db")
    with closing(open_store(path)) as connection:
        yield connection, path


# (a write that breaks a rule, its parameters, the words SQLite's refusal must hold)
VIOLATIONS: dict[str, tuple[str, tuple[Any, ...], str]] = {
    "negative stock": (
        "UPDATE products SET on_hand = -1 WHERE sku = 'SKU-VANILLA'",
        (),
        "CHECK constraint failed: on_hand_not_negative",
    ),
    "negative target": (
        "UPDATE products SET reorder_point = ? WHERE sku = 'SKU-VANILLA'",
        (-8,),
        "CHECK constraint failed: reorder_point_not_negative",
    ),
    "stock as text": (
        "UPDATE products SET on_hand = ? WHERE sku = 'SKU-VANILLA'",
        ("two",),
        "cannot store TEXT value in INTEGER column products.on_hand",
    ),
    "stock as a fraction": (
        "UPDATE products SET on_hand = ? WHERE sku = 'SKU-VANILLA'",
        (2.5,),
        "cannot store REAL value in INTEGER column products.on_hand",
    ),
    "an empty sku": (
        "INSERT INTO products (sku, name, on_hand, reorder_point) VALUES ('', 'Nothing', 1, 1)",
        (),
        "CHECK constraint failed: sku_length",
    ),
    "a sku too long for the tools": (
        "INSERT INTO products (sku, name, on_hand, reorder_point) VALUES (?, 'Long', 1, 1)",
        ("S" * 101,),
        "CHECK constraint failed: sku_length",
    ),
    "a sku twice": (
        "INSERT INTO products (sku, name, on_hand, reorder_point)"
        " VALUES ('SKU-VANILLA', 'Vanilla again', 1, 1)",
        (),
        "UNIQUE constraint failed: products.sku",
    ),
    "a product without a name": (
        "INSERT INTO products (sku, name, on_hand, reorder_point) VALUES ('SKU-MANGO', NULL, 1, 5)",
        (),
        "NOT NULL constraint failed: products.name",
    ),
    "negative reserved tubs": (
        "UPDATE products SET reserved = -1 WHERE sku = 'SKU-VANILLA'",
        (),
        "CHECK constraint failed: reserved_not_negative",
    ),
    "negative incoming tubs": (
        "UPDATE products SET incoming = -1 WHERE sku = 'SKU-STRAWBERRY'",
        (),
        "CHECK constraint failed: incoming_not_negative",
    ),
    "reserved tubs as text": (
        "UPDATE products SET reserved = ? WHERE sku = 'SKU-VANILLA'",
        ("three",),
        "cannot store TEXT value in INTEGER column products.reserved",
    ),
    "no count of incoming tubs": (
        "UPDATE products SET incoming = NULL WHERE sku = 'SKU-VANILLA'",
        (),
        "NOT NULL constraint failed: products.incoming",
    ),
    "a free tub": (
        "UPDATE prices SET unit_cost_pence = 0 WHERE sku = 'SKU-VANILLA'",
        (),
        "CHECK constraint failed: price_positive",
    ),
    "a negative price": (
        "UPDATE prices SET unit_cost_pence = -250 WHERE sku = 'SKU-VANILLA'",
        (),
        "CHECK constraint failed: price_positive",
    ),
    "a price in fractions of a penny": (
        "UPDATE prices SET unit_cost_pence = ? WHERE sku = 'SKU-VANILLA'",
        (249.5,),
        "cannot store REAL value in INTEGER column prices.unit_cost_pence",
    ),
    "a price for a product the shop does not stock": (
        "INSERT INTO prices VALUES ('SKU-PISTACHIO', 400)",
        (),
        "FOREIGN KEY constraint failed",
    ),
    "a product removed while it has a price": (
        "DELETE FROM products WHERE sku = 'SKU-VANILLA'",
        (),
        "FOREIGN KEY constraint failed",
    ),
    "an empty delivery": (
        "INSERT INTO deliveries (sku, tubs) VALUES ('SKU-VANILLA', 0)",
        (),
        "CHECK constraint failed: tubs_positive",
    ),
    "a delivery of an unknown product": (
        "INSERT INTO deliveries (sku, tubs) VALUES ('SKU-PISTACHIO', 3)",
        (),
        "FOREIGN KEY constraint failed",
    ),
    "a draft for no tubs": (
        "INSERT INTO drafts (sku, quantity, unit_cost_pence, status)"
        " VALUES ('SKU-VANILLA', 0, 250, 'DRAFT')",
        (),
        "CHECK constraint failed: quantity_positive",
    ),
    "a draft at no price": (
        "INSERT INTO drafts (sku, quantity, unit_cost_pence, status)"
        " VALUES ('SKU-VANILLA', 6, 0, 'DRAFT')",
        (),
        "CHECK constraint failed: draft_price_positive",
    ),
    "a draft that claims to be purchased": (
        "INSERT INTO drafts (sku, quantity, unit_cost_pence, status)"
        " VALUES ('SKU-VANILLA', 6, 250, 'PURCHASED')",
        (),
        "CHECK constraint failed: known_status",
    ),
    "a draft of an unknown product": (
        "INSERT INTO drafts (sku, quantity, unit_cost_pence, status)"
        " VALUES ('SKU-PISTACHIO', 6, 250, 'DRAFT')",
        (),
        "FOREIGN KEY constraint failed",
    ),
}


@pytest.mark.parametrize("violation", sorted(VIOLATIONS))
def test_the_database_refuses_a_row_that_breaks_a_shop_rule(
    store: tuple[sqlite3.Connection, Path], violation: str
) -> None:
    connection, path = store
    statement, parameters, message = VIOLATIONS[violation]
    before = contents(path)
    with pytest.raises(sqlite3.IntegrityError) as refused:
        connection.execute(statement, parameters)
    assert str(refused.value) == message
    assert contents(path) == before


def test_a_second_open_draft_for_one_sku_is_refused_by_the_unique_index(
    store: tuple[sqlite3.Connection, Path],
) -> None:
    connection, path = store
    save_draft(connection, "SKU-VANILLA", 6)
    before = contents(path)
    with pytest.raises(sqlite3.IntegrityError, match=r"UNIQUE constraint failed: drafts\.sku"):
        connection.execute(
            "INSERT INTO drafts (sku, quantity, unit_cost_pence, status)"
            " VALUES ('SKU-VANILLA', 6, 250, 'DRAFT')"
        )
    assert contents(path) == before


def test_the_unique_index_covers_open_drafts_only(store: tuple[sqlite3.Connection, Path]) -> None:
    connection, _ = store
    insert = (
        "INSERT INTO drafts (sku, quantity, unit_cost_pence, status)"
        " VALUES ('SKU-VANILLA', 6, 250, ?)"
    )
    for status in ("SUPERSEDED", "SUPERSEDED", "DRAFT"):
        connection.execute(insert, (status,))
    rows = connection.execute("SELECT status FROM drafts ORDER BY id").fetchall()
    assert [row[0] for row in rows] == ["SUPERSEDED", "SUPERSEDED", "DRAFT"]


def test_every_table_is_strict_and_every_check_is_named(tmp_path: Path) -> None:
    with closing(open_store(tmp_path / "lucy.db")) as connection:
        tables = connection.execute(
            "SELECT name, strict FROM pragma_table_list WHERE schema = 'main'"
            " AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        definitions = [
            row[0] for row in connection.execute("SELECT sql FROM sqlite_schema WHERE sql NOT NULL")
        ]
    assert sorted((name, strict) for name, strict in tables) == [
        ("approvals", 1),
        ("budget", 1),
        ("deliveries", 1),
        ("drafts", 1),
        ("operators", 1),
        ("orders", 1),
        ("prices", 1),
        ("products", 1),
        ("purchases", 1),
        ("runs", 1),
        ("steps", 1),
        ("store_identity", 1),
    ]
    for sql in definitions:
        # A CHECK without a name would be reported by its expression, in words
        # that change between SQLite versions.
        assert sql.count("CHECK") == sql.count("CONSTRAINT"), sql


def test_strict_converts_a_whole_float_which_is_why_actions_check_types_first(
    store: tuple[sqlite3.Connection, Path],
) -> None:
    connection, _ = store
    # What STRICT lets through: 6.0 and "6" are stored as the integer 6.
    connection.execute("UPDATE products SET on_hand = ? WHERE sku = 'SKU-CHOCOLATE'", (6.0,))
    connection.execute("UPDATE products SET reorder_point = ? WHERE sku = 'SKU-CHOCOLATE'", ("6",))
    row = connection.execute(
        "SELECT typeof(on_hand), on_hand, typeof(reorder_point) FROM products"
        " WHERE sku = 'SKU-CHOCOLATE'"
    ).fetchone()
    assert tuple(row) == ("integer", 6, "integer")


@pytest.mark.parametrize("value", [True, False, 6.0, "6", None, 2.5])
def test_whole_number_refuses_everything_but_an_int(value: object) -> None:
    with pytest.raises(TypeError, match="must be an int"):
        whole_number("tubs", value)


@pytest.mark.parametrize("value", [0, 1, -3, 10**12])
def test_whole_number_returns_an_int_unchanged(value: int) -> None:
    assert whole_number("tubs", value) == value


@pytest.mark.parametrize(
    ("field", "value"), [("on_hand", 2.0), ("reorder_point", True), ("unit_cost_pence", 2.5)]
)
def test_seeding_refuses_a_number_that_is_not_an_int_and_writes_nothing(
    tmp_path: Path, field: str, value: Any
) -> None:
    shop = {
        "products": [
            {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        ]
    }
    prices = {"SKU-VANILLA": 250}
    if field == "unit_cost_pence":
        prices["SKU-VANILLA"] = value
    else:
        shop["products"][0][field] = value
    with closing(open_store(tmp_path / "lucy.db")) as connection:
        with pytest.raises(TypeError, match=field):
            seed_store(connection, shop, prices)
        assert connection.execute("SELECT count(*) FROM products").fetchone()[0] == 0
