"""Exercise Book 11: the checks for a submission's `purchase_rules.py`.

The graded interface is "the grader's door" at the end of the starter
(`exercises/book11/purchase_rules.py`): functions that take plain JSON. The
supplier's desk runs inside the submission's sandbox, on its own loopback:
each check hands the book's server file (`book/textbook/servers/
supplier_http.py`, copied into a folder the grader makes) to the door's
`supplier_file`, which serves it from a thread of the sandboxed process, with
its ledger in the check's own scratch folder. No process is started: the
sandbox allows none.

Every check chooses its orders, the faults and where each purchase stops at
random for this run; Unit C's checks also choose how long the supplier keeps
a key and how long after the stops Lucy settles, and which desk she settles
against (one that remembers its keys, or the same desk once it has forgotten
them: its orders stay, their keys are gone). What it expects (which order
becomes `SUP-000N`, each purchase's state and finding) is worked out here
from the order in which the check sends, written out by hand, never
computed from the book's code.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from bookproof.grade.book import Book, Trial
from bookproof.grade.questions import Asks, call, expect, folder, same, scratch_path

__all__ = ["BOOK"]

BOOK = Book(
    11,
    "Exercise Book 11: purchasing exactly once",
    module="purchase_rules",
    chapter="Chapter 11",
)

S_RETRY = BOOK.section("11.4 Two records, and the lost answer")
S_REFUSAL = BOOK.section("11.7 A refusal stops")
S_UNIT_A = BOOK.section("11.11 Exercises") + " (Exercise Book 11, Unit A)"
S_UNIT_B = BOOK.section("11.11 Exercises") + " (Exercise Book 11, Unit B)"
S_RESOLVE = BOOK.section("11.5 Every crash point, and what resolves it") + (
    " (Exercise Book 11, Unit C)"
)
S_MEANING = BOOK.section("11.8 What exactly-once means") + " (Exercise Book 11, Unit C)"

# Chapter 1's prices in pence, written out again: an order costs price times tubs.
PRICES = {"SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275, "SKU-VANILLA": 250}

# Where a check stops a purchase, and what that leaves: (the door's answer,
# the store's state, whether the supplier then holds an order under its key).
FATES: dict[str, tuple[str, str, bool]] = {
    "unsent": ("", "NOT_SENT", False),
    "prepared": ("stopped after prepared", "PREPARED", False),
    "answered": ("stopped after answered", "PREPARED", True),
    "confirmed": ("CONFIRMED", "CONFIRMED", True),
    "rejected": ("rejected: key_reused", "REJECTED", True),
}
FINDINGS = {
    "unsent": "not_sent",
    "prepared": "missing",
    "answered": "found",
    "confirmed": "ok",
    "rejected": "rejected",
}


def random_orders(rng: random.Random, count: int) -> list[list[Any]]:
    return [[rng.choice(sorted(PRICES)), rng.randint(1, 15)] for _ in range(count)]


# Found from this file, not from the manifest: an autograder bundle holds the
# servers and the grader, and no book.
SERVER = Path(__file__).resolve().parents[4] / "book/textbook/servers/supplier_http.py"


def server_folder() -> Asks[str]:
    """A folder holding the book's desk, made by the grader: yielded before any question."""
    server = SERVER
    made = yield folder({"supplier_http.py": server.read_text(encoding="utf-8")})
    return f"{made}/supplier_http.py"


def desk(server: str, faults: list[str], name: str = "ledger.db") -> Asks[tuple[str, Any]]:
    """The supplier's desk in the sandbox, with a fresh ledger: its address and ledger."""
    ledger = scratch_path(name)
    url = yield call("supplier_file", server, ledger, faults)
    return url, ledger


