"""Chapter 11 learner file: the supplier's desk as a process, its ledger, and Friday's morning.

The runtime for purchasing is the book's package, `sovereign_agent.purchasing`;
these are the definitions the chapter prints, to start the supplier's desk,
read its ledger, talk to it by hand, and replay chapter 10's Friday. Importing
this file prints nothing, starts nothing and touches no file.
"""

import json
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from sovereign_agent.approvals import add_operator, set_weekly_limit
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message
from sovereign_agent.purchasing import Attempt
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import expect_delivery, open_store, reserve, seed_store

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
