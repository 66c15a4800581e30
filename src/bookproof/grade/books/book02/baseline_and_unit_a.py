"""Exercise Book 2: the checks for a submission's `shop_tools.py` and its mango tests.

The graded interface (exercises/book02/README.md):
`replenishment_need(row) -> int` and
`build_tools(shop, prices, *, extra_tools=(), allowed=None)` returning a
dispatcher with `schemas()` and `invoke(call)`; and the learner's tests,
`test_book02_mango.py`.

A new product is a data change in chapter 2's code already, so Unit A's
deliverable is tests that pin it with numbers worked out by hand; they are
graded by the faulty versions of the reference they catch. Everything else
is graded by behaviour, against numbers computed here from data this module
chose: chapter 2's fixed figures (1,300, 1,400, 9, 1,500 ...) beside
randomised extras, so a submission can neither precompute an answer nor have
its own helper mark itself right.

The book in two files: this one declares it and holds chapter 2's checks and
Unit A's (a new product, and the mango tests); `unit_b` holds Unit B
(reserved stock through one function, a tool registered but not allowed).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import JSON, Book, ObjectKind, Surface, Trial, Visibility
from bookproof.grade.questions import (
    Asks,
    Ref,
    attrs,
    call,
    expect,
    get,
    let,
    method,
    same,
    set_item,
    tool_call,
)

__all__ = ["BOOK"]

BOOK = Book(2, "Exercise Book 2: reliable shop tools", module="shop_tools", chapter="Chapter 2")

# The chapter's sections, by their headings, so feedback sends a learner back
# to the page that teaches the behaviour a check found missing.
S_MODELS = BOOK.section("2.4 The three argument models")
S_FUNCTIONS = BOOK.section("2.5 Deterministic shop functions")
S_TOOL = BOOK.section("2.6 The tool record")
S_DISPATCHER = BOOK.section("2.8 The dispatcher and its order of checks")
S_OWN_SHOP = BOOK.section("2.9 One dispatcher, its own shop")
S_REFUSALS = BOOK.section("2.10 Refusals, one by one")
S_UNIT_A = BOOK.section("2.15 Exercises") + " (Exercise Book 2, Unit A)"
S_UNIT_B = BOOK.section("2.15 Exercises") + " (Exercise Book 2, Unit B)"

# Unit A's faulty versions, but for mango's own price, are shown to a learner
# after the due date (exercises/GRADING.md says why): named on every hand-in,
# they would turn "what could go wrong?" into a list to write tests against.
LATER: Visibility = "after_due_date"

MANGO = {"sku": "SKU-MANGO", "name": "Mango", "on_hand": 1, "reorder_point": 5}
SHOP_TOOLS = list(fx.SHOP_TOOLS)


# --- helpers -----------------------------------------------------------------------


def _calls(rng: random.Random) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """Hand-made requests under random ids, so an answer recorded in one run is useless later."""

    def make(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return tool_call(fx.call_id(rng), name, arguments)

    return make


def _report_is(expected: list[list[Any]], observation: Any, sku: str | None = None) -> bool:
    """Type-strict: a need of True is not a need of 1, nor 6.0 a need of 6."""
    view = fx.report_view(observation)
    if view is None:
        return False
    if sku is not None:
        view = [row for row in view if row[0] == sku]
    return same(expected, view)


def _mango_shop() -> dict[str, Any]:
    return fx.shop([*fx.shop_rows(), dict(MANGO)])


def _dispatcher(shop: dict[str, Any], prices: dict[str, int], **options: Any) -> Asks[Ref]:
    """Build a dispatcher in the child and hand back its Ref."""
    kept: Ref = yield call("build_tools", shop, prices, keep=True, **options)
    return kept


def _invoke(d: Ref, request: dict[str, Any]) -> Any:
    return method(d, "invoke", request)


# --- chapter 2, as the starter already has it -----------------------------------------


@BOOK.baseline(
    points=1,
    section=S_OWN_SHOP,
    asks="shop_tools.py imports and defines build_tools and replenishment_need.",
    hint="shop_tools.py must import cleanly and define build_tools and replenishment_need.",
)
def imports(rng: random.Random) -> Trial:
    found = yield attrs("build_tools", "replenishment_need")
    return expect(
        same({"build_tools": True, "replenishment_need": True}, found),
        "A required function is missing.",
    )


@BOOK.baseline(
    points=1,
    section=S_FUNCTIONS,
    asks="list_stock reports every row with its need, sorted by sku.",
    hint="list_stock must return every row with its `needed`, sorted by sku.",
)
def ch2_stock_report(rng: random.Random) -> Trial:
    extra = fx.extra_product(rng)
    rows = [*fx.shop_rows(), extra]
    rng.shuffle(rows)  # the report sorts by sku, whatever order the shop keeps
    prices = fx.prices() | {extra["sku"]: rng.randint(100, 999)}
    d = yield from _dispatcher(fx.shop(rows), prices)
    report = yield _invoke(d, _calls(rng)("list_stock", {}))
    return expect(_report_is(fx.expected_report(rows), report), "The stock report is not right.")


@BOOK.baseline(
    points=1,
    section=S_FUNCTIONS,
    asks="The 6-tub vanilla draft costs 1,500 pence and leaves stock at 2.",
    hint="The 6-tub vanilla draft must cost 1,500 pence, say DRAFT and leave stock at 2.",
)
def ch2_vanilla_draft(rng: random.Random) -> Trial:
    tc = _calls(rng)
    d = yield from _dispatcher(fx.shop(), fx.prices())
    draft = yield _invoke(d, tc("draft_order", {"sku": fx.VANILLA, "quantity": 6}))
    report = yield _invoke(d, tc("list_stock", {}))
    if not same(fx.ok(fx.draft(fx.VANILLA, 6, 250)), draft):
        return "The vanilla draft is not the 1,500-pence DRAFT for 6 tubs."
    return expect(
        _report_is([[fx.VANILLA, 2, 8, 6]], report, fx.VANILLA), "Drafting changed the stock."
    )


@BOOK.baseline(
    points=1,
    section=S_MODELS,
    asks="True, '6', 6.0, 0, 1001 and an extra key are all refused as invalid_arguments.",
    hint="Strict argument models must refuse True, '6', 6.0, 0, 1001 and extra keys.",
)
def ch2_strict_arguments(rng: random.Random) -> Trial:
    tc = _calls(rng)
    bad: list[tuple[str, dict[str, Any]]] = [
        ("draft_order", {"sku": fx.VANILLA, "quantity": True}),
        ("draft_order", {"sku": fx.VANILLA, "quantity": "6"}),
        ("draft_order", {"sku": fx.VANILLA, "quantity": 6.0}),
        ("draft_order", {"sku": fx.VANILLA, "quantity": 0}),
        ("draft_order", {"sku": fx.VANILLA, "quantity": 1001}),
        ("draft_order", {"sku": fx.VANILLA, "quantity": 6, "approved": True}),
        ("draft_order", {"sku": fx.VANILLA}),
        ("supplier", {"sku": rng.randint(1, 99)}),
        ("list_stock", {fx.token(rng, 5): 1}),
    ]
    d = yield from _dispatcher(fx.shop(), fx.prices())
    for name, arguments in bad:
        answer = yield _invoke(d, tc(name, arguments))
        if not same(fx.refused("invalid_arguments"), answer):
            return "At least one malformed argument was accepted or coerced."
    return None


@BOOK.baseline(
    points=1,
    section=S_DISPATCHER,
    asks="An unknown tool such as run_shell is refused as tool_not_allowed.",
    hint="A name the dispatcher does not know must get {'ok': False, 'error': 'tool_not_allowed'}.",
)
def ch2_unknown_tool(rng: random.Random) -> Trial:
    tc = _calls(rng)
    d = yield from _dispatcher(fx.shop(), fx.prices())
    shell = yield _invoke(d, tc("run_shell", {"command": "ls"}))
    other = yield _invoke(d, tc("tool_" + fx.token(rng), {}))
    refusal = fx.refused("tool_not_allowed")
    return expect(same(refusal, shell) and same(refusal, other), "An unknown tool ran.")


@BOOK.baseline(
    points=1,
    section=S_REFUSALS,
    asks="Unknown skus, a wrong quantity and changed stock all fail as tool_failed.",
    hint="Unknown skus and quantities that differ from the current need must fail as tool_failed.",
)
def ch2_business_refusals(rng: random.Random) -> Trial:
    tc = _calls(rng)
    unknown = fx.sku(rng)
    moved = fx.shop_rows()
    moved[0]["on_hand"] = 9  # a delivery: vanilla now above target, so the old 6 is stale
    d = yield from _dispatcher(fx.shop(), fx.prices())
    answers = [
        (yield _invoke(d, tc("supplier", {"sku": unknown}))),
        (yield _invoke(d, tc("draft_order", {"sku": unknown, "quantity": 1}))),
        (yield _invoke(d, tc("draft_order", {"sku": fx.VANILLA, "quantity": 8}))),
    ]
    after = yield from _dispatcher(fx.shop(moved), fx.prices())
    answers.append((yield _invoke(after, tc("draft_order", {"sku": fx.VANILLA, "quantity": 6}))))
    return expect(
        all(same(fx.refused("tool_failed"), answer) for answer in answers),
        "A request that contradicts the shop's data was not refused as tool_failed.",
    )


@BOOK.baseline(
    points=1,
    section=S_DISPATCHER,
    asks="A dispatcher whose allowlist omits draft_order neither shows nor runs it.",
    hint="`allowed` must limit both schemas() and invoke(): an omitted tool is refused.",
)
def ch2_read_only(rng: random.Random) -> Trial:
    tc = _calls(rng)
    d = yield from _dispatcher(fx.shop(), fx.prices(), allowed=["supplier", "list_stock"])
    schemas = yield method(d, "schemas")
    draft = yield _invoke(d, tc("draft_order", {"sku": fx.VANILLA, "quantity": 6}))
    quote = yield _invoke(d, tc("supplier", {"sku": fx.CHOCOLATE}))
    if fx.schema_names(schemas) != ["list_stock", "supplier"]:
        return "schemas() should list only list_stock and supplier here."
    return expect(
        same(fx.refused("tool_not_allowed"), draft)
        and same(fx.ok(fx.quote(fx.CHOCOLATE, 300)), quote),
        "The omitted draft_order ran, or an allowed tool was refused.",
    )


@BOOK.baseline(
    points=1,
    section=S_OWN_SHOP,
    asks="Each dispatcher works on its own copy of the shop's rows.",
    hint="build_tools must copy the rows: the caller's shop must neither change nor leak in.",
)
def ch2_own_copy(rng: random.Random) -> Trial:
    later = rng.randint(9, 40)
    shop = yield let(fx.shop())
    d = yield call("build_tools", shop, fx.prices(), keep=True)
    # The caller's own data changes after construction; a copy must not see it.
    yield set_item(shop, ["products", 0, "on_hand"], later)
    report = yield _invoke(d, _calls(rng)("list_stock", {}))
    after = yield get(shop)
    if not _report_is([[fx.VANILLA, 2, 8, 6]], report, fx.VANILLA):
        return "A change to the caller's shop after build_tools reached the dispatcher."
    expected = fx.shop()
    expected["products"][0]["on_hand"] = later
    return expect(same(expected, after), "The dispatcher changed the caller's shop.")


@BOOK.baseline(
    points=1,
    section=S_TOOL,
    asks="schemas() lists the three shop tools, sorted by name, as function schemas.",
    hint="schemas() must return the allowed tools' function schemas sorted by name.",
)
def ch2_schemas(rng: random.Random) -> Trial:
    d = yield from _dispatcher(fx.shop(), fx.prices())
    schemas = yield method(d, "schemas")
    if fx.schema_names(schemas) != SHOP_TOOLS:
        return "Expected draft_order, list_stock, supplier, in that order."
    draft = schemas[0]["function"]["parameters"]
    properties = draft.get("properties")
    return expect(
        isinstance(properties, dict)
        and sorted(properties) == ["quantity", "sku"]
        and draft.get("additionalProperties") is False,
        "draft_order's parameters should be sku and quantity, extra keys forbidden.",
    )


@BOOK.baseline(
    points=1,
    section=S_FUNCTIONS,
    asks="A new product given only as data (mango at 325 pence, and one the grader invents) "
    "is reported, quoted and drafted correctly.",
    hint="A product added only to `shop` and `prices` must work through all three tools.",
)
def ch2_new_product(rng: random.Random) -> Trial:
    tc = _calls(rng)
    mango = yield from _dispatcher(_mango_shop(), fx.prices() | {"SKU-MANGO": 325})
    draft = yield _invoke(mango, tc("draft_order", {"sku": "SKU-MANGO", "quantity": 4}))
    mango_report = yield _invoke(mango, tc("list_stock", {}))
    if not same(fx.ok(fx.draft("SKU-MANGO", 4, 325)), draft):
        return "Expected a DRAFT of 4 mango tubs at 325 pence: 1,300 pence in all."
    if not _report_is([["SKU-MANGO", 1, 5, 4]], mango_report, "SKU-MANGO"):
        return "Mango stock should stay at 1, need 4."
    new = fx.extra_product(rng)
    unit = rng.randint(101, 999)
    rows = [*fx.shop_rows(), new]
    d = yield from _dispatcher(fx.shop(rows), fx.prices() | {new["sku"]: unit})
    report = yield _invoke(d, tc("list_stock", {}))
    quote = yield _invoke(d, tc("supplier", {"sku": new["sku"]}))
    new_draft = yield _invoke(d, tc("draft_order", {"sku": new["sku"], "quantity": fx.need(new)}))
    if not _report_is(fx.expected_report(rows), report):
        return "A new product is missing from list_stock, or its need is wrong."
    return expect(
        same(fx.ok(fx.quote(new["sku"], unit)), quote)
        and same(fx.ok(fx.draft(new["sku"], fx.need(new), unit)), new_draft),
        "A new product's quote or draft does not use its own price and need.",
    )


@BOOK.baseline(
    points=1,
    section=S_TOOL,
    asks="Mango at 350 pence costs 1,400 with the same schemas: a price is data.",
    hint="A price change to 350 must give 1,400 with schemas() unchanged.",
)
def ch2_price_is_data(rng: random.Random) -> Trial:
    old = yield from _dispatcher(_mango_shop(), fx.prices() | {"SKU-MANGO": 325})
    d = yield from _dispatcher(_mango_shop(), fx.prices() | {"SKU-MANGO": 350})
    before = yield method(old, "schemas")
    draft = yield _invoke(d, _calls(rng)("draft_order", {"sku": "SKU-MANGO", "quantity": 4}))
    after = yield method(d, "schemas")
    if not same(fx.ok(fx.draft("SKU-MANGO", 4, 350)), draft):
        return "Expected 4 mango tubs at 350 pence: 1,400 pence in all."
    return expect(
        fx.schema_names(before) is not None and same(before, after),
        "Changing a price changed schemas(): prices must stay data, not schema.",
    )


@BOOK.baseline(
    points=1,
    section=S_REFUSALS,
    asks="A product with no price fails visibly instead of borrowing or inventing one.",
    hint="When mango has no price, supplier and draft_order must fail, never use another price.",
)
def ch2_missing_price(rng: random.Random) -> Trial:
    tc = _calls(rng)
    d = yield from _dispatcher(_mango_shop(), fx.prices())
    quote = yield _invoke(d, tc("supplier", {"sku": "SKU-MANGO"}))
    draft = yield _invoke(d, tc("draft_order", {"sku": "SKU-MANGO", "quantity": 4}))
    vanilla = yield _invoke(d, tc("draft_order", {"sku": fx.VANILLA, "quantity": 6}))
    for answer in (quote, draft):
        if not isinstance(answer, dict):
            return "The request should come back as a refusal, not break the dispatcher."
        if answer.get("ok") is not False:
            return "Mango has no price, yet a quote or draft came back with one."
    return expect(
        same(fx.ok(fx.draft(fx.VANILLA, 6, 250)), vanilla),
        "The products that do have prices should still draft normally.",
    )


# --- exercise 1: a new product is data; prove it with tests ---------------------------


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="Two rows with the same sku are refused with ValueError at construction.",
    hint="A price list with two rows under one sku was accepted without an error.",
)
def ex1_duplicate_sku(rng: random.Random) -> Trial:
    twin = {**fx.shop_rows()[0], "on_hand": rng.randint(0, 20)}
    extra = fx.extra_product(rng)
    answers = [
        (yield call("build_tools", fx.shop([*fx.shop_rows(), twin]), fx.prices(), raises=True)),
        (
            yield call(
                "build_tools",
                fx.shop([extra, *fx.shop_rows(), {**extra, "name": "Copy"}]),
                fx.prices() | {extra["sku"]: 200},
                raises=True,
            )
        ),
    ]
    return expect(
        all(answer.raised_a("ValueError") for answer in answers),
        "A shop with two rows under one sku was accepted.",
    )


MANGO_TESTS = BOOK.learner_tests(
    exercise=1,
    file="test_book02_mango.py",
    section=S_UNIT_A,
    surface=Surface(
        functions={"build_tools": "Dispatcher", "replenishment_need": JSON, "ToolCall": "ToolCall"},
        objects={
            "Dispatcher": ObjectKind(methods={"schemas": JSON, "invoke": JSON}),
            "ToolCall": ObjectKind(fields=("id", "name", "arguments")),
        },
        constants=("SHOP", "PRICES_PENCE", "SHOP_TOOL_NAMES", "SUPPLIER", "CURRENCY"),
    ),
)

_CHAPTER_SKUS = frozenset(fx.prices())


def _rows_of(shop: Any) -> list[Any]:
    products = shop.get("products") if isinstance(shop, Mapping) else None
    return list(products) if isinstance(products, list) else []


def _sku_of(row: Any) -> Any:
    return row.get("sku") if isinstance(row, Mapping) else None


class _Wrapped:
    """A dispatcher whose requests and answers a faulty version may rewrite."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def schemas(self) -> Any:
        return self.inner.schemas()

    def invoke(self, request: Any) -> Any:
        return self.inner.invoke(request)


