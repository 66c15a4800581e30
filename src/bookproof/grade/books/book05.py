"""Exercise Book 5: the checks for a submission's `shop_store.py`.

The graded interface is "the grader's door" at the end of the starter
(`exercises/book05/shop_store.py`): functions that take plain JSON, open the
store file at the path they are given with the submission's own `open_store`,
do one thing, and close it again, as a separate process would. Each check
keeps its files in a folder of its own in the submission's sandbox
(`questions.scratch_path`), so a store file is never shared between checks,
nor between submissions.

- `seed_file`, `stock_in_file`, `drafts_in_file`, `invoke_in_file` (one tool
  request through chapter 5's dispatcher), `receive_in_file`, `version_of_file`:
  chapter 5's store, as the starter already has it;
- `count_in_file` (exercise 1: the weekly count), `cancel_in_file`
  (exercise 2: a draft withdrawn, after migration 2) and `correct_in_file`
  (exercise 3, Unit C's open design task: a delivery typed wrong, put
  right), with `deliveries_in_file` reading back what the store recorded;
- `write_version_1_file`, `raw_version_of_file`, `set_raw_version_of_file`:
  plain sqlite3 with chapter 5's schema, never the submission's code, so a
  check can make a file as chapter 5 left it, or one from the future.

Every check seeds a shop of its own: chapter 1's three products beside one to
three the grader invents, at prices, stock, counts and drafts chosen for this
run. Expected rows, needs and totals are worked out here (`fixtures`).
"""

from __future__ import annotations

import random
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Book, Trial
from bookproof.grade.questions import Asks, call, expect, same, scratch_path

__all__ = ["BOOK"]

BOOK = Book(5, "Exercise Book 5: persistent stock", module="shop_store", chapter="Chapter 5")

S_SCHEMA = BOOK.section("5.3 The schema, line by line")
S_REFUSED_FILES = BOOK.section("Files the store refuses")
S_ACTIONS = BOOK.section("The operator's actions")
S_TOOLS = BOOK.section("5.9 The same three tools over a store")
S_DELIVERY = BOOK.section("5.10 A delivery that supersedes a draft")
S_UNIT_A = BOOK.section("5.14 Exercises") + " (Exercise Book 5, Unit A)"
S_UNIT_B = BOOK.section("5.14 Exercises") + " (Exercise Book 5, Unit B)"


def _draft(path: dict[str, Any], sku: str, quantity: Any) -> Asks[Any]:
    """One draft_order request through the dispatcher over the store, as the model sends it."""
    answer = yield call("invoke_in_file", path, "draft_order", {"sku": sku, "quantity": quantity})
    return answer


# --- chapter 5, as the starter already has it -----------------------------------------


