"""A planted file is not believed: the store checks the schema it opens, not only the header.

Each attack here writes a file with the store's own header (its application
id and a version it knows) over a schema that is not the store's: a table
without its CHECKs, a view in the place of a table, a trigger that rewrites
prices after a delivery, an extra index or table, a lost rule. Each is
refused as NotAStore naming the first difference in one line, and the file
is left byte for byte as it was. Files that are not files (/dev/null, /proc),
a name with NUL and a disk that fills up are StoreErrors of one line too,
never a raw sqlite3 or ValueError traceback.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterable
from contextlib import closing
from functools import cache
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scratch import memory_folder
from shop_store import PRICES, SHOP, contents, run_python, seeded_store
from strength import examples
from system_components import require_executable

from bookproof.layout import REPO_ROOT
from sovereign_agent.store import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_V1,
    NewerSchema,
    NotAStore,
    StoreError,
    expected_schema,
    migrate,
    open_store,
    read_price,
    read_products,
    read_schema,
    receive_delivery,
)

ROOT = REPO_ROOT

# The store's products table with every CHECK taken out: the same columns,
# types and keys, so the header and the column list both look right.
PRODUCTS_WITHOUT_CHECKS = """CREATE TABLE products (
        sku TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        on_hand INTEGER NOT NULL,
        reorder_point INTEGER NOT NULL,
        reserved INTEGER NOT NULL DEFAULT 0,
        incoming INTEGER NOT NULL DEFAULT 0
    ) STRICT"""
# Every statement of the store's schema after products, as migration 1 writes them.
REST_OF_SCHEMA_V1 = SCHEMA_V1[1:]
MARKUP_TRIGGER = (
    "CREATE TRIGGER markup AFTER INSERT ON deliveries"
    " BEGIN UPDATE prices SET unit_cost_pence = 99999 WHERE sku = NEW.sku; END"
)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def planted(path: Path, statements: Iterable[str], *, version: int = len(MIGRATIONS)) -> Path:
    """A file with the store's header over `statements`: what a stray tool or an attacker leaves."""
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        for statement in statements:
            connection.execute(statement)
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version = {version}")
    return path


def tampered(path: Path, *statements: str) -> Path:
    """Lucy's real, seeded store, with `statements` run on it afterwards by plain sqlite3."""
    seeded_store(path)
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        for statement in statements:
            connection.execute(statement)
    return path


def refused(path: Path) -> str:
    """Open `path` as a store: refused as NotAStore, in one line, and the file left unchanged."""
    before = digest(path)
    with pytest.raises(NotAStore) as refusal:
        open_store(path)
    message = str(refusal.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert digest(path) == before
    # A refused file is never switched to the store's write-ahead log, nor written through one.
    wal = Path(f"{path}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    return message


# --- the attacks of the issue ---------------------------------------------------------


def test_a_products_table_without_its_checks_is_refused_by_name(tmp_path: Path) -> None:
    path = planted(tmp_path / "loose.db", [PRODUCTS_WITHOUT_CHECKS, *REST_OF_SCHEMA_V1])
    # The attack is real: this file holds a freezer with -50 tubs, which the header cannot show.
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.execute("INSERT INTO products VALUES ('SKU-VANILLA', 'Vanilla', -50, 8, 0, 0)")
    message = refused(path)
    assert (
        f"is not a shop store at version {len(MIGRATIONS)}: its table 'products' is not the store's"
        in message
    )
    # The first line that differs is named, as the file has it and as the store has it.
    assert "line 2 is 'sku TEXT PRIMARY KEY,'" in message
    assert "CONSTRAINT sku_length" in message


def test_a_products_view_in_the_place_of_the_table_is_refused(tmp_path: Path) -> None:
    view = (
        "CREATE VIEW products AS SELECT 'SKU-VANILLA' AS sku, 'Vanilla' AS name,"
        " -50 AS on_hand, 8 AS reorder_point, 0 AS reserved, 0 AS incoming"
    )
    path = planted(tmp_path / "view.db", [view, *REST_OF_SCHEMA_V1])
    message = refused(path)
    assert message.endswith("'products' is a view, where the store has a table")


def test_a_trigger_that_rewrites_prices_after_a_delivery_is_refused(tmp_path: Path) -> None:
    path = tampered(tmp_path / "lucy.db", MARKUP_TRIGGER)
    # What the trigger would do to a store that believed the header: a price of 99999.
    copy = tmp_path / "believed.db"
    shutil.copy(path, copy)
    with closing(sqlite3.connect(copy, isolation_level=None)) as believed:
        believed.execute("PRAGMA foreign_keys = ON")
        believed.execute("INSERT INTO deliveries (sku, tubs) VALUES ('SKU-VANILLA', 7)")
        assert read_price(believed, "SKU-VANILLA") == 99999
    message = refused(path)
    assert message.endswith("it has a trigger 'markup' on 'deliveries' that no migration makes")


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("CREATE INDEX products_by_name ON products (name)", "index 'products_by_name'"),
        ("CREATE TABLE notes (text TEXT)", "table 'notes'"),
        ("CREATE VIEW cheap AS SELECT sku FROM prices", "view 'cheap'"),
        # ANALYZE's statistics are a table the migrations never make: nothing is let through.
        ("ANALYZE", "table 'sqlite_stat1'"),
    ],
)
def test_an_extra_object_in_a_real_store_is_refused_by_name(
    tmp_path: Path, statement: str, named: str
) -> None:
    message = refused(tampered(tmp_path / "lucy.db", statement))
    assert f"it has a {named}" in message
    assert message.endswith("that no migration makes")


