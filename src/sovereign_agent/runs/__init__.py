"""Support the book does not print: the runs a worker may take over, and what the journal holds.

A run is queued with its task and its setup (the importable function that
builds its model and tools, `module:function`); workers
(`python -m sovereign_agent.worker`) claim it, and `python -m
sovereign_agent.runs` shows runs and their steps to an operator.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sovereign_agent.store import transaction

__all__ = [
    "DEFAULT_SETUP",
    "Run",
    "StepRow",
    "list_runs",
    "read_run",
    "read_steps",
    "submit_run",
]

# The shop's own morning: chapter 10's store tools behind approvals, and the
# model SOVEREIGN_MODEL names (offline unless it names a provider).
DEFAULT_SETUP = "sovereign_agent.worker.setups:shop_with_approvals"

# A dotted module path, a colon, a function name: nothing else is imported.
SETUP_PATTERN = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*")


@dataclass(frozen=True)
class Run:
    id: int
    task: str
    setup: str
    status: str
    stop_reason: str | None
    answer: str | None
    error: str | None
    owner: str | None
    lease_expires_ms: int | None
    lease_generation: int
    created_ms: int
    finished_ms: int | None
    steps: int


@dataclass(frozen=True)
class StepRow:
    step: int
    position: int
    call_id: str | None
    tool: str | None
    state: str
    record: dict[str, Any]
    generation: int


_RUN_COLUMNS = (
    "id, task, setup, status, stop_reason, answer, error, owner, lease_expires_ms,"
    " lease_generation, created_ms, finished_ms,"
    " (SELECT count(*) FROM steps WHERE steps.run_id = runs.id AND position = 0)"
)


def submit_run(
    connection: sqlite3.Connection,
    task: str,
    *,
    setup: str = DEFAULT_SETUP,
    clock: Callable[[], float] = time.time,
) -> int:
    """Queue a run for the workers; its id."""
    if not task.strip():
        raise ValueError("a run needs a task: it is empty")
    if SETUP_PATTERN.fullmatch(setup) is None:
        raise ValueError(f"setup must be module:function, like {DEFAULT_SETUP!r}; got {setup!r}")
    with transaction(connection):
        cursor = connection.execute(
            "INSERT INTO runs (task, setup, status, created_ms) VALUES (?, ?, 'QUEUED', ?)",
            (task, setup, int(clock() * 1000)),
        )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def _run(row: sqlite3.Row | tuple[Any, ...]) -> Run:
    return Run(*tuple(row))


def list_runs(connection: sqlite3.Connection) -> list[Run]:
    return [_run(row) for row in connection.execute(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY id")]


def read_run(connection: sqlite3.Connection, run_id: int) -> Run:
    row = connection.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise KeyError(run_id)
    return _run(row)


def read_steps(connection: sqlite3.Connection, run_id: int) -> list[StepRow]:
    rows = connection.execute(
        "SELECT step, position, call_id, tool, state, record, generation FROM steps"
        " WHERE run_id = ? ORDER BY step, position",
        (run_id,),
    )
    return [
        StepRow(step, position, call_id, tool, state, json.loads(record), generation)
        for step, position, call_id, tool, state, record, generation in rows
    ]
