"""Exercise Book 1: the checks for a submission's `morning_brief.py`.

The graded interface (exercises/book01/README.md):
`replenishment_need(row)`, `brief_snapshot(shop)`, `snapshot_json(shop, taken_at)`,
`build_brief_request(shop, taken_at)`, `morning_brief(model, shop, taken_at)` and
`brief_or_notice(environ, shop, taken_at)`.

Every expected value is written here: the snapshot text from `json.dumps` of
a dict this module built, the notices as literal sentences. Private fields
and their values, times and model names are random per run, so an answer
recorded from one run is useless in the next. No check needs a network: the
one "unreachable server" is a port on 127.0.0.1 where nothing listens (inside
a sandbox, its own loopback, where nothing ever does).
"""

from __future__ import annotations

import json
import random
import socket
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Book, Trial
from bookproof.grade.questions import Asks, Ref, attrs, call, expect, get, let, method, same

__all__ = ["BOOK"]

BOOK = Book(1, "Exercise Book 1: first model call", module="morning_brief", chapter="Chapter 1")

S_SHOP = BOOK.section("1.1 The shop as data")
S_SNAPSHOT = BOOK.section("1.2 The snapshot")
S_REQUEST = BOOK.section("1.3 Composing the request")
S_SENDING = BOOK.section("1.4 Sending it")
S_FAILS = BOOK.section("1.9 When a real call fails")
S_UNIT_A = BOOK.section("1.12 Exercises") + " (Exercise Book 1, Unit A)"
S_UNIT_B = BOOK.section("1.12 Exercises") + " (Exercise Book 1, Unit B)"

BRIEF_FIELDS = ("sku", "name", "on_hand", "reorder_point")
FUNCTIONS = (
    "replenishment_need",
    "brief_snapshot",
    "snapshot_json",
    "build_brief_request",
    "morning_brief",
    "brief_or_notice",
)

# Chapter 1's recorded reply, written out again rather than imported: the
# expected text must not come from the code a check is about.
RECORDED_BRIEF = """\
Good morning, Lucy. Here is today's brief, from the stock snapshot you sent.

Re-order today:
- Vanilla (SKU-VANILLA): 2 tubs on hand, target 8. Order 6.
- Strawberry (SKU-STRAWBERRY): 1 tub on hand, target 5. Order 4.

No order needed:
- Chocolate (SKU-CHOCOLATE): 7 tubs on hand, target 6.

These figures are only as fresh as the snapshot. If a delivery has arrived \
since it was taken, count the freezer again before you order."""


# --- data this book chooses --------------------------------------------------------


