"""The operator's actions and the model's tools over a store: each change whole, or not at all.

Expected numbers are written out here (6 tubs, 1,500 pence, 9 on hand ...),
never computed by the code under test.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from shop_store import PRICES, SHOP, contents, seeded_store, write_lock_held

from sovereign_agent.shop import build_tools
from sovereign_agent.store import (
    build_store_tools,
    open_store,
    read_drafts,
    read_product,
    read_products,
    receive_delivery,
    save_draft,
    seed_store,
    set_price,
    transaction,
)
from sovereign_agent.tools import ToolCall


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return seeded_store(tmp_path / "lucy.db")


@pytest.fixture
def connection(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(open_store(path)) as connection:
        yield connection


def invoke(tools: Any, name: str, **arguments: Any) -> dict[str, Any]:
    return tools.invoke(ToolCall(id="call-1", name=name, arguments=arguments))


def drafts(connection: sqlite3.Connection) -> list[tuple[str, int, int, str]]:
    return [
        (d["sku"], d["quantity"], d["total_pence"], d["status"]) for d in read_drafts(connection)
    ]


# --- seeding -----------------------------------------------------------------


def test_seeding_copies_the_snapshot_and_the_prices(connection: sqlite3.Connection) -> None:
    # Chapter 1's rows promise nothing and expect nothing: 0 of each.
    counts = {"reserved": 0, "incoming": 0}
    assert read_products(connection) == [
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6, **counts},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5, **counts},
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8, **counts},
    ]
    prices = {row[0]: row[1] for row in connection.execute("SELECT * FROM prices")}
    assert prices == {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}


def test_seeding_a_store_that_holds_products_is_refused_and_changes_nothing(
    path: Path, connection: sqlite3.Connection
) -> None:
    receive_delivery(connection, "SKU-VANILLA", 7)
    before = contents(path)
    with pytest.raises(ValueError, match="already holds products"):
        seed_store(connection, SHOP, PRICES)
    assert contents(path) == before


@pytest.mark.parametrize(
    ("products", "prices", "refusal"),
    [
        (
            [
                *SHOP["products"],
                {"sku": "SKU-MANGO", "name": "Mango", "on_hand": -1, "reorder_point": 5},
            ],
            PRICES,
            "on_hand_not_negative",
        ),
        (SHOP["products"], {**PRICES, "SKU-PISTACHIO": 400}, "FOREIGN KEY"),
        (SHOP["products"], {**PRICES, "SKU-STRAWBERRY": 0}, "price_positive"),
        ([*SHOP["products"], SHOP["products"][0]], PRICES, "UNIQUE"),
    ],
    ids=["a negative stock", "a price for no product", "a free tub", "a sku twice"],
)
def test_a_snapshot_with_one_bad_row_seeds_nothing_at_all(
    tmp_path: Path, products: list[dict[str, Any]], prices: dict[str, int], refusal: str
) -> None:
    with closing(open_store(tmp_path / "lucy.db")) as connection:
        with pytest.raises(sqlite3.IntegrityError, match=refusal):
            seed_store(connection, {"products": products}, prices)
        assert read_products(connection) == []
        assert connection.execute("SELECT count(*) FROM prices").fetchone()[0] == 0


def test_a_product_without_a_price_is_stocked_but_cannot_be_drafted(tmp_path: Path) -> None:
    with closing(open_store(tmp_path / "lucy.db")) as connection:
        seed_store(connection, SHOP, {"SKU-VANILLA": 250})
        with pytest.raises(KeyError):
            save_draft(connection, "SKU-STRAWBERRY", 4)
        assert read_drafts(connection) == []


# --- deliveries ----------------------------------------------------------------


def test_a_delivery_is_recorded_and_put_in_the_freezer(connection: sqlite3.Connection) -> None:
    row = receive_delivery(connection, "SKU-STRAWBERRY", 3)
    assert row == {
        "sku": "SKU-STRAWBERRY",
        "name": "Strawberry",
        "on_hand": 4,
        "reorder_point": 5,
        "reserved": 0,
        "incoming": 0,
        "needed": 1,
    }
    deliveries = connection.execute("SELECT sku, tubs FROM deliveries").fetchall()
    assert [tuple(row) for row in deliveries] == [("SKU-STRAWBERRY", 3)]


def test_a_delivery_of_seven_vanilla_supersedes_the_open_draft_in_the_same_transaction(
    connection: sqlite3.Connection,
) -> None:
    save_draft(connection, "SKU-VANILLA", 6)
    save_draft(connection, "SKU-STRAWBERRY", 4)
    statements: list[str] = []
    connection.set_trace_callback(statements.append)
    row = receive_delivery(connection, "SKU-VANILLA", 7)
    connection.set_trace_callback(None)
    assert (row["on_hand"], row["needed"]) == (9, 0)
    assert drafts(connection) == [
        ("SKU-VANILLA", 6, 1500, "SUPERSEDED"),
        ("SKU-STRAWBERRY", 4, 1100, "DRAFT"),
    ]
    # One BEGIN and one COMMIT around the delivery, the stock and the draft.
    verbs = [statement.split()[0] for statement in statements]
    assert verbs[0] == "BEGIN" and verbs[-1] == "COMMIT"
    assert verbs.count("BEGIN") == 1 and verbs.count("COMMIT") == 1
    assert [v for v in verbs if v in ("INSERT", "UPDATE")] == ["INSERT", "UPDATE", "UPDATE"]


def test_a_delivery_that_leaves_a_smaller_need_supersedes_the_draft_for_the_old_need(
    connection: sqlite3.Connection,
) -> None:
    save_draft(connection, "SKU-VANILLA", 6)
    assert receive_delivery(connection, "SKU-VANILLA", 2)["needed"] == 4
    assert drafts(connection) == [("SKU-VANILLA", 6, 1500, "SUPERSEDED")]
    assert save_draft(connection, "SKU-VANILLA", 4)["total_pence"] == 1000
    assert drafts(connection)[-1] == ("SKU-VANILLA", 4, 1000, "DRAFT")


def test_a_delivery_of_another_product_leaves_a_draft_open(connection: sqlite3.Connection) -> None:
    save_draft(connection, "SKU-VANILLA", 6)
    receive_delivery(connection, "SKU-CHOCOLATE", 5)
    assert drafts(connection) == [("SKU-VANILLA", 6, 1500, "DRAFT")]


# --- prices ------------------------------------------------------------------------


def test_a_new_price_supersedes_the_open_draft_at_the_old_price(
    connection: sqlite3.Connection,
) -> None:
    save_draft(connection, "SKU-STRAWBERRY", 4)
    set_price(connection, "SKU-STRAWBERRY", 290)
    assert save_draft(connection, "SKU-STRAWBERRY", 4)["total_pence"] == 1160
    assert drafts(connection) == [
        ("SKU-STRAWBERRY", 4, 1100, "SUPERSEDED"),
        ("SKU-STRAWBERRY", 4, 1160, "DRAFT"),
    ]


def test_setting_the_same_price_again_keeps_the_draft_open(connection: sqlite3.Connection) -> None:
    save_draft(connection, "SKU-STRAWBERRY", 4)
    set_price(connection, "SKU-STRAWBERRY", 275)
    assert drafts(connection) == [("SKU-STRAWBERRY", 4, 1100, "DRAFT")]


def test_a_price_can_be_given_to_a_product_that_had_none(tmp_path: Path) -> None:
    with closing(open_store(tmp_path / "lucy.db")) as connection:
        seed_store(connection, SHOP, {"SKU-VANILLA": 250})
        set_price(connection, "SKU-STRAWBERRY", 275)
        assert save_draft(connection, "SKU-STRAWBERRY", 4)["total_pence"] == 1100


IMPOSSIBLE_ACTIONS: dict[
    str, tuple[Callable[[sqlite3.Connection], object], type[Exception], str]
] = {
    "a delivery of an unknown product": (
        lambda c: receive_delivery(c, "SKU-PISTACHIO", 3),
        sqlite3.IntegrityError,
        "FOREIGN KEY constraint failed",
    ),
    "an empty delivery": (
        lambda c: receive_delivery(c, "SKU-VANILLA", 0),
        ValueError,
        "cannot receive 0 tubs: an action moves at least one tub",
    ),
    "a negative delivery": (
        lambda c: receive_delivery(c, "SKU-VANILLA", -3),
        ValueError,
        "cannot receive -3 tubs: an action moves at least one tub",
    ),
    "a delivery of True tubs": (
        lambda c: receive_delivery(c, "SKU-VANILLA", True),
        TypeError,
        "tubs must be an int",
    ),
    "a delivery of 7.0 tubs": (
        lambda c: receive_delivery(c, "SKU-VANILLA", 7.0),  # type: ignore[arg-type]
        TypeError,
        "tubs must be an int",
    ),
    "a free tub": (
        lambda c: set_price(c, "SKU-VANILLA", 0),
        sqlite3.IntegrityError,
        "price_positive",
    ),
    "a price for an unknown product": (
        lambda c: set_price(c, "SKU-PISTACHIO", 400),
        sqlite3.IntegrityError,
        "FOREIGN KEY constraint failed",
    ),
    "a price in pounds": (
        lambda c: set_price(c, "SKU-VANILLA", 2.5),  # type: ignore[arg-type]
        TypeError,
        "unit_cost_pence must be an int",
    ),
    "a price as text": (
        lambda c: set_price(c, "SKU-VANILLA", "250"),  # type: ignore[arg-type]
        TypeError,
        "unit_cost_pence must be an int",
    ),
}


@pytest.mark.parametrize("action", sorted(IMPOSSIBLE_ACTIONS))
def test_an_impossible_operator_action_is_refused_and_changes_nothing(
    path: Path, connection: sqlite3.Connection, action: str
) -> None:
    act, error, message = IMPOSSIBLE_ACTIONS[action]
    save_draft(connection, "SKU-VANILLA", 6)
    before = contents(path)
    with pytest.raises(error, match=message):
        act(connection)
    assert contents(path) == before


# --- drafts ----------------------------------------------------------------------------


def test_asking_again_returns_the_open_draft_and_saves_no_second_one(
    connection: sqlite3.Connection,
) -> None:
    first = save_draft(connection, "SKU-VANILLA", 6)
    second = save_draft(connection, "SKU-VANILLA", 6)
    assert (
        first
        == second
        == {
            "sku": "SKU-VANILLA",
            "supplier": "lucy-local",
            "currency": "GBP",
            "unit_cost_pence": 250,
            "quantity": 6,
            "total_pence": 1500,
            "status": "DRAFT",
        }
    )
    assert [tuple(row) for row in connection.execute("SELECT id, status FROM drafts")] == [
        (1, "DRAFT")
    ]


@pytest.mark.parametrize(
    ("sku", "quantity", "error"),
    [("SKU-VANILLA", 8, ValueError), ("SKU-CHOCOLATE", 1, ValueError), ("SKU-NOPE", 1, KeyError)],
)
def test_a_draft_the_shop_would_not_write_saves_nothing(
    path: Path, connection: sqlite3.Connection, sku: str, quantity: int, error: type[Exception]
) -> None:
    before = contents(path)
    with pytest.raises(error):
        save_draft(connection, sku, quantity)
    assert contents(path) == before


def test_a_draft_made_stale_behind_the_stores_back_is_superseded_when_asked_again(
    connection: sqlite3.Connection,
) -> None:
    save_draft(connection, "SKU-VANILLA", 6)
    # A raw write that bypasses the operator actions: the need is now 3.
    connection.execute("UPDATE products SET on_hand = 5 WHERE sku = 'SKU-VANILLA'")
    assert save_draft(connection, "SKU-VANILLA", 3)["quantity"] == 3
    assert drafts(connection) == [
        ("SKU-VANILLA", 6, 1500, "SUPERSEDED"),
        ("SKU-VANILLA", 3, 750, "DRAFT"),
    ]


# --- transactions ------------------------------------------------------------------------


def test_an_exception_inside_a_transaction_rolls_every_statement_back(
    path: Path, connection: sqlite3.Connection
) -> None:
    before = contents(path)
    with pytest.raises(RuntimeError), transaction(connection):
        connection.execute("UPDATE products SET on_hand = on_hand + 7 WHERE sku = 'SKU-VANILLA'")
        connection.execute("INSERT INTO deliveries (sku, tubs) VALUES ('SKU-VANILLA', 7)")
        raise RuntimeError("the van drove off")
    assert not connection.in_transaction
    assert contents(path) == before


def test_a_keyboard_interrupt_inside_a_transaction_rolls_it_back(
    path: Path, connection: sqlite3.Connection
) -> None:
    before = contents(path)
    with pytest.raises(KeyboardInterrupt), transaction(connection):
        connection.execute("UPDATE products SET on_hand = 0")
        raise KeyboardInterrupt
    assert contents(path) == before


def test_a_transaction_inside_a_transaction_is_a_loud_defect(
    path: Path, connection: sqlite3.Connection
) -> None:
    before = contents(path)
    with pytest.raises(sqlite3.OperationalError), transaction(connection):
        connection.execute("UPDATE products SET on_hand = 0")
        with transaction(connection):
            pass
    assert contents(path) == before


def test_a_committed_transaction_is_seen_by_a_fresh_connection(
    path: Path, connection: sqlite3.Connection
) -> None:
    with transaction(connection):
        connection.execute("UPDATE products SET on_hand = 3 WHERE sku = 'SKU-VANILLA'")
    with closing(open_store(path)) as other:
        assert read_product(other, "SKU-VANILLA")["on_hand"] == 3


# --- the model's tools -----------------------------------------------------------------------


def test_the_model_is_offered_exactly_chapter_2s_schemas(connection: sqlite3.Connection) -> None:
    assert build_store_tools(connection).schemas() == build_tools(SHOP).schemas()


def test_the_three_tools_answer_as_in_chapter_2(connection: sqlite3.Connection) -> None:
    tools = build_store_tools(connection)
    stock = invoke(tools, "list_stock")["value"]
    assert [(row["sku"], row["on_hand"], row["needed"]) for row in stock] == [
        ("SKU-CHOCOLATE", 7, 0),
        ("SKU-STRAWBERRY", 1, 4),
        ("SKU-VANILLA", 2, 6),
    ]
    assert invoke(tools, "supplier", sku="SKU-STRAWBERRY") == {
        "ok": True,
        "value": {
            "sku": "SKU-STRAWBERRY",
            "supplier": "lucy-local",
            "currency": "GBP",
            "unit_cost_pence": 275,
        },
    }
    draft = invoke(tools, "draft_order", sku="SKU-VANILLA", quantity=6)
    assert json.dumps(draft, sort_keys=True) == (
        '{"ok": true, "value": {"currency": "GBP", "quantity": 6, "sku": "SKU-VANILLA",'
        ' "status": "DRAFT", "supplier": "lucy-local", "total_pence": 1500,'
        ' "unit_cost_pence": 250}}'
    )


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("draft_order", {"sku": "SKU-VANILLA", "quantity": True}, "invalid_arguments"),
        (
            "draft_order",
            {"sku": "SKU-VANILLA", "quantity": 6, "approved": True},
            "invalid_arguments",
        ),
        ("draft_order", {"sku": "SKU-VANILLA", "quantity": 8}, "tool_failed"),
        ("supplier", {"sku": "SKU-PISTACHIO"}, "tool_failed"),
        ("run_shell", {"command": "rm lucy.db"}, "tool_not_allowed"),
        ("receive_delivery", {"sku": "SKU-VANILLA", "tubs": 7}, "tool_not_allowed"),
    ],
)
def test_refused_requests_change_nothing_in_the_store(
    path: Path, connection: sqlite3.Connection, name: str, arguments: dict[str, Any], error: str
) -> None:
    before = contents(path)
    assert invoke(build_store_tools(connection), name, **arguments) == {"ok": False, "error": error}
    assert contents(path) == before


def test_no_tool_changes_the_stock(path: Path, connection: sqlite3.Connection) -> None:
    tools = build_store_tools(connection)
    before = contents(path)
    for sku, quantity in [("SKU-VANILLA", 6), ("SKU-STRAWBERRY", 4), ("SKU-VANILLA", 6)]:
        assert invoke(tools, "draft_order", sku=sku, quantity=quantity)["ok"] is True
        invoke(tools, "list_stock")
    after = contents(path)
    assert after["products"] == before["products"]
    assert after["deliveries"] == before["deliveries"] == []
    assert len(after["drafts"]) == 2


def test_a_read_only_dispatcher_over_the_store_cannot_draft(connection: sqlite3.Connection) -> None:
    reader = build_store_tools(connection, allowed=("list_stock", "supplier"))
    assert invoke(reader, "draft_order", sku="SKU-VANILLA", quantity=6) == {
        "ok": False,
        "error": "tool_not_allowed",
    }
    assert read_drafts(connection) == []


def test_a_planted_secret_in_a_request_never_reaches_the_observation(
    connection: sqlite3.Connection,
) -> None:
    tools = build_store_tools(connection)
    secret = "secret-token-5c1d"
    for name, arguments in [
        ("supplier", {"sku": secret}),
        ("draft_order", {"sku": secret, "quantity": 1}),
    ]:
        assert secret not in json.dumps(invoke(tools, name, **arguments))


def test_a_draft_refused_for_a_busy_store_is_a_tool_failure_and_saves_nothing(path: Path) -> None:
    with write_lock_held(path), closing(open_store(path, timeout=0.2)) as connection:
        tools = build_store_tools(connection)
        assert invoke(tools, "list_stock")["ok"] is True
        assert invoke(tools, "draft_order", sku="SKU-VANILLA", quantity=6) == {
            "ok": False,
            "error": "tool_failed",
        }
    with closing(open_store(path)) as connection:
        assert read_drafts(connection) == []
