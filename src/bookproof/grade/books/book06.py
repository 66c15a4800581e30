"""Exercise Book 6: the checks for a submission's `reservations.py` and its state machine.

The graded interface is "the grader's door" at the end of the starter
(`exercises/book06/reservations.py`): functions that take plain JSON, open the
store file at the path they are given, do one thing, and close it again. Each
check keeps its files in a folder of its own in the submission's sandbox
(`questions.scratch_path`).

- `replenishment_need(row)`, and `seed_file`, `stock_in_file`, `drafts_in_file`,
  `deliveries_in_file`, `draft_in_file`, `act_in_file` (chapter 6's five
  operator actions, by name) and `write_version_1_file`: chapter 6, as the
  starter already has it;
- `note_in_file` (exercise 1: a delivery note as one transaction),
  `write_off_in_file` (exercise 2: tubs that leave the freezer for the bin)
  and `stock_take_in_file` (exercise 3, Unit C's open design task: a count
  sheet that corrects the freezer, graded by what the store holds after it).

Unit A's note tests and Unit B's state machine are graded by what they
catch: the grader runs them against the reference and against faulty
versions of it, through a stand-in module whose `open_store` hands the tests
a connection that stays with the code under test (`SURFACE`).

Every check seeds a shop of its own: chapter 6's Friday (3 vanilla and 2
chocolate reserved, 4 strawberry on the van) beside products the grader
invents, with their own reservations, deliveries, prices and notes for this
run. Expected counts and needs are worked out here (`fixtures.need`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import JSON, Book, ObjectKind, Surface, Trial
from bookproof.grade.questions import Asks, call, expect, same, scratch_path
from sovereign_agent.store import MIGRATIONS

__all__ = ["BOOK"]

BOOK = Book(
    6, "Exercise Book 6: reservations and deliveries", module="reservations", chapter="Chapter 6"
)

S_NEED = BOOK.section("6.2 One need, counting promises and the van")
S_MIGRATION = BOOK.section("A file that chapter 5's code made")
S_TABLE = BOOK.section("What each action does")
S_PLAN = BOOK.section("6.6 The morning plan")
S_IMPOSSIBLE = BOOK.section("6.8 Impossible actions")
S_UNIT_A = BOOK.section("6.11 Exercises") + " (Exercise Book 6, Unit A)"
S_UNIT_B = BOOK.section("6.11 Exercises") + " (Exercise Book 6, Unit B)"

COUNTS = ("on_hand", "reserved", "incoming")
# What one tub does to (on_hand, reserved, incoming): chapter 6's table, written out.
PER_TUB: Mapping[str, tuple[int, int, int]] = {
    "reserve": (0, 1, 0),
    "collect": (-1, -1, 0),
    "cancel_reservation": (0, -1, 0),
    "expect_delivery": (0, 0, 1),
    "receive expected": (1, 0, -1),
    "receive unannounced": (1, 0, 0),
}


# --- asking the store --------------------------------------------------------------------


def _unchanged(
    shop: fx.SeededShop, path: dict[str, Any], deliveries: list[list[Any]]
) -> Asks[bool]:
    """Whether the store still holds the model's counts and exactly these deliveries."""
    stock = yield call("stock_in_file", path)
    recorded = yield call("deliveries_in_file", path)
    return same(shop.stored(), stock) and same(deliveries, recorded)


def _act(
    path: dict[str, Any], action: str, sku: str, tubs: Any, *, raises: bool = False
) -> Asks[Any]:
    """One of chapter 6's actions through act_in_file ("receive expected" and friends)."""
    name, _, kind = action.partition(" ")
    answer = yield call("act_in_file", path, name, sku, tubs, kind == "expected", raises=raises)
    return answer


def _draft_need(freezer: fx.SeededShop, path: dict[str, Any], sku: str) -> Asks[dict[str, Any]]:
    """Save the first draft, for `sku`'s current need; the draft as read_drafts will show it."""
    need = fx.need(freezer.row(sku))
    yield call("draft_in_file", path, sku, need)
    return fx.saved_draft(1, sku, need, freezer.prices[sku])


# --- chapter 6, as the starter already has it -------------------------------------------


