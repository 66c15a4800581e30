"""Support the book does not print: the operator's view of runs and their journals.

    uv run python -m sovereign_agent.runs --store FILE list
    uv run python -m sovereign_agent.runs --store FILE show ID
    uv run python -m sovereign_agent.runs --store FILE add TASK [--setup MODULE:FUNCTION]

`list` shows one run a line; `show` a run and every step its journal holds;
`add` queues a run for the workers. An unknown run or a refused store is one
line on stderr and exit status 1; a usage error exits 2.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from collections.abc import Sequence
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

from sovereign_agent.runs import (
    DEFAULT_SETUP,
    Run,
    StepRow,
    list_runs,
    read_run,
    read_steps,
    submit_run,
)
from sovereign_agent.store import StoreError, open_store

__all__ = ["describe_run", "describe_step", "main"]


def when(moment_ms: int) -> str:
    return datetime.fromtimestamp(moment_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def describe_run(run: Run, now_ms: int) -> str:
    """One run on one line: id, status, why it stopped or who holds it, steps, task."""
    if run.status in ("FINISHED", "FAILED"):
        state = f"{run.status} {run.stop_reason or run.error or ''}".rstrip()
    elif run.owner is None:
        state = run.status
    else:
        assert run.lease_expires_ms is not None
        left = (run.lease_expires_ms - now_ms) / 1000
        held = f"held by {run.owner} for {left:.1f} s"
        if left <= 0:
            held = f"{run.owner}'s lease expired"
        state = f"{run.status} ({held})"
    task = " ".join(run.task.split())
    task = task if len(task) <= 60 else task[:57] + "..."
    return f"{run.id} {state} steps {run.steps} generation {run.lease_generation} task {task!r}"


def describe_step(row: StepRow) -> str:
    if row.position == 0:
        message = row.record["message"]
        calls = ", ".join(f"{call['name']}({call['id']})" for call in message["tool_calls"])
        said = calls or f"answer {json.dumps(message.get('content'))}"
        return f"step {row.step} reply: {said} [generation {row.generation}]"
    if row.state == "STARTED":
        return (
            f"step {row.step} call {row.position} {row.tool}({row.call_id}): STARTED, in doubt"
            f" [generation {row.generation}]"
        )
    observation = row.record["observation"]
    result = "ok" if observation.get("ok") else f"refused {observation.get('error')}"
    ran = "ran" if row.record["handler_ran"] else "did not run"
    return (
        f"step {row.step} call {row.position} {row.tool}({row.call_id}): {result}, {ran}"
        f" [generation {row.generation}]"
    )


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(
        prog="python -m sovereign_agent.runs",
        description="List, show and queue the runs a shop store holds.",
    )
    command.add_argument("--store", required=True, type=Path, help="the store's database file")
    actions = command.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="every run, one a line")
    show = actions.add_parser("show", help="one run and every step of its journal")
    show.add_argument("id", type=int, metavar="ID", help="the run's number")
    add = actions.add_parser("add", help="queue a run for the workers")
    add.add_argument("task", metavar="TASK", help="what the run is asked to do")
    add.add_argument(
        "--setup",
        default=DEFAULT_SETUP,
        metavar="MODULE:FUNCTION",
        help=f"what builds the run's model and tools (default {DEFAULT_SETUP})",
    )
    return command


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    if not arguments.store.is_file():
        # Opening would create an empty store: a mistyped path must not.
        print(f"error: no store at {arguments.store}", file=sys.stderr)
        return 2
    now_ms = int(time.time() * 1000)
    try:
        with closing(open_store(arguments.store)) as connection:
            if arguments.action == "list":
                for run in list_runs(connection):
                    print(describe_run(run, now_ms))
            elif arguments.action == "show":
                run = read_run(connection, arguments.id)
                print(describe_run(run, now_ms))
                print(f"created {when(run.created_ms)}")
                if run.answer is not None:
                    print(f"answer: {run.answer}")
                for row in read_steps(connection, run.id):
                    print(describe_step(row))
            else:
                run_id = submit_run(connection, arguments.task, setup=arguments.setup)
                print(describe_run(read_run(connection, run_id), now_ms))
    except KeyError:
        print(f"error: no run {arguments.id} in {arguments.store}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (StoreError, sqlite3.Error) as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
