"""Exercise Book 1, reference solution: chapter 1's morning brief, made safer to send.

Exercise 1 sends the model only the fields a brief needs. Exercise 2 stamps
the snapshot with the time it was taken. Exercise 3 turns a failed model
call into a one-line notice, and lets every other failure stay loud.
Exercise 4, an open design task, keeps a big shop's snapshot to a limit of
products (`focus_snapshot`, one design among many that earn full marks).

Importing this file defines things and prints nothing.
"""

import json
from collections.abc import Mapping

from sovereign_agent.models import (
    Message,
    ModelClient,
    ModelError,
    ModelResponseError,
    SystemMessage,
    UserMessage,
    model_from_env,
)

SHOP = {
    "name": "Lucy's Ice Cream",
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ],
}

# Exercise 1: the only product fields a brief needs. Anything else Lucy keeps
# in a row (her margin, her notes about a supplier) stays in the shop.
BRIEF_FIELDS = ("sku", "name", "on_hand", "reorder_point")

BRIEF_INSTRUCTIONS = """\
You write the morning brief for Lucy's ice-cream shop.
The user message holds a stock snapshot as JSON. Use only the figures in it.
For each product, the tubs to re-order are max(0, reorder_point - on_hand).
List the products to re-order first, then the ones that need nothing.
The snapshot's taken_at field says when the freezer was counted: start the
brief with that time, and say that your figures are only as fresh as it."""


def replenishment_need(row: dict) -> int:
    """Tubs to order to reach the target; a flavour above target needs 0, never less."""
    return max(0, row["reorder_point"] - row["on_hand"])


def brief_snapshot(shop: dict) -> dict:
    """Exercise 1: a new dict with the shop's name and, per product, only `BRIEF_FIELDS`.

    A list of what to keep (an allowlist), not of what to drop: a column added
    tomorrow stays private until someone decides the model needs it.
    """
    return {
        "name": shop["name"],
        "products": [{field: row[field] for field in BRIEF_FIELDS} for row in shop["products"]],
    }


def snapshot_json(shop: dict, taken_at: str) -> str:
    """Exercise 2: the minimal snapshot plus the time it was taken, as stable JSON text."""
    return json.dumps({**brief_snapshot(shop), "taken_at": taken_at}, indent=2, sort_keys=True)


def build_brief_request(shop: dict, taken_at: str) -> list[Message]:
    """The whole conversation for one brief: the rules, then the stamped snapshot as data."""
    return [
        SystemMessage(content=BRIEF_INSTRUCTIONS),
        UserMessage(
            content="Here is this morning's stock snapshot as JSON:\n\n"
            + snapshot_json(shop, taken_at)
            + "\n\nWrite today's brief."
        ),
    ]


def morning_brief(model: ModelClient, shop: dict, taken_at: str) -> str:
    """Ask `model` for the brief; a reply without text is an error, never an empty brief."""
    reply = model.complete(build_brief_request(shop, taken_at))
    if reply.message.content is None:
        raise ModelResponseError("the model replied without any text")
    return reply.message.content


def brief_or_notice(environ: Mapping[str, str], shop: dict, taken_at: str) -> str:
    """Exercise 3: the brief, or one line saying why there is none.

    Only a `ModelError` becomes a notice: its message is one line and never
    holds a key. A `KeyError` from a broken shop is our own defect, and a
    notice would hide it, so it propagates.
    """
    try:
        return morning_brief(model_from_env(environ), shop, taken_at)
    except ModelError as error:
        return f"Brief unavailable: {error}"


# Exercise 4 (Unit C, an open design task): a brief for a shop of many flavours.


def focus_snapshot(shop: dict, limit: int) -> dict:
    """Exercise 4: at most `limit` products, the largest needs first, and how many were left out.

    A model told about some flavours and not others would take the silence
    for "nothing to order": so the products that need tubs go first, the
    largest need first (`sorted` is stable, so equal needs keep the shop's
    order), and `left_out` says how many the brief does not show. Built from
    `brief_snapshot`, so only its four fields are sent; `sorted` makes a new
    list, so the shop is not changed.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a whole number of products, at least 1, not {limit!r}")
    products = brief_snapshot(shop)["products"]
    chosen = sorted(products, key=lambda row: -replenishment_need(row))[:limit]
    return {"name": shop["name"], "products": chosen, "left_out": len(products) - len(chosen)}
