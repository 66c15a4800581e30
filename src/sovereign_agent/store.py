"""Printed in chapters 5, 6 and 10: the store, Lucy's shop in one SQLite file outliving any process.

The dict of chapters 1 to 3 lived and died with one process. Here the stock,
the prices, the deliveries and the saved drafts live in a database file: a
restart finds them again, a second process sees the same freezer, and a
process killed half-way through a change leaves the file as it was before.
The database itself enforces the shop's rules (no negative stock, prices in
whole pence, one open draft per sku), so they hold for every writer.

The model's tools are chapter 2's three, with the same observations; the
operator's actions (seeding, deliveries, prices, and from chapter 6 the tubs
promised to customers and the tubs on their way) are functions the model has
no tool for. Each change runs in one transaction, and one that would take a
count below zero is refused before it writes anything.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from functools import cache
from itertools import zip_longest
from pathlib import Path
from typing import Any

from sovereign_agent.effects import Effect
from sovereign_agent.shop import (
    CURRENCY,
    SHOP_TOOL_NAMES,
    SUPPLIER,
    DraftArguments,
    NoArguments,
    ProductArguments,
    replenishment_need,
    stock_report,
)
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "SCHEMA_V1",
    "NewerSchema",
    "NotAStore",
    "StoreBusy",
    "StoreError",
    "build_store_tools",
    "collect",
    "expect_delivery",
    "open_store",
    "read_drafts",
    "read_price",
    "read_product",
    "read_products",
    "receive_delivery",
    "reserve",
    "save_draft",
    "seed_store",
    "supersede_stale_draft",
    "transaction",
    "whole_number",
]

# Migration 1: the shop's first schema. Every CHECK has a name, so a refusal
# says which rule it broke in words that do not change between SQLite versions.
SCHEMA_V1 = (
    """CREATE TABLE products (
        sku TEXT PRIMARY KEY CONSTRAINT sku_length CHECK (length(sku) BETWEEN 1 AND 100),
        name TEXT NOT NULL,
        on_hand INTEGER NOT NULL CONSTRAINT on_hand_not_negative CHECK (on_hand >= 0),
        reorder_point INTEGER NOT NULL
            CONSTRAINT reorder_point_not_negative CHECK (reorder_point >= 0)
    ) STRICT""",
    """CREATE TABLE prices (
        sku TEXT PRIMARY KEY REFERENCES products (sku),
        unit_cost_pence INTEGER NOT NULL CONSTRAINT price_positive CHECK (unit_cost_pence > 0)
    ) STRICT""",
    """CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY,
        sku TEXT NOT NULL REFERENCES products (sku),
        tubs INTEGER NOT NULL CONSTRAINT tubs_positive CHECK (tubs > 0)
    ) STRICT""",
    """CREATE TABLE drafts (
        id INTEGER PRIMARY KEY,
        sku TEXT NOT NULL REFERENCES products (sku),
        quantity INTEGER NOT NULL CONSTRAINT quantity_positive CHECK (quantity > 0),
        unit_cost_pence INTEGER NOT NULL
            CONSTRAINT draft_price_positive CHECK (unit_cost_pence > 0),
        status TEXT NOT NULL CONSTRAINT known_status CHECK (status IN ('DRAFT', 'SUPERSEDED'))
    ) STRICT""",
    # At most one open draft per sku: the database refuses a second one.
    "CREATE UNIQUE INDEX one_open_draft_per_sku ON drafts (sku) WHERE status = 'DRAFT'",
)


def whole_number(name: str, value: object) -> int:
    """An int and nothing else: SQLite would quietly store True as 1 and 6.0 as 6."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return value


class StoreError(Exception):
    """A database file the store will not use as it is. Said at once, never repaired by guessing."""


class StoreBusy(StoreError, TimeoutError):
    """Another connection held the store's lock for longer than this one would wait."""


# SQLite's primary result codes that blame the file or the disk, not the SQL:
# no permission, read-only, a failed read or write, a full disk, a file that
# cannot be opened.
FILE_FAILURES = frozenset(
    {
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
    }
)