def staged(
    rng: random.Random, server: str, fates: list[str]
) -> Asks[tuple[dict[str, Any], str, Any, list[list[Any]], dict[int, str]] | str]:
    """A store with one order per fate, each purchase stopped as its fate says.

    Answers (store, desk address, ledger, orders, the supplier order id each
    order's key holds), or a feedback line if the chapter's purchase did not
    do what it does.
    """
    url, ledger = yield from desk(server, [])
    path = scratch_path("lucy.db")
    orders = random_orders(rng, len(fates))
    ids = yield call("shop_file", path, orders)
    if ids != list(range(1, len(orders) + 1)):
        return "shop_file should record one order per [sku, tubs], numbered from 1."
    held: dict[int, str] = {}
    made = 0
    for order_id, fate in zip(ids, fates, strict=True):
        answer, _, at_supplier = FATES[fate]
        if fate == "unsent":
            continue
        if fate == "rejected":
            # Another body took the key first; the supplier made that order.
            yield call("take_key_file", path, url, order_id, rng.randint(16, 30))
        stop = {"prepared": "prepared", "answered": "answered"}.get(fate, "")
        if (yield call("purchase_file", path, url, order_id, stop)) != answer:
            return f"A purchase stopped after {stop or 'nothing'} should answer {answer!r}."
        if at_supplier:
            made += 1
            held[order_id] = f"SUP-{made:04d}"
    return path, url, ledger, orders, held


def shuffled_fates(rng: random.Random, count: int) -> list[str]:
    fates = list(FATES)
    chosen = [*fates, *(rng.choice(fates) for _ in range(count - len(fates)))]
    rng.shuffle(chosen)
    return chosen


@BOOK.baseline(
    points=2,
    section=S_RETRY,
    asks="A purchase whose answers are lost or refused with 503 is retried under one key: "
    "one CONFIRMED purchase and one ledger order per order, SUP-0001 upwards.",
    hint="Leave chapter 11's purchase as it is: every attempt carries the operation id.",
)
def ch11_lost_answers(rng: random.Random) -> Trial:
    server = yield from server_folder()
    faults = [rng.choice(["drop", "503", "ok"]) for _ in range(rng.randint(1, 4))]
    url, ledger = yield from desk(server, faults)
    path = scratch_path("lucy.db")
    orders = random_orders(rng, rng.randint(1, 3))
    ids = yield call("shop_file", path, orders)
    for order_id in ids:
        if (yield call("purchase_file", path, url, order_id, "")) != "CONFIRMED":
            return "Each purchase should end CONFIRMED, however its answers were lost."
    wanted = [[f"SUP-{n:04d}", sku, tubs] for n, (sku, tubs) in enumerate(orders, start=1)]
    if not same(wanted, (yield call("ledger_file", ledger))):
        return "The supplier's ledger should hold exactly one order per purchase."
    confirmed = [[n, "CONFIRMED", f"SUP-{n:04d}"] for n in range(1, len(orders) + 1)]
    return expect(
        same(confirmed, (yield call("purchases_file", path))),
        "Each purchase should name the supplier's order made under its key.",
    )