@BOOK.baseline(
    points=1,
    section=S_NEED,
    asks="replenishment_need counts reserved and incoming tubs: Friday needs 9, 1 and 0; a row "
    "without them keeps chapter 2's need.",
    hint="replenishment_need must be max(0, reorder_point + reserved - on_hand - incoming), "
    "a missing count read as 0.",
)
def ch6_need(rng: random.Random) -> Trial:
    rows = [
        *fx.friday_rows(),
        fx.extra_product(rng, reserved=True, incoming=True),
        *fx.shop_rows(),
        fx.extra_product(rng),
        {**fx.extra_product(rng), "incoming": rng.randint(30, 40)},
    ]
    needs = []
    for row in rows:
        needs.append((yield call("replenishment_need", row)))
    if not same([9, 1, 0], needs[:3]):
        return "Friday's needs should be 9 vanilla, 1 chocolate and 0 strawberry."
    return expect(
        same([fx.need(row) for row in rows], needs),
        "A row's need is not max(0, reorder_point + reserved - on_hand - incoming).",
    )


@BOOK.baseline(
    points=2,
    section=S_TABLE,
    asks="Each operator action moves exactly its row of chapter 6's table, and nothing else.",
    hint="Each action must change only its counts, by the tubs given, in one transaction, and "
    "return the row with its new `needed`.",
)
def ch6_actions(rng: random.Random) -> Trial:
    freezer = fx.SeededShop(rng, counts=True, most_invented=2)
    sku = rng.choice(freezer.skus())
    path = yield from freezer.seed()
    deliveries: list[list[Any]] = []
    # In this order each action is possible: promises and the van first, then what they allow.
    for action in (
        "reserve",
        "expect_delivery",
        "receive unannounced",
        "collect",
        "cancel_reservation",
        "receive expected",
    ):
        row = freezer.row(sku)
        # Never more than the counts allow; collecting leaves a promise to cancel.
        low, high = {
            "reserve": (2, 9),
            "collect": (1, min(row["on_hand"], row["reserved"] - 1)),
            "cancel_reservation": (1, row["reserved"]),
            "receive expected": (1, row["incoming"]),
        }.get(action, (1, 9))
        tubs = rng.randint(low, min(high, 9))
        answer = yield from _act(path, action, sku, tubs)
        freezer.move(sku, **dict(zip(COUNTS, (tubs * per for per in PER_TUB[action]), strict=True)))
        if action.startswith("receive"):
            deliveries.append([sku, tubs])
        if not same(freezer.product(sku), answer):
            return f"{action} of {tubs} tubs did not move exactly its row of the table."
    unchanged = yield from _unchanged(freezer, path, deliveries)
    return expect(unchanged, "After the six actions the store does not hold what their rows say.")


@BOOK.baseline(
    points=1,
    section=S_IMPOSSIBLE,
    asks="Collecting or cancelling more than there is, and an expected delivery beyond incoming, "
    "raise ValueError and change nothing.",
    hint="Each action must refuse a change that would leave a count below 0 (refuse_below_zero), "
    "before anything is written.",
)
def ch6_refusals(rng: random.Random) -> Trial:
    freezer = fx.SeededShop(rng, counts=True, most_invented=2)
    path = yield from freezer.seed()
    drafted = yield from _draft_need(freezer, path, rng.choice(freezer.needing()))
    rows = [freezer.row(sku) for sku in freezer.skus()]
    # Collecting is refused by either count alone: more than is promised while the freezer
    # holds enough (chocolate: 7 on hand, 2 promised), or more than the freezer holds while
    # enough is promised (vanilla: 2 on hand, 3 promised).
    promised = rng.choice([row for row in rows if row["on_hand"] > row["reserved"]])
    held = rng.choice([row for row in rows if row["reserved"] > row["on_hand"]])
    cancelled, received = rng.choice(rows), rng.choice(rows)
    attempts = [
        ("collect", promised["sku"], rng.randint(promised["reserved"] + 1, promised["on_hand"])),
        ("collect", held["sku"], rng.randint(held["on_hand"] + 1, held["reserved"])),
        ("cancel_reservation", cancelled["sku"], cancelled["reserved"] + rng.randint(1, 4)),
        ("receive expected", received["sku"], received["incoming"] + rng.randint(1, 4)),
    ]
    rng.shuffle(attempts)
    for action, sku, tubs in attempts:
        answer = yield from _act(path, action, sku, tubs, raises=True)
        if not answer.raised_a("ValueError"):
            return f"{action} of more tubs than there are was not refused with ValueError."
    unchanged = yield from _unchanged(freezer, path, [])
    drafts = yield call("drafts_in_file", path)
    if not unchanged:
        return "A refused action changed the store."
    return expect(same([drafted], drafts), "A refused action changed the saved draft.")