def _private_shop(rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """Chapter 1's shop with private fields added; also the strings that must never be sent."""
    # Field names and notes only: a margin's digits could also be part of a date.
    secrets: list[str] = ["margin_pence"]
    rows = fx.shop_rows()
    for row in rows:
        note = "secret-token-" + fx.token(rng, 10)
        field = "note_" + fx.token(rng, 5)
        row["margin_pence"] = rng.randint(1000, 9999)
        row[field] = note
        secrets += [note, field]
    rng.shuffle(rows)
    shop = fx.shop(rows)
    phone_key = "owner_phone_" + fx.token(rng, 4)
    shop[phone_key] = "secret-token-" + fx.token(rng, 10)
    secrets += [phone_key, shop[phone_key]]
    return shop, secrets


def _minimal(shop: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": shop["name"],
        "products": [{field: row[field] for field in BRIEF_FIELDS} for row in shop["products"]],
    }


def _stamped_text(shop: dict[str, Any], taken_at: str) -> str:
    return json.dumps({**_minimal(shop), "taken_at": taken_at}, indent=2, sort_keys=True)


def _taken_at(rng: random.Random) -> str:
    return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T07:{rng.randint(0, 59):02d}"


def _closed_port() -> int:
    # Bind, read the number, close: nothing listens there, so a connection is refused.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _messages(request: Ref) -> Asks[tuple[Any, Any]]:
    """Each message of a kept request as plain data: what the client would send."""
    first = yield method(request, "__getitem__", 0, keep=True)
    system = yield method(first, "model_dump")
    second = yield method(request, "__getitem__", 1, keep=True)
    user = yield method(second, "model_dump")
    return (system, user)


# --- chapter 1, as the starter already has it ---------------------------------------


@BOOK.baseline(
    points=1,
    section=S_SENDING,
    asks="morning_brief.py imports and defines the six functions of the exercise book.",
    hint="morning_brief.py must import cleanly and define: " + ", ".join(FUNCTIONS) + ".",
)
def imports(rng: random.Random) -> Trial:
    found = yield attrs(*FUNCTIONS)
    return expect(found == dict.fromkeys(FUNCTIONS, True), "A required function is missing.")


@BOOK.baseline(
    points=1,
    section=S_SHOP,
    asks="replenishment_need gives 6, 0 and 4, and 0 (never negative) above target.",
    hint="replenishment_need must be max(0, reorder_point - on_hand).",
)
def ch1_need(rng: random.Random) -> Trial:
    target = rng.randint(4, 30)
    above = {"sku": "SKU-X", "name": "X", "on_hand": rng.randint(20, 40), "reorder_point": 10}
    below = {"sku": "SKU-Y", "name": "Y", "on_hand": 3, "reorder_point": target}
    got = []
    for row in [*fx.shop_rows(), above, below]:
        got.append((yield call("replenishment_need", row)))
    if got[:3] != [6, 0, 4]:
        return "Expected needs of 6 (vanilla), 0 (chocolate) and 4 (strawberry)."
    return expect(
        got == [6, 0, 4, 0, target - 3],
        "A flavour above its target must need 0, never less.",
    )


@BOOK.baseline(
    points=1,
    section=S_SENDING,
    asks="With no SOVEREIGN_MODEL set, brief_or_notice returns the recorded offline brief.",
    hint="brief_or_notice({}, shop, taken_at) must return the offline model's reply text.",
)
def ch1_offline_brief(rng: random.Random) -> Trial:
    brief = yield call("brief_or_notice", {}, fx.shop(), _taken_at(rng))
    return expect(
        brief == RECORDED_BRIEF, "Offline, the brief should be the recorded reply, unchanged."
    )


# --- exercise 1: only the brief's fields are sent ------------------------------------


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="brief_snapshot keeps the shop's name and only sku, name, on_hand, reorder_point.",
    hint="The brief's snapshot held something other than the shop's name and its products with "
    "only the four brief fields each.",
)
def ex1_fields_only(rng: random.Random) -> Trial:
    shop, _ = _private_shop(rng)
    snapshot = yield call("brief_snapshot", shop)
    if not isinstance(snapshot, dict):
        return "brief_snapshot should return a plain dict."
    return expect(
        snapshot == _minimal(shop),
        "The snapshot should hold the name and, per product in order, only the 4 fields.",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="brief_snapshot leaves the caller's shop as it was, private fields included.",
    hint="After the snapshot was taken, the shop the function was given had lost or changed "
    "fields.",
    requires=ex1_fields_only,
)
def ex1_shop_unchanged(rng: random.Random) -> Trial:
    shop, _ = _private_shop(rng)
    original = json.loads(json.dumps(shop))
    kept = yield let(shop)
    yield call("brief_snapshot", kept, keep=True)
    after = yield get(kept)
    return expect(after == original, "brief_snapshot changed the shop it was given.")


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="No private field or value appears in the snapshot text or the request.",
    hint="A private field of the shop reached the snapshot's JSON or the request sent to the "
    "model.",
)
def ex1_private_not_sent(rng: random.Random) -> Trial:
    shop, secrets = _private_shop(rng)
    taken_at = _taken_at(rng)
    text = yield call("snapshot_json", shop, taken_at)
    request = yield call("build_brief_request", shop, taken_at, keep=True)
    system, user = yield from _messages(request)
    if not isinstance(text, str):
        return "snapshot_json should return text and the request two messages."
    sent = json.dumps([text, system, user])
    return expect(
        not any(secret in sent for secret in secrets),
        "A private field or value reached the text sent to the model.",
    )


