"""Exercise Book 12: chapter 12's workers, plus a resume plan and a lease decision.

The reference solution: every exercise done. Chapter 12's
definitions are here unchanged (the morning's setup module, `start_supplier`,
`ledger_says`, `worker`, `friday_morning`, `runs`); the runtime for
recovering work is the book's package (`sovereign_agent.journal`, `.leases`,
`.fencing`, `.runs`). Exercise 1 says what a resuming worker would take from
a run's journal and what it would still have to do; Exercise 2 decides, from
a run's row alone, whether a worker may write or claim; Exercise 3 (Unit C,
an open design task) gives up on a run that keeps losing its workers, so the
runs behind it are claimed. At the end, the
grader's door: plain JSON in and out, a store file at the path given, and no
process started.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from sovereign_agent.approvals import add_operator, approve, list_approvals, set_weekly_limit
from sovereign_agent.fencing import fence, fenced_writes
from sovereign_agent.journal import Journal
from sovereign_agent.leases import (
    DEFAULT_LEASE_SECONDS,
    Clock,
    Lease,
    LeaseLost,
    claim_next,
    milliseconds,
)
from sovereign_agent.models import AssistantMessage, AssistantToolCall, ModelReply
from sovereign_agent.runs import read_run, read_steps, submit_run
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import expect_delivery, open_store, reserve, seed_store, transaction
from sovereign_agent.tools import ToolCall, ToolOutcome

# --- Chapter 12: the morning, the desk and the workers, as the chapter prints them -------

DESK = Path("book/textbook/servers/supplier_http.py")
MORNING = '''
import json, os, signal, threading
from sovereign_agent.models import AssistantMessage, AssistantToolCall, ModelReply
from sovereign_agent.purchasing import SupplierDesk, build_purchasing_tools
from sovereign_agent.worker import RunSetup


def note(line):
    with open(os.environ["MORNING_LOG"], "a") as log:
        log.write(f"{line}\\n")


def call(call_id, name, **arguments):
    return AssistantToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


class MorningModel:
    """Lucy's scripted morning: each reply depends on the conversation alone."""

    label = "offline morning"

    def complete(self, messages, *, tools=()):
        step = 1 + sum(isinstance(message, AssistantMessage) for message in messages)
        note(f"model asked for step {step}")
        if step == 1:
            message = AssistantMessage(tool_calls=(call("stock", "list_stock"),))
        elif step == 2:
            rows = json.loads(str(messages[-1].content))["value"]
            needed = sorted((r for r in rows if r["needed"] > 0), key=lambda r: -r["needed"])
            orders = (call(f"order-{r['sku']}", "place_order", sku=r["sku"], quantity=r["needed"])
                      for r in needed)
            message = AssistantMessage(tool_calls=tuple(orders))
        else:
            message = AssistantMessage(content="Ordered what the shop needs.")
        return ModelReply(message=message, model="offline")


def answered(attempt):
    if attempt.outcome == "answered":
        note(f"supplier made {attempt.order_id}")
        print(f"bought {attempt.order_id}", flush=True)
        if attempt.order_id == os.environ.get("MORNING_STOP_AFTER"):
            # Stop this thread, and with it the whole process, before its next line;
            # the listing decides what happens next.
            signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)


def lucy_morning(connection, run):
    desk = SupplierDesk(os.environ["SOVEREIGN_SUPPLIER"], observe=answered)
    dispatcher, authority = build_purchasing_tools(connection, desk, run_id=f"run-{run.id}")
    return RunSetup(
        model=MorningModel(), dispatcher=dispatcher, authority=authority,
        max_steps=5, supplier=desk,
    )
