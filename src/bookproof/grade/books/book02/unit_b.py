"""Exercise Book 2, Unit B: reserved stock through one need function, and a tool not yet allowed.

The dispatchers and requests are the book's own (this package's `__init__`).
"""

from __future__ import annotations

import random
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Trial
from bookproof.grade.books.book02.baseline_and_unit_a import (
    BOOK,
    S_UNIT_B,
    SHOP_TOOLS,
    _calls,
    _dispatcher,
    _invoke,
    _report_is,
)
from bookproof.grade.questions import (
    Asks,
    Ref,
    call,
    expect,
    method,
    probe,
    probe_count,
    same,
    stub,
    tup,
)

__all__: list[str] = []


# --- exercise 2: reserved stock, through one function ---------------------------------


def _reserved_rows(rng: random.Random) -> list[dict[str, Any]]:
    rows = fx.shop_rows()
    rows[0]["reserved"] = 3
    rows[1]["reserved"] = 0
    return [*rows, fx.extra_product(rng, reserved=True)]


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="replenishment_need counts reserved tubs: vanilla 2 on hand, target 8, "
    "reserved 3 needs 9.",
    hint="For a product with reserved tubs, the need computed was not what Unit B's rule gives.",
)
def ex2_need_reserved(rng: random.Random) -> Trial:
    vanilla = {**fx.shop_rows()[0], "reserved": 3}
    extras = [fx.extra_product(rng, reserved=True) for _ in range(3)]
    got = []
    for row in [vanilla, *extras]:
        got.append((yield call("replenishment_need", row)))
    if not same(9, got[0]):
        return "Vanilla with 2 on hand, target 8 and 3 reserved needs 9 tubs."
    return expect(
        same([9, *(fx.need(row) for row in extras)], got),
        "A row with reserved tubs got the wrong need.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A row without `reserved` counts it as 0.",
    hint="A stock row that says nothing about reserved tubs made the need fail instead of "
    "counting none reserved.",
    requires=ex2_need_reserved,
)
def ex2_reserved_absent(rng: random.Random) -> Trial:
    rows = [*fx.shop_rows(), fx.extra_product(rng)]
    got = []
    for row in rows:
        got.append((yield call("replenishment_need", row)))
    return expect(
        same([6, 0, 4, fx.need(rows[-1])], got),
        "Rows without `reserved` should need 6, 0 and 4 tubs as in chapter 2.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="Stock above target needs 0, never a negative number.",
    hint="A product above its target once reservations are counted was given a need other than 0.",
    requires=ex2_need_reserved,
)
def ex2_above_target(rng: random.Random) -> Trial:
    target = rng.randint(3, 20)
    rows = [
        {"sku": fx.CHOCOLATE, "on_hand": 7, "reorder_point": 6},
        {"sku": fx.CHOCOLATE, "on_hand": 7, "reorder_point": 6, "reserved": 0},
        {"sku": fx.VANILLA, "on_hand": 12, "reorder_point": 8, "reserved": 2},
        {
            "sku": fx.sku(rng),
            "on_hand": target + rng.randint(5, 30),
            "reorder_point": target,
            "reserved": rng.randint(0, 4),
        },
    ]
    for row in rows:
        need = yield call("replenishment_need", row)
        if not same(0, need):
            return "A row above its target should need 0 tubs, never a negative number."
    return None


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="list_stock's `needed` includes reserved tubs.",
    hint="The stock report's needed column left the reserved tubs out.",
)
def ex2_report_reserved(rng: random.Random) -> Trial:
    rows = _reserved_rows(rng)
    prices = fx.prices() | {rows[-1]["sku"]: rng.randint(100, 999)}
    expected = fx.expected_report(rows)
    d = yield from _dispatcher(fx.shop(rows), prices)
    report = yield _invoke(d, _calls(rng)("list_stock", {}))
    return expect(
        _report_is(expected, report),
        "list_stock's `needed` should be 9 for vanilla with 3 reserved.",
    )


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="With 3 vanilla reserved the 9-tub draft passes and the 6-tub draft fails.",
    hint="A draft was judged against a need that left the reserved tubs out.",
)
def ex2_draft_reserved(rng: random.Random) -> Trial:
    tc = _calls(rng)
    rows = _reserved_rows(rng)
    extra = rows[-1]
    unit = rng.randint(100, 999)
    d = yield from _dispatcher(fx.shop(rows), fx.prices() | {extra["sku"]: unit})
    nine = yield _invoke(d, tc("draft_order", {"sku": fx.VANILLA, "quantity": 9}))
    six = yield _invoke(d, tc("draft_order", {"sku": fx.VANILLA, "quantity": 6}))
    other = yield _invoke(d, tc("draft_order", {"sku": extra["sku"], "quantity": fx.need(extra)}))
    if not same(fx.ok(fx.draft(fx.VANILLA, 9, 250)), nine):
        return "The 9-tub vanilla draft (2 on hand, target 8, 3 reserved) should pass."
    if not same(fx.refused("tool_failed"), six):
        return "The 6-tub vanilla draft ignores the 3 reserved tubs and should fail."
    return expect(
        same(fx.ok(fx.draft(extra["sku"], fx.need(extra), unit)), other),
        "A reserved-stock draft is wrong.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="The stock report and the draft check both take the need from replenishment_need.",
    hint="When the need's rule was changed, the stock report or the draft check did not follow it.",
)
def ex2_one_need_function(rng: random.Random) -> Trial:
    tc = _calls(rng)
    rows = fx.shop_rows()
    # Needs no formula gives: if the report and the draft check show them,
    # both asked replenishment_need.
    needs = {row["sku"]: rng.randint(11, 40) for row in rows}
    d = yield from _dispatcher(fx.shop(rows), fx.prices())
    yield stub("replenishment_need", needs, key="sku")
    report = yield _invoke(d, tc("list_stock", {}))
    draft = yield _invoke(d, tc("draft_order", {"sku": fx.VANILLA, "quantity": needs[fx.VANILLA]}))
    view = fx.report_view(report)
    if view is None or sorted([row[0], row[3]] for row in view) != sorted(map(list, needs.items())):
        return "list_stock computes the need itself instead of asking replenishment_need."
    return expect(
        same(fx.ok(fx.draft(fx.VANILLA, needs[fx.VANILLA], 250)), draft),
        "draft_order computes the need itself instead of asking replenishment_need.",
    )


