"""Opening a store: a new file is created, an old one migrated, and any other file refused as it is.

Every refusal leaves the file exactly as it was: the store never repairs,
resets or rewrites a file it does not recognise.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest
from shop_store import (
    PRICES,
    SHOP,
    contents,
    python_child,
    run_python,
    seeded_store,
    write_lock_held,
)

import sovereign_agent.store as store
from sovereign_agent.store import (
    APPLICATION_ID,
    MIGRATIONS,
    NewerSchema,
    NotAStore,
    StoreBusy,
    StoreError,
    open_store,
    read_products,
    receive_delivery,
)


def test_a_new_file_becomes_a_store_at_the_latest_version(tmp_path: Path) -> None:
    path = tmp_path / "lucy.db"
    with closing(open_store(path)) as connection:
        pragmas = {
            name: connection.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("user_version", "application_id", "journal_mode", "foreign_keys")
        }
    assert pragmas == {
        "user_version": len(MIGRATIONS),
        "application_id": APPLICATION_ID,
        "journal_mode": "wal",
        "foreign_keys": 1,
    }
    assert {"products", "prices", "deliveries", "drafts"} <= {
        row[1] for row in contents(path)["schema"]
    }


def test_an_empty_file_of_zero_bytes_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "lucy.db"
    path.touch()
    with closing(open_store(path)) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def file_at_version(path: Path, version: int) -> None:
    """A file as code that knew only the first `version` migrations left it, with Lucy's rows."""
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        for statements in MIGRATIONS[:version]:
            for statement in statements:
                connection.execute(statement)
        if version >= 1:
            # Columns of version 1; later migrations must keep these rows.
            connection.executemany(
                "INSERT INTO products (sku, name, on_hand, reorder_point) VALUES (?, ?, ?, ?)",
                [(r["sku"], r["name"], r["on_hand"], r["reorder_point"]) for r in SHOP["products"]],
            )
            connection.executemany("INSERT INTO prices VALUES (?, ?)", PRICES.items())
            connection.execute(
                "INSERT INTO drafts (sku, quantity, unit_cost_pence, status)"
                " VALUES ('SKU-VANILLA', 6, 250, 'DRAFT')"
            )
            connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version = {version}")


