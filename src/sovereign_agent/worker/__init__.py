"""Support the book does not print: a worker takes runs over, resumes them, and finishes them.

A worker claims a run (`sovereign_agent.leases`), fences its connection to
that lease (`sovereign_agent.fencing`), renews the lease from a second thread
while it works, and runs chapter 3's loop behind the run's journal
(`sovereign_agent.journal`): a run another worker left half-done resumes at
its last completed step, nothing asked or run twice. When the loop ends, the
run is written FINISHED with its stop reason, under the same fence.

What a run works with (its model, tools and bounds) comes from its setup, an
importable `module:function` named when the run was queued, so that any
worker, in any process, builds the same run again.
"""

from __future__ import annotations

import importlib
import os
import socket
import sqlite3
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sovereign_agent.fencing import fence, fenced_writes, unfence
from sovereign_agent.in_doubt import InDoubt, resolve_in_doubt
from sovereign_agent.journal import Journal, JournaledDispatcher, JournaledModel
from sovereign_agent.leases import (
    DEFAULT_LEASE_SECONDS,
    Clock,
    Lease,
    LeaseLost,
    Renewer,
    claim_next,
    milliseconds,
    next_expiry,
    release,
)
from sovereign_agent.loop import run_task
from sovereign_agent.models import ModelClient
from sovereign_agent.runs import Run, read_run
from sovereign_agent.store import StoreError, transaction
from sovereign_agent.tools import Dispatcher
from sovereign_agent.trace.recorder import Recorder

if TYPE_CHECKING:
    from sovereign_agent.approvals import ApprovalAuthority
    from sovereign_agent.purchasing import SupplierDesk

__all__ = [
    "RunSetup",
    "SetupError",
    "WorkDone",
    "default_owner",
    "drain",
    "load_setup",
    "run_loop",
    "work_on",
]


@dataclass(frozen=True)
class RunSetup:
    """Everything one run works with. `authority`, when given, gates the run as in chapter 10.

    `supplier`, when given, is the desk the run's `place_order` purchases at
    (chapter 11): a call a dead worker left in doubt is settled there, under
    its purchase's own idempotency key.
    """

    model: ModelClient
    dispatcher: Dispatcher
    max_steps: int = 10
    max_tool_calls: int = 10
    system: str | None = None
    authority: ApprovalAuthority | None = None
    recorder: Recorder | None = None
    supplier: SupplierDesk | None = None


SetupFactory = Callable[[sqlite3.Connection, Run], RunSetup]


class SetupError(Exception):
    """A run's setup names nothing importable, or builds something that is not a RunSetup."""


@dataclass(frozen=True)
class WorkDone:
    """What one worker did with one run it claimed."""

    run_id: int
    status: str  # FINISHED, FAILED, or LOST (the lease went to another worker)
    stop_reason: str | None
    steps: int
    replayed_replies: int
    replayed_outcomes: int
    detail: str | None = None


def default_owner() -> str:
    """host:pid, unique among the live workers of one machine, readable in `runs list`."""
    return f"{socket.gethostname()}:{os.getpid()}"


def load_setup(name: str) -> SetupFactory:
    module_name, _, function_name = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise SetupError(f"setup {name!r}: cannot import {module_name!r} ({error})") from None
    factory = getattr(module, function_name, None)
    if not callable(factory):
        raise SetupError(f"setup {name!r}: {module_name} has no function {function_name!r}")
    return factory  # type: ignore[no-any-return]


