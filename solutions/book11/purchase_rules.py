"""Exercise Book 11: chapter 11's purchases, a report, a reconciliation, a careful settling.

The reference solution: every exercise done. Chapter 11's
definitions are here unchanged (`start_supplier`, `ledger_says`,
`naive_order`, `post`, `friday_store`, `order_what_is_needed`, `show`); the
runtime for purchasing is the book's package, `sovereign_agent.purchasing`.
Exercise 1 reports where each order's purchase stands; Exercise 2 compares
the store with what the supplier says, sending nothing; Exercise 3 (Unit C,
an open design task) settles unfinished purchases without trusting a
supplier to remember a key longer than it promised. At the end, the
grader's door: plain JSON in and out, a store file at the path given, and
the supplier's desk started in a thread of this process.
"""

from __future__ import annotations

import json
import runpy
import sqlite3
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from sovereign_agent.approvals import (
    OrderArguments,
    add_operator,
    approve,
    canonical_arguments,
    set_weekly_limit,
)
from sovereign_agent.approvals.authority import place_order
from sovereign_agent.approvals.ledger import request_approval, seconds, utc_now
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message
from sovereign_agent.purchasing import (
    Attempt,
    DeskSettings,
    PurchaseFailed,
    PurchaseRejected,
    SupplierDesk,
    confirm,
    list_purchases,
    operation_id,
    purchase,
    reject,
    resolve_purchase,
    resolve_purchases,
    unfinished_orders,
)
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import expect_delivery, open_store, reserve, seed_store, transaction

# --- Chapter 11: the desk, its ledger and Friday, as the chapter prints them -------------

DESK = Path("book/textbook/servers/supplier_http.py")

SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}


