"""Chapter 6 over real store files: a need that counts promised tubs and tubs on the van.

Expected numbers are written out here (needs 9, 1 and 0; 2,250 and 300 pence,
2,550 in all), never computed by the code under test.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from shop_store import PRICES, SHOP, contents, python_child, seeded_store, start_together

from sovereign_agent.shop import build_tools, replenishment_need
from sovereign_agent.store import (
    build_store_tools,
    cancel_reservation,
    collect,
    expect_delivery,
    open_store,
    read_drafts,
    read_products,
    receive_delivery,
    reserve,
    save_draft,
    seed_store,
)
from sovereign_agent.tools import ToolCall

Action = Callable[[sqlite3.Connection], object]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return seeded_store(tmp_path / "lucy.db")


@pytest.fixture
def connection(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(open_store(path)) as connection:
        yield connection


@pytest.fixture
def friday(connection: sqlite3.Connection) -> sqlite3.Connection:
    """Chapter 6's fixture, recorded the way Lucy records it: two promises and a van."""
    reserve(connection, "SKU-VANILLA", 3)
    reserve(connection, "SKU-CHOCOLATE", 2)
    expect_delivery(connection, "SKU-STRAWBERRY", 4)
    return connection


def counts(connection: sqlite3.Connection) -> dict[str, tuple[int, int, int, int]]:
    """(on_hand, reserved, incoming, need) per sku."""
    return {
        row["sku"]: (row["on_hand"], row["reserved"], row["incoming"], replenishment_need(row))
        for row in read_products(connection)
    }


def drafts(connection: sqlite3.Connection) -> list[tuple[str, int, int, str]]:
    return [
        (d["sku"], d["quantity"], d["total_pence"], d["status"]) for d in read_drafts(connection)
    ]


def invoke(tools: Any, name: str, **arguments: Any) -> dict[str, Any]:
    return tools.invoke(ToolCall(id="call-1", name=name, arguments=arguments))


# --- the need ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "need"),
    [
        ({"on_hand": 2, "reorder_point": 8, "reserved": 3, "incoming": 0}, 9),
        ({"on_hand": 7, "reorder_point": 6, "reserved": 2, "incoming": 0}, 1),
        ({"on_hand": 1, "reorder_point": 5, "reserved": 0, "incoming": 4}, 0),
        # More than enough on its way: never a negative need.
        ({"on_hand": 1, "reorder_point": 5, "reserved": 0, "incoming": 9}, 0),
        # Chapter 1's rows carry neither count, and keep chapter 2's needs.
        ({"on_hand": 2, "reorder_point": 8}, 6),
        ({"on_hand": 7, "reorder_point": 6}, 0),
        ({"on_hand": 1, "reorder_point": 5}, 4),
        ({"on_hand": 2, "reorder_point": 8, "reserved": 3}, 9),
        ({"on_hand": 1, "reorder_point": 5, "incoming": 4}, 0),
    ],
)
def test_the_need_counts_promised_tubs_and_tubs_on_the_van(row: dict[str, int], need: int) -> None:
    assert replenishment_need(row) == need


def test_fridays_actions_make_the_needs_9_1_and_0(friday: sqlite3.Connection) -> None:
    assert counts(friday) == {
        "SKU-CHOCOLATE": (7, 2, 0, 1),
        "SKU-STRAWBERRY": (1, 0, 4, 0),
        "SKU-VANILLA": (2, 3, 0, 9),
    }


def test_the_morning_plan_drafts_9_vanilla_and_1_chocolate_2550_pence(
    friday: sqlite3.Connection,
) -> None:
    tools = build_store_tools(friday)
    stock = invoke(tools, "list_stock")["value"]
    assert [(row["sku"], row["needed"]) for row in stock] == [
        ("SKU-CHOCOLATE", 1),
        ("SKU-STRAWBERRY", 0),
        ("SKU-VANILLA", 9),
    ]
    for row in stock:
        if row["needed"] > 0:
            assert invoke(tools, "draft_order", sku=row["sku"], quantity=row["needed"])["ok"]
    assert drafts(friday) == [
        ("SKU-CHOCOLATE", 1, 300, "DRAFT"),
        ("SKU-VANILLA", 9, 2250, "DRAFT"),
    ]
    assert sum(total for _, _, total, _ in drafts(friday)) == 2550


def test_chapter_5s_drafts_for_the_freezer_alone_are_refused(friday: sqlite3.Connection) -> None:
    tools = build_store_tools(friday)
    for sku, quantity in [("SKU-VANILLA", 6), ("SKU-STRAWBERRY", 4)]:
        refused = invoke(tools, "draft_order", sku=sku, quantity=quantity)
        assert refused == {"ok": False, "error": "tool_failed"}
    assert read_drafts(friday) == []


