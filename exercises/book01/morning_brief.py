"""Exercise Book 1 starter: chapter 1's morning brief, ready for three changes.

This is the file you saved in chapter 1, with two changes to the signatures
the grader calls: `snapshot_json`, `build_brief_request` and `morning_brief`
take the time the snapshot was taken (`taken_at`, text such as
"2026-06-01T07:30"), and there are two new functions, `brief_snapshot` and
`brief_or_notice`, and, for Unit C, `focus_snapshot`. It runs, and it does
NOT do the exercises yet: look for the lines marked `Exercise 1`,
`Exercise 2`, `Exercise 3` and `Exercise 4`.

Check your progress at any time (from the repository root):

    uv run python scripts/grade_exercises.py --book 1 exercises/book01

Importing this file defines things and prints nothing.
"""

import json
from collections.abc import Mapping

from sovereign_agent.models import (
    Message,
    ModelClient,
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

BRIEF_INSTRUCTIONS = """\
You write the morning brief for Lucy's ice-cream shop.
The user message holds a stock snapshot as JSON. Use only the figures in it.
For each product, the tubs to re-order are max(0, reorder_point - on_hand).
List the products to re-order first, then the ones that need nothing.
Say that your figures are only as fresh as the snapshot."""
# Exercise 2: tell the model what `taken_at` means, and to start the brief with it.


def replenishment_need(row: dict) -> int:
    """Tubs to order to reach the target; a flavour above target needs 0, never less."""
    return max(0, row["reorder_point"] - row["on_hand"])


def brief_snapshot(shop: dict) -> dict:
    """The part of the shop the model is sent."""
    # Exercise 1: return a NEW dict holding the shop's "name" and, for each
    # product, only "sku", "name", "on_hand" and "reorder_point". Any other
    # field (Lucy's margin, her notes) must never reach the model. Do not
    # change `shop` itself.
    return shop


def snapshot_json(shop: dict, taken_at: str) -> str:
    """The snapshot as JSON text: exact numbers, and a stable order for every run."""
    # Exercise 2: add a top-level "taken_at" key holding `taken_at`.
    return json.dumps(brief_snapshot(shop), indent=2, sort_keys=True)


def build_brief_request(shop: dict, taken_at: str) -> list[Message]:
    """The whole conversation for one brief: the rules, then the snapshot as data."""
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
    """The brief from the model `environ` configures, or one line saying why there is none."""
    # Exercise 3: when building the model or calling it raises a ModelError,
    # return "Brief unavailable: " followed by the error's message, instead
    # of letting it crash Lucy's morning. Catch ModelError only: any other
    # exception is a bug in the program and must still be raised.
    return morning_brief(model_from_env(environ), shop, taken_at)


# Exercise 4 (Unit C, an open design task): a brief for a shop of many flavours.


def focus_snapshot(shop: dict, limit: int) -> dict:
    """Exercise 4: a snapshot of at most `limit` products, chosen as Unit C's list says.

    The design is yours (Unit C). For now this is the whole shop, as
    `brief_snapshot` sends it.
    """
    return brief_snapshot(shop)