def start_supplier(ledger: Path, *options: str) -> tuple[subprocess.Popen[str], str]:
    """The supplier's desk as a process of its own, and the address it printed first."""
    desk = subprocess.Popen(
        [sys.executable, str(DESK), "--port", "0", "--ledger", str(ledger), *options],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert desk.stdout is not None
    return desk, desk.stdout.readline().strip()


def ledger_says(ledger: Path) -> str:
    """What the supplier's ledger holds, read from its file, not from its answers."""
    with closing(sqlite3.connect(ledger)) as connection:
        count, pence = connection.execute(
            "SELECT count(*), coalesce(sum(quantity * unit_price_pence), 0) FROM orders"
        ).fetchone()
    return f"ledger: {count} order{'' if count == 1 else 's'}, {pence:,} pence"


def naive_order(url: str, sku: str, quantity: int) -> dict[str, Any]:
    """Send an order; when the answer is lost, send it again, under a new random key."""
    for attempt in (1, 2, 3):
        request = urllib.request.Request(
            f"{url}/orders",
            data=json.dumps({"sku": sku, "quantity": quantity}).encode(),
            headers={"Content-Type": "application/json", "Idempotency-Key": uuid.uuid4().hex},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                return dict(json.load(answer))
        except ConnectionError as lost:
            print(f"attempt {attempt}: {type(lost).__name__}; sending again")
    raise RuntimeError("no answer after three attempts")


def post(url: str, body: dict[str, Any], key: str | None) -> None:
    """One request to the desk, printed as its status, its replay header and its body."""
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    request = urllib.request.Request(
        f"{url}/orders", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        answer = urllib.request.urlopen(request, timeout=5)
    except urllib.error.HTTPError as refused:
        answer = refused
    with answer:
        replayed = answer.headers.get("Idempotent-Replayed", "-")
        print(answer.status, "replayed:", replayed, json.load(answer))


def friday_store(path: Path) -> Path:
    """Chapter 6's Friday, then chapter 10's fixture: two operators and a 5,000 pence week."""
    store = open_store(path)
    seed_store(store, SHOP, PRICES_PENCE)
    reserve(store, "SKU-VANILLA", 3)
    reserve(store, "SKU-CHOCOLATE", 2)
    expect_delivery(store, "SKU-STRAWBERRY", 4)
    add_operator(store, "lucy")
    add_operator(store, "sam")
    set_weekly_limit(store, 5000)
    store.close()
    return path


def order_what_is_needed(messages: Sequence[Message]) -> AssistantMessage:
    """A scripted model's second step: order every sku the stock report needs, most first."""
    report = json.loads(str(messages[-1].content))["value"]
    needed = sorted((row for row in report if row["needed"] > 0), key=lambda r: -r["needed"])
    return AssistantMessage(
        tool_calls=tuple(
            AssistantToolCall(
                id=f"order-{row['sku']}",
                name="place_order",
                arguments_json=json.dumps({"sku": row["sku"], "quantity": row["needed"]}),
            )
            for row in needed
        )
    )


def show(attempt: Attempt) -> None:
    """Print one attempt: the approval its key was made from, and how the attempt ended."""
    approval = attempt.key.rsplit("-", 1)[0]
    if attempt.outcome != "answered":
        print(f"{approval} attempt {attempt.number}: {attempt.outcome}")
        return
    replayed = " Idempotent-Replayed: true" if attempt.replayed else ""
    print(f"{approval} attempt {attempt.number}: {attempt.status} {attempt.order_id}{replayed}")


# --- Exercise 1 (Unit A): where each order's purchase stands ----------------------------


def purchase_report(connection: sqlite3.Connection) -> list[dict[str, Any]]:
    """One row per order, in order id order, saying where its purchase stands.

    Each row: {"order": id, "sku": ..., "quantity": ..., "pence": quantity
    times the order's unit cost, "state": "NOT_SENT" (no purchase row yet),
    "PREPARED", "CONFIRMED" or "REJECTED", "supplier_order": the supplier's
    order id, or None}. It reads the store and changes nothing.
    """
    rows = connection.execute(
        "SELECT o.id, o.sku, o.quantity, o.quantity * o.unit_cost_pence,"
        " coalesce(p.status, 'NOT_SENT'), p.supplier_order_id"
        " FROM orders o LEFT JOIN purchases p ON p.order_id = o.id ORDER BY o.id"
    )
    return [
        {
            "order": order,
            "sku": sku,
            "quantity": quantity,
            "pence": pence,
            "state": state,
            "supplier_order": supplier_order,
        }
        for order, sku, quantity, pence, state, supplier_order in rows
    ]


# --- Exercise 2 (Unit B): the store against the supplier, sending nothing ---------------


def reconcile(connection: sqlite3.Connection, desk: SupplierDesk) -> list[dict[str, Any]]:
    """One finding per order, in order id order: {"order": id, "finding": ...}.

    Findings: "not_sent" (no purchase row), "rejected" (REJECTED), "found" or
    "missing" (PREPARED, and the supplier has an order under its key, or
    none), "ok", "lost" or "mismatch" (CONFIRMED, and the supplier has that
    order under its key, none, or another). It asks the supplier with
    `desk.look_up` only: it sends no order and changes nothing in the store.
    """
    findings = []
    for row in purchase_report(connection):
        state = row["state"]
        if state in ("NOT_SENT", "REJECTED"):
            finding = "not_sent" if state == "NOT_SENT" else "rejected"
        else:
            # Only a look-up: a reconciliation that sent an order would be a purchase.
            held = desk.look_up(operation_id(connection, row["order"]))
            if state == "PREPARED":
                finding = "missing" if held is None else "found"
            elif held is None:
                finding = "lost"
            else:
                finding = "ok" if held.order_id == row["supplier_order"] else "mismatch"
        findings.append({"order": row["order"], "finding": finding})
    return findings


# --- Exercise 3 (Unit C, open design): in doubt for longer than the supplier remembers --


def settle_unfinished(
    connection: sqlite3.Connection, desk: SupplierDesk, now: int, keeps_keys_for: int
) -> None:
    """Settle every unfinished purchase as chapter 11 resolves, with Lucy's rule for old ones.

    `now` is the time in whole seconds since the epoch (as `prepared_at` is
    kept); the supplier keeps an idempotency key for `keeps_keys_for`
    seconds. Unit C says what Lucy needs; how it is done is yours.
    """
    for order_id in unfinished_orders(connection):
        row = connection.execute(
            "SELECT prepared_at FROM purchases WHERE order_id = ?", (order_id,)
        ).fetchone()
        # Never prepared means never sent: no key of it can have been forgotten.
        if row is None or now - row[0] < keeps_keys_for:
            try:
                resolve_purchase(connection, order_id, desk)
            except PurchaseRejected:
                continue  # recorded REJECTED by purchase(); the others still settle
            continue
        # Past the supplier's memory, "no order under this key" may mean "forgotten":
        # asking is still safe, sending is not.
        found = desk.look_up(operation_id(connection, order_id))
        if found is not None:
            confirm(connection, order_id, found)
        else:
            # REJECTED is the state chapter 11's resolving leaves for a person.
            reject(
                connection,
                order_id,
                f"held: in doubt for {now - row[0]} s, longer than the supplier keeps keys"
                f" ({keeps_keys_for} s); ask the supplier before sending it again",
            )


# --- The grader's door: plain JSON in and out (leave this part as it is) ----------------

# The desks this process started, by address, so that a check can change their faults.
_DESKS: dict[str, Any] = {}


def supplier_file(server: str, ledger: str, faults: list[str]) -> str:
    """Start the supplier's desk from the server file `server`, in a thread; its address."""
    desk = runpy.run_path(server)
    desk["create_ledger"](Path(ledger))
    state = desk["Desk"](Path(ledger), list(faults), 0.0)
    running = desk["DeskServer"](("127.0.0.1", 0), state)
    threading.Thread(target=running.serve_forever, daemon=True).start()
    host, port = running.server_address[:2]
    url = f"http://{host}:{port}"
    _DESKS[url] = state
    return url


def faults_file(url: str, faults: list[str]) -> None:
    _DESKS[url].set_faults(list(faults))


def shop_file(path: str, orders: list[list[Any]]) -> list[int]:
    """A store holding each [sku, tubs] approved by lucy and recorded, not yet sent: their ids."""
    with closing(open_store(path)) as store:
        seed_store(store, SHOP, PRICES_PENCE)
        add_operator(store, "lucy")
        set_weekly_limit(store, 1_000_000)
        ids = []
        for number, (sku, tubs) in enumerate(orders):
            arguments = OrderArguments(sku=sku, quantity=tubs)
            with transaction(store):
                approval = request_approval(
                    store,
                    "place_order",
                    canonical_arguments(arguments),
                    tubs * PRICES_PENCE[sku],
                    f"grader-{number}",
                    now=seconds(utc_now),
                )
            approve(store, approval.id, "lucy")
            ids.append(int(place_order(store, arguments)["order_id"]))
        return ids


class _Stopped(Exception):
    """Stands for the purchasing process dying after a step."""


def purchase_file(path: str, url: str, order_id: int, stop_after: str) -> str:
    """Purchase one order, stopped after step `stop_after` ("" for never): where it got to."""

    def step(name: str, order: int) -> None:
        if name == stop_after:
            raise _Stopped(name)

    desk = SupplierDesk(url, settings=DeskSettings(total_deadline_s=10.0))
    with closing(open_store(path)) as store:
        try:
            return purchase(store, order_id, desk, step=step).status
        except _Stopped as stopped:
            return f"stopped after {stopped}"
        except PurchaseRejected as refused:
            return f"rejected: {refused.code}"
        except PurchaseFailed as failed:
            return f"failed: {failed.code}"


def take_key_file(path: str, url: str, order_id: int, tubs: int) -> str:
    """Send another body (`tubs` vanilla) under the order's operation id: the supplier's order."""
    with closing(open_store(path)) as store:
        key = operation_id(store, order_id)
    return SupplierDesk(url).send(key, "SKU-VANILLA", tubs).order.order_id


def report_file(path: str) -> list[dict[str, Any]]:
    with closing(open_store(path)) as store:
        return purchase_report(store)


def reconcile_file(path: str, url: str) -> list[dict[str, Any]]:
    with closing(open_store(path)) as store:
        return reconcile(store, SupplierDesk(url))


def settle_file(path: str, url: str, later: int, keeps_keys_for: int) -> str:
    """Settle the store's unfinished purchases `later` seconds from now; "settled" once done."""
    desk = SupplierDesk(url, settings=DeskSettings(total_deadline_s=10.0))
    with closing(open_store(path)) as store:
        settle_unfinished(store, desk, seconds(utc_now) + later, keeps_keys_for)
    return "settled"


def resolve_file(path: str, url: str) -> str:
    """Chapter 11's resolving, as the operator's command runs it each morning: "resolved"."""
    desk = SupplierDesk(url, settings=DeskSettings(total_deadline_s=10.0))
    with closing(open_store(path)) as store:
        resolve_purchases(store, desk)
    return "resolved"


def forget_file(ledger: str) -> int:
    """The supplier forgets every key it holds, as its terms allow; its orders stay: how many."""
    with closing(sqlite3.connect(ledger)) as connection, connection:
        # A key nobody sent: a look-up finds nothing, and numbering carries on.
        forgot = connection.execute("UPDATE orders SET idempotency_key = 'forgotten-' || number")
        return forgot.rowcount


def purchases_file(path: str) -> list[list[Any]]:
    """Every purchase as [order, status, supplier_order], in order id order."""
    with closing(open_store(path)) as store:
        return [[p.order_id, p.status, p.supplier_order_id] for p in list_purchases(store)]


def ledger_file(ledger: str) -> list[list[Any]]:
    """Every order in the supplier's ledger as [order id, sku, tubs], read from its file."""
    with closing(sqlite3.connect(ledger)) as connection:
        rows = connection.execute("SELECT number, sku, quantity FROM orders ORDER BY number")
        return [[f"SUP-{number:04d}", sku, quantity] for number, sku, quantity in rows]
