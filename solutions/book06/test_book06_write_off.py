"""Exercise 2: writing off tubs. The nephew's two tests first; then what they missed.

Each test gets its own store file in pytest's tmp_path, seeded with chapter 1's
shop. Every expected number is worked out by hand and written out.
"""

from contextlib import closing

import pytest
from reservations import open_store, read_drafts, read_products, save_draft, seed_store, write_off

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
    with closing(open_store(str(tmp_path / "lucy.db"))) as connection:
        seed_store(connection, SHOP, PRICES)
        yield connection


def on_hand(connection):
    return {row["sku"]: row["on_hand"] for row in read_products(connection)}


# The nephew's two tests: both pass with his write_off.


def test_a_write_off_takes_tubs_from_the_freezer(store):
    assert write_off(store, "SKU-CHOCOLATE", 3)["on_hand"] == 4


def test_a_write_off_raises_the_need(store):
    assert write_off(store, "SKU-CHOCOLATE", 3)["needed"] == 2


# What they missed.


def test_writing_off_more_than_the_freezer_holds_is_refused_and_changes_nothing(store):
    with pytest.raises(ValueError):
        write_off(store, "SKU-VANILLA", 5)
    assert on_hand(store) == SEEDED


@pytest.mark.parametrize("tubs", [0, -3])
def test_writing_off_no_tubs_or_fewer_is_refused_and_changes_nothing(store, tubs):
    with pytest.raises(ValueError):
        write_off(store, "SKU-VANILLA", tubs)
    assert on_hand(store) == SEEDED


def test_a_write_off_retires_the_draft_its_need_made_stale(store):
    save_draft(store, "SKU-STRAWBERRY", 4)
    assert write_off(store, "SKU-STRAWBERRY", 1)["needed"] == 5
    assert [(d["quantity"], d["status"]) for d in read_drafts(store)] == [(4, "SUPERSEDED")]
    assert save_draft(store, "SKU-STRAWBERRY", 5)["total_pence"] == 1375


def test_a_write_off_of_an_unknown_flavour_is_a_key_error(store):
    with pytest.raises(KeyError):
        write_off(store, "SKU-PISTACHIO", 1)
    assert on_hand(store) == SEEDED