@contextmanager
def store_errors(connection: sqlite3.Connection, name: str = "its file") -> Iterator[None]:
    """SQLite's complaints about the file, not the SQL, as one-line StoreErrors.

    A lock held too long is StoreBusy, a TimeoutError saying how long we
    waited; a full disk or a failed read or write is a StoreError naming the
    file. A broken rule (IntegrityError) or a mistake in a statement passes
    through as it is: those are the caller's to see.
    """
    try:
        yield
    except sqlite3.OperationalError as error:
        # An extended error code keeps its primary code in the low byte.
        code = error.sqlite_errorcode & 0xFF
        if code == sqlite3.SQLITE_BUSY:
            waited = connection.execute("PRAGMA busy_timeout").fetchone()[0] / 1000
            raise StoreBusy(
                f"another connection held the store's lock for more than {waited:g} s"
            ) from None
        if code in FILE_FAILURES:
            raise StoreError(f"the store cannot use {name}: {error}") from None
        raise


@contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """All of a change or none of it: BEGIN IMMEDIATE, then COMMIT, or ROLLBACK on any exception."""
    with store_errors(connection):
        # IMMEDIATE takes the write lock now, before the first read, so no other
        # writer can change what this transaction reads before it writes.
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise


# Migration 2: every product also counts the tubs promised to customers and the
# tubs on their way from the supplier. Rows already in the file get 0 of each,
# which is what they meant: chapter 5 knew of no promise and no van.
RESERVATIONS_V2 = (
    "ALTER TABLE products ADD COLUMN reserved INTEGER NOT NULL DEFAULT 0"
    " CONSTRAINT reserved_not_negative CHECK (reserved >= 0)",
    "ALTER TABLE products ADD COLUMN incoming INTEGER NOT NULL DEFAULT 0"
    " CONSTRAINT incoming_not_negative CHECK (incoming >= 0)",
)

# Migration 3 (chapter 10): who may decide, how much may be spent in a week,
# the approvals a consequential call needs, and the orders they allowed. An
# approval is bound to one tool and the canonical JSON of one call's arguments;
# at most one is open (pending or approved) per call, and an order names the
# approval it used, once: the database refuses a second use, whoever asks.
APPROVALS_V3 = (
    """CREATE TABLE operators (
        name TEXT PRIMARY KEY
            CONSTRAINT operator_name_length CHECK (length(name) BETWEEN 1 AND 100)
    ) STRICT""",
    """CREATE TABLE budget (
        id INTEGER PRIMARY KEY CONSTRAINT one_budget CHECK (id = 1),
        weekly_limit_pence INTEGER NOT NULL
            CONSTRAINT weekly_limit_not_negative CHECK (weekly_limit_pence >= 0)
    ) STRICT""",
    """CREATE TABLE approvals (
        id INTEGER PRIMARY KEY,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        amount_pence INTEGER NOT NULL
            CONSTRAINT amount_not_negative CHECK (amount_pence >= 0),
        run_id TEXT NOT NULL,
        requested_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
            CONSTRAINT expires_after_request CHECK (expires_at > requested_at),
        status TEXT NOT NULL CONSTRAINT known_approval_status
            CHECK (status IN ('PENDING', 'APPROVED', 'DENIED', 'EXPIRED', 'REVOKED', 'USED')),
        decided_by TEXT REFERENCES operators (name),
        decided_at INTEGER,
        used_at INTEGER,
        CONSTRAINT decided_by_someone CHECK (
            status IN ('PENDING', 'EXPIRED') OR decided_by IS NOT NULL
        ),
        CONSTRAINT used_when_used CHECK ((status = 'USED') = (used_at IS NOT NULL))
    ) STRICT""",
    "CREATE UNIQUE INDEX one_open_approval_per_call ON approvals (tool, arguments)"
    " WHERE status IN ('PENDING', 'APPROVED')",
    """CREATE TABLE orders (
        id INTEGER PRIMARY KEY,
        sku TEXT NOT NULL REFERENCES products (sku),
        quantity INTEGER NOT NULL CONSTRAINT order_quantity_positive CHECK (quantity > 0),
        unit_cost_pence INTEGER NOT NULL
            CONSTRAINT order_price_positive CHECK (unit_cost_pence > 0),
        approval_id INTEGER NOT NULL UNIQUE REFERENCES approvals (id),
        status TEXT NOT NULL CONSTRAINT known_order_status CHECK (status IN ('ORDERED'))
    ) STRICT""",
)