@MANGO_TESTS.catches(
    points=1, behaviour="fills a missing price with another product's price", visibility=LATER
)
def ex1_tests_catch_borrowed_price(
    reference: ModuleType, rng: random.Random
) -> Mapping[str, Callable[..., Any]]:
    def build_tools(shop: Any, prices: Any, **options: Any) -> Any:
        known = sorted(prices.values()) if isinstance(prices, Mapping) else []
        filled = dict(prices) if isinstance(prices, Mapping) else prices
        if known:
            borrowed = rng.choice(known)
            for row in _rows_of(shop):
                sku = _sku_of(row)
                if isinstance(sku, str) and sku not in filled:
                    filled[sku] = borrowed
        return reference.build_tools(shop, filled, **options)

    return {"build_tools": build_tools}


@MANGO_TESTS.catches(
    points=1, behaviour="adds the drafted tubs to the stock, as a delivery would", visibility=LATER
)
def ex1_tests_catch_draft_moves_stock(
    reference: ModuleType, rng: random.Random
) -> Mapping[str, Callable[..., Any]]:
    class Delivering(_Wrapped):
        def __init__(self, shop: Any, prices: Any, options: dict[str, Any]) -> None:
            super().__init__(reference.build_tools(shop, prices, **options))
            self.shop, self.prices, self.options = shop, prices, options

        def invoke(self, request: Any) -> Any:
            answer = self.inner.invoke(request)
            if request.name == "draft_order" and answer.get("ok") is True:
                rows = [dict(row) for row in _rows_of(self.shop)]
                for row in rows:
                    if row.get("sku") == answer["value"]["sku"]:
                        row["on_hand"] += answer["value"]["quantity"]
                self.shop = {**self.shop, "products": rows}
                self.inner = reference.build_tools(self.shop, self.prices, **self.options)
            return answer

    def build_tools(shop: Any, prices: Any, **options: Any) -> Any:
        return Delivering(shop, prices, options)

    return {"build_tools": build_tools}


