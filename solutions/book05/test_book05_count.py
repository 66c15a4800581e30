"""Unit A: Lucy's weekly count is one transaction, all of it or none of it.

Every expected number was worked out by hand from the shop's data (target
minus stock), and "nothing changed" is the seeded stock written out (2, 7, 1),
never a value the code under test computed. Each test has its own store file.
"""

import sqlite3
from contextlib import closing

import pytest
from shop_store import count_stock, open_store, read_drafts, read_products, save_draft, seed_store

SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
PRICES = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}
SEEDED = {"SKU-CHOCOLATE": 7, "SKU-STRAWBERRY": 1, "SKU-VANILLA": 2}


@pytest.fixture
def store(tmp_path):
    with closing(open_store(tmp_path / "lucy.db")) as connection:
        seed_store(connection, SHOP, PRICES)
        yield connection


def stock(connection):
    return {row["sku"]: row["on_hand"] for row in read_products(connection)}


def test_a_count_sets_the_counted_stock_and_reports_the_new_needs(store):
    rows = count_stock(store, {"SKU-VANILLA": 5, "SKU-STRAWBERRY": 0})
    assert [(r["sku"], r["on_hand"], r["needed"]) for r in rows] == [
        ("SKU-STRAWBERRY", 0, 5),
        ("SKU-VANILLA", 5, 3),
    ]
    assert stock(store) == {"SKU-CHOCOLATE": 7, "SKU-STRAWBERRY": 0, "SKU-VANILLA": 5}


def test_a_count_with_a_typo_changes_nothing(store):
    with pytest.raises(KeyError):
        count_stock(store, {"SKU-VANILLA": 5, "SKU-CHOCOLATE": 4, "SKU-STRAWBERY": 3})
    assert stock(store) == SEEDED


def test_a_count_with_a_negative_line_changes_nothing(store):
    with pytest.raises(sqlite3.IntegrityError, match="on_hand_not_negative"):
        count_stock(store, {"SKU-VANILLA": 5, "SKU-CHOCOLATE": -4, "SKU-STRAWBERRY": 3})
    assert stock(store) == SEEDED


@pytest.mark.parametrize("tubs", [7.0, True, "7"])
def test_a_count_that_is_not_an_int_is_refused_and_changes_nothing(store, tubs):
    with pytest.raises(TypeError):
        count_stock(store, {"SKU-VANILLA": 5, "SKU-STRAWBERRY": tubs})
    assert stock(store) == SEEDED


def test_an_empty_count_is_refused(store):
    with pytest.raises(ValueError):
        count_stock(store, {})


def test_a_count_that_moves_a_need_retires_that_draft_only(store):
    save_draft(store, "SKU-VANILLA", 6)
    save_draft(store, "SKU-STRAWBERRY", 4)
    # Vanilla: 5 counted, target 8, need 3 (was 6). Strawberry: 1 counted, need still 4.
    count_stock(store, {"SKU-VANILLA": 5, "SKU-STRAWBERRY": 1})
    assert [(d["sku"], d["quantity"], d["status"]) for d in read_drafts(store)] == [
        ("SKU-VANILLA", 6, "SUPERSEDED"),
        ("SKU-STRAWBERRY", 4, "DRAFT"),
    ]
    assert save_draft(store, "SKU-VANILLA", 3)["total_pence"] == 750