# Migration 4 (chapter 11): each order's purchase at the supplier. The row is
# written PREPARED, with the operation id sent as the idempotency key, before
# the request leaves; it becomes CONFIRMED, naming the supplier's order, after
# the answer; REJECTED, saying why, when the supplier refused the request. One
# purchase per order, one operation id per purchase, and a supplier's order
# confirms one purchase only. The store also draws its own random name, once,
# which every operation id carries: two shops (or one rebuilt from scratch)
# with an approval 1 each never send one key for two different purchases.
PURCHASES_V4 = (
    """CREATE TABLE store_identity (
        id INTEGER PRIMARY KEY CONSTRAINT one_identity CHECK (id = 1),
        name TEXT NOT NULL CONSTRAINT identity_length CHECK (length(name) = 32)
    ) STRICT""",
    "INSERT INTO store_identity (id, name) VALUES (1, lower(hex(randomblob(16))))",
    """CREATE TABLE purchases (
        order_id INTEGER PRIMARY KEY REFERENCES orders (id),
        operation_id TEXT NOT NULL UNIQUE
            CONSTRAINT operation_id_length CHECK (length(operation_id) BETWEEN 1 AND 200),
        status TEXT NOT NULL CONSTRAINT known_purchase_status
            CHECK (status IN ('PREPARED', 'CONFIRMED', 'REJECTED')),
        supplier_order_id TEXT UNIQUE,
        prepared_at INTEGER NOT NULL,
        settled_at INTEGER,
        failure TEXT,
        CONSTRAINT confirmed_names_the_supplier_order
            CHECK ((status = 'CONFIRMED') = (supplier_order_id IS NOT NULL)),
        CONSTRAINT rejected_says_why CHECK ((status = 'REJECTED') = (failure IS NOT NULL)),
        CONSTRAINT settled_when_settled CHECK ((status = 'PREPARED') = (settled_at IS NULL))
    ) STRICT""",
)

# The runs journal (chapter 12): every run a worker may take over, and each
# step it completed, written before the next step begins. A run's lease says
# which worker holds it and until when (milliseconds since the epoch); its
# generation grows by one at every claim, and is the fencing token every write
# of the holder is checked against. A step row is the model's reply (position
# 0) or the outcome of the reply's n-th call (position n); a consequential call
# is journaled STARTED before its handler runs, so a crash inside it leaves a
# call in doubt, never one forgotten. Its version number is its place in
# MIGRATIONS: code and tests name it RUNS_JOURNAL, never by number.
RUNS_JOURNAL = (
    """CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        task TEXT NOT NULL CONSTRAINT task_length CHECK (length(task) BETWEEN 1 AND 20000),
        setup TEXT NOT NULL CONSTRAINT setup_is_module_and_function
            CHECK (setup GLOB '?*:?*' AND length(setup) <= 300),
        status TEXT NOT NULL CONSTRAINT known_run_status
            CHECK (status IN ('QUEUED', 'RUNNING', 'FINISHED', 'FAILED')),
        stop_reason TEXT,
        answer TEXT,
        error TEXT,
        owner TEXT,
        lease_expires_ms INTEGER,
        lease_generation INTEGER NOT NULL DEFAULT 0
            CONSTRAINT generation_not_negative CHECK (lease_generation >= 0),
        created_ms INTEGER NOT NULL,
        finished_ms INTEGER,
        CONSTRAINT lease_has_owner CHECK ((owner IS NULL) = (lease_expires_ms IS NULL)),
        CONSTRAINT ended_when_ended
            CHECK ((status IN ('FINISHED', 'FAILED')) = (finished_ms IS NOT NULL)),
        CONSTRAINT no_lease_once_ended CHECK (finished_ms IS NULL OR owner IS NULL)
    ) STRICT""",
    """CREATE TABLE steps (
        run_id INTEGER NOT NULL REFERENCES runs (id),
        step INTEGER NOT NULL CONSTRAINT step_positive CHECK (step >= 1),
        position INTEGER NOT NULL CONSTRAINT position_not_negative CHECK (position >= 0),
        call_id TEXT,
        tool TEXT,
        state TEXT NOT NULL CONSTRAINT known_step_state CHECK (state IN ('STARTED', 'DONE')),
        record TEXT NOT NULL,
        generation INTEGER NOT NULL,
        PRIMARY KEY (run_id, step, position),
        CONSTRAINT reply_has_no_call CHECK ((position = 0) = (call_id IS NULL)),
        CONSTRAINT a_reply_is_done CHECK (position > 0 OR state = 'DONE')
    ) STRICT""",
    "CREATE UNIQUE INDEX one_row_per_call ON steps (run_id, call_id) WHERE call_id IS NOT NULL",
)

