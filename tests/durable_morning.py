"""The morning run as a worker runs it, with points where a test can kill or pause the worker.

A worker process imports this module by name (`durable_morning:morning_setup`)
as the setup of the runs a test queues; `PYTHONPATH` points it at `tests/`.
The setup is the real thing (chapter 10's store tools behind approvals, over
the worker's own fenced connection) plus two test-only devices, both set
through the environment of the worker's process:

- a durable log (`SOVEREIGN_TEST_LOG`): one line, appended and fsynced, each
  time the model is asked and each time a handler is entered and returns, so
  a test counts what really happened across processes that were killed;
- a point (`SOVEREIGN_TEST_KILL`, `SOVEREIGN_TEST_STOP`, `SOVEREIGN_TEST_WAIT`)
  at which the worker sends itself SIGKILL or SIGSTOP, or waits for the
  test's signal: the first time the named event happens.

With `SOVEREIGN_TEST_SUPPLIER` (the address of the book's supplier desk), the
setup is chapter 11's instead: `place_order` orders, then purchases at that
desk under the order's idempotency key, and the worker settles a purchase a
dead worker left at the same desk. `SOVEREIGN_TEST_DESK_PAUSE` (seconds)
caps the pause between two attempts at that desk, for a test whose desk is
down on purpose: every attempt is still made, only the waiting is shorter.

Events: `ask-N` (the model is about to be asked for step N), `reply-N` (it
has answered, not yet journaled), `journaled-N` (its reply is journaled),
`enter-CALL` (a handler is entered, nothing done yet), `answered-CALL` (with
a supplier: the desk has the order and has answered, the purchase is still
PREPARED in the store), `after-CALL` (the handler has committed, its outcome
not yet journaled), `outcome-CALL` (the
outcome is journaled), `finished` (the loop ended; the run is not yet
written FINISHED). CALL is `list_stock`, `place_order-SKU-VANILLA` or
`place_order-SKU-CHOCOLATE`.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sovereign_agent.approvals import (
    OrderArguments,
    add_operator,
    approve,
    build_approved_store_tools,
    canonical_arguments,
    set_weekly_limit,
)
from sovereign_agent.approvals.ledger import request_approval, seconds, utc_now
from sovereign_agent.loop import RunRecord
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelReply,
)
from sovereign_agent.purchasing import (
    Attempt,
    DeskSettings,
    SupplierDesk,
    build_purchasing_tools,
)
from sovereign_agent.runs import Run, submit_run
from sovereign_agent.store import expect_delivery, open_store, reserve, seed_store, transaction
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolOutcome
from sovereign_agent.trace.recorder import Recorder
from sovereign_agent.worker import RunSetup

SETUP = "durable_morning:morning_setup"
TASK = "Order what the shop needs."
ANSWER = "Ordered 9 vanilla and 1 chocolate: 2,550 pence."
CALLS = ("list_stock", "place_order-SKU-VANILLA", "place_order-SKU-CHOCOLATE")
# Every event of one uninterrupted morning, in the order they happen (the
# `answered-` ones only when the run purchases at a supplier's desk).
EVENTS = (
    "ask-1",
    "reply-1",
    "journaled-1",
    "enter-list_stock",
    "after-list_stock",
    "outcome-list_stock",
    "ask-2",
    "reply-2",
    "journaled-2",
    "enter-place_order-SKU-VANILLA",
    "answered-place_order-SKU-VANILLA",
    "after-place_order-SKU-VANILLA",
    "outcome-place_order-SKU-VANILLA",
    "enter-place_order-SKU-CHOCOLATE",
    "answered-place_order-SKU-CHOCOLATE",
    "after-place_order-SKU-CHOCOLATE",
    "outcome-place_order-SKU-CHOCOLATE",
    "ask-3",
    "reply-3",
    "journaled-3",
    "finished",
)

# Chapter 1's shop and chapter 2's prices, written out again.
SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
PRICES = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}


def morning_store(path: Path, *, runs: int = 1) -> Path:
    """Chapter 6's Friday, both orders approved by Lucy (2,550 pence), and `runs` runs queued."""
    connection = open_store(path)
    try:
        seed_store(connection, SHOP, PRICES)
        reserve(connection, "SKU-VANILLA", 3)
        reserve(connection, "SKU-CHOCOLATE", 2)
        expect_delivery(connection, "SKU-STRAWBERRY", 4)
        add_operator(connection, "lucy")
        set_weekly_limit(connection, 5000)
        for sku, quantity, pence in (("SKU-VANILLA", 9, 2250), ("SKU-CHOCOLATE", 1, 300)):
            arguments = canonical_arguments(OrderArguments(sku=sku, quantity=quantity))
            with transaction(connection):
                asked = request_approval(
                    connection, "place_order", arguments, pence, "fixture", now=seconds(utc_now)
                )
            approve(connection, asked.id, "lucy")
        for _ in range(runs):
            submit_run(connection, TASK, setup=SETUP)
    finally:
        connection.close()
    return path