@MANGO_TESTS.catches(
    points=1, behaviour="writes the prices into the tools' descriptions", visibility=LATER
)
def ex1_tests_catch_price_in_schema(
    reference: ModuleType, rng: random.Random
) -> Mapping[str, Callable[..., Any]]:
    class Advertising(_Wrapped):
        def __init__(self, inner: Any, prices: Any) -> None:
            super().__init__(inner)
            self.note = " Prices: " + json.dumps(dict(prices), sort_keys=True)

        def schemas(self) -> Any:
            schemas = self.inner.schemas()
            for schema in schemas:
                schema["function"]["description"] += self.note
            return schemas

    def build_tools(shop: Any, prices: Any, **options: Any) -> Any:
        return Advertising(reference.build_tools(shop, prices, **options), prices)

    return {"build_tools": build_tools}


@MANGO_TESTS.catches(
    points=1, behaviour="keeps the first price it was ever given for a product", visibility=LATER
)
def ex1_tests_catch_stale_price(
    reference: ModuleType, rng: random.Random
) -> Mapping[str, Callable[..., Any]]:
    first_seen: dict[Any, Any] = {}

    def build_tools(shop: Any, prices: Any, **options: Any) -> Any:
        if isinstance(prices, Mapping):
            prices = {sku: first_seen.setdefault(sku, unit) for sku, unit in prices.items()}
        return reference.build_tools(shop, prices, **options)

    return {"build_tools": build_tools}