@BOOK.baseline(
    points=1,
    section=S_MIGRATION,
    asks="A version-1 file opens at the runtime's current version (chapter 10 and later "
    "chapters append migrations) with every row kept and 0 reserved, 0 incoming.",
    hint="Migration 2 must add both columns with DEFAULT 0 to the rows already in the file.",
)
def ch6_migration(rng: random.Random) -> Trial:
    rows = [*fx.shop_rows(), fx.extra_product(rng)]
    prices = fx.prices() | {rows[-1]["sku"]: rng.randint(100, 999)}
    path = scratch_path("old.db")
    yield call("write_version_1_file", path, fx.shop(rows), prices)
    version = yield call("version_of_file", path)
    stock = yield call("stock_in_file", path)
    # open_store is the runtime's, which chapter 10's migration 3 and later
    # chapters' extend: the file runs every migration after its first.
    if not same(len(MIGRATIONS), version):
        return (
            f"A version-1 file should open at version {len(MIGRATIONS)},"
            " the runtime store's current version."
        )
    return expect(
        same(fx.stored(rows, counts=True), stock),
        "After the migration, the rows should be as they were, with 0 reserved and 0 incoming.",
    )


@BOOK.baseline(
    points=1,
    section=S_PLAN,
    asks="After Friday, vanilla's draft is 9 tubs (2,250 pence), chocolate's 1 (300), and "
    "strawberry's old 4 is refused.",
    hint="save_draft must check the quantity against the need with reserved and incoming tubs.",
)
def ch6_plan(rng: random.Random) -> Trial:
    extra = fx.extra_product(rng)
    unit = rng.randint(100, 999)
    freezer_rows = [*fx.shop_rows(), extra]
    path = scratch_path("friday.db")
    yield call("seed_file", path, fx.shop(freezer_rows), fx.prices() | {extra["sku"]: unit})
    promised, coming = rng.randint(1, 5), rng.randint(1, fx.need(extra) - 1)
    for action, sku, tubs in (
        ("reserve", fx.VANILLA, 3),
        ("reserve", fx.CHOCOLATE, 2),
        ("expect_delivery", fx.STRAWBERRY, 4),
        ("reserve", extra["sku"], promised),
        ("expect_delivery", extra["sku"], coming),
    ):
        yield from _act(path, action, sku, tubs)
    vanilla = yield call("draft_in_file", path, fx.VANILLA, 9)
    chocolate = yield call("draft_in_file", path, fx.CHOCOLATE, 1)
    strawberry = yield call("draft_in_file", path, fx.STRAWBERRY, 4, raises=True)
    need = fx.need({**extra, "reserved": promised, "incoming": coming})
    other = yield call("draft_in_file", path, extra["sku"], need)
    if not (
        same(fx.draft(fx.VANILLA, 9, 250), vanilla)
        and same(fx.draft(fx.CHOCOLATE, 1, 300), chocolate)
    ):
        return "After Friday, the drafts should be 9 vanilla (2,250 pence) and 1 chocolate (300)."
    if not strawberry.raised_a("ValueError"):
        return "Strawberry needs nothing once 4 tubs are on the van: a draft for 4 is refused."
    return expect(
        same(fx.draft(extra["sku"], need, unit), other),
        "A product's draft should be for its need with its reserved and incoming tubs.",
    )


# --- exercise 1: the van's delivery note ---------------------------------------------------


def _van(rng: random.Random) -> fx.SeededShop:
    """Friday with more on the van: vanilla's confirmed order too (its need stays above 0)."""
    freezer = fx.SeededShop(rng, counts=True)
    freezer.row(fx.VANILLA)["incoming"] = rng.randint(1, 6)
    return freezer