def test_the_model_sees_the_new_counts_but_not_a_new_tool(friday: sqlite3.Connection) -> None:
    tools = build_store_tools(friday)
    vanilla = invoke(tools, "list_stock")["value"][-1]
    assert vanilla == {
        "sku": "SKU-VANILLA",
        "name": "Vanilla",
        "on_hand": 2,
        "reorder_point": 8,
        "reserved": 3,
        "incoming": 0,
        "needed": 9,
    }
    assert tools.schemas() == build_tools(SHOP).schemas()
    for name in ("reserve", "collect", "expect_delivery", "receive_delivery"):
        answer = invoke(tools, name, sku="SKU-VANILLA", tubs=1)
        assert answer == {"ok": False, "error": "tool_not_allowed"}


def test_the_in_memory_tools_draft_the_same_need_from_rows_with_the_counts() -> None:
    rows = [
        {**row, "reserved": reserved, "incoming": incoming}
        for row, (reserved, incoming) in zip(
            SHOP["products"], [(3, 0), (2, 0), (0, 4)], strict=True
        )
    ]
    tools = build_tools({"products": rows}, PRICES)
    draft = invoke(tools, "draft_order", sku="SKU-VANILLA", quantity=9)
    assert (draft["value"]["quantity"], draft["value"]["total_pence"]) == (9, 2250)
    assert invoke(tools, "draft_order", sku="SKU-VANILLA", quantity=6)["ok"] is False


# --- what each action does -----------------------------------------------------

# For 2 tubs, on a product whose need stays above zero (on hand 10, target 30,
# 5 reserved, 5 incoming: need 20): the change in (on_hand, reserved, incoming, need).
EFFECTS: dict[str, tuple[Callable[[sqlite3.Connection], dict[str, Any]], tuple[int, ...]]] = {
    "reserve": (lambda c: reserve(c, "SKU-MANGO", 2), (0, 2, 0, 2)),
    "collect": (lambda c: collect(c, "SKU-MANGO", 2), (-2, -2, 0, 0)),
    "cancel_reservation": (lambda c: cancel_reservation(c, "SKU-MANGO", 2), (0, -2, 0, -2)),
    "expect_delivery": (lambda c: expect_delivery(c, "SKU-MANGO", 2), (0, 0, 2, -2)),
    "receive, expected": (
        lambda c: receive_delivery(c, "SKU-MANGO", 2, expected=True),
        (2, 0, -2, 0),
    ),
    "receive, unannounced": (lambda c: receive_delivery(c, "SKU-MANGO", 2), (2, 0, 0, -2)),
}


