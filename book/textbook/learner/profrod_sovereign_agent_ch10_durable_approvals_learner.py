"""Chapter 10 learner file: Friday's store with this chapter's fixture, and the morning's model.

The runtime for approvals is the book's package, `sovereign_agent.approvals`;
these are the definitions the chapter prints. Importing this file prints
nothing and touches no file.
"""

import json
from collections.abc import Sequence
from pathlib import Path

from sovereign_agent.approvals import add_operator, set_weekly_limit
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message
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