def test_a_lost_rule_is_refused_by_name(tmp_path: Path) -> None:
    message = refused(tampered(tmp_path / "lucy.db", "DROP INDEX one_open_draft_per_sku"))
    assert message.endswith("it has no index 'one_open_draft_per_sku'")


def test_a_loosened_check_under_its_own_name_is_refused(tmp_path: Path) -> None:
    loosened = SCHEMA_V1[0].replace("CHECK (on_hand >= 0)", "CHECK (on_hand >= -100)")
    path = planted(tmp_path / "loosened.db", [loosened, *REST_OF_SCHEMA_V1], version=1)
    message = refused(path)
    assert "at version 1: its table 'products' is not the store's: line 4 is" in message
    assert "CHECK (on_hand >= -100)" in message


def test_a_planted_write_ahead_log_is_read_and_refused_but_never_folded_into_the_file(
    tmp_path: Path,
) -> None:
    # The trigger lives only in a write-ahead log beside a clean store. Opening
    # the file for writing and closing it would fold the log into the file; the
    # store reads through a read-only connection, which cannot.
    seeded_store(tmp_path / "clean.db")
    with closing(sqlite3.connect(tmp_path / "clean.db", isolation_level=None)) as writer:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute(MARKUP_TRIGGER)
        for suffix in ("", "-wal"):
            shutil.copy(f"{tmp_path / 'clean.db'}{suffix}", f"{tmp_path / 'lucy.db'}{suffix}")
    path = tmp_path / "lucy.db"
    wal = Path(f"{path}-wal")
    before = (digest(path), digest(wal))
    with pytest.raises(NotAStore, match="trigger 'markup'"):
        open_store(path)
    assert (digest(path), digest(wal)) == before


# --- a file at an older version is checked against its own version -------------------


def test_a_version_1_file_with_a_planted_trigger_is_refused_not_migrated(tmp_path: Path) -> None:
    path = planted(tmp_path / "old.db", [*SCHEMA_V1, MARKUP_TRIGGER], version=1)
    message = refused(path)
    assert "at version 1: it has a trigger 'markup'" in message
    with closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 1


def test_a_version_1_header_over_a_later_schema_is_refused(tmp_path: Path) -> None:
    # Migration 2's columns already there: migrating would add them twice.
    latest = [statement for statements in MIGRATIONS for statement in statements]
    message = refused(planted(tmp_path / "mislabelled.db", latest, version=1))
    assert "at version 1: its table 'products' is not the store's" in message


