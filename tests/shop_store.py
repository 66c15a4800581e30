"""What the store's tests share: Lucy's fixture, a seeded store file, its full contents, a child.

Every test that uses these works on a real database file in its own temporary
folder, and every child is a real Python process running the real runtime.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from sovereign_agent.store import open_store, seed_store

__all__ = [
    "PRICES",
    "SHOP",
    "contents",
    "python_child",
    "run_python",
    "seeded_store",
    "start_together",
    "write_lock_held",
]

# Chapter 1's snapshot and chapter 2's prices, written out again so that a
# test's expected numbers never come from the code under test.
SHOP: dict[str, Any] = {
    "name": "Lucy's Ice Cream",
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ],
}
PRICES = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}


def seeded_store(path: Path) -> Path:
    """A new store file at `path`, seeded with Lucy's shop, closed again."""
    with closing(open_store(path)) as connection:
        seed_store(connection, SHOP, PRICES)
    return path


def contents(path: Path) -> dict[str, Any]:
    """Everything a store file holds, read with plain sqlite3: its header marks and every row.

    Two equal results mean the file says the same thing, whatever happened to
    its bytes (a write-ahead log that grew and was rolled back, say).
    """
    with closing(sqlite3.connect(path)) as connection:
        tables = [
            name
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name"
            )
        ]
        found: dict[str, Any] = {
            "user_version": connection.execute("PRAGMA user_version").fetchone()[0],
            "application_id": connection.execute("PRAGMA application_id").fetchone()[0],
            "schema": connection.execute(
                "SELECT type, name, sql FROM sqlite_schema ORDER BY name"
            ).fetchall(),
        }
        for table in tables:
            found[table] = connection.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
    return found


def python_child(code: str, *args: str) -> subprocess.Popen[str]:
    """A real Python process running `code` (dedented) with the runtime importable."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def start_together(children: list[subprocess.Popen[str]]) -> None:
    """Release children that each print "ready" and wait for a line, only once all are ready."""
    for child in children:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()


def run_python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `code` in a child Python process to the end and return what it printed."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


HOLD_THE_WRITE_LOCK = """
    import sys
    from sovereign_agent.store import open_store, transaction

    connection = open_store(sys.argv[1])
    with transaction(connection):
        print("holding", flush=True)
        sys.stdin.readline()
"""


@contextmanager
def write_lock_held(path: Path) -> Iterator[None]:
    """Another process holds the store's write lock (inside a transaction) until the block ends."""
    holder = python_child(HOLD_THE_WRITE_LOCK, str(path))
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "holding\n", holder.stderr
        yield
    finally:
        _, err = holder.communicate("done\n", timeout=60)
    assert holder.returncode == 0, err