# Migration N brings a file from version N-1 to N. Append, never edit: a file
# already at version N has run migration N exactly as it was written.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    SCHEMA_V1,
    RESERVATIONS_V2,
    APPROVALS_V3,
    PURCHASES_V4,
    RUNS_JOURNAL,
)

# The store's mark in the file header ("LUCY" in ASCII): a database without it
# belongs to someone else, and the store neither migrates nor writes it.
APPLICATION_ID = 0x4C554359
# STRICT tables need SQLite 3.37.0 (2021); an older library could not read the schema.
MINIMUM_SQLITE = (3, 37, 0)


class NotAStore(StoreError):
    """The file is damaged, is not a database, or is another program's database."""


class NewerSchema(StoreError):
    """The file was migrated by newer code than this; running old code on it could lose data."""


def read_schema(connection: sqlite3.Connection) -> tuple[tuple[Any, ...], ...]:
    """Every table, index, view and trigger in the file, in the order they were made.

    Each row is (type, name, table, sql): the sql as SQLite stored it, so the
    same statements give the same text, whichever file they ran in.
    """
    rows = connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY rowid")
    return tuple(tuple(row) for row in rows)


@cache
def expected_schema(migrations: tuple[tuple[str, ...], ...]) -> tuple[tuple[Any, ...], ...]:
    """The schema these migrations make, worked out once per process in a database in memory.

    A store file at version N was made by these same first N migrations, so
    its schema is exactly this one: there is no difference to allow for.
    """
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as memory:
        memory.execute("PRAGMA foreign_keys = ON")  # as open_store runs them
        for statements in migrations:
            for statement in statements:
                memory.execute(statement)
        return read_schema(memory)


def first_different_line(found: str | None, expected: str | None) -> str:
    """Where two definitions part: the first line that differs, as the file has it, then ours."""
    lines = zip_longest((found or "").splitlines(), (expected or "").splitlines(), fillvalue="")
    for number, (line, wanted) in enumerate(lines, start=1):
        if line != wanted:
            return f"line {number} is {line.strip()!r}, not {wanted.strip()!r}"
    return "the two differ only in how their lines end"


def schema_mismatch(
    found: tuple[tuple[Any, ...], ...], expected: tuple[tuple[Any, ...], ...]
) -> str | None:
    """The first way a file's schema differs from the store's, in one line; None if it does not."""
    found_by_key = {(kind, name): row for kind, name, *row in found}
    for kind, name, table, sql in expected:
        if (kind, name) not in found_by_key:
            other = next((row[0] for row in found if row[1] == name), None)
            if other is not None:
                return f"{name!r} is a {other}, where the store has a {kind}"
            return f"it has no {kind} {name!r}"
        found_table, found_sql = found_by_key[(kind, name)]
        if found_sql != sql:
            return f"its {kind} {name!r} is not the store's: {first_different_line(found_sql, sql)}"
        if found_table != table:
            return f"its {kind} {name!r} belongs to {found_table!r}, not {table!r}"
    expected_keys = {(kind, name) for kind, name, _, _ in expected}
    for kind, name, table, _ in found:
        if (kind, name) not in expected_keys:
            on = "" if table == name else f" on {table!r}"
            return f"it has a {kind} {name!r}{on} that no migration makes"
    return None


def check_file(connection: sqlite3.Connection, path: str) -> int:
    """The file's schema version, once it is known to be a shop store (or empty), rules and all.

    Cheapest first: the header, then the schema, then every page. The schema
    goes before the pages so that a file whose schema is not the store's is
    refused before SQLite evaluates a single one of its expressions.
    """
    try:
        version: int = connection.execute("PRAGMA user_version").fetchone()[0]
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        schema = read_schema(connection)
        if version == 0 and not schema:
            return 0  # a new, empty file: migration 1 will make it a store
        if application_id != APPLICATION_ID or version < 0:
            raise NotAStore(f"{path} is a SQLite database, but not a shop store")
        if version > len(MIGRATIONS):
            raise NewerSchema(
                f"{path} has schema version {version}; this code knows versions up to "
                f"{len(MIGRATIONS)}. Upgrade the code; never downgrade the file."
            )
        # The header is only a claim: the tables, rules and triggers must be
        # exactly those that the first `version` migrations make.
        difference = schema_mismatch(schema, expected_schema(MIGRATIONS[:version]))
        if difference is not None:
            raise NotAStore(f"{path} is not a shop store at version {version}: {difference}")
        damage = [row[0] for row in connection.execute("PRAGMA quick_check")]
    except sqlite3.OperationalError:
        raise  # a locked file is not a damaged one
    except sqlite3.DatabaseError as error:
        raise NotAStore(f"{path} is not a readable SQLite database ({error})") from None
    if damage != ["ok"]:
        # quick_check's first report can run over several lines; a refusal is one.
        raise NotAStore(f"{path} is damaged: {' '.join(damage[0].split())}")
    return version