def test_a_clean_version_1_file_migrates_to_exactly_the_latest_schema(tmp_path: Path) -> None:
    path = planted(tmp_path / "old.db", SCHEMA_V1, version=1)
    with closing(open_store(path)) as connection:
        # Nothing differs legitimately: a migrated file has the new file's schema, text and all.
        assert read_schema(connection) == expected_schema(MIGRATIONS)
        assert connection.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_migrate_checks_the_file_again_under_the_write_lock(tmp_path: Path) -> None:
    # A file that changed after open_store looked at it is still not migrated.
    path = planted(tmp_path / "old.db", [*SCHEMA_V1, MARKUP_TRIGGER], version=1)
    before = contents(path)
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        with pytest.raises(NotAStore, match="trigger 'markup'"):
            migrate(connection, str(path))
        assert not connection.in_transaction
    assert contents(path) == before


@pytest.mark.parametrize("version", [-1, -(2**31)])
def test_a_negative_version_is_not_a_store(tmp_path: Path, version: int) -> None:
    message = refused(planted(tmp_path / "negative.db", SCHEMA_V1, version=version))
    assert message.endswith("is a SQLite database, but not a shop store")


def test_a_version_0_file_with_the_stores_mark_and_a_table_is_refused(tmp_path: Path) -> None:
    message = refused(planted(tmp_path / "zero.db", ["CREATE TABLE notes (text TEXT)"], version=0))
    assert message.endswith("at version 0: it has a table 'notes' that no migration makes")


def test_a_newer_file_is_still_refused_for_its_version_before_its_schema(tmp_path: Path) -> None:
    path = planted(tmp_path / "newer.db", ["CREATE TABLE suppliers (name TEXT)"], version=99)
    before = digest(path)
    with pytest.raises(NewerSchema, match="schema version 99"):
        open_store(path)
    assert digest(path) == before


# --- the expected schema, once per process ---------------------------------------------


def test_the_expected_schema_is_worked_out_once_per_process(tmp_path: Path) -> None:
    path = seeded_store(tmp_path / "lucy.db")
    open_store(path).close()
    before = expected_schema.cache_info()
    for _ in range(3):
        open_store(path).close()
    after = expected_schema.cache_info()
    assert after.misses == before.misses
    assert after.hits == before.hits + 3


# --- paths that are not store files, and a disk that fills up -------------------------


def one_line_store_error(path: str | Path) -> str:
    with pytest.raises(StoreError) as refusal:
        open_store(path)
    assert type(refusal.value) in (StoreError, NotAStore)
    message = str(refusal.value)
    assert message and "\n" not in message
    return message


def test_dev_null_is_not_a_store_file() -> None:
    message = one_line_store_error("/dev/null")
    assert message == "cannot open /dev/null: a store is a regular file, and this is not one"


def test_a_proc_file_is_a_store_error_not_a_sqlite_traceback() -> None:
    message = one_line_store_error("/proc/self/status")
    assert message.startswith("the store cannot use /proc/self/status: ")


def test_a_folder_is_not_a_store_file(tmp_path: Path) -> None:
    message = one_line_store_error(tmp_path)
    assert message.endswith("a store is a regular file, and this is not one")


def test_a_name_with_nul_is_a_store_error_not_a_value_error(tmp_path: Path) -> None:
    message = one_line_store_error(f"{tmp_path}/lucy\0.db")
    assert message.endswith(r"lucy\x00.db': a file name cannot hold a NUL character")
    assert list(tmp_path.iterdir()) == []


# A child that opens a store, is then allowed only `limit` bytes per file
# (RLIMIT_FSIZE: Python ignores SIGXFSZ, so a write past it fails with EFBIG),
# and seeds far more rows than fit.
FILLS_THE_DISK = """
    import resource, sys
    from sovereign_agent.store import StoreError, open_store, seed_store

    connection = open_store(sys.argv[1])
    limit = int(sys.argv[2])  # 0: no limit but the disk's own size
    if limit:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    rows = [
        {"sku": f"SKU-{n:05d}", "name": "Flavour " * 20, "on_hand": 1, "reorder_point": 2}
        for n in range(5000)
    ]
    try:
        seed_store(connection, {"products": rows}, {})
    except StoreError as error:
        print(f"{type(error).__name__}: {error}")
    connection.close()
"""


def assert_seeding_failed_whole(result: subprocess.CompletedProcess[str], path: Path) -> str:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    # The seed was one transaction: the file holds none of it, and is still a store.
    with closing(open_store(path)) as connection:
        assert read_products(connection) == []
    return lines[0]