def _on_the_van(freezer: fx.SeededShop) -> list[str]:
    return [sku for sku in freezer.skus() if freezer.row(sku)["incoming"] > 0]


def _expected_lines(freezer: fx.SeededShop, rng: random.Random, skus: list[str]) -> dict[str, int]:
    """A line per sku, exact or short: never more than is on the van. In a random order."""
    lines = {sku: rng.randint(1, freezer.row(sku)["incoming"]) for sku in skus}
    return dict(rng.sample(list(lines.items()), len(lines)))


def _receive(freezer: fx.SeededShop, note: Mapping[str, int]) -> None:
    """The model after a note: off the van first, any surplus as an unannounced delivery."""
    for sku, tubs in note.items():
        freezer.move(sku, on_hand=tubs, incoming=-min(tubs, freezer.row(sku)["incoming"]))


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="A note whose last line is an unknown sku (KeyError) or a surplus (ValueError) raises "
    "and changes nothing.",
    hint="A note whose last line fails (a product the shop does not have, or a surplus) "
    "changed the stock of the lines before it.",
)
def ex1_note_all_or_nothing(rng: random.Random) -> Trial:
    freezer = _van(rng)
    van = _on_the_van(freezer)
    path = yield from freezer.seed()
    for last, error in (("an unknown sku", "KeyError"), ("a surplus", "ValueError")):
        skus = rng.sample(van, rng.randint(1, len(van) - 1))
        note = _expected_lines(freezer, rng, skus)
        if error == "KeyError":
            note[fx.sku(rng)] = rng.randint(1, 5)
        else:
            extra = rng.choice([sku for sku in van if sku not in note])
            note[extra] = freezer.row(extra)["incoming"] + rng.randint(1, 4)
        answer = yield call("note_in_file", path, note, raises=True)
        if not answer.raised_a(error):
            return f"A note whose last line is {last} should raise {error}."
        unchanged = yield from _unchanged(freezer, path, [])
        if not unchanged:
            return "A refused note changed the stock or recorded deliveries."
    return None


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="A line of 2.0, True, '4', 0 or -1 tubs, first or last on the note, raises and "
    "changes nothing.",
    hint="A line of 2.0, True, '4', 0 or -1 tubs, first or last on the note, was received "
    "instead of refused, or changed the stock.",
)
def ex1_note_bad_numbers(rng: random.Random) -> Trial:
    freezer = _van(rng)
    van = _on_the_van(freezer)
    path = yield from freezer.seed()
    for bad in (2.0, True, "4", 0, -1):
        for position in ("first", "last"):
            skus = rng.sample(van, rng.randint(2, len(van)))
            lines: list[tuple[str, Any]] = list(_expected_lines(freezer, rng, skus[1:]).items())
            lines.insert(0 if position == "first" else len(lines), (skus[0], bad))
            answer = yield call("note_in_file", path, dict(lines), raises=True)
            if not (answer.raised_a("TypeError") or answer.raised_a("ValueError")):
                return "A line of 2.0, True, '4', 0 or -1 tubs was accepted."
            unchanged = yield from _unchanged(freezer, path, [])
            if not unchanged:
                return f"A note with a bad number on its {position} line changed the store."
    return None


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="An empty note raises ValueError.",
    hint="A note with no lines was accepted.",
)
def ex1_note_empty(rng: random.Random) -> Trial:
    freezer = _van(rng)
    path = yield from freezer.seed()
    answer = yield call("note_in_file", path, {}, raises=True)
    return expect(answer.raised_a("ValueError"), "An empty note should raise ValueError.")


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="An accepted surplus empties incoming, puts every tub in the freezer, lowers the need "
    "by the surplus and supersedes the stale draft.",
    hint="A surplus note, accepted, did not move the tubs as Unit A states (only what was on "
    "its way comes off incoming, every tub goes on hand), or left a draft it made stale "
    "open.",
)
def ex1_note_surplus_accepted(rng: random.Random) -> Trial:
    freezer = _van(rng)
    van = _on_the_van(freezer)
    sku = rng.choice([sku for sku in van if fx.need(freezer.row(sku)) > 0])
    path = yield from freezer.seed()
    drafted = yield from _draft_need(freezer, path, sku)
    note = {sku: freezer.row(sku)["incoming"] + rng.randint(1, 4)}
    note |= _expected_lines(freezer, rng, rng.sample([s for s in van if s != sku], 1))
    note = dict(rng.sample(list(note.items()), len(note)))
    rows = yield call("note_in_file", path, note, True)
    _receive(freezer, note)
    if not same([freezer.product(line) for line in sorted(note)], rows):
        return (
            "With the surplus accepted, each line's row should show every tub on hand, what "
            "was on the van off incoming, and the new need, in sku order."
        )
    drafts = yield call("drafts_in_file", path)
    if not same([{**drafted, "status": "SUPERSEDED"}], drafts):
        return "The surplus lowered the need: the draft for the old need should be SUPERSEDED."
    unchanged = yield from _unchanged(freezer, path, [[line, tubs] for line, tubs in note.items()])
    return expect(unchanged, "The store does not hold the note's counts and one delivery per line.")


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="Exact and short lines move tubs from incoming to on hand, keep every need, record one "
    "delivery per line and return the rows in sku order.",
    hint="After a note, a line's incoming or on-hand stock, or the rows the note answered, "
    "were not as Unit A states.",
    requires=ex1_note_all_or_nothing,
)
def ex1_note_expected_lines(rng: random.Random) -> Trial:
    freezer = _van(rng)
    van = _on_the_van(freezer)
    path = yield from freezer.seed()
    drafted = yield from _draft_need(freezer, path, fx.VANILLA)
    note = _expected_lines(freezer, rng, rng.sample(van, rng.randint(2, len(van))))
    rows = yield call("note_in_file", path, note)
    _receive(freezer, note)
    if not same([freezer.product(sku) for sku in sorted(note)], rows):
        return "The note's rows should show its tubs moved from incoming to on hand, in sku order."
    drafts = yield call("drafts_in_file", path)
    if not same([drafted], drafts):
        return "Tubs that were on the van change no need: the open draft should stay open."
    unchanged = yield from _unchanged(freezer, path, [[sku, tubs] for sku, tubs in note.items()])
    return expect(unchanged, "The store does not hold the note's counts and one delivery per line.")


