"""Chapter 12 learner file: Lucy's morning as a queued run, and the workers that finish it.

The runtime for recovering unfinished work is the book's package:
`sovereign_agent.journal`, `.leases`, `.fencing`, `.worker` and `.runs`.
These are the definitions the chapter prints: the morning's setup module
(written to a folder on the worker's PYTHONPATH), the supplier's desk and its
ledger, a worker process, chapter 10's Friday with both orders approved, and
the operator's runs command. Importing this file prints nothing, starts
nothing and touches no file.
"""

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from sovereign_agent.approvals import add_operator, approve, list_approvals, set_weekly_limit
from sovereign_agent.runs import submit_run
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import expect_delivery, open_store, reserve, seed_store

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