@BOOK.baseline(
    points=1,
    section=S_ACTIONS,
    asks="A seeded store reports every product with its need, sorted by sku.",
    hint="seed_store must copy every row and price; the stock report must list every product "
    "with its `needed`, in sku order.",
)
def ch5_seed_and_report(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    path = yield from shop.seed()
    reported = yield from fx.stock_is(shop.stored(), path)
    return expect(reported, "The stock report of the seeded store is not every row with its need.")


@BOOK.baseline(
    points=1,
    section=S_TOOLS,
    asks="Drafting a need twice answers with chapter 2's observation both times and saves "
    "one DRAFT row.",
    hint="save_draft must return the open draft for the sku when there is one, never save a "
    "second (the partial unique index one_open_draft_per_sku).",
)
def ch5_draft_saved_once(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    sku = rng.choice(shop.needing())
    need = fx.need(shop.row(sku))
    path = yield from shop.seed()
    first = yield from _draft(path, sku, need)
    again = yield from _draft(path, sku, need)
    drafts = yield call("drafts_in_file", path)
    if not (same(shop.draft(sku, need), first) and same(first, again)):
        return "Drafting the need should answer with the same DRAFT observation both times."
    return expect(
        same([fx.saved_draft(1, sku, need, shop.prices[sku])], drafts),
        "Asking twice for the same draft should leave exactly one saved DRAFT row.",
    )


@BOOK.baseline(
    points=1,
    section=S_TOOLS,
    asks="A wrong quantity, an unknown sku and a quantity of True are refused, and save nothing.",
    hint="The store's dispatcher must refuse a quantity that is not the need and an unknown sku "
    "(tool_failed) and a non-int quantity (invalid_arguments), saving no draft.",
)
def ch5_wrong_requests_save_nothing(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    sku = rng.choice(shop.needing())
    path = yield from shop.seed()
    requests: list[tuple[str, Any, dict[str, Any]]] = [
        (sku, fx.need(shop.row(sku)) + rng.randint(1, 5), fx.refused("tool_failed")),
        (fx.sku(rng), rng.randint(1, 9), fx.refused("tool_failed")),
        (sku, True, fx.refused("invalid_arguments")),
    ]
    for request_sku, quantity, refusal in requests:
        answer = yield from _draft(path, request_sku, quantity)
        if not same(refusal, answer):
            return "A request that contradicts the store's data was not refused as chapter 2 does."
    drafts = yield call("drafts_in_file", path)
    unchanged = yield from fx.stock_is(shop.stored(), path)
    return expect(same([], drafts) and unchanged, "A refused request saved a draft.")


@BOOK.baseline(
    points=1,
    section=S_SCHEMA,
    asks="A seed with a negative stock, or a price for an unknown sku, raises and saves nothing.",
    hint="The schema's CHECK and REFERENCES rules must refuse the bad row, and seed_store's "
    "one transaction must leave the store empty.",
)
def ch5_bad_seed_refused(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    negative = [dict(row) for row in shop.rows]
    rng.choice(negative)["on_hand"] = -rng.randint(1, 9)
    stranger = shop.prices | {fx.sku(rng): rng.randint(100, 999)}
    for name, rows, prices in (
        ("negative.db", negative, shop.prices),
        ("stranger.db", shop.rows, stranger),
    ):
        path = scratch_path(name)
        answer = yield call("seed_file", path, fx.shop(rows), prices, raises=True)
        if answer.status != "raised":
            return "A seed that breaks the schema's rules was accepted."
        empty = yield from fx.stock_is([], path)
        if not empty:
            return "A refused seed left some of its rows in the store."
    return None


@BOOK.baseline(
    points=1,
    section=S_DELIVERY,
    asks="A delivery that fills a need returns the new stock with need 0, supersedes that "
    "draft and leaves the other open.",
    hint="receive_delivery must add the tubs, return the row with its `needed`, and retire the "
    "sku's stale draft in the same transaction.",
)
def ch5_delivery_supersedes(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    filled, other = rng.sample(shop.needing(), 2)
    path = yield from shop.seed()
    for sku in (filled, other):
        yield from _draft(path, sku, fx.need(shop.row(sku)))
    tubs = fx.need(shop.row(filled)) + rng.randint(0, 6)
    row = yield call("receive_in_file", path, filled, tubs)
    drafts = yield call("drafts_in_file", path)
    on_hand = shop.row(filled)["on_hand"] + tubs
    if not same(fx.stored([{**shop.row(filled), "on_hand": on_hand}]), [row]):
        return f"After {tubs} tubs arrive, the row should show the new stock and need 0."
    expected_drafts = [
        fx.saved_draft(1, filled, fx.need(shop.row(filled)), shop.prices[filled], "SUPERSEDED"),
        fx.saved_draft(2, other, fx.need(shop.row(other)), shop.prices[other]),
    ]
    return expect(
        same(expected_drafts, drafts),
        "The delivered sku's draft should be SUPERSEDED and the other still DRAFT.",
    )


@BOOK.baseline(
    points=1,
    section=S_REFUSED_FILES,
    asks="A file stamped with version 9 is refused and left at version 9.",
    hint="open_store must raise NewerSchema for a file newer than its migrations, and never "
    "write to it.",
)
def ch5_newer_file_refused(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    path = yield from shop.seed()
    yield call("set_raw_version_of_file", path, 9)
    opened = yield call("version_of_file", path, raises=True)
    version = yield call("raw_version_of_file", path)
    if opened.status != "raised":
        return "A file of schema version 9 was opened by code that knows fewer migrations."
    return expect(same(9, version), "The refused file's version was changed.")


# --- exercise 1: the weekly stock count ------------------------------------------------


def _count(shop: fx.SeededShop, rng: random.Random) -> dict[str, int]:
    """Good lines for one to three of the shop's products, in a random order."""
    skus = rng.sample([row["sku"] for row in shop.rows], rng.randint(1, 3))
    return {sku: rng.randint(0, 20) for sku in skus}


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="A count whose last line is an unknown sku (KeyError), or with a negative line, "
    "raises and changes no stock.",
    hint="A count whose last line fails (a product the shop does not have, or a negative "
    "number of tubs) changed the stock of the lines before it.",
)
def ex1_count_all_or_nothing(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    path = yield from shop.seed()
    typo = {**_count(shop, rng), fx.sku(rng): rng.randint(0, 20)}
    answer = yield call("count_in_file", path, typo, raises=True)
    if not answer.raised_a("KeyError"):
        return "A count with an unknown sku on its last line should raise KeyError."
    if not (yield from fx.stock_is(shop.stored(), path)):
        return "A count with an unknown sku on its last line changed the stock of the others."
    # A good line, the negative one, and sometimes a good line after it.
    first, bad, last = rng.sample([row["sku"] for row in shop.rows], 3)
    negative = {first: rng.randint(0, 20), bad: -rng.randint(1, 9)}
    if rng.random() < 0.5:
        negative[last] = rng.randint(0, 20)
    answer = yield call("count_in_file", path, negative, raises=True)
    if answer.status != "raised":
        return "A count with a negative line was accepted."
    unchanged = yield from fx.stock_is(shop.stored(), path)
    return expect(unchanged, "A count with a negative line changed the stock of the other lines.")


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="A good count sets exactly the counted stock and returns those rows with their needs, "
    "in sku order.",
    hint="After a count, a counted product's stock, an uncounted product's stock, or the rows "
    "the count answered were not as Unit A states.",
    requires=ex1_count_all_or_nothing,
)
def ex1_count_sets_stock(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    path = yield from shop.seed()
    counts = _count(shop, rng)
    rows = yield call("count_in_file", path, counts)
    after = shop.with_stock(counts)
    counted = [row for row in fx.stored(after) if row["sku"] in counts]
    if not same(counted, rows):
        return "The count should return the counted rows, each with its new need, in sku order."
    unchanged = yield from fx.stock_is(fx.stored(after), path)
    return expect(unchanged, "The stock after the count is not the counted stock.")


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="A count of 7.0, True or '7' tubs raises TypeError and changes nothing.",
    hint="A count of 7.0, True or '7' tubs was taken instead of being refused, or changed the "
    "stock.",
)
def ex1_count_types(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    path = yield from shop.seed()
    for bad in (7.0, True, "7"):
        lines: list[tuple[str, Any]] = list(_count(shop, rng).items())
        uncounted = [row["sku"] for row in shop.rows if row["sku"] not in dict(lines)]
        lines.insert(rng.randint(0, len(lines)), (rng.choice(uncounted), bad))
        answer = yield call("count_in_file", path, dict(lines), raises=True)
        if not answer.raised_a("TypeError"):
            return "A count of 7.0, True or '7' tubs should raise TypeError."
        if not (yield from fx.stock_is(shop.stored(), path)):
            return "A count refused for a bad number changed the stock."
    return None


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="An empty count raises ValueError.",
    hint="A count that counts nothing was accepted.",
)
def ex1_count_empty(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    path = yield from shop.seed()
    answer = yield call("count_in_file", path, {}, raises=True)
    return expect(answer.raised_a("ValueError"), "An empty count should raise ValueError.")


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="A count that moves a need supersedes that sku's draft, one that keeps the need leaves "
    "its draft open, and a new request then saves the new draft.",
    hint="A count that moved a product's need left its open draft open, a count that kept the "
    "need closed it, or a new request afterwards did not save a new draft.",
)
def ex1_count_supersedes(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    moved, kept = rng.sample(shop.needing(), 2)
    moved_row, kept_row = shop.row(moved), shop.row(kept)
    path = yield from shop.seed()
    for sku in (moved, kept):
        yield from _draft(path, sku, fx.need(shop.row(sku)))
    # A new stock still below target, so the need moves to another number above 0.
    new = rng.choice(
        [tubs for tubs in range(moved_row["reorder_point"]) if tubs != moved_row["on_hand"]]
    )
    counts = {moved: new, kept: kept_row["on_hand"]}
    yield call("count_in_file", path, dict(rng.sample(list(counts.items()), 2)))
    drafts = yield call("drafts_in_file", path)
    old = [
        fx.saved_draft(1, moved, fx.need(moved_row), shop.prices[moved], "SUPERSEDED"),
        fx.saved_draft(2, kept, fx.need(kept_row), shop.prices[kept]),
    ]
    if not same(old, drafts):
        return (
            "After the count, the draft whose need moved should be SUPERSEDED and the one "
            "whose need stayed should still be DRAFT."
        )
    need = moved_row["reorder_point"] - new
    again = yield from _draft(path, moved, need)
    drafts = yield call("drafts_in_file", path)
    return expect(
        same(shop.draft(moved, need), again)
        and same([*old, fx.saved_draft(3, moved, need, shop.prices[moved])], drafts),
        "After the count, a request for the new need should save a new DRAFT.",
    )


# --- exercise 2: migration 2 and cancelling a draft -------------------------------------


class Version1:
    """A file as chapter 5 left it: a shop, and drafts with their ids, statuses and prices.

    Two skus have an open draft (and an older one, superseded when the price
    moved); one has only a superseded draft; the rest have none.
    """

    def __init__(self, rng: random.Random) -> None:
        self.shop = fx.SeededShop(rng)
        self.open = rng.sample(self.shop.needing(), 2)
        self.closed = rng.choice([sku for sku in self.shop.prices if sku not in self.open])
        self.drafts: list[list[Any]] = []  # [sku, quantity, unit_cost_pence, status], id order
        for sku in (*self.open, self.closed):
            unit = self.shop.prices[sku]
            self.drafts.append([sku, rng.randint(1, 30), unit + rng.randint(1, 50), "SUPERSEDED"])
        for sku in self.open:
            self.drafts.append([sku, fx.need(self.shop.row(sku)), self.shop.prices[sku], "DRAFT"])
        # Ids follow the list's order: any order is a file chapter 5 could have written.
        rng.shuffle(self.drafts)

    def write(self, name: str = "old.db") -> Asks[dict[str, Any]]:
        path = scratch_path(name)
        rows = fx.shop(self.shop.rows)
        yield call("write_version_1_file", path, rows, self.shop.prices, self.drafts)
        return path

    def saved(self, cancelled: str | None = None) -> list[dict[str, Any]]:
        """Every draft as read_drafts shows it, `cancelled`'s open draft CANCELLED."""
        drafts = []
        for draft_id, (sku, quantity, unit, status) in enumerate(self.drafts, start=1):
            if sku == cancelled and status == "DRAFT":
                status = "CANCELLED"
            drafts.append(fx.saved_draft(draft_id, sku, quantity, unit, status))
        return drafts

    def open_id(self, sku: str) -> int:
        return next(
            draft_id
            for draft_id, draft in enumerate(self.drafts, start=1)
            if draft[0] == sku and draft[3] == "DRAFT"
        )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A new store opens at version 2.",
    hint="A new store file did not end at version 2, or version 1's schema had changed.",
)
def ex2_new_store_version_2(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    path = yield from shop.seed()
    version = yield call("version_of_file", path)
    raw = yield call("raw_version_of_file", path)
    return expect(same(2, version) and same(2, raw), "A new store should be at schema version 2.")


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="A version-1 file opens at version 2 with every product, price and draft kept, ids and "
    "statuses included.",
    hint="Opening a version 1 file lost or changed a draft (its id included), a product or a "
    "price.",
)
def ex2_version_1_file_kept(rng: random.Random) -> Trial:
    old = Version1(rng)
    shop = old.shop
    path = yield from old.write()
    stock = yield call("stock_in_file", path)
    drafts = yield call("drafts_in_file", path)
    version = yield call("raw_version_of_file", path)
    if not same(shop.stored(), stock):
        return "After the migration, the products are not those of the version-1 file."
    if not same(old.saved(), drafts):
        return "After the migration, the drafts are not those of the version-1 file, ids kept."
    for sku in sorted(shop.prices):
        quote = yield call("invoke_in_file", path, "supplier", {"sku": sku})
        if not same(fx.ok(fx.quote(sku, shop.prices[sku])), quote):
            return "After the migration, a product's price is not the one the file held."
    return expect(same(2, version), "Opening a version-1 file should migrate it to version 2.")


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="On a migrated file, asking twice for an open draft's need keeps one open draft.",
    hint="After the migration, a product could hold two open drafts at once.",
    requires=ex2_new_store_version_2,
)
def ex2_one_open_draft(rng: random.Random) -> Trial:
    old = Version1(rng)
    shop = old.shop
    sku = rng.choice(old.open)
    need = fx.need(shop.row(sku))
    path = yield from old.write()
    for _ in range(2):
        answer = yield from _draft(path, sku, need)
        if not same(shop.draft(sku, need), answer):
            return "On a migrated file, the open draft's need should be answered with that draft."
    drafts = yield call("drafts_in_file", path)
    return expect(
        same(old.saved(), drafts), "On a migrated file, asking again saved a second open draft."
    )


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="cancel_draft returns the open draft CANCELLED and leaves every other draft as it was.",
    hint="Cancelling a product's open draft did not leave it CANCELLED and answer it as the "
    "drafts are read, or it changed a superseded draft.",
)
def ex2_cancel(rng: random.Random) -> Trial:
    old = Version1(rng)
    sku = rng.choice(old.open)
    path = yield from old.write()
    cancelled = yield call("cancel_in_file", path, sku)
    drafts = yield call("drafts_in_file", path)
    after = old.saved(cancelled=sku)
    if not same(after[old.open_id(sku) - 1], cancelled):
        return "cancel_draft should return the cancelled draft as read_drafts shows it."
    return expect(same(after, drafts), "Cancelling one draft changed another.")


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="Cancelling a sku with no open draft raises KeyError and changes nothing.",
    hint="Cancelling where there is no open draft (none, only superseded ones, or no such "
    "product) was accepted or changed a row.",
)
def ex2_cancel_nothing_open(rng: random.Random) -> Trial:
    old = Version1(rng)
    never = [sku for sku in sorted(old.shop.prices) if sku not in (*old.open, old.closed)]
    path = yield from old.write()
    for sku in (old.closed, rng.choice(never), fx.sku(rng)):
        answer = yield call("cancel_in_file", path, sku, raises=True)
        if not answer.raised_a("KeyError"):
            return "Cancelling a sku with no open draft should raise KeyError."
    drafts = yield call("drafts_in_file", path)
    return expect(same(old.saved(), drafts), "A refused cancel changed the drafts.")


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A file at version 3 is refused and left at version 3.",
    hint="A file from a newer version than the last migration was opened instead of refused.",
    requires=ex2_new_store_version_2,
)
def ex2_newer_refused(rng: random.Random) -> Trial:
    old = Version1(rng)
    path = yield from old.write()
    yield call("set_raw_version_of_file", path, 3)
    opened = yield call("version_of_file", path, raises=True)
    version = yield call("raw_version_of_file", path)
    if opened.status != "raised":
        return "A file of schema version 3 was opened by code that knows 2 migrations."
    return expect(same(3, version), "The refused file's version was changed.")


# --- Exercise 3 (Unit C): a delivery typed wrong, an open design task ------------------
#
# The unit gives the function and what Lucy needs, and leaves the design to
# the learner. What is graded is the store only: the products, deliveries and
# drafts the door reads back after a correction, and whether a bad correction
# raised. What `correct_delivery` returns is the design's own: the door drops it.

_UNIT_C = " (Exercise Book 5, Unit C)"
S_UNIT_C_ACTIONS = BOOK.section("5.7 Reading the shop, and the operator's actions") + _UNIT_C
S_UNIT_C_CRASH = BOOK.section("5.8 A crash in the middle of a transaction") + _UNIT_C
S_UNIT_C_NUMBERS = BOOK.section("5.4 Integer pence, and what STRICT still lets through") + _UNIT_C
S_UNIT_C_DRAFTS = BOOK.section("5.10 A delivery that supersedes a draft") + _UNIT_C


def _typo(rng: random.Random) -> tuple[int, int]:
    """What the van brought, and what Lucy typed instead: a slipped finger, or a zero too many."""
    right = rng.randint(1, 12)
    wrong = rng.choice([right * 10, *(tubs for tubs in range(1, right + 10) if tubs != right)])
    return right, wrong


def _receive_all(
    shop: fx.SeededShop, path: dict[str, Any], deliveries: list[tuple[str, int]]
) -> Asks[list[list[Any]] | None]:
    """Each delivery received through chapter 5's action, in order; the store's record of them.

    None when the record is not those deliveries, in that order: then a
    chapter action went wrong, and no correction can be judged on it.
    """
    for sku, tubs in deliveries:
        yield call("receive_in_file", path, sku, tubs)
        shop.move(sku, on_hand=tubs)
    recorded = yield call("deliveries_in_file", path)
    if not (
        isinstance(recorded, list)
        and len(recorded) == len(deliveries)
        and all(
            isinstance(row, list) and len(row) == 3 and type(row[0]) is int and row[1:] == [*line]
            for row, line in zip(recorded, deliveries, strict=True)
        )
    ):
        return None
    return recorded


def _store_is(shop: fx.SeededShop, path: dict[str, Any], deliveries: list[list[Any]]) -> Asks[bool]:
    """Whether the store holds exactly the grader's products and `deliveries`."""
    stock = yield from fx.stock_is(shop.stored(), path)
    recorded = yield call("deliveries_in_file", path)
    return stock and same(deliveries, recorded)


def _corrected(recorded: list[list[Any]], number: int, tubs: int) -> list[list[Any]]:
    return [[row[0], row[1], tubs] if row[0] == number else row for row in recorded]


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_C_ACTIONS,
    asks="A corrected delivery's record says what really came, and the freezer moves by the "
    "difference: deliveries received since the typo stay in it, and nothing else changes.",
    hint="After a delivery was corrected, its record or its product's tubs on hand were not what "
    "they would have been had it been typed right the first time, or another delivery or "
    "product changed.",
)
def ex3_correction_moves_the_difference(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    typed, other = rng.sample(shop.skus(), 2)
    right, wrong = _typo(rng)
    later = rng.choice([tubs for tubs in range(1, 15) if tubs != wrong])
    # The typo, a delivery of another flavour, and another of the same flavour, in any order.
    deliveries = [(typed, wrong), (other, rng.randint(1, 15)), (typed, later)]
    rng.shuffle(deliveries)
    path = yield from shop.seed()
    recorded = yield from _receive_all(shop, path, deliveries)
    if recorded is None:
        return "The store's record of the deliveries was not the deliveries received."
    number = recorded[deliveries.index((typed, wrong))][0]
    yield call("correct_in_file", path, number, right)
    shop.move(typed, on_hand=right - wrong)
    kept = yield from _store_is(shop, path, _corrected(recorded, number, right))
    return expect(
        kept,
        f"After delivery {number} of {wrong} tubs was corrected to {right}, the store should "
        "hold what it would have held had it been typed right, and nothing else changed.",
    )


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_C_CRASH,
    asks="A correction asked a second time, as a till that lost its answer asks it, is not "
    "refused and changes nothing more.",
    hint="A correction sent a second time, as a till that lost the answer to the first sends "
    "it, was refused, or changed the store again.",
    requires=ex3_correction_moves_the_difference,
)
def ex3_correction_asked_twice(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    sku = rng.choice(shop.skus())
    right, wrong = _typo(rng)
    # A later delivery at least as large as the typo: a design that moves the freezer
    # again on the second ask is then seen moving it, not stopped by the schema.
    deliveries = [(sku, wrong), (sku, wrong + rng.randint(0, 5))]
    path = yield from shop.seed()
    recorded = yield from _receive_all(shop, path, deliveries)
    if recorded is None:
        return "The store's record of the deliveries was not the deliveries received."
    number = recorded[0][0]
    yield call("correct_in_file", path, number, right)
    stock = yield call("stock_in_file", path)
    corrected = yield call("deliveries_in_file", path)
    drafts = yield call("drafts_in_file", path)
    again = yield call("correct_in_file", path, number, right, raises=True)
    if again.status == "raised":
        return "A correction asked again, after it was made, was refused."
    stock_again = yield call("stock_in_file", path)
    corrected_again = yield call("deliveries_in_file", path)
    drafts_again = yield call("drafts_in_file", path)
    return expect(
        same(stock, stock_again)
        and same(corrected, corrected_again)
        and same(drafts, drafts_again),
        "A correction asked a second time changed the store again.",
    )


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_C_NUMBERS,
    asks="A correction to 7.0, True, '7', 0 or fewer tubs raises and changes nothing.",
    hint="A correction to a number of tubs that is not a whole number of at least one (a float, "
    "a boolean, text, zero or fewer) was taken, or changed the store.",
)
def ex3_correction_numbers_refused(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    sku = rng.choice(shop.skus())
    right, wrong = _typo(rng)
    path = yield from shop.seed()
    recorded = yield from _receive_all(shop, path, [(sku, wrong)])
    if recorded is None:
        return "The store's record of the deliveries was not the deliveries received."
    for bad in (float(right), True, str(right), 0, -rng.randint(1, 9)):
        answer = yield call("correct_in_file", path, recorded[0][0], bad, raises=True)
        if answer.status != "raised":
            return f"A correction to {bad!r} tubs was taken."
    unchanged = yield from _store_is(shop, path, recorded)
    return expect(unchanged, "A refused correction changed the store.")


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_C_ACTIONS,
    asks="A correction of a delivery the store never recorded raises and changes nothing.",
    hint="A correction naming a delivery the store never recorded was taken without a refusal, "
    "or changed the store.",
)
def ex3_correction_unknown_refused(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    first, second = rng.sample(shop.skus(), 2)
    path = yield from shop.seed()
    recorded = yield from _receive_all(
        shop, path, [(first, rng.randint(1, 15)), (second, rng.randint(1, 15))]
    )
    if recorded is None:
        return "The store's record of the deliveries was not the deliveries received."
    newest = max(row[0] for row in recorded)
    for number in (newest + rng.randint(1, 50), 0, -rng.randint(1, 9)):
        answer = yield call("correct_in_file", path, number, rng.randint(1, 15), raises=True)
        if answer.status != "raised":
            return f"A correction of delivery {number}, which the store never recorded, was taken."
    unchanged = yield from _store_is(shop, path, recorded)
    return expect(unchanged, "A refused correction changed the store.")


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_C_DRAFTS,
    asks="A correction that moves a product's need supersedes the open draft for the old need.",
    hint="A correction that moved a product's need left the open draft for the old need open.",
    requires=ex3_correction_moves_the_difference,
)
def ex3_correction_supersedes(rng: random.Random) -> Trial:
    shop = fx.SeededShop(rng)
    sku = rng.choice([sku for sku in shop.needing() if fx.need(shop.row(sku)) >= 2])
    # A typo too small to fill the need, so a draft can be saved for the need it leaves.
    wrong = rng.randint(1, fx.need(shop.row(sku)) - 1)
    right = rng.choice([tubs for tubs in range(1, wrong + 10) if tubs != wrong])
    path = yield from shop.seed()
    recorded = yield from _receive_all(shop, path, [(sku, wrong)])
    if recorded is None:
        return "The store's record of the deliveries was not the deliveries received."
    need = fx.need(shop.row(sku))
    yield from _draft(path, sku, need)
    yield call("correct_in_file", path, recorded[0][0], right)
    drafts = yield call("drafts_in_file", path)
    return expect(
        same([fx.saved_draft(1, sku, need, shop.prices[sku], "SUPERSEDED")], drafts),
        "After a correction moved the need, the draft for the old need should be SUPERSEDED.",
    )
