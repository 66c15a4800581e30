"""Exercise 1 (Unit A): the model is sent only the fields a brief needs.

The expected dicts are written out here, never computed by the code under test.
"""

from __future__ import annotations

import copy

from morning_brief import SHOP, brief_snapshot, build_brief_request, snapshot_json


def shop_with_private_fields() -> dict:
    shop = copy.deepcopy(SHOP)
    shop["products"][0]["margin_pence"] = 130
    shop["products"][0]["note"] = "secret-token-ask-Sam-for-a-discount"
    shop["owner_phone"] = "secret-token-07700900123"
    return shop


def test_the_snapshot_keeps_the_four_brief_fields_and_the_name() -> None:
    assert brief_snapshot(shop_with_private_fields()) == {
        "name": "Lucy's Ice Cream",
        "products": [
            {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
            {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
            {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
        ],
    }


def test_the_callers_shop_keeps_its_private_fields() -> None:
    shop = shop_with_private_fields()
    brief_snapshot(shop)
    assert shop["products"][0]["margin_pence"] == 130
    assert shop["owner_phone"] == "secret-token-07700900123"


def test_nothing_private_reaches_the_text_or_the_request() -> None:
    shop = shop_with_private_fields()
    sent = snapshot_json(shop, "2026-06-01T07:30") + "".join(
        message.content for message in build_brief_request(shop, "2026-06-01T07:30")
    )
    for private in ("margin_pence", "130", "note", "owner_phone", "secret-token"):
        assert private not in sent