# --- the learner's tests: what they may use, and the faulty versions they must catch ------

# The tests get chapter 6's functions over a connection that stays with the
# code under test (`open_store` hands them a handle whose only method is
# close()), and the door's read-only views of a file. A path a test names is
# taken inside a folder of that run's own, beside the code under test.
SURFACE = Surface(
    functions={
        "open_store": "Connection",
        **dict.fromkeys(
            (
                "seed_store",
                "replenishment_need",
                "read_product",
                "read_products",
                "read_drafts",
                "save_draft",
                "reserve",
                "collect",
                "cancel_reservation",
                "expect_delivery",
                "receive_delivery",
                "receive_note",
                "write_off",
                "stock_in_file",
                "drafts_in_file",
                "deliveries_in_file",
            ),
            JSON,
        ),
    },
    objects={"Connection": ObjectKind(methods={"close": JSON})},
    paths=("open_store", "stock_in_file", "drafts_in_file", "deliveries_in_file"),
)

Replaced = Mapping[str, Callable[..., Any]]

NOTE_TESTS = BOOK.learner_tests(
    exercise=1, file="test_book06_note.py", section=S_UNIT_A, surface=SURFACE
)


@NOTE_TESTS.catches(points=1, behaviour="receives each line of a note in a transaction of its own")
def ex1_note_tests(reference: ModuleType, rng: random.Random) -> Replaced:
    def receive_note(connection: Any, note: Any, *, accept_surplus: bool = False) -> Any:
        if not note:  # refused as the reference refuses it: only the lines differ
            return reference.receive_note(connection, note, accept_surplus=accept_surplus)
        for sku, tubs in note.items():
            reference.receive_note(connection, {sku: tubs}, accept_surplus=accept_surplus)
        rows = [reference.read_product(connection, sku) for sku in sorted(note)]
        return [{**row, "needed": reference.replenishment_need(row)} for row in rows]

    return {"receive_note": receive_note}