# --- exercise 2: the snapshot says when it was taken ---------------------------------


@BOOK.exercise(
    2,
    points=2,
    section=S_SNAPSHOT,
    asks="snapshot_json adds taken_at and stays stable JSON (indent 2, sorted keys).",
    hint="The stamped snapshot was not the brief's fields plus the moment it was taken, "
    "written as the chapter writes JSON (indented, keys sorted).",
)
def ex2_taken_at(rng: random.Random) -> Trial:
    shop, _ = _private_shop(rng)
    plain = fx.shop()
    first, second = _taken_at(rng), _taken_at(rng)
    got = [
        (yield call("snapshot_json", shop, first)),
        (yield call("snapshot_json", plain, second)),
    ]
    if not all(isinstance(text, str) for text in got):
        return "snapshot_json should return text."
    try:
        parsed = [json.loads(text) for text in got]
    except ValueError:
        return "snapshot_json should return JSON text."
    stamps = [p.get("taken_at") if isinstance(p, dict) else None for p in parsed]
    if stamps != [first, second]:
        return "The JSON should have a top-level taken_at holding the time given."
    return expect(
        got == [_stamped_text(shop, first), _stamped_text(plain, second)],
        "The stamped JSON was not indented by 2 with its keys sorted, so it is not stable.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_REQUEST,
    asks="The request is a system message naming taken_at, then the stamped snapshot.",
    hint="The request did not carry a system message that mentions when the snapshot was "
    "taken, followed by the stamped snapshot.",
)
def ex2_request(rng: random.Random) -> Trial:
    shop = fx.shop()
    taken_at = _taken_at(rng)
    request = yield call("build_brief_request", shop, taken_at, keep=True)
    length = yield method(request, "__len__")
    if length != 2:
        return "The request should hold exactly two messages."
    system, user = yield from _messages(request)
    if system.get("role") != "system" or user.get("role") != "user":
        return "The first message should be the system rules, the second the user's data."
    if "taken_at" not in str(system.get("content")):
        return "The system message should tell the model what taken_at means."
    return expect(
        _stamped_text(shop, taken_at) in str(user.get("content")),
        "The user message did not carry the stamped snapshot unchanged.",
    )


# --- exercise 3: a failed call becomes a notice ---------------------------------------


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_B,
    asks="A missing key or an unknown SOVEREIGN_MODEL gives a one-line 'Brief unavailable' notice.",
    hint="A model that is not configured made the brief fail instead of giving the one-line "
    "notice Unit B describes.",
)
def ex3_config_notice(rng: random.Random) -> Trial:
    unknown = f"gemini:{fx.token(rng, 6)}"
    expected = [
        "Brief unavailable: OPENAI_API_KEY is not set; api.openai.com needs a key "
        "(or use SOVEREIGN_MODEL=offline)",
        "Brief unavailable: ANTHROPIC_API_KEY is not set; the Anthropic API needs a key "
        "(or use SOVEREIGN_MODEL=offline)",
        f"Brief unavailable: SOVEREIGN_MODEL='{unknown}' is not one of: "
        "offline, openai:<model>, anthropic:<model>",
    ]
    environments = [
        {"SOVEREIGN_MODEL": "openai:gpt-4o-mini"},
        {"SOVEREIGN_MODEL": f"anthropic:claude-{fx.token(rng, 4)}"},
        {"SOVEREIGN_MODEL": unknown},
    ]
    shop, taken_at = fx.shop(), _taken_at(rng)
    answers = []
    for environ in environments:
        answers.append((yield call("brief_or_notice", environ, shop, taken_at, raises=True)))
    if any(answer.status == "raised" for answer in answers):
        return "brief_or_notice raised instead of returning a notice."
    return expect(
        [answer.value for answer in answers] == expected,
        "Expected exactly 'Brief unavailable: ' followed by the error's one-line message.",
    )


