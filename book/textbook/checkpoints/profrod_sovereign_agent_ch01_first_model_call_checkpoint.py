"""Chapter 1 checkpoint: Lucy's shop snapshot and her morning brief.

Later chapters load `SHOP` with `runpy.run_path(...)["SHOP"]`, so importing this
file defines data and nothing else; the model call runs only from `main()`.

Offline by default. Set SOVEREIGN_MODEL=openai:<model> or anthropic:<model>
(with the matching *_API_KEY and, for a local server, *_BASE_URL) to send the
same request to a real model.
"""

import json
import sys

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


def main() -> None:
    # Every checkpoint of the book fails the same two ways, each with one line
    # on standard error and no traceback: a prerequisite missing before
    # anything ran (here, a provider named but not configured) exits with 2,
    # and a run that started and failed (the provider's call) exits with 1.
    try:
        model = model_from_env()
    except ModelError as error:
        print(f"cannot start: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        brief = morning_brief(model, SHOP)
    except ModelError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    print(f"Morning brief from {model.label}")
    print()
    print(brief)


if __name__ == "__main__":
    main()