# --- exercise 2: writing off tubs -------------------------------------------------------------


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="Writing off more tubs than are on hand raises ValueError and changes nothing.",
    hint="A write-off of more tubs than are on hand was taken, or stopped at 0, instead of "
    "refused.",
)
def ex2_write_off_too_many(rng: random.Random) -> Trial:
    freezer = fx.SeededShop(rng, counts=True, most_invented=2)
    path = yield from freezer.seed()
    for sku in rng.sample(freezer.skus(), 2):
        tubs = freezer.row(sku)["on_hand"] + rng.randint(1, 5)
        answer = yield call("write_off_in_file", path, sku, tubs, raises=True)
        if not answer.raised_a("ValueError"):
            return "Writing off more tubs than are on hand should raise ValueError."
    unchanged = yield from _unchanged(freezer, path, [])
    return expect(unchanged, "A refused write-off changed the store.")


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="Writing off 0 tubs, or fewer, raises ValueError and changes nothing.",
    hint="A write-off of 0 or fewer tubs was accepted.",
)
def ex2_write_off_no_tubs(rng: random.Random) -> Trial:
    freezer = fx.SeededShop(rng, counts=True, most_invented=2)
    path = yield from freezer.seed()
    for tubs in (0, -rng.randint(1, 5)):
        answer = yield call(
            "write_off_in_file", path, rng.choice(freezer.skus()), tubs, raises=True
        )
        if not answer.raised_a("ValueError"):
            return "Writing off 0 or fewer tubs should raise ValueError."
    unchanged = yield from _unchanged(freezer, path, [])
    return expect(unchanged, "A refused write-off changed the store.")


def _in_the_freezer(freezer: fx.SeededShop, *, needing: bool = False) -> list[str]:
    return [
        sku
        for sku in freezer.skus()
        if freezer.row(sku)["on_hand"] > 0 and (fx.need(freezer.row(sku)) > 0 or not needing)
    ]


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A write-off that raises the need supersedes the open draft for the old need.",
    hint="A write-off that raised a product's need left the open draft for the old need open.",
)
def ex2_write_off_supersedes(rng: random.Random) -> Trial:
    freezer = fx.SeededShop(rng, counts=True, most_invented=2)
    sku = rng.choice(_in_the_freezer(freezer, needing=True))
    path = yield from freezer.seed()
    drafted = yield from _draft_need(freezer, path, sku)
    tubs = rng.randint(1, freezer.row(sku)["on_hand"])
    yield call("write_off_in_file", path, sku, tubs)
    drafts = yield call("drafts_in_file", path)
    return expect(
        same([{**drafted, "status": "SUPERSEDED"}], drafts),
        f"After {tubs} tubs were written off, the draft for the old need should be SUPERSEDED.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A write-off takes exactly its tubs from on_hand, changes nothing else, and returns the "
    "row with its new need.",
    hint="Writing off tubs changed the stock by something other than those tubs off on hand.",
    requires=ex2_write_off_too_many,
)
def ex2_write_off_moves_stock(rng: random.Random) -> Trial:
    freezer = fx.SeededShop(rng, counts=True, most_invented=2)
    path = yield from freezer.seed()
    for sku in rng.sample(_in_the_freezer(freezer), 2):
        tubs = rng.randint(1, freezer.row(sku)["on_hand"])
        row = yield call("write_off_in_file", path, sku, tubs)
        freezer.move(sku, on_hand=-tubs)
        if not same(freezer.product(sku), row):
            return f"Writing off {tubs} tubs should return the row with {tubs} fewer on hand."
    unchanged = yield from _unchanged(freezer, path, [])
    return expect(unchanged, "A write-off changed more than its product's on_hand.")


# Unit B's three faults, each alone, as the unit plants them in the nephew's write_off.
MACHINE_TESTS = BOOK.learner_tests(
    exercise=2, file="test_book06_machine.py", section=S_UNIT_B, surface=SURFACE
)


