"""Support the book does not print: the run's journal, written ahead, read back on resuming.

Chapter 3's loop is not changed. It already calls two things at each step,
the model and the dispatcher; the journal stands in front of both. The first
time a step runs, the model's reply is written to the store before the loop
sees it, and each tool's outcome is written before the next call begins. A
worker that takes over a run builds the same loop again: every step the
journal holds is answered from it, so the model is not asked again and no
handler runs again, and the loop arrives, in the same state, where the dead
worker stopped. From there it asks and runs as usual.

The loop is deterministic given the replies and the outcomes (its refusals
of malformed calls and its bounds depend on nothing else), which is what
makes answering from the journal the same as running.

A consequential call is written STARTED before its handler runs: a crash
inside it leaves a call in doubt, which `sovereign_agent.in_doubt` resolves
by asking where its effect would be, never by running it blindly.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import asdict
from typing import Any

from sovereign_agent.fencing import fenced_writes
from sovereign_agent.in_doubt import note_before, resolve_in_doubt
from sovereign_agent.leases import Lease, LeaseLost
from sovereign_agent.models import Message, ModelClient, ModelReply
from sovereign_agent.store import transaction
from sovereign_agent.tools import (
    EXPECTED_FAILURES,
    ArgumentProblem,
    Dispatcher,
    Narrowing,
    ToolCall,
    ToolFailure,
    ToolOutcome,
)

__all__ = [
    "Journal",
    "JournaledDispatcher",
    "JournaledModel",
    "outcome_from_record",
    "outcome_record",
]

Resolver = Callable[[sqlite3.Connection, ToolCall, dict[str, Any]], ToolOutcome | None]


def outcome_record(outcome: ToolOutcome) -> dict[str, Any]:
    """A tool outcome as plain JSON data, every field of it, so that it comes back whole."""
    return {
        "observation": outcome.observation,
        "handler_ran": outcome.handler_ran,
        "failure": None if outcome.failure is None else asdict(outcome.failure),
        "argument_problems": [asdict(problem) for problem in outcome.argument_problems],
        "narrowing": None if outcome.narrowing is None else asdict(outcome.narrowing),
    }


def outcome_from_record(record: dict[str, Any]) -> ToolOutcome:
    failure = record["failure"]
    narrowing = record["narrowing"]
    return ToolOutcome(
        observation=record["observation"],
        handler_ran=bool(record["handler_ran"]),
        failure=None if failure is None else ToolFailure(**failure),
        argument_problems=tuple(
            ArgumentProblem(location=tuple(problem["location"]), kind=problem["kind"])
            for problem in record["argument_problems"]
        ),
        narrowing=None if narrowing is None else _narrowing(narrowing),
    )


def _narrowing(record: dict[str, Any]) -> Narrowing:
    return Narrowing(
        call_id=record["call_id"],
        tool=record["tool"],
        reason=record["reason"],
        kept=tuple(record["kept"]),
        removed=tuple(record["removed"]),
        ignored=tuple(record["ignored"]),
    )


class Journal:
    """One run's journal in the store, as one worker holding one lease reads and writes it.

    Every write goes through the worker's fenced connection, in its own
    transaction: the fence refuses it (LeaseLost) once another worker has
    claimed the run.
    """

    def __init__(
        self,
        connection: sqlite3.Connection,
        lease: Lease,
        *,
        lease_lost: Callable[[], bool] = lambda: False,
    ) -> None:
        self._connection = connection
        self._lease = lease
        # Set by the lease renewer when a renewal was refused: the fence would
        # refuse the next write anyway, but the model need not be paid first.
        self.lease_lost = lease_lost
        self.replies: dict[int, ModelReply] = {}
        self.outcomes: dict[str, ToolOutcome] = {}
        self.started: dict[str, dict[str, Any]] = {}
        rows = connection.execute(
            "SELECT step, position, call_id, state, record FROM steps WHERE run_id = ?"
            " ORDER BY step, position",
            (lease.run_id,),
        )
        for step, position, call_id, state, record in rows:
            if position == 0:
                self.replies[step] = ModelReply.model_validate_json(record)
            elif state == "DONE":
                self.outcomes[call_id] = outcome_from_record(json.loads(record))
            else:
                self.started[call_id] = json.loads(record)
        self.step = 0
        # What this worker took from the journal instead of asking or running.
        self.replayed_replies = 0
        self.replayed_outcomes = 0

    @property
    def run_id(self) -> int:
        return self._lease.run_id

    def position(self, call_id: str) -> int:
        """Where a call stands in the current step's reply: 1 for its first call."""
        reply = self.replies[self.step]
        ids = [raw.id for raw in reply.message.tool_calls]
        return ids.index(call_id) + 1

    def _write(
        self, step: int, position: int, call: ToolCall | None, state: str, record: str
    ) -> None:
        with fenced_writes(), transaction(self._connection):
            self._connection.execute(
                "INSERT INTO steps"
                " (run_id, step, position, call_id, tool, state, record, generation)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, step, position) DO UPDATE"
                " SET state = excluded.state, record = excluded.record,"
                " generation = excluded.generation",
                (
                    self._lease.run_id,
                    step,
                    position,
                    None if call is None else call.id,
                    None if call is None else call.name,
                    state,
                    record,
                    self._lease.generation,
                ),
            )

    def record_reply(self, reply: ModelReply) -> None:
        self._write(self.step, 0, None, "DONE", reply.model_dump_json())
        self.replies[self.step] = reply

    def record_started(self, call: ToolCall, note: dict[str, Any]) -> None:
        self._write(self.step, self.position(call.id), call, "STARTED", json.dumps(note))
        self.started[call.id] = note

    def record_outcome(self, call: ToolCall, outcome: ToolOutcome) -> None:
        record = json.dumps(outcome_record(outcome), sort_keys=True, allow_nan=False)
        self._write(self.step, self.position(call.id), call, "DONE", record)
        self.outcomes[call.id] = outcome
        self.started.pop(call.id, None)


