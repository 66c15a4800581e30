"""Exercise Book 10's shared part: the book, its sections, the stores its checks make.

A check's store is a file in a folder of that check's own in the sandbox's
`/tmp` (`scratch_path`), made through the door's `friday_file` with operators
and a weekly limit this run chose. What the checks expect (each approval's
amount, the week's money) is worked out here from chapter 10's prices,
written out by hand.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Book
from bookproof.grade.questions import Asks, Question, call, scratch_path

BOOK = Book(
    10, "Exercise Book 10: durable approvals", module="approval_rules", chapter="Chapter 10"
)

S_BINDS = BOOK.section("10.2 What an approval binds")
S_WAITS = BOOK.section("10.4 The run stops awaiting approval")
S_ORDERS = BOOK.section("10.6 The next run orders")
S_BUDGET = BOOK.section("10.7 The budget refuses STRAWBERRY 12")
S_DENIAL = BOOK.section("10.8 A denial ends a run")
S_REVOKE = BOOK.section("10.10 Revoking, before and after use")
S_UNIT_A = BOOK.section("10.14 Exercises") + " (Exercise Book 10, Unit A)"
S_UNIT_B = BOOK.section("10.14 Exercises") + " (Exercise Book 10, Unit B)"
S_UNIT_C = BOOK.section("10.11 What a call can do to the world") + " (Exercise Book 10, Unit B)"

# Chapter 1's prices in pence, written out again: an approval's amount is price times tubs.
PRICES = {"SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275, "SKU-VANILLA": 250}


def operator_names(rng: random.Random, count: int) -> list[str]:
    """`count` distinct operator names for this run, lucy's among them."""
    names = {"lucy"}
    while len(names) < count:
        names.add(fx.token(rng, 6).lower())
    chosen = sorted(names)
    rng.shuffle(chosen)
    return chosen


def orders(rng: random.Random, count: int) -> list[list[Any]]:
    """`count` orders, [sku, tubs], of distinct skus in a random order."""
    skus = rng.sample(sorted(PRICES), count)
    return [[sku, rng.randint(1, 12)] for sku in skus]


def amount(order: list[Any]) -> int:
    return int(PRICES[order[0]] * order[1])


def friday(names: list[str], limit: int) -> Asks[dict[str, Any]]:
    """A new store in this check's folder: Friday, these operators, this weekly limit."""
    path = scratch_path("lucy.db")
    yield call("friday_file", path, names, limit)
    return path


def ask(path: dict[str, Any], run_id: str, asked: list[list[Any]]) -> Question:
    return call("ask_file", path, run_id, asked)


def decide(
    path: dict[str, Any], decision: str, approval: int, operator: str, caps: dict[str, int]
) -> Question:
    return call("decide_file", path, decision, approval, operator, caps)


def run_view(stop: str, awaiting: Sequence[int] = (), denied: Sequence[int] = ()) -> dict[str, Any]:
    """How `ask_file` answers a run that stopped so."""
    return {"stop": stop, "awaiting": list(awaiting), "denied": list(denied)}


def money(reserved: int, spent: int, limit: int) -> dict[str, int]:
    """How `budget_file` answers for a week with this limit."""
    return {"reserved": reserved, "spent": spent, "left": limit - reserved - spent}