def _end(
    connection: sqlite3.Connection,
    lease: Lease,
    status: str,
    *,
    stop_reason: str | None = None,
    answer: str | None = None,
    error: str | None = None,
    clock: Clock,
) -> None:
    with fenced_writes(), transaction(connection):
        connection.execute(
            "UPDATE runs SET status = :status, stop_reason = :stop_reason, answer = :answer,"
            " error = :error, owner = NULL, lease_expires_ms = NULL, finished_ms = :now"
            " WHERE id = :run AND lease_generation = :generation",
            {
                "status": status,
                "stop_reason": stop_reason,
                "answer": answer,
                "error": error,
                "now": milliseconds(clock),
                "run": lease.run_id,
                "generation": lease.generation,
            },
        )


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())[:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def work_on(
    path: str,
    connection: sqlite3.Connection,
    lease: Lease,
    *,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    clock: Clock = time.time,
) -> WorkDone:
    """Resume and finish the run `lease` holds; every write fenced to that lease."""
    fence(connection, lease)
    journal: Journal | None = None
    try:
        with Renewer(path, lease, lease_seconds=lease_seconds, clock=clock) as renewer:
            run = read_run(connection, lease.run_id)
            journal = Journal(connection, lease, lease_lost=renewer.lost.is_set)
            try:
                setup = load_setup(run.setup)(connection, run)
                if not isinstance(setup, RunSetup):
                    raise SetupError(f"setup {run.setup!r} returned {type(setup).__name__}")
            except Exception as error:
                # A setup that cannot build the run never will: an operator's to fix.
                _end(connection, lease, "FAILED", error=_one_line(error), clock=clock)
                return WorkDone(lease.run_id, "FAILED", None, 0, 0, 0, _one_line(error))
            model = JournaledModel(setup.model, journal)
            supplier = setup.supplier
            dispatcher = JournaledDispatcher(
                setup.dispatcher,
                journal,
                connection,
                resolve=lambda store, call, note: resolve_in_doubt(
                    store, call, note, supplier=supplier
                ),
            )
            try:
                stop_reason, answer = run_loop(run, setup, model, dispatcher)
            except InDoubt as doubt:
                # Neither running the call again nor skipping it is safe: the
                # run stops for an operator, with the call's STARTED row kept.
                detail = f"in doubt: {doubt}"
                _end(connection, lease, "FAILED", error=detail, clock=clock)
                return WorkDone(
                    lease.run_id,
                    "FAILED",
                    None,
                    journal.step,
                    journal.replayed_replies,
                    journal.replayed_outcomes,
                    detail,
                )
            _end(connection, lease, "FINISHED", stop_reason=stop_reason, answer=answer, clock=clock)
            return WorkDone(
                lease.run_id,
                "FINISHED",
                stop_reason,
                journal.step,
                journal.replayed_replies,
                journal.replayed_outcomes,
            )
    except LeaseLost:
        return WorkDone(
            lease.run_id,
            "LOST",
            None,
            0 if journal is None else journal.step,
            0 if journal is None else journal.replayed_replies,
            0 if journal is None else journal.replayed_outcomes,
            f"lease generation {lease.generation} was taken over; nothing more was written",
        )
    except KeyboardInterrupt:
        # Stopped by the operator (Ctrl-C, or SIGTERM from a deploy): the run
        # is handed back now, so that another worker resumes it at once rather
        # than after the lease. The journal keeps every step already done;
        # `transaction` rolled back any write the interruption fell inside.
        with suppress(LeaseLost, sqlite3.Error, StoreError):
            release(connection, lease)
        raise
    finally:
        unfence(connection)


def run_loop(
    run: Run, setup: RunSetup, model: ModelClient, dispatcher: Dispatcher
) -> tuple[str, str | None]:
    """Chapter 3's loop (gated by chapter 10's approvals when the setup has an authority).

    `model` and `dispatcher` are the setup's, or stand in front of them (the
    journal's, or a durable-execution engine's steps): the stop reason and the answer.
    """
    if setup.authority is not None:
        from sovereign_agent.approvals import run_with_approvals

        gated = run_with_approvals(
            model,
            dispatcher,
            setup.authority,
            run.task,
            max_steps=setup.max_steps,
            max_tool_calls=setup.max_tool_calls,
            system=setup.system,
            recorder=setup.recorder,
        )
        answer = None if gated.record is None else gated.record.answer
        return gated.stop_reason, answer
    record = run_task(
        model,
        dispatcher,
        run.task,
        max_steps=setup.max_steps,
        max_tool_calls=setup.max_tool_calls,
        system=setup.system,
        recorder=setup.recorder,
    )
    return record.stop_reason.value, record.answer


def _unfinished(connection: sqlite3.Connection) -> bool:
    row = connection.execute(
        "SELECT 1 FROM runs WHERE status IN ('QUEUED', 'RUNNING') LIMIT 1"
    ).fetchone()
    return row is not None


def drain(
    path: str,
    connection: sqlite3.Connection,
    *,
    owner: str,
    once: bool,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    poll_seconds: float = 1.0,
    clock: Clock = time.time,
    sleep: Callable[[float], None] = time.sleep,
    report: Callable[[WorkDone], None] = lambda done: None,
) -> list[WorkDone]:
    """Claim and finish runs, one at a time.

    With `once`, return when no run is left unfinished; a run another worker
    holds is waited for, and claimed if its lease runs out (its worker may be
    dead). Without it, keep polling for new runs until interrupted.
    """
    done: list[WorkDone] = []
    while True:
        lease = claim_next(connection, owner, lease_seconds=lease_seconds, clock=clock)
        if lease is not None:
            outcome = work_on(path, connection, lease, lease_seconds=lease_seconds, clock=clock)
            done.append(outcome)
            report(outcome)
            continue
        if once and not _unfinished(connection):
            return done
        # Sleep until the soonest lease could be claimed, but never longer than a poll.
        expiry = next_expiry(connection)
        wait = poll_seconds
        if expiry is not None:
            wait = min(poll_seconds, max(0.01, (expiry - milliseconds(clock)) / 1000 + 0.01))
        sleep(wait)