# --- exercise 3: registered, but forbidden until allowed -------------------------------


def _with_probe(rng: random.Random, name: str, value: str, **options: Any) -> Asks[Ref]:
    extra = tup(probe(name, value))
    d: Ref = yield call(
        "build_tools", fx.shop(), fx.prices(), extra_tools=extra, keep=True, **options
    )
    return d


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_B,
    asks="Naming the probe in `allowed` gives it a schema and makes it callable.",
    hint="An extra tool the run allows was missing from the schemas the model sees, or did not "
    "run.",
)
def ex3_probe_allowed(rng: random.Random) -> Trial:
    name = fx.probe_name(rng)
    value = fx.token(rng, 16)
    d = yield from _with_probe(rng, name, value, allowed=[*SHOP_TOOLS, name])
    schemas = yield method(d, "schemas")
    answer = yield _invoke(d, _calls(rng)(name, {}))
    ran = yield probe_count(name)
    if fx.schema_names(schemas) != sorted([*SHOP_TOOLS, name]):
        return "schemas() should list the allowed probe beside the shop tools, sorted."
    return expect(
        same(fx.ok(value), answer) and same(1, ran),
        "The allowed probe should run once and its value come back.",
    )


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_B,
    asks="A tool given in extra_tools but not allowed has no schema.",
    hint="With no allow-list given, an extra tool appeared in the schemas beside the three "
    "shop tools.",
    requires=ex3_probe_allowed,
)
def ex3_probe_hidden(rng: random.Random) -> Trial:
    d = yield from _with_probe(rng, fx.probe_name(rng), fx.token(rng))
    schemas = yield method(d, "schemas")
    return expect(
        fx.schema_names(schemas) == SHOP_TOOLS,
        "schemas() should show draft_order, list_stock and supplier only.",
    )


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_B,
    asks="A hand-made request for the forbidden probe is refused and its handler never runs.",
    hint="An extra tool the run does not allow was run, or refused with another reason than "
    "tool_not_allowed.",
    requires=ex3_probe_allowed,
)
def ex3_probe_refused(rng: random.Random) -> Trial:
    tc = _calls(rng)
    name = fx.probe_name(rng)
    d = yield from _with_probe(rng, name, fx.token(rng))
    forbidden = yield _invoke(d, tc(name, {}))
    unknown = yield _invoke(d, tc(fx.probe_name(rng), {}))
    ran = yield probe_count(name)
    refusal = fx.refused("tool_not_allowed")
    if not (same(refusal, forbidden) and same(refusal, unknown)):
        return "The forbidden probe was not refused exactly like an unknown name."
    return expect(same(0, ran), "The forbidden probe's handler ran.")


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_B,
    asks="A duplicate tool name is refused with ValueError at construction.",
    hint="An extra tool that reuses a tool's name was accepted without an error.",
)
def ex3_duplicate_tool(rng: random.Random) -> Trial:
    twin = fx.probe_name(rng)
    answers = [
        (
            yield call(
                "build_tools",
                fx.shop(),
                fx.prices(),
                extra_tools=tup(probe("supplier", fx.token(rng))),
                raises=True,
            )
        ),
        (
            yield call(
                "build_tools",
                fx.shop(),
                fx.prices(),
                extra_tools=tup(probe(twin, "a"), probe(twin, "b")),
                allowed=[*SHOP_TOOLS, twin],
                raises=True,
            )
        ),
    ]
    return expect(
        all(answer.raised_a("ValueError") for answer in answers),
        "A configuration with two tools under one name was accepted.",
    )