@BOOK.baseline(
    points=1,
    section=S_REFUSAL,
    asks="A purchase whose key already holds another body is refused key_reused, recorded "
    "REJECTED, and never sent under a new key.",
    hint="Leave chapter 11's purchase as it is: a 422 ends the send and is recorded.",
)
def ch11_refusal_stops(rng: random.Random) -> Trial:
    server = yield from server_folder()
    url, ledger = yield from desk(server, [])
    path = scratch_path("lucy.db")
    orders = random_orders(rng, 1)
    (order_id,) = yield call("shop_file", path, orders)
    other = rng.randint(16, 30)
    yield call("take_key_file", path, url, order_id, other)
    if (yield call("purchase_file", path, url, order_id, "")) != "rejected: key_reused":
        return "A purchase whose key holds another order should be refused key_reused."
    if not same([["SUP-0001", "SKU-VANILLA", other]], (yield call("ledger_file", ledger))):
        return "A refused purchase must never be sent again under a new key."
    return expect(
        same([[order_id, "REJECTED", None]], (yield call("purchases_file", path))),
        "A refused purchase should be recorded REJECTED.",
    )


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="purchase_report gives each order's sku, tubs, pence, state (NOT_SENT, PREPARED, "
    "CONFIRMED, REJECTED) and supplier order, in order id order.",
    hint="Join orders to purchases (LEFT JOIN: an order may have none yet); pence is quantity "
    "times the order's unit_cost_pence.",
)
def ex1_report_states(rng: random.Random) -> Trial:
    fates = shuffled_fates(rng, rng.randint(5, 7))
    server = yield from server_folder()
    made = yield from staged(rng, server, fates)
    if isinstance(made, str):
        return made
    path, _, _, orders, held = made
    wanted = [
        {
            "order": order_id,
            "sku": sku,
            "quantity": tubs,
            "pence": tubs * PRICES[sku],
            "state": FATES[fate][1],
            "supplier_order": held.get(order_id) if fate == "confirmed" else None,
        }
        for order_id, ((sku, tubs), fate) in enumerate(zip(orders, fates, strict=True), start=1)
    ]
    return expect(
        same(wanted, (yield call("report_file", path))),
        "The report should give every order, its pence, its purchase's state and its "
        "supplier order (only a CONFIRMED purchase has one).",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="purchase_report of a store with no orders is an empty list.",
    hint="No orders, no rows: the report reads the store and returns what it finds.",
)
def ex1_report_empty(rng: random.Random) -> Trial:
    path = scratch_path("lucy.db")
    yield call("shop_file", path, [])
    return expect(same([], (yield call("report_file", path))), "An empty store has no rows.")


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="reconcile finds each order not_sent, rejected, missing or found (in doubt), or ok, "
    "asking the supplier by operation id.",
    hint="Only the supplier knows a purchase in doubt: its look-up by the operation id answers "
    "it, for PREPARED and CONFIRMED purchases alike.",
)
def ex2_in_doubt(rng: random.Random) -> Trial:
    fates = shuffled_fates(rng, rng.randint(5, 7))
    server = yield from server_folder()
    made = yield from staged(rng, server, fates)
    if isinstance(made, str):
        return made
    path, url, _, _, _ = made
    wanted = [{"order": n, "finding": FINDINGS[fate]} for n, fate in enumerate(fates, start=1)]
    return expect(
        same(wanted, (yield call("reconcile_file", path, url))),
        "Each order's finding should follow its purchase's state and what the supplier holds "
        "under its key.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="reconcile against a supplier that lost its ledger finds every CONFIRMED purchase lost "
    "and every PREPARED one missing.",
    hint="A CONFIRMED purchase the supplier has no order for is lost, not ok.",
)
def ex2_lost(rng: random.Random) -> Trial:
    fates = shuffled_fates(rng, rng.randint(5, 6))
    server = yield from server_folder()
    made = yield from staged(rng, server, fates)
    if isinstance(made, str):
        return made
    path = made[0]
    empty, _ = yield from desk(server, [], "empty.db")
    lost = {"confirmed": "lost", "answered": "missing"}
    wanted = [
        {"order": n, "finding": lost.get(fate, FINDINGS[fate])}
        for n, fate in enumerate(fates, start=1)
    ]
    return expect(
        same(wanted, (yield call("reconcile_file", path, empty))),
        "Against an empty ledger, CONFIRMED purchases are lost and PREPARED ones missing.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="reconcile sends nothing and changes nothing: the ledger and the purchases are as "
    "they were.",
    hint="A reconciliation only asks: a look-up sends no order, and the store stays as it was.",
)
def ex2_sends_nothing(rng: random.Random) -> Trial:
    fates = shuffled_fates(rng, rng.randint(5, 6))
    server = yield from server_folder()
    made = yield from staged(rng, server, fates)
    if isinstance(made, str):
        return made
    path, url, ledger, _, _ = made
    ledger_before = yield call("ledger_file", ledger)
    purchases_before = yield call("purchases_file", path)
    findings = yield call("reconcile_file", path, url)
    if not isinstance(findings, list) or len(findings) != len(fates):
        return "reconcile should give one finding per order."
    if not same(ledger_before, (yield call("ledger_file", ledger))):
        return "reconcile sent an order: the supplier's ledger changed."
    return expect(
        same(purchases_before, (yield call("purchases_file", path))),
        "reconcile changed the store's purchases.",
    )