@pytest.fixture
def mango(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    row = {
        "sku": "SKU-MANGO",
        "name": "Mango",
        "on_hand": 10,
        "reorder_point": 30,
        "reserved": 5,
        "incoming": 5,
    }
    with closing(open_store(tmp_path / "mango.db")) as connection:
        seed_store(connection, {"products": [row]}, {"SKU-MANGO": 325})
        yield connection


@pytest.mark.parametrize("action", list(EFFECTS))
def test_each_action_moves_exactly_the_counts_of_its_row_in_the_table(
    mango: sqlite3.Connection, action: str
) -> None:
    act, change = EFFECTS[action]
    (before,) = counts(mango).values()
    row = act(mango)
    (after,) = counts(mango).values()
    assert tuple(b - a for a, b in zip(before, after, strict=True)) == change
    # The action returns the row it left, with its need.
    assert (row["on_hand"], row["reserved"], row["incoming"], row["needed"]) == after


@pytest.mark.parametrize("action", list(EFFECTS))
def test_each_action_is_one_transaction(mango: sqlite3.Connection, action: str) -> None:
    act, _ = EFFECTS[action]
    statements: list[str] = []
    mango.set_trace_callback(statements.append)
    act(mango)
    mango.set_trace_callback(None)
    verbs = [statement.split()[0] for statement in statements]
    assert verbs[0] == "BEGIN" and verbs[-1] == "COMMIT"
    assert verbs.count("BEGIN") == 1 and verbs.count("COMMIT") == 1


def test_an_unannounced_delivery_runs_chapter_5s_statements(friday: sqlite3.Connection) -> None:
    statements: list[str] = []
    friday.set_trace_callback(lambda statement: statements.append(statement.split()[0]))
    receive_delivery(friday, "SKU-VANILLA", 7)
    friday.set_trace_callback(None)
    # Chapter 5's checkpoint prints this line; its tills stop on the fifth statement.
    assert statements == ["BEGIN", "INSERT", "UPDATE", "SELECT", "UPDATE", "SELECT", "COMMIT"]


def test_an_expected_delivery_reads_the_van_under_the_write_lock(
    friday: sqlite3.Connection,
) -> None:
    statements: list[str] = []
    friday.set_trace_callback(lambda statement: statements.append(statement.split()[0]))
    receive_delivery(friday, "SKU-STRAWBERRY", 4, expected=True)
    friday.set_trace_callback(None)
    assert statements[:3] == ["BEGIN", "SELECT", "INSERT"]


def test_a_delivery_is_recorded_whether_expected_or_not(friday: sqlite3.Connection) -> None:
    receive_delivery(friday, "SKU-STRAWBERRY", 4, expected=True)
    receive_delivery(friday, "SKU-VANILLA", 2)
    rows = friday.execute("SELECT sku, tubs FROM deliveries ORDER BY id").fetchall()
    assert [tuple(row) for row in rows] == [("SKU-STRAWBERRY", 4), ("SKU-VANILLA", 2)]


# --- drafts stay honest --------------------------------------------------------


def test_collecting_and_receiving_what_was_expected_leave_every_draft_open(
    friday: sqlite3.Connection,
) -> None:
    save_draft(friday, "SKU-VANILLA", 9)
    save_draft(friday, "SKU-CHOCOLATE", 1)
    receive_delivery(friday, "SKU-STRAWBERRY", 4, expected=True)
    collect(friday, "SKU-CHOCOLATE", 2)
    collect(friday, "SKU-VANILLA", 2)
    assert drafts(friday) == [
        ("SKU-VANILLA", 9, 2250, "DRAFT"),
        ("SKU-CHOCOLATE", 1, 300, "DRAFT"),
    ]
    assert counts(friday)["SKU-VANILLA"] == (0, 1, 0, 9)


@pytest.mark.parametrize(
    ("act", "need"),
    [
        (lambda c: reserve(c, "SKU-VANILLA", 1), 10),
        (lambda c: cancel_reservation(c, "SKU-VANILLA", 3), 6),
        (lambda c: expect_delivery(c, "SKU-VANILLA", 4), 5),
        (lambda c: receive_delivery(c, "SKU-VANILLA", 2), 7),
    ],
    ids=["a reservation", "a cancellation", "a van announced", "an unannounced delivery"],
)
def test_an_action_that_moves_the_need_retires_the_draft_for_the_old_one(
    friday: sqlite3.Connection, act: Action, need: int
) -> None:
    save_draft(friday, "SKU-VANILLA", 9)
    act(friday)
    assert counts(friday)["SKU-VANILLA"][3] == need
    assert drafts(friday) == [("SKU-VANILLA", 9, 2250, "SUPERSEDED")]
    assert save_draft(friday, "SKU-VANILLA", need)["total_pence"] == 250 * need


# --- what cannot happen --------------------------------------------------------

IMPOSSIBLE: dict[str, tuple[Action, type[Exception], str]] = {
    "collecting more than the freezer holds": (
        lambda c: collect(c, "SKU-VANILLA", 3),
        ValueError,
        "cannot collect 3 tubs of SKU-VANILLA: only 2 on hand",
    ),
    "collecting more than was promised": (
        lambda c: collect(c, "SKU-CHOCOLATE", 3),
        ValueError,
        "cannot collect 3 tubs of SKU-CHOCOLATE: only 2 reserved",
    ),
    "cancelling what nobody reserved": (
        lambda c: cancel_reservation(c, "SKU-STRAWBERRY", 1),
        ValueError,
        "cannot cancel 1 tub of SKU-STRAWBERRY: only 0 reserved",
    ),
    "receiving more than is incoming": (
        lambda c: receive_delivery(c, "SKU-STRAWBERRY", 5, expected=True),
        ValueError,
        "cannot receive 5 tubs of SKU-STRAWBERRY: only 4 incoming",
    ),
    "receiving a van nobody announced as expected": (
        lambda c: receive_delivery(c, "SKU-VANILLA", 1, expected=True),
        ValueError,
        "cannot receive 1 tub of SKU-VANILLA: only 0 incoming",
    ),
    "reserving no tubs": (
        lambda c: reserve(c, "SKU-VANILLA", 0),
        ValueError,
        "cannot reserve 0 tubs: an action moves at least one tub",
    ),
    "expecting a negative van": (
        lambda c: expect_delivery(c, "SKU-VANILLA", -4),
        ValueError,
        "cannot expect -4 tubs: an action moves at least one tub",
    ),
    "an expected delivery of no tubs": (
        lambda c: receive_delivery(c, "SKU-STRAWBERRY", 0, expected=True),
        ValueError,
        "cannot receive 0 tubs: an action moves at least one tub",
    ),
    "reserving True tubs": (
        lambda c: reserve(c, "SKU-VANILLA", True),
        TypeError,
        "tubs must be an int, not bool",
    ),
    "collecting half a tub": (
        lambda c: collect(c, "SKU-VANILLA", 0.5),  # type: ignore[arg-type]
        TypeError,
        "tubs must be an int, not float",
    ),
    "reserving a flavour Lucy does not sell": (
        lambda c: reserve(c, "SKU-PISTACHIO", 1),
        KeyError,
        "SKU-PISTACHIO",
    ),
    "an expected delivery of a flavour Lucy does not sell": (
        lambda c: receive_delivery(c, "SKU-PISTACHIO", 1, expected=True),
        KeyError,
        "SKU-PISTACHIO",
    ),
}


@pytest.mark.parametrize("attempt", list(IMPOSSIBLE))
def test_an_impossible_action_is_refused_by_name_and_changes_nothing(
    path: Path, friday: sqlite3.Connection, attempt: str
) -> None:
    act, error, message = IMPOSSIBLE[attempt]
    save_draft(friday, "SKU-VANILLA", 9)
    before = contents(path)
    with pytest.raises(error) as refused:
        act(friday)
    assert message in str(refused.value)
    assert contents(path) == before
    assert not friday.in_transaction


def test_the_schema_refuses_what_an_action_would_refuse_from_any_writer(
    path: Path, friday: sqlite3.Connection
) -> None:
    before = contents(path)
    with pytest.raises(sqlite3.IntegrityError, match="on_hand_not_negative"):
        friday.execute(
            "UPDATE products SET on_hand = on_hand - 3, reserved = reserved - 3"
            " WHERE sku = 'SKU-VANILLA'"
        )
    with pytest.raises(sqlite3.IntegrityError, match="incoming_not_negative"):
        friday.execute("UPDATE products SET incoming = incoming - 5 WHERE sku = 'SKU-STRAWBERRY'")
    assert contents(path) == before


def test_a_seed_copies_reserved_and_incoming_counts(tmp_path: Path) -> None:
    rows = [{**SHOP["products"][0], "reserved": 3, "incoming": 1}]
    with closing(open_store(tmp_path / "lucy.db")) as connection:
        seed_store(connection, {"products": rows}, {"SKU-VANILLA": 250})
        assert counts(connection) == {"SKU-VANILLA": (2, 3, 1, 8)}


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [("reserved", -1, sqlite3.IntegrityError), ("incoming", 2.0, TypeError)],
)
def test_a_seed_with_a_bad_count_seeds_nothing(
    tmp_path: Path, field: str, value: object, error: type[Exception]
) -> None:
    rows = [*SHOP["products"][:2], {**SHOP["products"][2], field: value}]
    with closing(open_store(tmp_path / "lucy.db")) as connection:
        with pytest.raises(error, match=field):
            seed_store(connection, {"products": rows}, PRICES)
        assert read_products(connection) == []


