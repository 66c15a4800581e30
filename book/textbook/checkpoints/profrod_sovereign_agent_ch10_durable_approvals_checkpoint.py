"""Chapter 10 checkpoint: Friday's orders wait for Lucy, then go through; the budget says no.

In a temporary folder: chapter 6's Friday in a store with this chapter's
fixture (operators lucy and sam, 5,000 pence a week). The morning run stops
awaiting approval with two pending approvals; Lucy approves both with the
operator's command, from a process of its own; the next run orders both; and
the cafe's 12 tubs of strawberry (3,300 pence) cannot be approved, since only
2,450 pence are left this week.

Offline: the model is scripted, so the output is the same on every machine.
"""

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sovereign_agent.approvals import (
    GatedRun,
    add_operator,
    build_approved_store_tools,
    list_approvals,
    run_with_approvals,
    set_weekly_limit,
)
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message
from sovereign_agent.models.offline import ScriptedModel, ScriptStep
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import expect_delivery, open_store, reserve, seed_store

SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}


def friday_store(path: Path) -> Path:
    """Chapter 6's Friday, then this chapter's fixture: two operators and a 5,000 pence week."""
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


def run_with(store_path: Path, run_id: str, steps: Sequence[ScriptStep]) -> GatedRun:
    store = open_store(store_path)
    try:
        dispatcher, authority = build_approved_store_tools(store, run_id=run_id)
        return run_with_approvals(
            ScriptedModel(steps), dispatcher, authority, "Order.", max_steps=5, max_tool_calls=5
        )
    finally:
        store.close()


def morning(store_path: Path, run_id: str) -> GatedRun:
    stock = AssistantToolCall(id="s", name="list_stock", arguments_json="{}")
    return run_with(
        store_path,
        run_id,
        [
            AssistantMessage(tool_calls=(stock,)),
            order_what_is_needed,
            AssistantMessage(content="Ordered what the shop needs."),
        ],
    )


def operator(store_path: Path, *arguments: str) -> tuple[int, str]:
    """The operator's command in its own process: its exit status and its one line."""
    done = subprocess.run(
        [sys.executable, "-m", "sovereign_agent.approvals", "--store", str(store_path), *arguments],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).strip()


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        path = friday_store(Path(folder) / "lucy.db")
        print("morning run:", morning(path, "friday-morning").stop_reason)
        store = open_store(path)
        for a in list_approvals(store):
            print(f"{a.status.lower()}: {a.id} {a.tool} {a.arguments} {a.amount_pence:,} pence")
        store.close()
        for number in ("1", "2"):
            status, _ = operator(path, "approve", number, "--as", "lucy")
            print(f"lucy approves {number}: exit {status}")
        print(operator(path, "list")[1].splitlines()[-1])
        print("next run:", morning(path, "friday-late-morning").stop_reason)
        store = open_store(path)
        for sku, quantity, approval in store.execute(
            "SELECT sku, quantity, approval_id FROM orders ORDER BY id"
        ):
            print(
                f"ordered: {sku} {quantity} tub{'' if quantity == 1 else 's'}, approval {approval}"
            )
        store.close()
        strawberry = AssistantToolCall(
            id="o",
            name="place_order",
            arguments_json=json.dumps({"sku": "SKU-STRAWBERRY", "quantity": 12}),
        )
        cafe = run_with(path, "cafe", [AssistantMessage(tool_calls=(strawberry,))])
        print("cafe run:", cafe.stop_reason, cafe.awaiting)
        status, line = operator(path, "approve", "3", "--as", "lucy")
        print(f"lucy approves 3: exit {status}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
