"""Exercise 1: the van's delivery note, received as one transaction.

Each test gets its own store file in pytest's tmp_path. Friday's store is
chapter 6's: 3 vanilla reserved, 2 chocolate reserved, 4 strawberry expected,
and this week's van also brings 6 vanilla that Lucy ordered (so 6 expected).
Every expected number is worked out by hand and written out. The store is
read only through the module's own functions (the recorded deliveries through
the grader's door), so the tests run as well against the grader's stand-in.
"""

from contextlib import closing

import pytest
from reservations import (
    deliveries_in_file,
    expect_delivery,
    open_store,
    read_drafts,
    read_products,
    receive_note,
    reserve,
    save_draft,
    seed_store,
)

SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
PRICES = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}
# (on_hand, reserved, incoming) once Friday is recorded.
FRIDAY = {
    "SKU-CHOCOLATE": (7, 2, 0),
    "SKU-STRAWBERRY": (1, 0, 4),
    "SKU-VANILLA": (2, 3, 6),
}


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "lucy.db")


@pytest.fixture
def store(path):
    with closing(open_store(path)) as connection:
        seed_store(connection, SHOP, PRICES)
        reserve(connection, "SKU-VANILLA", 3)
        reserve(connection, "SKU-CHOCOLATE", 2)
        expect_delivery(connection, "SKU-STRAWBERRY", 4)
        expect_delivery(connection, "SKU-VANILLA", 6)
        yield connection


def counts(connection):
    return {
        r["sku"]: (r["on_hand"], r["reserved"], r["incoming"]) for r in read_products(connection)
    }


def deliveries(path):
    return [tuple(delivery) for delivery in deliveries_in_file(path)]


def test_an_exact_note_moves_the_van_into_the_freezer_and_keeps_every_need(store, path):
    rows = receive_note(store, {"SKU-VANILLA": 6, "SKU-STRAWBERRY": 4})
    # Vanilla: 8 + 3 - 8 - 0 = 3, as before (8 + 3 - 2 - 6); strawberry 0, as before.
    assert [(r["sku"], r["on_hand"], r["incoming"], r["needed"]) for r in rows] == [
        ("SKU-STRAWBERRY", 5, 0, 0),
        ("SKU-VANILLA", 8, 0, 3),
    ]
    assert deliveries(path) == [("SKU-VANILLA", 6), ("SKU-STRAWBERRY", 4)]


def test_a_short_line_leaves_the_rest_on_its_way(store):
    (vanilla,) = receive_note(store, {"SKU-VANILLA": 4})
    assert (vanilla["on_hand"], vanilla["incoming"], vanilla["needed"]) == (6, 2, 3)


def test_a_surplus_is_refused_and_the_whole_note_changes_nothing(store, path):
    with pytest.raises(ValueError):
        receive_note(store, {"SKU-VANILLA": 6, "SKU-STRAWBERRY": 5})
    assert counts(store) == FRIDAY
    assert deliveries(path) == []


def test_an_accepted_surplus_goes_in_as_an_unannounced_delivery(store):
    save_draft(store, "SKU-VANILLA", 3)
    (vanilla,) = receive_note(store, {"SKU-VANILLA": 8}, accept_surplus=True)
    # 6 off the van, 2 nobody expected: 10 on hand, 0 incoming, need 8 + 3 - 10 = 1.
    assert (vanilla["on_hand"], vanilla["incoming"], vanilla["needed"]) == (10, 0, 1)
    # The draft for 3 is no longer the draft the shop would write.
    assert [(d["quantity"], d["status"]) for d in read_drafts(store)] == [(3, "SUPERSEDED")]


def test_a_line_for_a_flavour_nobody_sells_changes_nothing(store):
    with pytest.raises(KeyError):
        receive_note(store, {"SKU-VANILLA": 6, "SKU-PISTACHIO": 2})
    assert counts(store) == FRIDAY


@pytest.mark.parametrize("tubs", [2.0, True, "4"])
def test_a_line_that_is_not_a_whole_number_changes_nothing(store, tubs):
    with pytest.raises(TypeError):
        receive_note(store, {"SKU-VANILLA": 6, "SKU-STRAWBERRY": tubs})
    assert counts(store) == FRIDAY


@pytest.mark.parametrize("tubs", [0, -4])
def test_a_line_of_no_tubs_changes_nothing(store, tubs):
    with pytest.raises(ValueError):
        receive_note(store, {"SKU-VANILLA": 6, "SKU-STRAWBERRY": tubs})
    assert counts(store) == FRIDAY


def test_an_empty_note_is_refused(store):
    with pytest.raises(ValueError):
        receive_note(store, {})
    assert counts(store) == FRIDAY
