"""Run the store's queued runs as DBOS workflows: the same loop, DBOS's journal instead of ours.

    uv run python scripts/dbos_worker.py --store FILE --system-db FILE

DBOS (the `dbos` package, in the `dbos` extra and the dev group) is a durable
execution library: a function decorated as a workflow calls functions
decorated as steps, and DBOS records each step's result in its own system
database (SQLite here) before the workflow goes on. When a process dies and
a new one launches DBOS on the same system database, DBOS finds the workflows
left PENDING and runs them again, answering each step it had recorded from
its record: the model is not asked again, a tool does not run again.

The workflow here is chapter 3's loop, exactly as the worker runs it
(`sovereign_agent.worker.run_loop`): the model and the dispatcher are
stand-ins whose every call is one DBOS step. A run's workflow id is `run-N`,
so starting it twice starts it once. What DBOS does not do is what chapter
11 is about: a step that did its work but died before DBOS recorded its
result runs again on recovery (at least once, not exactly once); the store
refuses the second order because its approval is used, not because DBOS knew.

DBOS runs each workflow, and so each step, on a thread of its own pool; the
main thread only waits for the result. A setup that stops its process from
inside a step must aim the signal at its own thread (`signal.pthread_kill`),
not at the process: a stop sent to the process is taken by the main thread,
and the step's thread runs on until that one has been scheduled.

Only this script imports DBOS; the runtime never does.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSConfig, SetWorkflowID

from sovereign_agent.journal import outcome_from_record, outcome_record
from sovereign_agent.models import Message, ModelClient, ModelReply
from sovereign_agent.runs import read_run
from sovereign_agent.store import StoreError, open_store, transaction
from sovereign_agent.tools import Dispatcher, ToolCall, ToolOutcome
from sovereign_agent.worker import RunSetup, SetupError, load_setup, run_loop

# A fixed version: DBOS recovers only workflows of the version that started
# them, and by default it derives the version from the code's bytes.
APPLICATION_VERSION = "sovereign-agent-chapter-12"

# How often DBOS looks in its SQLite database for a workflow's result, and for
# its background thread's stop: its default, a second, made every run wait for
# up to a second after its workflow ended, and for a second more on shutdown.
# A read of one row ten times a second costs next to nothing.
POLL_S = 0.1

# The setup of the workflow running in this thread: steps run in the thread
# of the workflow that calls them, and a recovered workflow gets its own.
_current = threading.local()


@DBOS.step()
def ask_model(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> str:
    """One model turn, as JSON text: what DBOS records and hands back on recovery."""
    setup: RunSetup = _current.setup
    return setup.model.complete(messages, tools=tools).model_dump_json()


@DBOS.step()
def run_tool(call: ToolCall) -> dict[str, Any]:
    """One tool call through the setup's dispatcher (its checks, its authority), as JSON data."""
    setup: RunSetup = _current.setup
    return outcome_record(setup.dispatcher.attempt(call))


@DBOS.step()
def record_finish(store: str, run_id: int, stop_reason: str, answer: str | None) -> None:
    with closing(open_store(store)) as connection, transaction(connection):
        connection.execute(
            "UPDATE runs SET status = 'FINISHED', stop_reason = ?, answer = ?, owner = NULL,"
            " lease_expires_ms = NULL, finished_ms = ? WHERE id = ?",
            (stop_reason, answer, int(time.time() * 1000), run_id),
        )


class StepModel:
    """The run's model, each turn a DBOS step."""

    def __init__(self, model: ModelClient) -> None:
        self._model = model

    @property
    def label(self) -> str:
        return self._model.label

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        return ModelReply.model_validate_json(ask_model(tuple(messages), list(tools)))


class StepDispatcher(Dispatcher):
    """The run's dispatcher, each call a DBOS step; the loop sees the same tools and bounds."""

    def __init__(self, inner: Dispatcher) -> None:
        super().__init__(
            inner.tools.values(),
            allowed=inner.allowed,
            before_write=inner._before_write,
            max_result_bytes=inner.max_result_bytes,
            hints=inner.hints,
        )
        self._inner = inner

    def scoped(self, names: Iterable[str]) -> Dispatcher:
        return StepDispatcher(self._inner.scoped(names))

    def attempt(self, call: ToolCall) -> ToolOutcome:
        return outcome_from_record(run_tool(call))


@DBOS.workflow()
def run_workflow(store: str, run_id: int) -> dict[str, Any]:
    """One queued run, start to end, as a DBOS workflow: deterministic given its steps' results."""
    with closing(open_store(store)) as connection:
        run = read_run(connection, run_id)
        setup = load_setup(run.setup)(connection, run)
        if not isinstance(setup, RunSetup):
            raise SetupError(f"setup {run.setup!r} returned {type(setup).__name__}")
        _current.setup = setup
        try:
            stop_reason, answer = run_loop(
                run, setup, StepModel(setup.model), StepDispatcher(setup.dispatcher)
            )
        finally:
            _current.setup = None
    record_finish(store, run_id, stop_reason, answer)
    return {"stop_reason": stop_reason, "answer": answer}


def unfinished_runs(store: str) -> list[int]:
    with closing(open_store(store)) as connection:
        rows = connection.execute(
            "SELECT id FROM runs WHERE status IN ('QUEUED', 'RUNNING') ORDER BY id"
        )
        return [int(row[0]) for row in rows]


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(
        prog="scripts/dbos_worker.py",
        description="Run the store's unfinished runs as DBOS workflows, recovering any a"
        " previous process left half-done.",
    )
    command.add_argument("--store", required=True, type=Path, help="the shop's store file")
    command.add_argument(
        "--system-db",
        required=True,
        type=Path,
        help="DBOS's own SQLite database, where it journals workflows and steps",
    )
    return command


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    if not arguments.store.is_file():
        print(f"error: no store at {arguments.store}", file=sys.stderr)
        return 2
    store = str(arguments.store)
    config: DBOSConfig = {
        "name": "lucy-shop",
        "system_database_url": f"sqlite:///{arguments.system_db.absolute()}",
        "application_version": APPLICATION_VERSION,
        "log_level": "WARNING",
        "notification_listener_polling_interval_sec": POLL_S,
    }
    try:
        pending = unfinished_runs(store)
        DBOS(config=config)
        # Launching finds this executor's PENDING workflows (a dead process's)
        # and resumes them in the background, each from its last recorded step.
        DBOS.launch()
        try:
            for run_id in pending:
                workflow_id = f"run-{run_id}"
                if DBOS.get_workflow_status(workflow_id) is None:
                    with SetWorkflowID(workflow_id):
                        handle = DBOS.start_workflow(run_workflow, store, run_id)
                else:
                    # Started by a process that died: the launch is recovering it.
                    handle = DBOS.retrieve_workflow(workflow_id)
                result = handle.get_result(polling_interval_sec=POLL_S)
                print(
                    f"run {run_id}: finished, {result['stop_reason']}"
                    f" (DBOS workflow {workflow_id})",
                    flush=True,
                )
        finally:
            DBOS.destroy()
    except (StoreError, sqlite3.Error) as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