# --- Exercise 3 (Unit C, an open design task): settling, and a supplier's memory --------
#
# The unit gives `settle_unfinished(connection, desk, now, keeps_keys_for)` and
# what Lucy needs; the design is the learner's. What is graded is the
# supplier's ledger and the store's purchases only, through the door's
# `settle_file(path, url, later, keeps_keys_for)`, which settles `later`
# seconds after the purchases were stopped. A purchase Lucy's rule holds may
# be recorded however the learner likes, as long as chapter 11's resolving
# (the door's `resolve_file`) then leaves it alone.

DAY = 24 * 60 * 60
# The fates a purchase in doubt has: the store says PREPARED.
IN_DOUBT = ("prepared", "answered")


def confirmed_purchases(
    purchases: Any, orders: list[list[Any]], ledger: Any, sent: list[int], known: dict[int, str]
) -> str | None:
    """A feedback line unless `sent` orders each became one new ledger order, and nothing else.

    `known` maps the orders whose supplier order was already made to its id;
    every order in `sent` names a new order of the ledger with its sku and
    tubs, and the ledger holds nothing more than the known and the new.
    """
    if not isinstance(purchases, list) or not isinstance(ledger, list):
        return "The store's purchases or the supplier's ledger could not be read."
    named = {
        row[0]: row[2]
        for row in purchases
        if isinstance(row, list) and len(row) == 3 and row[1] == "CONFIRMED"
    }
    rows = {row[0]: row[1:] for row in ledger if isinstance(row, list) and len(row) == 3}
    new = set(rows) - set(known.values())
    if len(ledger) != len(known) + len(sent) or len(rows) != len(ledger):
        return "The supplier's ledger gained more orders, or fewer, than there were orders to send."
    for order_id in sent:
        sku, tubs = orders[order_id - 1]
        if named.get(order_id) not in new or rows[named[order_id]] != [sku, tubs]:
            return "An order that was never at the supplier did not become one order of its own."
    if len({named[order_id] for order_id in sent}) != len(sent):
        return "Two purchases named the same supplier order."
    return None


@BOOK.exercise(
    3,
    points=2,
    section=S_RESOLVE,
    asks="Settled soon after the stops, every unfinished purchase ends CONFIRMED, naming the "
    "order the supplier already held or one new order of its own, and nothing is bought twice.",
    hint="Soon after the stops, while the supplier still knew every key, a purchase was left "
    "unsettled, sent a second time, or confirmed as an order it was not.",
)
def ex3_recent_doubt_settled(rng: random.Random) -> Trial:
    fates = shuffled_fates(rng, rng.randint(5, 7))
    server = yield from server_folder()
    made = yield from staged(rng, server, fates)
    if isinstance(made, str):
        return made
    path, url, ledger, orders, held = made
    keeps = rng.randint(1, 7) * DAY
    # Lost answers and a busy desk while settling: the key must carry every retry.
    yield call("faults_file", url, [rng.choice(["drop", "503", "ok"]) for _ in range(3)])
    yield call("settle_file", path, url, rng.randint(0, keeps - 3600), keeps)
    purchases = yield call("purchases_file", path)
    statuses = [
        [n, "REJECTED" if fate == "rejected" else "CONFIRMED"]
        for n, fate in enumerate(fates, start=1)
    ]
    if not isinstance(purchases, list) or [row[:2] for row in purchases] != statuses:
        return "After settling, every purchase but the refused one is CONFIRMED."
    known = {n: held[n] for n in held if fates[n - 1] in ("answered", "confirmed")}
    for order_id, order in known.items():
        if purchases[order_id - 1][2] != order:
            return "A purchase the supplier already held names another order."
    # The refused one's key holds another body: that order is the supplier's, not ours.
    known.update({-n: held[n] for n in held if fates[n - 1] == "rejected"})
    sent = [n for n, fate in enumerate(fates, start=1) if fate in ("unsent", "prepared")]
    return confirmed_purchases(purchases, orders, (yield call("ledger_file", ledger)), sent, known)


