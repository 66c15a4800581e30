"""Exercise Book 5 starter: chapter 5's store, ready for the exercises.

This is chapter 5's learner file (Lucy's shop in one SQLite file) with, at the
end, the three exercises and "the grader's door": small functions through
which the grader, which can only send and receive plain JSON, opens a store
file of its own and calls your code. It runs, and it does none of the
exercises yet: look for the parts marked `Exercise 1`, `Exercise 2` and
`Exercise 3`.
"""

import json
import os
import sqlite3
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from functools import cache
from itertools import zip_longest
from pathlib import Path
from typing import Any

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


# Migration N brings a file from version N-1 to N. Append, never edit: a file
# already at version N has run migration N exactly as it was written.
MIGRATIONS: tuple[tuple[str, ...], ...] = (SCHEMA_V1,)
# Exercise 2: define CANCELLABLE_DRAFTS_V2 just above, and append it here.

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
    """Copy a shop snapshot and its prices into an empty store: every row, or none."""
    products = [
        (
            row["sku"],
            row["name"],
            whole_number("on_hand", row["on_hand"]),
            whole_number("reorder_point", row["reorder_point"]),
        )
        for row in shop["products"]
    ]
    price_list = [(sku, whole_number("unit_cost_pence", pence)) for sku, pence in prices.items()]
    with transaction(connection):
        if connection.execute("SELECT 1 FROM products LIMIT 1").fetchone() is not None:
            # Seeding twice would overwrite today's stock with an old snapshot.
            raise ValueError("the store already holds products")
        connection.executemany(
            "INSERT INTO products (sku, name, on_hand, reorder_point) VALUES (?, ?, ?, ?)",
            products,
        )
        connection.executemany(
            "INSERT INTO prices (sku, unit_cost_pence) VALUES (?, ?)", price_list
        )


def receive_delivery(connection: sqlite3.Connection, sku: str, tubs: int) -> dict[str, Any]:
    """Tubs arrive: record them, put them in the freezer, retire a draft they made stale."""
    whole_number("tubs", tubs)
    with transaction(connection):
        connection.execute("INSERT INTO deliveries (sku, tubs) VALUES (?, ?)", (sku, tubs))
        connection.execute("UPDATE products SET on_hand = on_hand + ? WHERE sku = ?", (tubs, sku))
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
            handler=lambda _: stock_report(read_products(connection)),
        ),
        ExecutableTool(
            name="supplier",
            description="The supplier's quote for one sku, in integer pence.",
            arguments=ProductArguments,
            handler=lambda args: store_quote(connection, args.sku),
        ),
        ExecutableTool(
            name="draft_order",
            description="Draft (never place) a re-order for exactly the tubs needed.",
            arguments=DraftArguments,
            handler=lambda args: save_draft(connection, args.sku, args.quantity),
        ),
    )
    return Dispatcher(tools, allowed=allowed, before_write=before_write)


# --- Exercise 1 (Unit A): the weekly stock count -------------------------------


def count_stock(connection: sqlite3.Connection, counts: Mapping[str, int]) -> list[dict[str, Any]]:
    """Exercise 1: Lucy's weekly count, as her nephew wrote it. It sets each counted stock.

    Unit A shows what goes wrong with it (a typo in the last line, a count
    that moves a need, a count of 7.0) and asks you to make it one
    transaction that is all or nothing, checks every number and every sku,
    and retires the drafts it makes stale. Keep the signature and the return
    value: the counted rows, each with its `needed`, in sku order.
    """
    for sku, tubs in counts.items():
        connection.execute("UPDATE products SET on_hand = ? WHERE sku = ?", (tubs, sku))
    rows = [read_product(connection, sku) for sku in sorted(counts)]
    return [{**row, "needed": replenishment_need(row)} for row in rows]


# --- Exercise 2 (Unit B): cancelling a draft -------------------------------------
# Lucy wants to withdraw a draft she will not send. Write migration 2 as a
# tuple of statements called CANCELLABLE_DRAFTS_V2, append it to MIGRATIONS
# (above, beside SCHEMA_V1), and write cancel_draft below.