class JournaledModel:
    """The run's model, asked only for steps the journal lacks; each reply is journaled first."""

    def __init__(self, model: ModelClient, journal: Journal) -> None:
        self._model = model
        self._journal = journal

    @property
    def label(self) -> str:
        return self._model.label

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        journal = self._journal
        journal.step += 1
        known = journal.replies.get(journal.step)
        if known is not None:
            journal.replayed_replies += 1
            return known
        if journal.lease_lost():
            raise LeaseLost(f"run {journal.run_id}: the lease was lost before step {journal.step}")
        reply = self._model.complete(messages, tools=tools)
        # Written before the loop sees it: a crash from here on finds it.
        journal.record_reply(reply)
        return reply


class JournaledDispatcher(Dispatcher):
    """The run's dispatcher, running only calls the journal has no outcome for; each journaled.

    It is a Dispatcher (the loop's type), with the same tools, allowlist,
    authority and bounds as the one it stands in front of, which does the work.
    """

    def __init__(
        self,
        inner: Dispatcher,
        journal: Journal,
        connection: sqlite3.Connection,
        *,
        resolve: Resolver = resolve_in_doubt,
    ) -> None:
        super().__init__(
            inner.tools.values(),
            allowed=inner.allowed,
            # The same authority, so that has_write_authority and a replayed
            # refusal (below) say what the inner dispatcher's would.
            before_write=inner._before_write,
            max_result_bytes=inner.max_result_bytes,
            hints=inner.hints,
            setup=inner.setup,
        )
        self._inner = inner
        self._journal = journal
        self._connection = connection
        self._resolve = resolve

    def scoped(self, names: Iterable[str]) -> Dispatcher:
        # A narrowed run keeps its journal: the narrowing itself is in the outcome that caused it.
        return JournaledDispatcher(
            self._inner.scoped(names), self._journal, self._connection, resolve=self._resolve
        )

    def attempt(self, call: ToolCall) -> ToolOutcome:
        journal = self._journal
        known = journal.outcomes.get(call.id)
        if known is not None:
            journal.replayed_outcomes += 1
            self._replay_refusal(call, known)
            return known
        with fenced_writes():
            if call.id in journal.started:
                resolved = self._resolve(self._connection, call, journal.started[call.id])
                if resolved is not None:
                    journal.record_outcome(call, resolved)
                    return resolved
                # The witness says it never happened: it runs now, as it would have.
            tool = self.tools.get(call.name)
            if tool is not None and tool.consequential and call.name in self.allowed:
                journal.record_started(call, note_before(self._connection, call))
            outcome = self._inner.attempt(call)
            journal.record_outcome(call, outcome)
        return outcome

    def _replay_refusal(self, call: ToolCall, outcome: ToolOutcome) -> None:
        """Let the write authority see again a call it refused, so it knows again why the run stops.

        An authority such as chapter 10's keeps, in the process, that an
        approval is pending; a worker taking the run over has a fresh one.
        Asking it again changes nothing the model was told.
        """
        failure = outcome.failure
        if failure is None or failure.stage != "before_write" or self._before_write is None:
            return
        # Refused again, as journaled: the authority now knows why.
        with suppress(*EXPECTED_FAILURES):
            self._before_write(call)