@MANGO_TESTS.catches(
    points=1, behaviour="ignores the price given for a product chapter 2 did not have"
)
def ex1_tests_catch_new_product_price(
    reference: ModuleType, rng: random.Random
) -> Mapping[str, Callable[..., Any]]:
    def build_tools(shop: Any, prices: Any, **options: Any) -> Any:
        if isinstance(prices, Mapping):
            known = [prices[sku] for sku in sorted(_CHAPTER_SKUS) if sku in prices]
            if known:
                stand_in = rng.choice(known)
                prices = {
                    sku: unit if sku in _CHAPTER_SKUS else stand_in for sku, unit in prices.items()
                }
        return reference.build_tools(shop, prices, **options)

    return {"build_tools": build_tools}


@MANGO_TESTS.catches(points=1, behaviour="accepts two rows under one sku", visibility=LATER)
def ex1_tests_catch_duplicate_sku(
    reference: ModuleType, rng: random.Random
) -> Mapping[str, Callable[..., Any]]:
    def build_tools(shop: Any, prices: Any, **options: Any) -> Any:
        rows = _rows_of(shop)
        if rows:
            last = {_sku_of(row): row for row in rows}
            kept = [row for row in rows if last.get(_sku_of(row)) is row]
            shop = {**shop, "products": kept}
        return reference.build_tools(shop, prices, **options)

    return {"build_tools": build_tools}


# Unit B declares its checks after these, in report order: it imports BOOK
# from this module, so it is imported once BOOK exists.
