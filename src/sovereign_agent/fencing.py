"""Support the book does not print: fencing, so that a worker that lost its lease writes nothing.

A worker paused past its lease (a stopped process, a long garbage collection,
a laptop lid) wakes up believing it still holds the run. Checking the lease
before each write is not enough: the pause can fall between the check and
the write. So the check is made by the database, inside the very statement
that writes: `fence` puts triggers on the worker's own connection (TEMP
triggers, invisible to every other connection and to the file's schema) that
refuse any insert, update or delete unless the run's lease generation is
still the one this worker claimed. Every write through that connection is
checked, the tools' own writes included, and under the write lock, so no
other worker can claim the run between the check and the write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from sovereign_agent.leases import Lease, LeaseLost

__all__ = ["FENCE_REFUSAL", "fence", "fenced_writes", "is_fence_refusal", "unfence"]

# The words the triggers abort with; a constraint error with any other words is not ours.
FENCE_REFUSAL = "lease_lost: this worker's lease generation is no longer the run's"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def fence(connection: sqlite3.Connection, lease: Lease) -> None:
    """From now on, every write through `connection` needs `lease` to be the run's current one."""
    connection.execute(
        "CREATE TEMP TABLE IF NOT EXISTS fence_token"
        " (run_id INTEGER NOT NULL, owner TEXT NOT NULL, generation INTEGER NOT NULL)"
    )
    tables = [
        row[0]
        for row in connection.execute(
            "SELECT name FROM main.sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    # The token lives in a TEMP table, so writing it is not itself fenced.
    connection.execute("DELETE FROM temp.fence_token")
    connection.execute(
        "INSERT INTO temp.fence_token VALUES (?, ?, ?)",
        (lease.run_id, lease.owner, lease.generation),
    )
    refusal = FENCE_REFUSAL.replace("'", "''")
    for table in tables:
        for event in ("INSERT", "UPDATE", "DELETE"):
            trigger = _quoted(f"fence_{event.lower()}_{table}")
            target = f"main.{_quoted(table)}"
            # Without a token (between runs) the fence stands open: a claim
            # writes before it is known which generation to check.
            connection.execute(
                f"CREATE TEMP TRIGGER IF NOT EXISTS {trigger} BEFORE {event} ON {target}"
                " WHEN EXISTS (SELECT 1 FROM temp.fence_token) AND NOT EXISTS ("
                " SELECT 1 FROM main.runs AS r JOIN temp.fence_token AS t"
                " ON r.id = t.run_id AND r.owner = t.owner AND r.lease_generation = t.generation)"
                f" BEGIN SELECT RAISE(ABORT, '{refusal}'); END"
            )


def unfence(connection: sqlite3.Connection) -> None:
    """Open the fence again (the run is over, or given up): the triggers let every write through."""
    connection.execute("DELETE FROM temp.fence_token")


def is_fence_refusal(error: BaseException) -> bool:
    return isinstance(error, sqlite3.IntegrityError) and str(error) == FENCE_REFUSAL


@contextmanager
def fenced_writes() -> Iterator[None]:
    """The fence's refusal as LeaseLost, raised from wherever the write was."""
    try:
        yield
    except sqlite3.IntegrityError as error:
        if is_fence_refusal(error):
            raise LeaseLost(FENCE_REFUSAL) from None
        raise
