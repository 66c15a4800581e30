"""The shop every exercise book grades against, and the grader's own arithmetic over it.

Chapter 1's snapshot and prices are written out here again, never imported
from the book: an expected value must not come from code a learner can edit,
nor from the code a check is about. Everything random takes the check's own
`random.Random`, so the same seed gives the same data (and the same grade).

What a later chapter adds to the shop (reserved and incoming tubs, a store)
belongs here too, next to what it extends, so that every book's checks share
one definition of the facts.
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping, Sequence
from typing import Any

from bookproof.grade.questions import Asks, call, same, scratch_path

__all__ = [
    "CHOCOLATE",
    "CURRENCY",
    "SHOP_NAME",
    "SHOP_TOOLS",
    "STRAWBERRY",
    "SUPPLIER",
    "VANILLA",
    "SeededShop",
    "call_id",
    "codes",
    "draft",
    "expected_report",
    "extra_product",
    "friday_rows",
    "need",
    "ok",
    "prices",
    "probe_name",
    "quote",
    "refused",
    "report_view",
    "run_summary",
    "saved_draft",
    "schema_names",
    "shop",
    "shop_rows",
    "sku",
    "stock_is",
    "stored",
    "token",
]

SHOP_NAME = "Lucy's Ice Cream"
VANILLA = "SKU-VANILLA"
CHOCOLATE = "SKU-CHOCOLATE"
STRAWBERRY = "SKU-STRAWBERRY"
SUPPLIER = "lucy-local"
CURRENCY = "GBP"
# Chapter 2's three tools, sorted by name as `schemas()` lists them.
SHOP_TOOLS = ("draft_order", "list_stock", "supplier")


# --- chapter 1's shop ----------------------------------------------------------


def shop_rows() -> list[dict[str, Any]]:
    """Chapter 1's three products, a fresh copy each call."""
    return [
        {"sku": VANILLA, "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": CHOCOLATE, "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": STRAWBERRY, "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]


def prices() -> dict[str, int]:
    """Chapter 2's unit prices in integer pence."""
    return {VANILLA: 250, CHOCOLATE: 300, STRAWBERRY: 275}


def shop(rows: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The shop dict the chapters pass around, over `rows` (chapter 1's by default)."""
    chosen = shop_rows() if rows is None else rows
    return {"name": SHOP_NAME, "products": [dict(row) for row in chosen]}


def need(row: Mapping[str, Any]) -> int:
    """The grader's own replenishment need: max(0, target + reserved - on hand - incoming).

    A row without `reserved` or `incoming` (chapters 1 to 5 wrote neither) has none.
    """
    shortfall = (
        int(row["reorder_point"])
        + int(row.get("reserved", 0))
        - int(row["on_hand"])
        - int(row.get("incoming", 0))
    )
    return max(0, shortfall)


def friday_rows() -> list[dict[str, Any]]:
    """Chapter 6's Friday: chapter 1's shop with 3 vanilla, 2 chocolate promised, 4 strawberry
    on the van. Needs 9, 1 and 0."""
    counts = {VANILLA: (3, 0), CHOCOLATE: (2, 0), STRAWBERRY: (0, 4)}
    return [
        {**row, "reserved": counts[row["sku"]][0], "incoming": counts[row["sku"]][1]}
        for row in shop_rows()
    ]


# --- random data, so an answer recorded in one run is useless in the next -------


def token(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def sku(rng: random.Random) -> str:
    """A sku no chapter uses, such as SKU-QWHDKAZ."""
    return "SKU-" + "".join(rng.choice(string.ascii_uppercase) for _ in range(7))


def extra_product(
    rng: random.Random, *, reserved: bool = False, incoming: bool = False
) -> dict[str, Any]:
    """A product the grader invents, always below its target (so it has a need).

    With `incoming`, some tubs are on their way, never enough to fill it: the need stays above 0.
    """
    row: dict[str, Any] = {
        "sku": sku(rng),
        "name": "Flavour " + token(rng, 4),
        "on_hand": rng.randint(0, 12),
        "reorder_point": rng.randint(14, 30),
    }
    if reserved:
        row["reserved"] = rng.randint(0, 6)
    if incoming:
        row["incoming"] = rng.randint(1, row["reorder_point"] - row["on_hand"] - 1)
    return row


def call_id(rng: random.Random) -> str:
    return "call_" + token(rng, 12)


def probe_name(rng: random.Random) -> str:
    """The name of a probe tool (see `questions.probe`), unknown to any submission."""
    return "probe_" + token(rng, 10)


# --- the values chapter 2's tools answer with ------------------------------------


def quote(sku: str, unit: int) -> dict[str, Any]:
    return {"currency": CURRENCY, "sku": sku, "supplier": SUPPLIER, "unit_cost_pence": unit}


def draft(sku: str, quantity: int, unit: int) -> dict[str, Any]:
    return {
        **quote(sku, unit),
        "quantity": quantity,
        "status": "DRAFT",
        "total_pence": quantity * unit,
    }


def ok(value: Any) -> dict[str, Any]:
    return {"ok": True, "value": value}


def refused(code: str) -> dict[str, Any]:
    return {"ok": False, "error": code}


# --- a store's rows, as chapter 5's and chapter 6's functions read them back -----


def stored(rows: Sequence[Mapping[str, Any]], *, counts: bool = False) -> list[dict[str, Any]]:
    """The products a store holds for `rows`, as its stock report gives them: by sku, with needs.

    Chapter 5's table has four columns; with `counts` (chapter 6's migration
    2), `reserved` and `incoming` too, 0 for a row that has none.
    """
    products = []
    for row in sorted(rows, key=lambda item: str(item["sku"])):
        product = {column: row[column] for column in ("sku", "name", "on_hand", "reorder_point")}
        if counts:
            product |= {"reserved": row.get("reserved", 0), "incoming": row.get("incoming", 0)}
        products.append({**product, "needed": need(row)})
    return products


def saved_draft(
    draft_id: int, sku: str, quantity: int, unit: int, status: str = "DRAFT"
) -> dict[str, Any]:
    """One saved draft, as `read_drafts` gives it."""
    return {
        "id": draft_id,
        "sku": sku,
        "quantity": quantity,
        "unit_cost_pence": unit,
        "total_pence": quantity * unit,
        "status": status,
    }


_REPORT_COLUMNS = ("sku", "on_hand", "reorder_point", "needed")


def report_view(observation: Any) -> list[list[Any]] | None:
    """The columns a `list_stock` observation is graded on; columns a learner adds are fine."""
    if not (isinstance(observation, dict) and observation.get("ok") is True):
        return None
    rows = observation.get("value")
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        return None
    if not all(all(column in row for column in _REPORT_COLUMNS) for row in rows):
        return None
    return [[row[column] for column in _REPORT_COLUMNS] for row in rows]


def expected_report(rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """What `report_view` must give for these rows: sorted by sku, with the grader's need."""
    return sorted(
        ([row["sku"], row["on_hand"], row["reorder_point"], need(row)] for row in rows),
        key=lambda item: item[0],
    )


def schema_names(value: Any) -> list[str] | None:
    """The tool names of a `schemas()` answer, or None when it is not a list of function schemas."""
    if not isinstance(value, list):
        return None
    names: list[str] = []
    for schema in value:
        function = schema.get("function") if isinstance(schema, dict) else None
        if not (
            isinstance(schema, dict)
            and schema.get("type") == "function"
            and isinstance(function, dict)
            and isinstance(function.get("name"), str)
            and isinstance(function.get("description"), str)
            and isinstance(function.get("parameters"), dict)
        ):
            return None
        names.append(function["name"])
    return names


# --- a scripted run, as the graders' doors of later books answer it ------------------


def run_summary(value: Any, keys: Sequence[str]) -> dict[str, Any] | None:
    """`value` when it is a run summary holding a list under each of `keys`; else None."""
    if not isinstance(value, dict) or not all(isinstance(value.get(key), list) for key in keys):
        return None
    return value


def codes(run: Mapping[str, Any]) -> list[Any]:
    """Each observation of a run as "ok", its refusal code, or None when it is no observation."""
    found: list[Any] = []
    for observation in run["observations"]:
        if not isinstance(observation, dict):
            found.append(None)
        else:
            found.append("ok" if observation.get("ok") is True else observation.get("error"))
    return found


# --- a store a check seeds, in a folder of its own in the submission's sandbox -------


class SeededShop:
    """A check's shop as a store will hold it: rows in seeding order, prices, the grader's sums.

    Chapter 1's three products (chapter 6's Friday with `counts`) beside one to
    `most_invented` products the grader invents for this run, each below its
    target; with `counts` an invented product has reserved and incoming tubs
    too. Every store chapter from 5 on seeds one of these, so that the facts a
    check expects are worked out once, here.
    """

    def __init__(self, rng: random.Random, *, counts: bool = False, most_invented: int = 3) -> None:
        invented = [
            extra_product(rng, reserved=counts, incoming=counts)
            for _ in range(rng.randint(1, most_invented))
        ]
        self.counts = counts
        self.rows = [*(friday_rows() if counts else shop_rows()), *invented]
        rng.shuffle(self.rows)  # a store reads back in sku order, whatever order it was given
        self.prices = prices() | {row["sku"]: rng.randint(100, 999) for row in invented}

    def row(self, sku: str) -> dict[str, Any]:
        return next(row for row in self.rows if row["sku"] == sku)

    def skus(self) -> list[str]:
        return sorted(row["sku"] for row in self.rows)

    def needing(self) -> list[str]:
        """The skus below target, in sku order."""
        return [sku for sku in self.skus() if need(self.row(sku)) > 0]

    def stored(self) -> list[dict[str, Any]]:
        """Every product as the store's stock report gives it back."""
        return stored(self.rows, counts=self.counts)

    def product(self, sku: str) -> dict[str, Any]:
        """One row as the store returns it from an action: its counts and its need."""
        return stored([self.row(sku)], counts=self.counts)[0]

    def move(self, sku: str, **changes: int) -> None:
        """Record a change of counts in the grader's model of the store."""
        row = self.row(sku)
        for count, change in changes.items():
            row[count] += change

    def with_stock(self, counts: Mapping[str, int]) -> list[dict[str, Any]]:
        """The rows once `counts` (sku -> tubs on hand) is recorded."""
        return [{**row, "on_hand": counts.get(row["sku"], row["on_hand"])} for row in self.rows]

    def draft(self, sku: str, quantity: int) -> dict[str, Any]:
        """What draft_order answers for a draft of `quantity` tubs of `sku`."""
        return ok(draft(sku, quantity, self.prices[sku]))

    def seed(self, name: str = "shop.db") -> Asks[dict[str, Any]]:
        """A new store file in the check's own folder, seeded through the door's `seed_file`."""
        path = scratch_path(name)
        yield call("seed_file", path, shop(self.rows), self.prices)
        return path


def stock_is(expected: list[dict[str, Any]], path: dict[str, Any]) -> Asks[bool]:
    """Whether the store file at `path` reports exactly `expected` (the door's `stock_in_file`)."""
    stock = yield call("stock_in_file", path)
    return same(expected, stock)