# --- two tills at once -----------------------------------------------------------

COLLECT_ONE_TUB_AT_A_TIME = """
    import sys, time
    from sovereign_agent.store import collect, open_store

    connection = open_store(sys.argv[1], timeout=60)
    print("ready", flush=True)
    sys.stdin.readline()  # both tills start together
    started = time.monotonic()
    collected = refused = 0
    for _ in range(100):
        try:
            collect(connection, "SKU-CHOCOLATE", 1)
            collected += 1
        except ValueError:
            refused += 1
    print(started, time.monotonic(), collected, refused)
"""


def test_two_tills_collecting_at_once_never_hand_over_a_tub_that_is_not_there(
    path: Path,
) -> None:
    # 150 tubs promised and 150 in the freezer; two tills try to hand over 200.
    with closing(open_store(path)) as connection:
        connection.execute(
            "UPDATE products SET on_hand = 150, reserved = 150 WHERE sku = 'SKU-CHOCOLATE'"
        )
    tills = [python_child(COLLECT_ONE_TUB_AT_A_TIME, str(path)) for _ in range(2)]
    start_together(tills)
    results = [till.communicate(timeout=300) for till in tills]
    assert [till.returncode for till in tills] == [0, 0], results
    (start_a, end_a, *a), (start_b, end_b, *b) = (
        [float(field) for field in out.split()] for out, _ in results
    )
    assert start_a < end_b and start_b < end_a, "the two tills never ran at the same time"
    assert (a[0] + b[0], a[1] + b[1]) == (150, 50)
    with closing(open_store(path)) as connection:
        assert counts(connection)["SKU-CHOCOLATE"] == (0, 0, 0, 6)