def migrate(connection: sqlite3.Connection, path: str) -> int:
    """Run the migrations the file lacks, all in one transaction, and return the new version."""
    with transaction(connection):
        # Check again under the write lock: another process may have migrated
        # the file, or put another file in its place, since we last looked.
        version = check_file(connection, path)
        for statements in MIGRATIONS[version:]:
            for statement in statements:
                connection.execute(statement)
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
    return len(MIGRATIONS)


def read_only(path: str, timeout: float) -> sqlite3.Connection | None:
    """A connection that can read the file at `path`, never write it; None if there is no file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None  # the connection that writes will create the file
    except OSError as error:
        raise StoreError(f"cannot open {path}: {error.strerror}") from None
    if not stat.S_ISREG(mode):
        raise StoreError(f"cannot open {path}: a store is a regular file, and this is not one")
    # mode=ro: the file cannot change while we check it, not even by the
    # checkpoint that closing the last writer of a WAL file would run.
    uri = f"{Path(path).absolute().as_uri()}?mode=ro"
    try:
        return sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
    except sqlite3.OperationalError as error:
        raise StoreError(f"cannot open {path}: {error}") from None


def open_for_writing(path: str, timeout: float, version: int) -> sqlite3.Connection:
    """The store's own connection to a file already checked at `version`, migrated if it lags."""
    try:
        # isolation_level=None: the sqlite3 module never begins a transaction on
        # its own, on Python 3.11 and 3.12+ alike; `transaction` begins them all.
        connection = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    except sqlite3.OperationalError as error:
        raise StoreError(f"cannot open {path}: {error}") from None
    try:
        with store_errors(connection, path):
            connection.row_factory = sqlite3.Row
            # Off by default, and set per connection: without it REFERENCES is decoration.
            connection.execute("PRAGMA foreign_keys = ON")
            # Write-ahead logging lets readers go on while a writer commits. It
            # is a property of the file, set before migration 1 first writes it.
            if connection.execute("PRAGMA journal_mode = WAL").fetchone()[0] != "wal":
                raise StoreError(f"{path} cannot use write-ahead logging, which the store needs")
            connection.execute("PRAGMA synchronous = FULL")
            if version < len(MIGRATIONS):
                migrate(connection, path)
    except BaseException:
        connection.close()
        raise
    return connection


def open_store(path: str | os.PathLike[str], *, timeout: float = 5.0) -> sqlite3.Connection:
    """Open Lucy's store, creating or migrating it; refuse a file it cannot use as it is."""
    if sqlite3.sqlite_version_info < MINIMUM_SQLITE:
        raise StoreError(f"SQLite {sqlite3.sqlite_version} is too old: STRICT tables need 3.37")
    name = os.fspath(path)
    if "\0" in name:
        raise StoreError(f"cannot open {name!r}: a file name cannot hold a NUL character")
    # Every check comes before the first write, through a connection that cannot write.
    reader = read_only(name, timeout)
    try:
        version = 0
        if reader is not None:
            with store_errors(reader, name):
                version = check_file(reader, name)
        return open_for_writing(name, timeout, version)
    finally:
        # Closed only once the writer has opened the file, so that the writer
        # finds the write-ahead log's index already built, and skips building it.
        if reader is not None:
            reader.close()