def cancel_draft(connection: sqlite3.Connection, sku: str) -> dict[str, Any]:
    """Exercise 2: the open draft for `sku` becomes CANCELLED, in one transaction.

    Return the cancelled draft as `read_drafts` shows it. A sku with no open
    draft raises KeyError and changes nothing.
    """
    raise NotImplementedError("Exercise 2: write migration 2, then cancel_draft")


# --- Exercise 3 (Unit C): a delivery typed wrong (an open design task) -----------


def correct_delivery(connection: sqlite3.Connection, delivery: int, tubs: int) -> Any:
    """Exercise 3: the delivery numbered `delivery` really brought `tubs`, as Unit C's list says.

    The design is yours (Unit C): the grader reads only the store afterwards,
    and whether a correction was refused. For now this corrects nothing.
    """
    return None


# --- The grader's door (leave this part as it is) --------------------------------
# The grader sends and receives plain JSON. Each function opens the store file
# it is given, does one thing through the code above, and closes it again, as a
# separate process would. The last three read and write the file with plain
# sqlite3 and chapter 5's own schema, never with the code above, so that the
# grader can make a version-1 file, or one from the future, to open.


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


def invoke_in_file(path: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool request through chapter 5's dispatcher, answered as the model would see it."""
    with closing(open_store(path)) as connection:
        call = ToolCall(id="grader-1", name=name, arguments=arguments)
        observation = build_store_tools(connection).invoke(call)
        return json.loads(json.dumps(observation))


def receive_in_file(path: str, sku: str, tubs: int) -> dict[str, Any]:
    with closing(open_store(path)) as connection:
        return receive_delivery(connection, sku, tubs)


def count_in_file(path: str, counts: dict[str, int]) -> list[dict[str, Any]]:
    with closing(open_store(path)) as connection:
        return count_stock(connection, counts)


def cancel_in_file(path: str, sku: str) -> dict[str, Any]:
    with closing(open_store(path)) as connection:
        return cancel_draft(connection, sku)


def deliveries_in_file(path: str) -> list[list[Any]]:
    """Every delivery the store records, as [number, sku, tubs], oldest first."""
    with closing(open_store(path)) as connection:
        rows = connection.execute("SELECT id, sku, tubs FROM deliveries ORDER BY id")
        return [[row["id"], row["sku"], row["tubs"]] for row in rows]


def correct_in_file(path: str, delivery: int, tubs: int) -> None:
    """Exercise 3's correction; what it returns is the design's own, and is not graded."""
    with closing(open_store(path)) as connection:
        correct_delivery(connection, delivery, tubs)


def write_version_1_file(
    path: str, shop: dict[str, Any], prices: dict[str, int], drafts: list[list[Any]]
) -> None:
    """A file as chapter 5's code leaves it, at version 1, holding `shop`, `prices` and
    `drafts` ([sku, quantity, unit_cost_pence, status] each, ids in list order)."""
    from sovereign_agent.store import APPLICATION_ID as CHAPTER_5_APPLICATION_ID
    from sovereign_agent.store import SCHEMA_V1 as CHAPTER_5_SCHEMA

    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.execute("BEGIN")
        for statement in CHAPTER_5_SCHEMA:
            connection.execute(statement)
        connection.executemany(
            "INSERT INTO products (sku, name, on_hand, reorder_point) VALUES (?, ?, ?, ?)",
            [(r["sku"], r["name"], r["on_hand"], r["reorder_point"]) for r in shop["products"]],
        )
        connection.executemany("INSERT INTO prices VALUES (?, ?)", list(prices.items()))
        connection.executemany(
            "INSERT INTO drafts (sku, quantity, unit_cost_pence, status) VALUES (?, ?, ?, ?)",
            drafts,
        )
        connection.execute(f"PRAGMA application_id = {CHAPTER_5_APPLICATION_ID}")
        connection.execute("PRAGMA user_version = 1")
        connection.execute("COMMIT")


def raw_version_of_file(path: str) -> int:
    """The file's user_version, read without opening it as a store (so nothing migrates)."""
    if not Path(path).exists():
        return -1
    with closing(sqlite3.connect(path)) as connection:
        return int(connection.execute("PRAGMA user_version").fetchone()[0])


def set_raw_version_of_file(path: str, version: int) -> None:
    """Stamp a store file with another schema version, as newer code would have left it."""
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.execute(f"PRAGMA user_version = {int(version)}")
