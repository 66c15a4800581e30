"""Properties over random shops and random requests: the store answers exactly as the dict did.

For any shop and any sequence of requests a model could send (well-formed or
not, for skus that exist or not, for the right quantity or not), chapter 2's
in-memory dispatcher and the store-backed one give identical observations,
and no request changes the stock.
"""

from __future__ import annotations

import tempfile
from contextlib import closing
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from scratch import memory_folder
from shop_store import contents
from strength import examples

from sovereign_agent.shop import build_tools, replenishment_need
from sovereign_agent.store import build_store_tools, open_store, seed_store
from sovereign_agent.tools import ToolCall

SKU = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-", min_size=1, max_size=12)
# Names are the operator's data: any text SQLite can hold as UTF-8.
NAME = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=20)


@st.composite
def shops(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, int]]:
    skus = draw(st.lists(SKU, min_size=1, max_size=5, unique=True))
    rows = [
        {
            "sku": sku,
            "name": draw(NAME),
            "on_hand": draw(st.integers(0, 40)),
            "reorder_point": draw(st.integers(0, 40)),
            # Chapter 6's counts: every store row has them, so the dict's rows do too.
            "reserved": draw(st.integers(0, 40)),
            "incoming": draw(st.integers(0, 40)),
        }
        for sku in skus
    ]
    # The store refuses a price for a product it does not stock (a foreign
    # key), so prices cover some or all of the products, never others.
    priced = draw(st.one_of(st.just(skus), st.lists(st.sampled_from(skus), unique=True)))
    prices = {sku: draw(st.integers(1, 5_000)) for sku in priced}
    return {"products": rows}, prices


# A sku a model might send: one the shop stocks (by index), or any text at all.
REQUESTED_SKU = st.one_of(st.integers(0, 4), st.text(max_size=110))
# A quantity: the current need plus a small offset, or any JSON-ish value.
QUANTITY = st.one_of(
    st.tuples(st.just("need"), st.integers(-1, 1)),
    st.integers(-2, 1_002),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.none(),
)
# The request a well-behaved model sends most: a draft for exactly the need.
DRAFT_THE_NEED = st.tuples(st.just("draft_order"), st.integers(0, 4), st.just(("need", 0)))
REQUEST = st.one_of(
    DRAFT_THE_NEED,
    DRAFT_THE_NEED,
    st.tuples(st.just("list_stock"), st.just(None), st.just(None)),
    st.tuples(st.just("supplier"), REQUESTED_SKU, st.just(None)),
    st.tuples(st.just("draft_order"), REQUESTED_SKU, QUANTITY),
    st.tuples(
        st.sampled_from(["run_shell", "receive_delivery", "set_price"]), REQUESTED_SKU, QUANTITY
    ),
)
EXTRA = st.one_of(st.none(), st.just({"approved": True}), st.just({"sku": "SKU-X"}))


def arguments_for(
    request: tuple[str, Any, Any], extra: dict[str, Any] | None, shop: dict[str, Any]
) -> dict[str, Any]:
    name, sku, quantity = request
    rows = shop["products"]
    arguments: dict[str, Any] = {}
    if sku is not None:
        arguments["sku"] = rows[sku % len(rows)]["sku"] if isinstance(sku, int) else sku
    if isinstance(quantity, tuple):
        row = next((r for r in rows if r["sku"] == arguments["sku"]), None)
        need = replenishment_need(row) if row is not None else 1
        arguments["quantity"] = need + quantity[1]
    elif quantity is not None or name == "draft_order":
        arguments["quantity"] = quantity
    if name == "list_stock":
        arguments = {}
    return arguments | (extra or {})


@settings(max_examples=examples(150), deadline=None)
@given(shops(), st.lists(st.tuples(REQUEST, EXTRA), max_size=12))
def test_the_store_and_the_dict_answer_every_request_identically(
    shop_and_prices: tuple[dict[str, Any], dict[str, int]],
    requests: list[tuple[tuple[str, Any, Any], dict[str, Any] | None]],
) -> None:
    shop, prices = shop_and_prices
    in_memory = build_tools(shop, prices)
    with tempfile.TemporaryDirectory(dir=memory_folder()) as folder:
        path = Path(folder) / "lucy.db"
        with closing(open_store(path)) as connection:
            seed_store(connection, shop, prices)
            before = contents(path)
            stored = build_store_tools(connection)
            for number, (request, extra) in enumerate(requests):
                call = ToolCall(
                    id=f"call-{number}",
                    name=request[0],
                    arguments=arguments_for(request, extra, shop),
                )
                assert stored.invoke(call) == in_memory.invoke(call), call
        after = contents(path)
    assert after["products"] == before["products"]
    assert after["prices"] == before["prices"]
    assert after["deliveries"] == []


@settings(max_examples=examples(60), deadline=None)
@given(shops())
def test_drafting_every_need_twice_saves_one_open_draft_per_priced_product_in_need(
    shop_and_prices: tuple[dict[str, Any], dict[str, int]],
) -> None:
    shop, prices = shop_and_prices
    with (
        tempfile.TemporaryDirectory(dir=memory_folder()) as folder,
        closing(open_store(Path(folder) / "lucy.db")) as connection,
    ):
        seed_store(connection, shop, prices)
        tools = build_store_tools(connection)
        for _ in range(2):
            for row in shop["products"]:
                arguments = {"sku": row["sku"], "quantity": replenishment_need(row)}
                tools.invoke(ToolCall(id="call-1", name="draft_order", arguments=arguments))
        saved = connection.execute("SELECT sku, quantity, status FROM drafts").fetchall()
    shortfalls = {
        row["sku"]: row["reorder_point"] + row["reserved"] - row["on_hand"] - row["incoming"]
        for row in shop["products"]
    }
    expected = sorted(
        (sku, shortfall, "DRAFT")
        for sku, shortfall in shortfalls.items()
        if shortfall > 0 and sku in prices
    )
    assert sorted(tuple(row) for row in saved) == expected