def test_a_full_disk_during_seeding_is_a_one_line_store_error(tmp_path: Path) -> None:
    path = tmp_path / "lucy.db"
    result = run_python(FILLS_THE_DISK, str(path), str(256 * 1024))
    line = assert_seeding_failed_whole(result, path)
    assert line.startswith("StoreError: the store cannot use its file: ")


def test_a_really_full_small_disk_during_seeding_is_a_one_line_store_error() -> None:
    bwrap = require_executable("bwrap", install="sudo apt-get install bubblewrap")
    usage = subprocess.run([bwrap, "--help"], capture_output=True, text=True, check=False)
    if "--size" not in usage.stdout:
        pytest.skip("this bubblewrap has no --size option, so it cannot make a small tmpfs")
    with tempfile.TemporaryDirectory() as folder:
        # A 256 KiB tmpfs of its own, in a mount namespace of its own: a disk
        # that really fills. It holds a new store at the latest migration (the
        # schema and the log of migrating it; 128 KiB stopped being enough at
        # the fifth) but not the seed, about 900 KB of rows. The child leaves
        # its file there; we copy it out.
        script = textwrap.dedent(FILLS_THE_DISK) + textwrap.dedent(
            """
            import os, shutil
            # The full disk may have kept the log from folding into the file: take both.
            for suffix in ("", "-wal"):
                if os.path.exists(sys.argv[1] + suffix):
                    shutil.copy(sys.argv[1] + suffix, sys.argv[3] + suffix)
            """
        )
        small = Path(folder) / "small"
        small.mkdir()
        result = subprocess.run(
            [
                bwrap,
                "--dev-bind", "/", "/",
                "--size", str(256 * 1024),
                "--tmpfs", str(small),
                "--",
                sys.executable, "-c", script, f"{small}/lucy.db", "0", f"{folder}/lucy.db",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=ROOT,
        )  # fmt: skip
        line = assert_seeding_failed_whole(result, Path(folder) / "lucy.db")
    assert line == "StoreError: the store cannot use its file: database or disk is full"


# --- any extra object, with any name ---------------------------------------------------


@cache
def valid_store() -> bytes:
    """The bytes of Lucy's seeded store, closed: made once, copied for every example."""
    with tempfile.TemporaryDirectory(dir=memory_folder()) as folder:
        return seeded_store(Path(folder) / "lucy.db").read_bytes()


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def create(kind: str, name: str) -> str:
    return {
        "table": f"CREATE TABLE {quoted(name)} (x INTEGER)",
        "index": f"CREATE INDEX {quoted(name)} ON products (name)",
        "view": f"CREATE VIEW {quoted(name)} AS SELECT sku FROM products",
        "trigger": f"CREATE TRIGGER {quoted(name)} AFTER INSERT ON deliveries"
        " BEGIN UPDATE prices SET unit_cost_pence = 99999 WHERE sku = NEW.sku; END",
    }[kind]


# Any name SQLite lets a file give an object: any text but NUL and lone surrogates.
OBJECT_NAME = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=24
)


@settings(max_examples=examples(60), deadline=None)
@given(kind=st.sampled_from(["table", "index", "view", "trigger"]), name=OBJECT_NAME)
def test_any_extra_object_is_refused_and_the_untouched_file_opens(kind: str, name: str) -> None:
    with tempfile.TemporaryDirectory(dir=memory_folder()) as folder:
        path = Path(folder) / "lucy.db"
        path.write_bytes(valid_store())
        try:
            with closing(sqlite3.connect(path, isolation_level=None)) as connection:
                connection.execute(create(kind, name))
        except sqlite3.Error:
            assume(False)  # a name SQLite itself will not take: taken, or reserved
        message = refused(path)
        assert f"it has a {kind} {name!r}" in message
        untouched = Path(folder) / "untouched.db"
        untouched.write_bytes(valid_store())
        with closing(open_store(untouched)) as connection:
            assert len(read_products(connection)) == len(SHOP["products"])


def test_the_untouched_store_still_takes_deliveries_at_the_right_price(tmp_path: Path) -> None:
    # The control for every attack above: the real store, opened, behaves.
    path = seeded_store(tmp_path / "lucy.db")
    with closing(open_store(path)) as connection:
        receive_delivery(connection, "SKU-VANILLA", 7)
        assert read_price(connection, "SKU-VANILLA") == PRICES["SKU-VANILLA"]
