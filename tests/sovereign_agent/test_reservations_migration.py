"""Migration 2 on a real chapter 5 database: every row kept, two counts added, old code refused.

The version-1 file is made by chapter 5's own code (its learner file, run in a
child process): seeded, drafted, delivered to and re-priced, as Lucy's store
was at the end of chapter 5.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from shop_store import contents, python_child, run_python, start_together

from bookproof.layout import REPO_ROOT
from sovereign_agent.store import (
    APPROVALS_V3,
    MIGRATIONS,
    PURCHASES_V4,
    RESERVATIONS_V2,
    SCHEMA_V1,
    open_store,
    read_drafts,
    read_products,
    reserve,
    save_draft,
)

ROOT = REPO_ROOT
CHAPTER_5 = ROOT / "book/textbook/learner/profrod_sovereign_agent_ch05_persistent_stock_learner.py"

# Chapter 5's code, as a reader saved it, leaves Lucy's store at version 1.
CHAPTER_5_STORE = """
    import runpy, sys

    chapter_5 = runpy.run_path(sys.argv[1])
    store = chapter_5["open_store"](sys.argv[2])
    shop = {"products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]}
    prices = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}
    chapter_5["seed_store"](store, shop, prices)
    chapter_5["save_draft"](store, "SKU-VANILLA", 6)
    chapter_5["save_draft"](store, "SKU-STRAWBERRY", 4)
    chapter_5["receive_delivery"](store, "SKU-VANILLA", 7)
    chapter_5["set_price"](store, "SKU-CHOCOLATE", 320)
    print(store.execute("PRAGMA user_version").fetchone()[0])