'''

SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
TASK = "Order what the shop needs."
SETUP = "morning:lucy_morning"


def start_supplier(ledger: Path) -> tuple[subprocess.Popen[str], str]:
    """The supplier's desk as a process of its own, and the address it printed first."""
    desk = subprocess.Popen(
        [sys.executable, str(DESK), "--port", "0", "--ledger", str(ledger)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert desk.stdout is not None
    return desk, desk.stdout.readline().strip()


def ledger_says(ledger: Path) -> str:
    """The supplier's orders, read from its file, and any sku and quantity bought twice."""
    with closing(sqlite3.connect(ledger)) as connection:
        count, pence = connection.execute(
            "SELECT count(*), coalesce(sum(quantity * unit_price_pence), 0) FROM orders"
        ).fetchone()
        twice = connection.execute(
            "SELECT sku, quantity FROM orders GROUP BY sku, quantity HAVING count(*) > 1"
        ).fetchall()
    repeated = ", ".join(f"{sku} {quantity}" for sku, quantity in twice) or "none"
    return f"ledger: {count} order{'' if count == 1 else 's'}, {pence:,} pence; twice: {repeated}"


def worker(path: Path, *options: str, **environment: str) -> subprocess.Popen[str]:
    """One worker process on the store at `path`, its stdout and stderr one stream."""
    return subprocess.Popen(
        [sys.executable, "-m", "sovereign_agent.worker", "--store", str(path), "--once", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **environment},
    )


def friday_morning(path: Path) -> Path:
    """Chapter 10's Friday store; a first run asks for its two orders, and Lucy approves both."""
    store = open_store(path)
    seed_store(store, SHOP, PRICES_PENCE)
    reserve(store, "SKU-VANILLA", 3)
    reserve(store, "SKU-CHOCOLATE", 2)
    expect_delivery(store, "SKU-STRAWBERRY", 4)
    add_operator(store, "lucy")
    set_weekly_limit(store, 5000)
    submit_run(store, TASK, setup=SETUP)
    print(worker(path).communicate()[0].strip())
    for approval in list_approvals(store):
        approve(store, approval.id, "lucy")
        print(f"lucy approves {approval.id}: {approval.arguments} {approval.amount_pence:,} pence")
    store.close()
    return path


def runs(path: Path, *arguments: str) -> None:
    """The operator's runs command on the store at `path`, as a process of its own."""
    done = subprocess.run(
        [sys.executable, "-m", "sovereign_agent.runs", "--store", str(path), *arguments],
        capture_output=True,
        text=True,
        check=False,
    )
    print(done.stdout + done.stderr + f"(exit {done.returncode})")


# --- Exercise 1 (Unit A): what a resuming worker takes from the journal -----------------


def resume_plan(connection: sqlite3.Connection, run_id: int) -> list[dict[str, Any]]:
    """What a worker resuming run `run_id` would answer from its journal, and what it must do.

    One {"step": n, "call": call id or None, "answer": ...} per thing, in
    journal order: each journaled reply ("call": None) is "journal"; each
    call of that reply is "journal" (its outcome is DONE), "settle" (it is
    STARTED: in doubt, asked of its witnesses, never run blindly) or "run"
    (it never began). Last, if the run is not over (no reply yet, or the
    last reply asked for calls), {"step": next step, "call": None,
    "answer": "ask"}: the one model step nobody reached. It reads the store
    and changes nothing; a run that does not exist raises KeyError.
    """
    read_run(connection, run_id)  # KeyError for a run that does not exist
    journal = read_steps(connection, run_id)
    replies = [row for row in journal if row.position == 0]
    states = {row.call_id: row.state for row in journal if row.call_id is not None}
    plan: list[dict[str, Any]] = []
    for reply in replies:
        plan.append({"step": reply.step, "call": None, "answer": "journal"})
        for wanted in reply.record["message"]["tool_calls"] or ():
            # STARTED is the one state the journal cannot settle: the effect may have happened.
            state = states.get(wanted["id"])
            answer = {"DONE": "journal", "STARTED": "settle"}.get(state or "", "run")
            plan.append({"step": reply.step, "call": wanted["id"], "answer": answer})
    if not replies or replies[-1].record["message"]["tool_calls"]:
        following = replies[-1].step + 1 if replies else 1
        plan.append({"step": following, "call": None, "answer": "ask"})
    return plan


# --- Exercise 2 (Unit B): may this worker write, or claim? ------------------------------


def lease_decision(
    connection: sqlite3.Connection, run_id: int, worker: str, token: int | None, now_ms: int
) -> str:
    """What worker `worker`, holding fencing token `token` (None: it holds none), may do now.

    "ended" if the run is FINISHED or FAILED, whoever asks. A worker with a
    token: "write" if the run is still its own at that generation (what the
    fence checks, whatever the clock says), else "lost". A worker without
    one: "claim" if nobody holds the run or its lease ran out at or before
    `now_ms`, else "wait". It reads the run's row and changes nothing; a run
    that does not exist raises KeyError.
    """
    row = connection.execute(
        "SELECT status, owner, lease_expires_ms, lease_generation FROM runs WHERE id = ?",
        (run_id,),
    ).fetchone()
    if row is None:
        raise KeyError(run_id)
    status, owner, expires_ms, generation = row
    if status in ("FINISHED", "FAILED"):
        return "ended"
    if token is not None:
        # The generation decides, as the fence does: the owner's name alone can come back.
        return "write" if owner == worker and generation == token else "lost"
    # A lease that ran out at now_ms is claimable, as claim_next's `<=` says.
    return "claim" if owner is None or expires_ms <= now_ms else "wait"


# --- Exercise 3 (Unit C, open design): a run that keeps losing its workers --------------


def claim_patiently(
    connection: sqlite3.Connection,
    worker: str,
    max_claims: int,
    *,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    clock: Clock = time.time,
) -> Lease | None:
    """Claim the next run as chapter 12's `claim_next` does, with Lucy's rule for a poison run.

    A run whose lease has been given out `max_claims` times already, and has
    run out again, is one no worker survives. Unit C says what Lucy needs;
    how it is done is yours.
    """
    if isinstance(max_claims, bool) or not isinstance(max_claims, int) or max_claims < 1:
        raise ValueError(f"max_claims must be a positive int, got {max_claims!r}")
    with transaction(connection):
        now = milliseconds(clock)
        # Only a run nobody holds any more: a live lease's worker may yet finish it.
        # FAILED, not skipped: chapter 12's own workers then pass it by as well.
        connection.execute(
            "UPDATE runs SET status = 'FAILED', owner = NULL, lease_expires_ms = NULL,"
            " finished_ms = ?, error = 'given up: its lease was given out '"
            " || lease_generation || ' times, and ran out every time'"
            " WHERE status IN ('QUEUED', 'RUNNING') AND lease_generation >= ?"
            " AND (owner IS NULL OR lease_expires_ms <= ?)",
            (now, max_claims, now),
        )
    return claim_next(connection, worker, lease_seconds=lease_seconds, clock=clock)


# --- The grader's door: plain JSON in and out (leave this part as it is) ----------------


def queue_file(path: str, count: int) -> list[int]:
    """A store with the shop's products and `count` queued runs of the morning: their ids."""
    with closing(open_store(path)) as store:
        seed_store(store, SHOP, PRICES_PENCE)
        return [submit_run(store, TASK, setup=SETUP, clock=lambda: 1.0) for _ in range(count)]


def claim_file(path: str, worker: str, lease_ms: int, now_ms: int) -> list[int] | None:
    """Claim the oldest claimable run at `now_ms`: [run, generation, expires_ms], or None."""
    with closing(open_store(path)) as store:
        # Half a millisecond over: the runtime rounds seconds down to whole milliseconds.
        lease = claim_next(
            store,
            worker,
            lease_seconds=(lease_ms + 0.5) / 1000,
            clock=lambda: (now_ms + 0.5) / 1000,
        )
    return None if lease is None else [lease.run_id, lease.generation, lease.expires_ms]


def patient_file(
    path: str, worker: str, max_claims: int, lease_ms: int, now_ms: int
) -> list[int] | str | None:
    """Claim by Lucy's rule at `now_ms`: [run, generation, expires_ms], None or "ValueError"."""
    with closing(open_store(path)) as store:
        try:
            # Half a millisecond over, as in claim_file: whole milliseconds come out exact.
            lease = claim_patiently(
                store,
                worker,
                max_claims,
                lease_seconds=(lease_ms + 0.5) / 1000,
                clock=lambda: (now_ms + 0.5) / 1000,
            )
        except ValueError:
            return "ValueError"
    return None if lease is None else [lease.run_id, lease.generation, lease.expires_ms]


def end_file(path: str, run_id: int, status: str) -> None:
    """End a run FINISHED or FAILED, as a worker does when it is done with it."""
    with closing(open_store(path)) as store, transaction(store):
        store.execute(
            "UPDATE runs SET status = ?, owner = NULL, lease_expires_ms = NULL,"
            " finished_ms = 2000 WHERE id = ?",
            (status, run_id),
        )


def journal_file(path: str, worker: str, steps: list[list[list[str]]]) -> int:
    """Claim a run and journal `steps` for it: each a reply's calls, [call id, tool, state].

    A state is "DONE", "STARTED" or "" (the call never began); a step with
    no calls is a final answer. Answers the run's id.
    """
    with closing(open_store(path)) as store:
        lease = claim_next(store, worker, clock=lambda: 1.0)
        assert lease is not None, "no run to journal"
        journal = Journal(store, lease)
        for number, calls in enumerate(steps, start=1):
            journal.step = number
            wanted = tuple(
                AssistantToolCall(id=call_id, name=tool, arguments_json="{}")
                for call_id, tool, _ in calls
            )
            message = (
                AssistantMessage(tool_calls=wanted)
                if wanted
                else AssistantMessage(content="Ordered what the shop needs.")
            )
            journal.record_reply(ModelReply(message=message, model="grader"))
            for call_id, tool, state in calls:
                made = ToolCall(id=call_id, name=tool, arguments={})
                if state in ("STARTED", "DONE"):
                    journal.record_started(made, {"grader": True})
                if state == "DONE":
                    outcome = ToolOutcome(observation={"ok": True, "value": None}, handler_ran=True)
                    journal.record_outcome(made, outcome)
        return lease.run_id


def plan_file(path: str, run_id: int) -> list[dict[str, Any]] | str:
    with closing(open_store(path)) as store:
        try:
            return resume_plan(store, run_id)
        except KeyError:
            return "KeyError"


def decide_file(path: str, run_id: int, worker: str, token: int | None, now_ms: int) -> str:
    with closing(open_store(path)) as store:
        try:
            return lease_decision(store, run_id, worker, token, now_ms)
        except KeyError:
            return "KeyError"


def write_file(path: str, run_id: int, worker: str, token: int) -> str:
    """Try one write behind the book's fence with `token`: "written" or "refused"."""
    with closing(open_store(path)) as store:
        fence(store, Lease(run_id=run_id, owner=worker, generation=token, expires_ms=0))
        try:
            with fenced_writes(), transaction(store):
                store.execute("UPDATE products SET on_hand = on_hand WHERE sku = 'SKU-VANILLA'")
        except LeaseLost:
            return "refused"
    return "written"


def store_file(path: str) -> list[list[Any]]:
    """Every run's row and journal, as plain data: what no exercise may change."""
    with closing(open_store(path)) as store:
        rows = store.execute("SELECT * FROM runs ORDER BY id").fetchall()
        steps = store.execute("SELECT * FROM steps ORDER BY run_id, step, position").fetchall()
    return [[list(row) for row in rows], [list(row) for row in steps]]