@pytest.mark.parametrize("version", range(len(MIGRATIONS) + 1))
def test_a_file_at_any_earlier_version_is_migrated_and_keeps_its_rows(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / "lucy.db"
    file_at_version(path, version)
    with closing(open_store(path)) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        rows = read_products(connection)
        drafts = connection.execute("SELECT sku, quantity, status FROM drafts").fetchall()
    if version == 0:
        assert rows == []
    else:
        stock = {row["sku"]: (row["on_hand"], row["reorder_point"]) for row in rows}
        assert stock == {
            "SKU-CHOCOLATE": (7, 6),
            "SKU-STRAWBERRY": (1, 5),
            "SKU-VANILLA": (2, 8),
        }
        assert [tuple(d) for d in drafts] == [("SKU-VANILLA", 6, "DRAFT")]


def test_opening_an_up_to_date_store_again_changes_nothing(tmp_path: Path) -> None:
    path = seeded_store(tmp_path / "lucy.db")
    before = contents(path)
    for _ in range(2):
        with closing(open_store(path)) as connection:
            assert len(read_products(connection)) == 3
    assert contents(path) == before


def test_a_migration_that_fails_half_way_leaves_the_file_at_its_old_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = seeded_store(tmp_path / "lucy.db")
    before = contents(path)
    broken = (
        "CREATE TABLE suppliers (name TEXT PRIMARY KEY) STRICT",
        "INSERT INTO nowhere VALUES (1)",
    )
    monkeypatch.setattr(store, "MIGRATIONS", (*MIGRATIONS, broken))
    with pytest.raises(sqlite3.OperationalError, match="no such table: nowhere"):
        open_store(path)
    assert contents(path) == before


def test_random_bytes_are_not_a_store_and_stay_as_they_were(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    data = b"Lucy's notes: order more vanilla. " * 200
    path.write_bytes(data)
    with pytest.raises(NotAStore, match="is not a readable SQLite database"):
        open_store(path)
    assert path.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_a_store_with_a_damaged_page_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = seeded_store(tmp_path / "lucy.db")
    # Closing the last connection folded the write-ahead log into the file;
    # now scribble over the second page, where a table's rows live.
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    data[page_size : page_size + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    with pytest.raises(NotAStore):
        open_store(path)
    assert path.read_bytes() == bytes(data)


def test_another_programs_database_is_refused_and_not_written(tmp_path: Path) -> None:
    path = tmp_path / "recipes.db"
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("CREATE TABLE recipes (name TEXT)")
        connection.execute("INSERT INTO recipes VALUES ('vanilla')")
        connection.commit()
    before = path.read_bytes()
    with pytest.raises(NotAStore, match="a SQLite database, but not a shop store"):
        open_store(path)
    assert path.read_bytes() == before
    with closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_a_file_from_newer_code_is_refused_with_both_versions_named(tmp_path: Path) -> None:
    path = seeded_store(tmp_path / "lucy.db")
    newer = len(MIGRATIONS) + 1
    with closing(sqlite3.connect(path)) as connection:
        connection.execute(f"PRAGMA user_version = {newer}")
    before = contents(path)
    with pytest.raises(NewerSchema) as refused:
        open_store(path)
    assert f"schema version {newer}" in str(refused.value)
    assert f"versions up to {len(MIGRATIONS)}" in str(refused.value)
    assert contents(path) == before


def test_a_folder_that_does_not_exist_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "lucy.db"
    with pytest.raises(StoreError, match=r"cannot open .*no-such-folder"):
        open_store(missing)


def test_a_database_in_memory_is_refused_because_it_cannot_use_a_write_ahead_log() -> None:
    with pytest.raises(StoreError, match="write-ahead logging"):
        open_store(":memory:")


def test_a_lock_held_too_long_is_a_store_busy_timeout_not_a_hang(tmp_path: Path) -> None:
    path = seeded_store(tmp_path / "lucy.db")
    with write_lock_held(path), closing(open_store(path, timeout=0.3)) as connection:
        # Reading goes on beside a writer (write-ahead logging) ...
        assert len(read_products(connection)) == 3
        started = time.monotonic()
        # ... but a second writer waits for the timeout, then is told.
        with pytest.raises(StoreBusy, match=r"for more than 0\.3 s") as refused:
            receive_delivery(connection, "SKU-VANILLA", 1)
        assert time.monotonic() - started >= 0.3
        assert isinstance(refused.value, TimeoutError)


def test_a_new_file_locked_by_another_connection_cannot_be_migrated_and_says_so(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lucy.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as locker:
        locker.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreBusy, match=r"for more than 0\.2 s"):
            open_store(path, timeout=0.2)
        locker.execute("ROLLBACK")
    with closing(open_store(path)) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


OPEN_AND_REPORT = """
    import sys
    from sovereign_agent.store import open_store

    sys.stdin.readline()
    connection = open_store(sys.argv[1], timeout=30)
    print(connection.execute("PRAGMA user_version").fetchone()[0])
"""


def test_processes_opening_one_new_file_at_once_migrate_it_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "lucy.db"
    children = [python_child(OPEN_AND_REPORT, str(path)) for _ in range(4)]
    # Every child is started and waiting before any of them opens the file.
    results = [child.communicate("go\n", timeout=120) for child in children]
    assert [out for out, _ in results] == [f"{len(MIGRATIONS)}\n"] * 4, results
    assert all(child.returncode == 0 for child in children)
    tables = [row for row in contents(path)["schema"] if row[0] == "table"]
    assert sorted(name for _, name, _ in tables) == [
        "approvals",
        "budget",
        "deliveries",
        "drafts",
        "operators",
        "orders",
        "prices",
        "products",
        "purchases",
        "runs",
        "steps",
        "store_identity",
    ]


def test_the_sqlite3_module_begins_no_transaction_of_its_own(tmp_path: Path) -> None:
    # The same on Python 3.11 and 3.12+: with isolation_level=None, a write
    # outside `transaction` is committed at once, and nothing is left open.
    result = run_python(
        """
        import sys
        from sovereign_agent.store import open_store

        connection = open_store(sys.argv[1])
        connection.execute(
            "INSERT INTO products (sku, name, on_hand, reorder_point)"
            " VALUES ('SKU-MANGO', 'Mango', 1, 5)"
        )
        print(connection.in_transaction, connection.isolation_level)
        """,
        str(tmp_path / "lucy.db"),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "False None\n"
    with closing(open_store(tmp_path / "lucy.db")) as connection:
        assert [row["sku"] for row in read_products(connection)] == ["SKU-MANGO"]