def log(line: str) -> None:
    """One line in the durable log: it survives the SIGKILL that may come next."""
    path = os.environ.get("SOVEREIGN_TEST_LOG")
    if not path:
        return
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, f"{os.getpid()} {line}\n".encode())
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def point(event: str) -> None:
    """Kill or pause this process here, if the test asked for this event."""
    if os.environ.get("SOVEREIGN_TEST_KILL") == event:
        log(f"killed-at {event}")
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get("SOVEREIGN_TEST_STOP") == event:
        log(f"stopped-at {event}")
        # Aimed at this thread, not the process: a stop sent to the process is
        # taken by its main thread, and where the run is on another thread (DBOS
        # runs workflows on its own) this one ran on until the main thread was
        # scheduled, sometimes far enough to confirm the purchase. A stop this
        # thread sends itself stops the whole process before its next line.
        signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)
    if os.environ.get("SOVEREIGN_TEST_WAIT") == event:
        log(f"waiting-at {event}")
        time.sleep(120)  # until the test signals this process


def call(call_id: str, name: str, **arguments: Any) -> AssistantToolCall:
    return AssistantToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


class MorningModel:
    """The offline model of the morning: its reply depends on the conversation alone.

    So a worker that resumes a run, with a fresh model, is answered the same
    way (if it were asked at all) as the worker that started it.
    """

    label = "offline (durable morning)"

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        step = 1 + sum(1 for message in messages if isinstance(message, AssistantMessage))
        log(f"ask {step}")
        point(f"ask-{step}")
        if step == 1:
            message = AssistantMessage(tool_calls=(call("stock", "list_stock"),))
        elif step == 2:
            report = json.loads(str(messages[-1].content))["value"]
            needed = sorted((r for r in report if r["needed"] > 0), key=lambda r: -r["needed"])
            message = AssistantMessage(
                tool_calls=tuple(
                    call(f"order-{r['sku']}", "place_order", sku=r["sku"], quantity=r["needed"])
                    for r in needed
                )
            )
        else:
            message = AssistantMessage(content=ANSWER)
        point(f"reply-{step}")
        return ModelReply(message=message, model="offline")


class PointRecorder(Recorder):
    """Records nothing; tells `point` when a reply or an outcome has been journaled."""

    def __init__(self) -> None:
        super().__init__(None)
        self._step = 0

    def model_reply(self, reply: ModelReply) -> None:
        self._step += 1
        point(f"journaled-{self._step}")

    def tool_outcome(self, raw: AssistantToolCall, outcome: ToolOutcome) -> None:
        sku = json.loads(raw.arguments_json).get("sku")
        point(f"outcome-{raw.name}" if sku is None else f"outcome-{raw.name}-{sku}")

    def run_finished(self, record: RunRecord) -> None:  # type: ignore[override]
        point("finished")


# The handler running now, for the desk's observer: its attempts carry a key, not a sku.
RUNNING: list[str] = []


def answered(attempt: Attempt) -> None:
    if attempt.outcome == "answered" and RUNNING:
        point(f"answered-{RUNNING[-1]}")


def counted(name: str, handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(arguments: Any) -> Any:
        label = name if not hasattr(arguments, "sku") else f"{name}-{arguments.sku}"
        RUNNING[:] = [label]
        log(f"enter {label}")
        point(f"enter-{label}")
        value = handler(arguments)
        log(f"done {label}")
        point(f"after-{label}")
        return value

    return run


def morning_setup(connection: sqlite3.Connection, run: Run) -> RunSetup:
    url = os.environ.get("SOVEREIGN_TEST_SUPPLIER")
    pause = os.environ.get("SOVEREIGN_TEST_DESK_PAUSE")
    settings = None if not pause else DeskSettings(max_pause_s=float(pause))
    supplier = None if not url else SupplierDesk(url, settings=settings, observe=answered)
    if supplier is None:
        dispatcher, authority = build_approved_store_tools(connection, run_id=f"run-{run.id}")
    else:
        dispatcher, authority = build_purchasing_tools(connection, supplier, run_id=f"run-{run.id}")
    tools = [
        ExecutableTool(
            name=tool.name,
            description=tool.description,
            arguments=tool.arguments,
            handler=counted(tool.name, tool.handler),
            effects=tool.effect_classes,
        )
        for tool in dispatcher.tools.values()
    ]
    counting = Dispatcher(tools, allowed=dispatcher.allowed, before_write=authority)
    return RunSetup(
        model=MorningModel(),
        dispatcher=counting,
        authority=authority,
        max_steps=5,
        max_tool_calls=5,
        recorder=PointRecorder(),
        supplier=supplier,
    )


def read_log(path: Path) -> list[tuple[int, str]]:
    """(pid, event) for every line of the durable log, in order."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(int(pid), event) for pid, event in (line.split(" ", 1) for line in lines)]


def essence(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """What a finished morning leaves in the store, less what differs on every run.

    Clocks (lease expiries, creation and decision times), who held the lease
    and how many times it was claimed differ between two correct runs; every
    product, draft, order, approval, run outcome and journal record may not.
    """
    with sqlite3.connect(path) as connection:
        queries = {
            "products": "SELECT * FROM products ORDER BY sku",
            "drafts": "SELECT * FROM drafts ORDER BY id",
            "orders": "SELECT * FROM orders ORDER BY id",
            "approvals": "SELECT id, tool, arguments, amount_pence, status, decided_by"
            " FROM approvals ORDER BY id",
            "runs": "SELECT id, task, setup, status, stop_reason, answer, error, owner"
            " FROM runs ORDER BY id",
            "steps": "SELECT run_id, step, position, call_id, tool, state, record"
            " FROM steps ORDER BY run_id, step, position",
            "purchases": "SELECT order_id, status, supplier_order_id, failure"
            " FROM purchases ORDER BY order_id",
        }
        return {name: connection.execute(sql).fetchall() for name, sql in queries.items()}