def _write_off(
    reference: ModuleType,
    *,
    counts_tubs: bool = True,
    refuses_below_zero: bool = True,
    retires_drafts: bool = True,
) -> Callable[..., dict[str, Any]]:
    """The reference's write_off with one of its three guards left out, as the nephew's lacks it."""

    def write_off(connection: Any, sku: str, tubs: int) -> dict[str, Any]:
        if counts_tubs:
            reference.at_least_one_tub("write off", tubs)
        else:
            reference.whole_number("tubs", tubs)  # -3 passes: an int is all it asks
        with reference.transaction(connection):
            if refuses_below_zero:
                product = reference.read_product(connection, sku)
                reference.refuse_below_zero(product, "write off", tubs, {"on_hand": -tubs})
                left = "on_hand - ?"
            else:
                left = "max(0, on_hand - ?)"  # stops at 0 instead of refusing
            connection.execute(f"UPDATE products SET on_hand = {left} WHERE sku = ?", (tubs, sku))
            if retires_drafts:
                reference.supersede_stale_draft(connection, sku)
            product = reference.read_product(connection, sku)
        return {**product, "needed": reference.replenishment_need(product)}

    return write_off


@MACHINE_TESTS.catches(points=1, behaviour="stops a write-off at 0 tubs instead of refusing it")
def ex2_machine_catches_clamping(reference: ModuleType, rng: random.Random) -> Replaced:
    return {"write_off": _write_off(reference, refuses_below_zero=False)}


@MACHINE_TESTS.catches(points=1, behaviour="leaves open the draft a write-off made stale")
def ex2_machine_catches_stale_drafts(reference: ModuleType, rng: random.Random) -> Replaced:
    return {"write_off": _write_off(reference, retires_drafts=False)}


@MACHINE_TESTS.catches(points=1, behaviour="takes a write-off of -3 tubs as 3 more in the freezer")
def ex2_machine_catches_negative_tubs(reference: ModuleType, rng: random.Random) -> Replaced:
    return {"write_off": _write_off(reference, counts_tubs=False)}


# --- Exercise 3 (Unit C): the stock-take, an open design task ---------------------------
#
# The unit gives the function, its sheet and what Lucy needs, and leaves the
# design to the learner. What is graded is the store only: the counts and
# drafts `stock_in_file` and `drafts_in_file` read back after a sheet, with
# the shop's own actions run between the count and the sheet, and whether a
# bad sheet is refused whole. The return value is not graded: it is the
# learner's to shape.

S_UNIT_C_MOVES = BOOK.section("6.4 Five operator actions") + " (Exercise Book 6, Unit C)"
S_UNIT_C_REFUSED = BOOK.section("6.8 Impossible actions") + " (Exercise Book 6, Unit C)"
# What a refused sheet may raise: chapter 6's own refusals, whichever the design picks.
_REFUSALS = ("ValueError", "KeyError", "TypeError")


def _sheet_line(seen: int, counted: int) -> dict[str, int]:
    return {"seen": seen, "counted": counted}


def _moved_since(
    freezer: fx.SeededShop, rng: random.Random, path: dict[str, Any], sku: str
) -> Asks[int]:
    """The shop at work while Lucy types her sheet: a collection or a delivery of `sku`.

    Answers the change to on hand, which the sheet knows nothing of.
    """
    row = freezer.row(sku)
    if row["reserved"] > 0 and row["on_hand"] > 0:
        tubs = rng.randint(1, min(row["reserved"], row["on_hand"]))
        yield from _act(path, "collect", sku, tubs)
        freezer.move(sku, on_hand=-tubs, reserved=-tubs)
        return -tubs
    tubs = rng.randint(1, 9)
    yield from _act(path, "receive unannounced", sku, tubs)
    freezer.move(sku, on_hand=tubs)
    return tubs


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_C_MOVES,
    asks="A stock-take corrects only what the count found wrong: tubs collected or delivered "
    "since Lucy counted stay moved, and promises and the van are untouched.",
    hint="After a stock-take, a product's counts were not what the shop had once the count's "
    "difference was added: a collection or delivery made since the count was undone, or "
    "another count changed.",
)
def ex3_stock_take_keeps_what_moved(rng: random.Random) -> Trial:
    freezer = fx.SeededShop(rng, counts=True, most_invented=2)
    skus = rng.sample(freezer.skus(), 2)
    path = yield from freezer.seed()
    # The sheet is written from the counts as Lucy saw them; then the shop works on.
    seen = {sku: freezer.row(sku)["on_hand"] for sku in skus}
    counted: dict[str, int] = {}
    deliveries: list[list[Any]] = []
    for sku in skus:
        moved = yield from _moved_since(freezer, rng, path, sku)
        if moved > 0:
            deliveries.append([sku, moved])
        # She cannot have found fewer tubs than were collected after she counted, and
        # a count that found nothing wrong would prove nothing.
        counted[sku] = rng.choice(
            [tubs for tubs in range(max(0, -moved), seen[sku] + 5) if tubs != seen[sku]]
        )
    # What the shop had when the sheet arrives, read from the store itself, so
    # that a chapter action gone wrong costs its own check, not this one.
    before = yield call("stock_in_file", path)
    if not _stock_rows(before):
        return "The store's stock report could not be read before the stock-take."
    sheet = {sku: _sheet_line(seen[sku], counted[sku]) for sku in skus}
    yield call("stock_take_in_file", path, sheet)
    expected = []
    for row in before:
        if row["sku"] in sheet:
            row = {**row, "on_hand": row["on_hand"] + counted[row["sku"]] - seen[row["sku"]]}
            row["needed"] = fx.need(row)
        expected.append(row)
    stock = yield call("stock_in_file", path)
    recorded = yield call("deliveries_in_file", path)
    return expect(
        same(expected, stock) and same(deliveries, recorded),
        "The store after the stock-take should hold what the shop had, each counted product "
        "corrected by what the count found wrong, and nothing else changed.",
    )