"""


@pytest.fixture
def chapter_5_file(tmp_path: Path) -> Path:
    path = tmp_path / "lucy.db"
    result = run_python(CHAPTER_5_STORE, str(CHAPTER_5), str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "1\n"
    return path


def table(found: dict[str, Any], name: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in found[name]]


def test_a_chapter_5_file_opens_at_version_2_with_every_row_kept(chapter_5_file: Path) -> None:
    before = contents(chapter_5_file)
    assert before["user_version"] == 1
    with closing(open_store(chapter_5_file)) as connection:
        # Later chapters append migrations (chapter 10's 3, and on): a chapter 5
        # file runs every one after its own.
        assert connection.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    after = contents(chapter_5_file)
    # Each product keeps its four columns and gains two counts of 0.
    assert table(after, "products") == [(*row, 0, 0) for row in table(before, "products")]
    assert table(after, "products") == [
        ("SKU-CHOCOLATE", "Chocolate", 7, 6, 0, 0),
        ("SKU-STRAWBERRY", "Strawberry", 1, 5, 0, 0),
        ("SKU-VANILLA", "Vanilla", 9, 8, 0, 0),
    ]
    for name in ("prices", "deliveries", "drafts"):
        assert table(after, name) == table(before, name), name
    assert table(after, "drafts") == [
        (1, "SKU-VANILLA", 6, 250, "SUPERSEDED"),
        (2, "SKU-STRAWBERRY", 4, 275, "DRAFT"),
    ]
    assert table(after, "prices") == [
        ("SKU-CHOCOLATE", 320),
        ("SKU-STRAWBERRY", 275),
        ("SKU-VANILLA", 250),
    ]
    # Only the products table's definition changed; every other table, and the
    # index, as before. Migrations 3 and 4 (chapters 10 and 11) and the runs
    # journal (chapter 12) only added tables and indexes.
    old_schema = {name: sql for _, name, sql in before["schema"]}
    new_schema = {name: sql for _, name, sql in after["schema"]}
    changed = [name for name, sql in old_schema.items() if new_schema[name] != sql]
    assert changed == ["products"]
    assert sorted(new_schema.keys() - old_schema.keys()) == [
        "approvals",
        "budget",
        "one_open_approval_per_call",
        "one_row_per_call",
        "operators",
        "orders",
        "purchases",
        "runs",
        "sqlite_autoindex_operators_1",
        "sqlite_autoindex_orders_1",
        "sqlite_autoindex_purchases_1",
        "sqlite_autoindex_purchases_2",
        "sqlite_autoindex_steps_1",
        "steps",
        "store_identity",
    ]


def test_the_migrated_counts_obey_named_rules(chapter_5_file: Path) -> None:
    with closing(open_store(chapter_5_file)) as connection:
        for statement, rule in [
            ("UPDATE products SET reserved = -1", "reserved_not_negative"),
            ("UPDATE products SET incoming = -1", "incoming_not_negative"),
            ("UPDATE products SET incoming = NULL", "NOT NULL constraint failed"),
            ("UPDATE products SET reserved = 'three'", "cannot store TEXT value"),
        ]:
            with pytest.raises(sqlite3.IntegrityError, match=rule):
                connection.execute(statement)


def test_the_open_draft_of_a_migrated_file_is_still_the_draft_the_shop_would_write(
    chapter_5_file: Path,
) -> None:
    with closing(open_store(chapter_5_file)) as connection:
        # Nothing reserved, nothing incoming: strawberry's need is still 4, its draft still open.
        assert save_draft(connection, "SKU-STRAWBERRY", 4)["status"] == "DRAFT"
        assert len(read_drafts(connection)) == 2
        # Chapter 6's actions work on the migrated file, and keep drafts honest.
        reserve(connection, "SKU-STRAWBERRY", 2)
        assert [d["status"] for d in read_drafts(connection)] == ["SUPERSEDED", "SUPERSEDED"]
        strawberry = next(r for r in read_products(connection) if r["sku"] == "SKU-STRAWBERRY")
        assert (strawberry["reserved"], strawberry["incoming"]) == (2, 0)


def test_chapter_5s_code_refuses_the_migrated_file_and_leaves_it_as_it_is(
    chapter_5_file: Path,
) -> None:
    open_store(chapter_5_file).close()
    before = contents(chapter_5_file)
    result = run_python(
        """
        import runpy, sys

        chapter_5 = runpy.run_path(sys.argv[1])
        try:
            chapter_5["open_store"](sys.argv[2])
        except chapter_5["NewerSchema"] as error:
            print("refused:", error)
        """,
        str(CHAPTER_5),
        str(chapter_5_file),
    )
    assert result.returncode == 0, result.stderr
    assert f"has schema version {len(MIGRATIONS)}; this code knows versions up to 1" in (
        result.stdout
    )
    assert contents(chapter_5_file) == before


def test_migration_2_alone_turns_a_version_1_schema_into_the_new_one(tmp_path: Path) -> None:
    # Running 1 then 2 (then chapter 10's 3, 11's 4 and every later chapter's) on an
    # empty file gives the same schema a new store gets.
    stepwise = tmp_path / "stepwise.db"
    later = [statement for statements in MIGRATIONS[4:] for statement in statements]
    with closing(sqlite3.connect(stepwise, isolation_level=None)) as connection:
        for statement in (*SCHEMA_V1, *RESERVATIONS_V2, *APPROVALS_V3, *PURCHASES_V4, *later):
            connection.execute(statement)
    fresh = tmp_path / "fresh.db"
    open_store(fresh).close()
    assert contents(stepwise)["schema"] == contents(fresh)["schema"]


OPEN_WHEN_TOLD = """
    import sys
    from sovereign_agent.store import open_store

    print("ready", flush=True)
    sys.stdin.readline()
    connection = open_store(sys.argv[1], timeout=30)
    print(connection.execute("PRAGMA user_version").fetchone()[0])
"""


def test_a_chapter_5_file_opened_by_two_processes_at_once_is_migrated_once(
    chapter_5_file: Path,
) -> None:
    before = contents(chapter_5_file)
    children = [python_child(OPEN_WHEN_TOLD, str(chapter_5_file)) for _ in range(2)]
    start_together(children)
    results = [child.communicate(timeout=120) for child in children]
    assert [out for out, _ in results] == [f"{len(MIGRATIONS)}\n"] * 2, results
    with closing(sqlite3.connect(chapter_5_file)) as connection:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(products)")]
    # Had the second process run migration 2 again, ADD COLUMN would have failed on a duplicate.
    assert columns == ["sku", "name", "on_hand", "reorder_point", "reserved", "incoming"]
    assert table(contents(chapter_5_file), "drafts") == table(before, "drafts")