@BOOK.exercise(
    3,
    points=2,
    section=S_FAILS,
    asks="An unreachable server gives a notice with the error and never the key.",
    hint="When the model could not be reached, the notice was not the one Unit B describes, or "
    "it carried more than the error's one line.",
)
def ex3_unreachable_notice(rng: random.Random) -> Trial:
    port = _closed_port()
    key = "secret-token-" + fx.token(rng, 16)
    environ = {
        "SOVEREIGN_MODEL": f"openai:llama-{fx.token(rng, 4)}",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": key,
    }
    expected = (
        f"Brief unavailable: cannot reach http://127.0.0.1:{port}/v1/chat/completions: "
        "connection refused"
    )
    notice = yield call("brief_or_notice", environ, fx.shop(), _taken_at(rng), raises=True)
    if notice.status == "raised":
        return "brief_or_notice raised instead of returning a notice."
    if not isinstance(notice.value, str):
        return "brief_or_notice should return text."
    if key in notice.value:
        return "The notice contains the API key."
    return expect(
        notice.value == expected,
        "The notice was not 'Brief unavailable: ' followed by the error's own message.",
    )


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_B,
    asks="A shop with no products still raises KeyError: only model errors become notices.",
    hint="A defect in the shop's own data was turned into a quiet notice; only a failure of "
    "the model call may be.",
    requires=ex3_config_notice,
)
def ex3_defects_stay_loud(rng: random.Random) -> Trial:
    broken = {"name": fx.SHOP_NAME}
    result = yield call("brief_or_notice", {}, broken, _taken_at(rng), raises=True)
    return expect(
        result.raised_a("KeyError"),
        "A shop with no products must raise KeyError, not become a notice.",
    )


# --- exercise 4 (Unit C): a brief for a shop of many flavours, an open design task -----
#
# The unit gives `focus_snapshot(shop, limit)` and what Lucy needs, and leaves
# the choice to the learner. What is graded is the snapshot as data: how many
# products, which ones (by their needs), their fields and numbers, the count
# of those left out, and the shop it was given, read back unchanged. The order
# of the products kept is the design's own.

S_UNIT_C = BOOK.section("1.2 The snapshot") + " (Exercise Book 1, Unit C)"


def _row(rng: random.Random, on_hand: int, reorder_point: int) -> dict[str, Any]:
    return {
        "sku": fx.sku(rng),
        "name": fx.token(rng, 6).capitalize(),
        "on_hand": on_hand,
        "reorder_point": reorder_point,
    }


def _big_shop(rng: random.Random, needing: int, fine: int) -> dict[str, Any]:
    """A shop of many flavours, in an order no rule of thumb gets right.

    First the flavours that need little but hold least (nothing on hand, a
    target of 1 or 2), then those that need nothing, then those that need
    the most, last: the first products of the list, or the emptiest, are not
    the largest needs.
    """
    small = [_row(rng, 0, rng.randint(1, 2)) for _ in range(rng.randint(1, 3))]
    idle = [_row(rng, rng.randint(10, 30), rng.randint(1, 9)) for _ in range(fine)]
    large = [_row(rng, rng.randint(3, 9), rng.randint(20, 40)) for _ in range(needing)]
    return fx.shop([*small, *idle, *large])


def _need(row: dict[str, Any]) -> int:
    return max(0, int(row["reorder_point"]) - int(row["on_hand"]))


def _focused(shop: dict[str, Any], limit: int, snapshot: Any) -> str | None:
    """What is wrong with `snapshot` as a focus of `shop` within `limit`, or None."""
    if not isinstance(snapshot, dict) or snapshot.get("name") != shop["name"]:
        return "The snapshot was not a dict with the shop's name."
    products = snapshot.get("products")
    rows = {row["sku"]: row for row in shop["products"]}
    if not isinstance(products, list) or len(products) > limit:
        return f"The snapshot held more than {limit} products, or no list of them."
    skus = [product.get("sku") if isinstance(product, dict) else None for product in products]
    if len(set(skus)) != len(skus) or not all(
        sku in rows and same({f: rows[sku][f] for f in BRIEF_FIELDS}, product)
        for sku, product in zip(skus, products, strict=True)
    ):
        return "A product in the snapshot was not one of the shop's, once, with its four fields."
    if not same(len(rows) - len(products), snapshot.get("left_out")):
        return "The snapshot did not say how many of the shop's products it left out."
    return None


