"""Chapter 1, as a reader saves it: the shop, the brief request, and the brief.

Importing this file prints nothing and calls no model. Use it with any model
client, for example:

    from sovereign_agent.models import model_from_env
    print(morning_brief(model_from_env(), SHOP))
"""

import json

from sovereign_agent.models import (
    Message,
    ModelClient,
    ModelResponseError,
    SystemMessage,
    UserMessage,
)

SHOP = {
    "name": "Lucy's Ice Cream",
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ],
}

BRIEF_INSTRUCTIONS = """\
You write the morning brief for Lucy's ice-cream shop.
The user message holds a stock snapshot as JSON. Use only the figures in it.
For each product, the tubs to re-order are max(0, reorder_point - on_hand).
List the products to re-order first, then the ones that need nothing.
Say that your figures are only as fresh as the snapshot."""


def replenishment_need(row: dict) -> int:
    """Tubs to order to reach the target; a flavour above target needs 0, never less."""
    return max(0, row["reorder_point"] - row["on_hand"])


def snapshot_json(shop: dict) -> str:
    """The shop's stock as JSON text: exact numbers, and a stable order for every run."""
    return json.dumps(shop, indent=2, sort_keys=True)


def build_brief_request(shop: dict) -> list[Message]:
    """The whole conversation for one brief: the rules, then the snapshot as data."""
    return [
        SystemMessage(content=BRIEF_INSTRUCTIONS),
        UserMessage(
            content="Here is this morning's stock snapshot as JSON:\n\n"
            + snapshot_json(shop)
            + "\n\nWrite today's brief."
        ),
    ]


def morning_brief(model: ModelClient, shop: dict) -> str:
    """Ask `model` for the brief; a reply without text is an error, never an empty brief."""
    reply = model.complete(build_brief_request(shop))
    if reply.message.content is None:
        raise ModelResponseError("the model replied without any text")
    return reply.message.content