def _stock_rows(value: Any) -> bool:
    """Whether `value` reads as a stock report: rows with a sku and whole counts."""
    return isinstance(value, list) and all(
        isinstance(row, dict)
        and isinstance(row.get("sku"), str)
        and all(type(row.get(count)) is int for count in ("on_hand", *COUNTS[1:], "reorder_point"))
        for row in value
    )


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_C_REFUSED,
    asks="A count sheet with one impossible line is refused whole, and changes nothing.",
    hint="A count sheet holding one impossible line (an unknown product, a number that is not "
    "a whole number of tubs, or a correction below zero) was taken, or changed the store.",
)
def ex3_stock_take_all_or_nothing(rng: random.Random) -> Trial:
    freezer = fx.SeededShop(rng, counts=True, most_invented=2)
    good, other = rng.sample(freezer.skus(), 2)
    path = yield from freezer.seed()
    on_hand = freezer.row(other)["on_hand"]
    bad_lines: list[tuple[str, Any]] = [
        (fx.token(rng, 6).upper(), _sheet_line(0, rng.randint(1, 5))),
        (other, {"seen": on_hand, "counted": float(on_hand + 1)}),
        (other, {"seen": on_hand, "counted": True}),
        (other, _sheet_line(on_hand, -rng.randint(1, 5))),
        # Found fewer than the freezer holds now, by more than it holds: below zero.
        (other, _sheet_line(on_hand + rng.randint(1, 5), 0)),
    ]
    line = _sheet_line(freezer.row(good)["on_hand"], freezer.row(good)["on_hand"] + 1)
    for bad_sku, bad in bad_lines:
        # The good line first: a sheet taken line by line has changed the store
        # by the time it meets the bad one.
        sheet = {good: line, bad_sku: bad}
        answer = yield call("stock_take_in_file", path, sheet, raises=True)
        if not any(answer.raised_a(name) for name in _REFUSALS):
            return "A count sheet with an impossible line should be refused."
    unchanged = yield from _unchanged(freezer, path, [])
    return expect(unchanged, "A refused count sheet changed the store.")


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_C_MOVES,
    asks="A stock-take that changes a product's need supersedes the open draft for the old need.",
    hint="A stock-take that changed a product's need left the open draft for the old need open.",
    requires=ex3_stock_take_keeps_what_moved,
)
def ex3_stock_take_supersedes(rng: random.Random) -> Trial:
    freezer = fx.SeededShop(rng, counts=True, most_invented=2)
    sku = rng.choice(_in_the_freezer(freezer, needing=True))
    path = yield from freezer.seed()
    drafted = yield from _draft_need(freezer, path, sku)
    on_hand = freezer.row(sku)["on_hand"]
    yield call("stock_take_in_file", path, {sku: _sheet_line(on_hand, on_hand - 1)})
    drafts = yield call("drafts_in_file", path)
    return expect(
        same([{**drafted, "status": "SUPERSEDED"}], drafts),
        "After a stock-take found a tub missing, the draft for the old need should be SUPERSEDED.",
    )