@BOOK.exercise(
    4,
    points=2,
    section=S_UNIT_C,
    asks="A focused snapshot holds the shop's name, at most the limit's products, each the "
    "shop's own with the four brief fields, and how many it left out; the shop is unchanged.",
    hint="A focused snapshot held more products than its limit, a product that was not the "
    "shop's own with its four fields, a wrong count of the products left out, or the shop it "
    "was given came back changed.",
)
def ex4_focus_within_limit(rng: random.Random) -> Trial:
    shop = _big_shop(rng, needing=rng.randint(2, 5), fine=rng.randint(2, 5))
    limit = rng.randint(1, len(shop["products"]) - 1)
    original = json.loads(json.dumps(shop))
    kept = yield let(shop)
    snapshot = yield call("focus_snapshot", kept, limit)
    wrong = _focused(original, limit, snapshot)
    if wrong is not None:
        return wrong
    after = yield get(kept)
    return expect(same(original, after), "The shop given to the snapshot was changed.")


@BOOK.exercise(
    4,
    points=2,
    section=S_UNIT_C,
    asks="The products that need tubs are kept first: when more need tubs than fit, none left "
    "out needs more than one kept; when they fit, none is left out.",
    hint="A focused snapshot left out a product that needed more tubs than one it kept, left "
    "out a product that needed tubs while there was room for it, or held more products than "
    "its limit.",
)
def ex4_focus_largest_needs(rng: random.Random) -> Trial:
    crowded = _big_shop(rng, needing=rng.randint(3, 6), fine=rng.randint(1, 4))
    needing = [row for row in crowded["products"] if _need(row) > 0]
    limit = rng.randint(1, len(needing) - 1)
    snapshot = yield call("focus_snapshot", crowded, limit)
    wrong = _focused(crowded, limit, snapshot)
    if wrong is not None:
        return wrong
    kept = {product["sku"] for product in snapshot["products"]}
    left = [_need(row) for row in crowded["products"] if row["sku"] not in kept]
    shown = [_need(row) for row in crowded["products"] if row["sku"] in kept]
    if max(left) > min(shown):
        return (
            f"With a limit of {limit}, a product that needs {max(left)} tubs was left out while "
            f"one that needs {min(shown)} was kept."
        )
    roomy = _big_shop(rng, needing=rng.randint(1, 3), fine=rng.randint(3, 6))
    needing = [row for row in roomy["products"] if _need(row) > 0]
    limit = rng.randint(len(needing), len(roomy["products"]) - 1)
    snapshot = yield call("focus_snapshot", roomy, limit)
    wrong = _focused(roomy, limit, snapshot)
    if wrong is not None:
        return wrong
    kept = {product["sku"] for product in snapshot["products"]}
    return expect(
        all(row["sku"] in kept for row in needing),
        f"With room for {limit} products, a product that needs tubs was left out.",
    )


@BOOK.exercise(
    4,
    points=1,
    section=S_UNIT_C,
    asks="A limit that is not a whole number of at least one product raises.",
    hint="A limit of 0, below 0, 2.5, True or text was taken instead of refused.",
)
def ex4_focus_limit_checked(rng: random.Random) -> Trial:
    shop = _big_shop(rng, needing=2, fine=2)
    for limit in (0, -rng.randint(1, 5), 2.5, True, "3"):
        answer = yield call("focus_snapshot", shop, limit, raises=True)
        if answer.status != "raised":
            return f"A limit of {limit!r} was taken."
    return None
