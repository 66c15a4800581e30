"""Support the book does not print: leases on runs, so that one worker at a time works on each.

A worker claims a run by writing its name and an expiry on it, and bumping
the run's lease generation, in one transaction. While it works it renews the
expiry; a worker that dies stops renewing, and once the expiry has passed
any other worker may claim the run. A lease alone cannot stop a worker that
was paused past its expiry and then woke up believing it still holds the
run: the generation is what `sovereign_agent.fencing` checks every write
against, and a claim by anyone else changes it.

Times are milliseconds since the epoch from an injectable clock, so a test
can expire a lease without waiting for it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sovereign_agent.store import StoreError, open_store, transaction

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "Lease",
    "LeaseLost",
    "Renewer",
    "claim_next",
    "milliseconds",
    "next_expiry",
    "release",
    "renew",
]

# Long enough that a slow model reply never costs a healthy worker its run
# (it is renewed at a third of this); short enough that a dead worker's runs
# wait half a minute, not an hour, for another worker.
DEFAULT_LEASE_SECONDS = 30.0

Clock = Callable[[], float]


class LeaseLost(Exception):
    """This worker no longer holds the run's lease: another claimed it; it writes nothing more."""


@dataclass(frozen=True)
class Lease:
    """One worker's hold on one run: the fencing token is `generation`."""

    run_id: int
    owner: str
    generation: int
    expires_ms: int


def milliseconds(clock: Clock) -> int:
    return int(clock() * 1000)


def claim_next(
    connection: sqlite3.Connection,
    owner: str,
    *,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    clock: Clock = time.time,
) -> Lease | None:
    """Claim the oldest unfinished run nobody holds (or whose holder let its lease run out).

    The read and the claim share one write transaction, so two workers can
    never both claim the same run: the second one reads the first's lease.
    """
    with transaction(connection):
        now = milliseconds(clock)
        row = connection.execute(
            "SELECT id, lease_generation FROM runs WHERE status IN ('QUEUED', 'RUNNING')"
            " AND (owner IS NULL OR lease_expires_ms <= ?) ORDER BY id LIMIT 1",
            (now,),
        ).fetchone()
        if row is None:
            return None
        run_id, generation = int(row[0]), int(row[1]) + 1
        expires = now + int(lease_seconds * 1000)
        connection.execute(
            "UPDATE runs SET status = 'RUNNING', owner = ?, lease_expires_ms = ?,"
            " lease_generation = ? WHERE id = ?",
            (owner, expires, generation, run_id),
        )
    return Lease(run_id=run_id, owner=owner, generation=generation, expires_ms=expires)


def renew(
    connection: sqlite3.Connection,
    lease: Lease,
    *,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    clock: Clock = time.time,
) -> Lease:
    """Push the expiry on, only if the run is still ours at this generation; else LeaseLost."""
    with transaction(connection):
        expires = milliseconds(clock) + int(lease_seconds * 1000)
        cursor = connection.execute(
            "UPDATE runs SET lease_expires_ms = ? WHERE id = ? AND owner = ?"
            " AND lease_generation = ? AND status = 'RUNNING'",
            (expires, lease.run_id, lease.owner, lease.generation),
        )
    if cursor.rowcount != 1:
        raise LeaseLost(f"run {lease.run_id}: lease generation {lease.generation} is gone")
    return Lease(lease.run_id, lease.owner, lease.generation, expires)


def release(connection: sqlite3.Connection, lease: Lease) -> bool:
    """Give the run back unfinished (a worker shutting down), if it is still ours."""
    # Through a fenced connection a lost lease makes this raise; either way nothing changes.
    with transaction(connection):
        cursor = connection.execute(
            "UPDATE runs SET owner = NULL, lease_expires_ms = NULL WHERE id = ? AND owner = ?"
            " AND lease_generation = ? AND status = 'RUNNING'",
            (lease.run_id, lease.owner, lease.generation),
        )
    return cursor.rowcount == 1


def next_expiry(connection: sqlite3.Connection) -> int | None:
    """When the soonest lease on an unfinished run runs out (ms), or None if none is held."""
    row = connection.execute(
        "SELECT min(lease_expires_ms) FROM runs"
        " WHERE status IN ('QUEUED', 'RUNNING') AND owner IS NOT NULL"
    ).fetchone()
    return None if row[0] is None else int(row[0])


class Renewer:
    """Renews one lease from its own thread and connection while the worker's thread works.

    SQLite connections belong to the thread that made them, hence a second
    one. A renewal that finds the lease gone sets `lost` and stops: the
    worker's next write is refused by the fence anyway; `lost` lets it say so.
    """

    def __init__(
        self,
        path: str,
        lease: Lease,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        clock: Clock = time.time,
    ) -> None:
        self.lease = lease
        self.lost = threading.Event()
        self._path = path
        self._lease_seconds = lease_seconds
        self._clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"renew-run-{lease.run_id}")
        self._thread.daemon = True

    def __enter__(self) -> Renewer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        connection = open_store(self._path)
        try:
            # A third of the lease: two renewals can fail (a busy store) before it runs out.
            while not self._stop.wait(self._lease_seconds / 3):
                try:
                    self.lease = renew(
                        connection, self.lease, lease_seconds=self._lease_seconds, clock=self._clock
                    )
                except LeaseLost:
                    self.lost.set()
                    return
                except (sqlite3.Error, StoreError):
                    continue  # a busy store: try again at the next tick, the lease still runs
        finally:
            connection.close()
