"""Unit B: migration 2 keeps every row of a version-1 file, and a draft can be cancelled.

The version-1 file is written here with plain sqlite3 and chapter 5's schema,
as chapter 5's code would have left it; every expected row is written out.
"""

import sqlite3
from contextlib import closing

import pytest
from shop_store import (
    APPLICATION_ID,
    SCHEMA_V1,
    NewerSchema,
    cancel_draft,
    open_store,
    read_drafts,
    read_products,
    save_draft,
)

ROWS = [
    ("SKU-VANILLA", "Vanilla", 5, 8),
    ("SKU-CHOCOLATE", "Chocolate", 7, 6),
    ("SKU-STRAWBERRY", "Strawberry", 1, 5),
]
DRAFTS = [
    ("SKU-VANILLA", 6, 250, "SUPERSEDED"),
    ("SKU-STRAWBERRY", 4, 275, "DRAFT"),
    ("SKU-VANILLA", 3, 250, "DRAFT"),
]


def version_1_file(path):
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        for statement in SCHEMA_V1:
            connection.execute(statement)
        connection.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", ROWS)
        connection.executemany(
            "INSERT INTO prices VALUES (?, ?)",
            [("SKU-VANILLA", 250), ("SKU-CHOCOLATE", 300), ("SKU-STRAWBERRY", 275)],
        )
        connection.executemany(
            "INSERT INTO drafts (sku, quantity, unit_cost_pence, status) VALUES (?, ?, ?, ?)",
            DRAFTS,
        )
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute("PRAGMA user_version = 1")
    return path


def drafts(store):
    return [(d["id"], d["sku"], d["total_pence"], d["status"]) for d in read_drafts(store)]


KEPT = [
    (1, "SKU-VANILLA", 1500, "SUPERSEDED"),
    (2, "SKU-STRAWBERRY", 1100, "DRAFT"),
    (3, "SKU-VANILLA", 750, "DRAFT"),
]


@pytest.fixture
def store(tmp_path):
    with closing(open_store(version_1_file(tmp_path / "lucy.db"))) as connection:
        yield connection


def test_a_new_store_opens_at_version_2(tmp_path):
    with closing(open_store(tmp_path / "new.db")) as new:
        assert new.execute("PRAGMA user_version").fetchone()[0] == 2


def test_a_version_1_file_opens_at_version_2_with_every_row_kept(store):
    assert store.execute("PRAGMA user_version").fetchone()[0] == 2
    assert drafts(store) == KEPT
    assert [(r["sku"], r["on_hand"]) for r in read_products(store)] == [
        ("SKU-CHOCOLATE", 7),
        ("SKU-STRAWBERRY", 1),
        ("SKU-VANILLA", 5),
    ]


def test_a_second_open_draft_is_still_refused_after_the_migration(store):
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        store.execute(
            "INSERT INTO drafts (sku, quantity, unit_cost_pence, status)"
            " VALUES ('SKU-STRAWBERRY', 4, 275, 'DRAFT')"
        )
    assert drafts(store) == KEPT


def test_cancelling_strawberry_leaves_the_other_drafts_as_they_were(store):
    cancelled = cancel_draft(store, "SKU-STRAWBERRY")
    assert (cancelled["id"], cancelled["status"]) == (2, "CANCELLED")
    assert drafts(store) == [
        (1, "SKU-VANILLA", 1500, "SUPERSEDED"),
        (2, "SKU-STRAWBERRY", 1100, "CANCELLED"),
        (3, "SKU-VANILLA", 750, "DRAFT"),
    ]


def test_cancelling_a_sku_with_no_open_draft_is_a_key_error_and_changes_nothing(store):
    with pytest.raises(KeyError):
        cancel_draft(store, "SKU-CHOCOLATE")
    assert drafts(store) == KEPT


def test_after_a_cancel_a_new_request_saves_a_new_draft(store):
    cancel_draft(store, "SKU-STRAWBERRY")
    assert save_draft(store, "SKU-STRAWBERRY", 4)["total_pence"] == 1100
    assert drafts(store)[-1] == (4, "SKU-STRAWBERRY", 1100, "DRAFT")


def test_a_file_at_version_3_is_refused_and_left_alone(tmp_path):
    path = version_1_file(tmp_path / "future.db")
    with closing(sqlite3.connect(path)) as raw:
        raw.execute("PRAGMA user_version = 3")
    with pytest.raises(NewerSchema):
        open_store(path)
    with closing(sqlite3.connect(path)) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 3
