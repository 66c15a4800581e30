"""Chapter 11 checkpoint: Friday's two approved orders reach the supplier once each.

In a temporary folder: chapter 10's Friday store (operators lucy and sam,
5,000 pence a week) and the supplier's order desk, a real HTTP server on
127.0.0.1 with its own ledger, started with its first answer dropped. The
morning run stops awaiting approval; Lucy approves both orders; the next run
orders and purchases them. The vanilla order's first answer is lost, the
retry under the same operation id is answered SUP-0001 as a replay, the
chocolate order becomes SUP-0002, and the supplier's ledger holds 2 orders,
2,550 pence. The desk is stopped at the end.

Offline: the model is scripted and the supplier runs on this machine, so the
output is the same on every machine.
"""

import json
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

from sovereign_agent.approvals import (
    GatedRun,
    add_operator,
    approve,
    list_approvals,
    run_with_approvals,
    set_weekly_limit,
)
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.purchasing import (
    Attempt,
    SupplierDesk,
    build_purchasing_tools,
    list_purchases,
)
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import expect_delivery, open_store, reserve, seed_store

DESK = Path(__file__).resolve().parents[1] / "servers" / "supplier_http.py"

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


def morning(store_path: Path, run_id: str, supplier: SupplierDesk) -> GatedRun:
    """Chapter 10's morning run, with this chapter's tools: place_order also buys."""
    store = open_store(store_path)
    try:
        dispatcher, authority = build_purchasing_tools(store, supplier, run_id=run_id)
        stock = AssistantToolCall(id="s", name="list_stock", arguments_json="{}")
        model = ScriptedModel(
            [
                AssistantMessage(tool_calls=(stock,)),
                order_what_is_needed,
                AssistantMessage(content="Ordered what the shop needs."),
            ]
        )
        return run_with_approvals(
            model, dispatcher, authority, "Order.", max_steps=5, max_tool_calls=5
        )
    finally:
        store.close()


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        path = friday_store(Path(folder) / "lucy.db")
        ledger = Path(folder) / "supplier.db"
        desk, url = start_supplier(ledger, "--faults", "drop")
        try:
            print("morning run:", morning(path, "friday-morning", SupplierDesk(url)).stop_reason)
            with closing(open_store(path)) as store:
                for a in list_approvals(store):
                    approve(store, a.id, "lucy")
                    asked = json.loads(a.arguments)
                    print(
                        f"lucy approves {a.id}: {asked['sku']} {asked['quantity']},"
                        f" {a.amount_pence:,} pence"
                    )
            run = morning(path, "friday-late-morning", SupplierDesk(url, observe=show))
            print("next run:", run.stop_reason)
            with closing(open_store(path)) as store:
                for bought in list_purchases(store):
                    where = f"{bought.status} {bought.supplier_order_id}"
                    print(f"order {bought.order_id}: {bought.sku} {bought.quantity} {where}")
            print(ledger_says(ledger))
        finally:
            desk.terminate()
            desk.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