def stale(rng: random.Random) -> tuple[int, int]:
    """How long the supplier keeps a key, and a settling later than that: (later, keeps)."""
    keeps = rng.randint(1, 3) * DAY
    return rng.randint(keeps + 3600, 10 * keeps), keeps


def untouched(fates: list[str], held: dict[int, str], purchases: Any) -> str | None:
    """A feedback line unless the confirmed and the refused purchases are as they were."""
    for order_id, fate in enumerate(fates, start=1):
        before = {
            "confirmed": [order_id, "CONFIRMED", held.get(order_id)],
            "rejected": [order_id, "REJECTED", None],
        }.get(fate)
        if before is not None and before not in purchases:
            return "A purchase that was already settled changed."
    return None


@BOOK.exercise(
    3,
    points=2,
    section=S_MEANING,
    asks="Settled after the supplier may have forgotten their keys, no purchase in doubt is sent "
    "again, not even by chapter 11's resolving afterwards; orders never sent are still bought.",
    hint="Long after the stops, against a supplier that had forgotten its keys, a purchase in "
    "doubt was bought a second time (by the settling, or by the resolving that came after it), "
    "or an order that had never been sent was not bought.",
)
def ex3_forgotten_doubt_held(rng: random.Random) -> Trial:
    fates = shuffled_fates(rng, rng.randint(5, 7))
    server = yield from server_folder()
    made = yield from staged(rng, server, fates)
    if isinstance(made, str):
        return made
    path, url, ledger, orders, held = made
    # The supplier keeps its orders and forgets their keys, as its terms allow.
    if (yield call("forget_file", ledger)) != len(held):
        return "The supplier's desk did not forget the keys of the orders it held."
    later, keeps = stale(rng)
    yield call("settle_file", path, url, later, keeps)
    purchases = yield call("purchases_file", path)
    if not isinstance(purchases, list):
        return "The store's purchases could not be read after settling."
    wrong = untouched(fates, held, purchases)
    if wrong is not None:
        return wrong
    sent = [n for n, fate in enumerate(fates, start=1) if fate == "unsent"]
    wrong = confirmed_purchases(purchases, orders, (yield call("ledger_file", ledger)), sent, held)
    if wrong is not None:
        return wrong
    in_doubt = {n for n, fate in enumerate(fates, start=1) if fate in IN_DOUBT}
    if any(row[0] in in_doubt and row[1] == "CONFIRMED" for row in purchases):
        return "A purchase in doubt was confirmed by a supplier that had no order for it."
    # The operator's command runs every morning: what Lucy's rule held stays held.
    yield call("resolve_file", path, url)
    return confirmed_purchases(
        (yield call("purchases_file", path)),
        orders,
        (yield call("ledger_file", ledger)),
        sent,
        held,
    )


@BOOK.exercise(
    3,
    points=1,
    section=S_MEANING,
    asks="Settled after the supplier may have forgotten their keys, a purchase in doubt the "
    "supplier still holds is confirmed as that order, and one it has no order for is not sent.",
    hint="Long after the stops, against a supplier that still remembered, a purchase in doubt it "
    "held was not confirmed as that order, or one it did not hold was sent.",
)
def ex3_remembered_doubt_confirmed(rng: random.Random) -> Trial:
    fates = shuffled_fates(rng, rng.randint(5, 7))
    server = yield from server_folder()
    made = yield from staged(rng, server, fates)
    if isinstance(made, str):
        return made
    path, url, ledger, orders, held = made
    later, keeps = stale(rng)
    yield call("settle_file", path, url, later, keeps)
    purchases = yield call("purchases_file", path)
    if not isinstance(purchases, list):
        return "The store's purchases could not be read after settling."
    wrong = untouched(fates, held, purchases)
    if wrong is not None:
        return wrong
    for order_id, fate in enumerate(fates, start=1):
        if fate == "answered" and [order_id, "CONFIRMED", held[order_id]] not in purchases:
            return "A purchase in doubt that the supplier held was not confirmed as that order."
    sent = [n for n, fate in enumerate(fates, start=1) if fate == "unsent"]
    return confirmed_purchases(purchases, orders, (yield call("ledger_file", ledger)), sent, held)