def read_products(connection: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every product row as a plain dict, in sku order: the rows chapter 2's functions read."""
    return [dict(row) for row in connection.execute("SELECT * FROM products ORDER BY sku")]


def read_product(connection: sqlite3.Connection, sku: str) -> dict[str, Any]:
    row = connection.execute("SELECT * FROM products WHERE sku = ?", (sku,)).fetchone()
    if row is None:
        raise KeyError(sku)
    return dict(row)


def read_price(connection: sqlite3.Connection, sku: str) -> int:
    row = connection.execute("SELECT unit_cost_pence FROM prices WHERE sku = ?", (sku,)).fetchone()
    if row is None:
        raise KeyError(sku)
    return int(row[0])


def read_drafts(connection: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every saved draft, oldest first, open or not."""
    rows = connection.execute(
        "SELECT id, sku, quantity, unit_cost_pence, quantity * unit_cost_pence AS total_pence,"
        " status FROM drafts ORDER BY id"
    )
    return [dict(row) for row in rows]


def supersede_stale_draft(connection: sqlite3.Connection, sku: str) -> int:
    """Retire an open draft the shop would no longer write, because its need or price moved.

    Runs inside the caller's transaction, so the change that made the draft
    stale and the draft's retirement commit together, or not at all.
    """
    need = replenishment_need(read_product(connection, sku))
    cursor = connection.execute(
        "UPDATE drafts SET status = 'SUPERSEDED'"
        " WHERE sku = :sku AND status = 'DRAFT' AND (quantity != :need"
        " OR unit_cost_pence IS NOT (SELECT unit_cost_pence FROM prices WHERE sku = :sku))",
        {"sku": sku, "need": need},
    )
    return cursor.rowcount


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


def set_price(connection: sqlite3.Connection, sku: str, unit_cost_pence: int) -> None:
    """Lucy changes a price: an open draft at the old price is retired in the same transaction."""
    whole_number("unit_cost_pence", unit_cost_pence)
    with transaction(connection):
        connection.execute(
            "INSERT INTO prices (sku, unit_cost_pence) VALUES (?, ?)"
            " ON CONFLICT (sku) DO UPDATE SET unit_cost_pence = excluded.unit_cost_pence",
            (sku, unit_cost_pence),
        )
        supersede_stale_draft(connection, sku)


def store_quote(connection: sqlite3.Connection, sku: str) -> dict[str, Any]:
    """The shop's own price for one sku, from the store; an unknown sku fails as in chapter 2."""
    return {
        "sku": sku,
        "supplier": SUPPLIER,
        "currency": CURRENCY,
        "unit_cost_pence": read_price(connection, sku),
    }


def save_draft(connection: sqlite3.Connection, sku: str, quantity: int) -> dict[str, Any]:
    """Chapter 2's draft, saved: the open draft for this sku, created only if there is none."""
    with transaction(connection):
        need = replenishment_need(read_product(connection, sku))
        if quantity != need:
            raise ValueError(f"quantity {quantity} does not match the need of {need}")
        quote = store_quote(connection, sku)
        supersede_stale_draft(connection, sku)
        # The partial unique index decides whether this draft is new: with one
        # already open for the sku, the insert does nothing.
        connection.execute(
            "INSERT INTO drafts (sku, quantity, unit_cost_pence, status)"
            " VALUES (?, ?, ?, 'DRAFT') ON CONFLICT (sku) WHERE status = 'DRAFT' DO NOTHING",
            (sku, quantity, quote["unit_cost_pence"]),
        )
        draft = connection.execute(
            "SELECT quantity, quantity * unit_cost_pence AS total_pence, status FROM drafts"
            " WHERE sku = ? AND status = 'DRAFT'",
            (sku,),
        ).fetchone()
    return {**quote, **dict(draft)}


def build_store_tools(
    connection: sqlite3.Connection,
    *,
    allowed: Iterable[str] = SHOP_TOOL_NAMES,
    before_write: Callable[[ToolCall], None] | None = None,
) -> Dispatcher:
    """Chapter 2's three tools over the store: the same names, schemas and observations."""
    tools = (
        ExecutableTool(
            name="list_stock",
            description="Every product with its stock, its target and the tubs needed.",
            arguments=NoArguments,
            effects=frozenset({Effect.READ}),
            handler=lambda _: stock_report(read_products(connection)),
        ),
        ExecutableTool(
            name="supplier",
            description="The supplier's quote for one sku, in integer pence.",
            arguments=ProductArguments,
            effects=frozenset({Effect.READ}),
            handler=lambda args: store_quote(connection, args.sku),
        ),
        ExecutableTool(
            name="draft_order",
            description="Draft (never place) a re-order for exactly the tubs needed.",
            arguments=DraftArguments,
            effects=frozenset({Effect.WRITE}),
            handler=lambda args: save_draft(connection, args.sku, args.quantity),
        ),
    )
    return Dispatcher(tools, allowed=allowed, before_write=before_write)
