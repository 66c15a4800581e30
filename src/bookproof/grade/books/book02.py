"""Exercise Book 2: the checks for a submission's `shop_tools.py`.

The graded interface (exercises/book02/README.md):
`replenishment_need(row) -> int` and
`build_tools(shop, prices, *, extra_tools=(), allowed=None)` returning a
dispatcher with `schemas()` and `invoke(call)`.

Every expected value below is computed here, from data this module chose,
with the exercise book's fixed numbers (1,300, 1,400, 9, 1,500 ...) written as
literals beside randomised extras, so a submission can neither precompute
an answer nor have its own helper mark itself right.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bookproof.grade.checks import (
    Check,
    Result,
    Trial,
    attrs,
    call,
    get,
    let,
    method,
    probe,
    probe_count,
    ref,
    same,
    set_item,
    tool_call,
    tup,
)

__all__ = ["BOOK", "CHECKS", "MODULE", "REQUIRED_FILES", "TITLE", "trials"]

BOOK = 2
TITLE = "Exercise Book 2: reliable shop tools"
MODULE = "shop_tools"
REQUIRED_FILES = ("shop_tools.py",)

# The chapter's sections, by their headings, so feedback sends a learner back
# to the page that teaches the behaviour a check found missing.
_CH = "Chapter 2"
S_MODELS = f"{_CH}, '2.4 The three argument models'"
S_FUNCTIONS = f"{_CH}, '2.5 Deterministic shop functions'"
S_TOOL = f"{_CH}, '2.6 The tool record'"
S_DISPATCHER = f"{_CH}, '2.8 The dispatcher and its order of checks'"
S_OWN_SHOP = f"{_CH}, '2.9 One dispatcher, its own shop'"
S_REFUSALS = f"{_CH}, '2.10 Refusals, one by one'"
S_UNIT_A = f"{_CH}, '2.15 Exercises' (Exercise Book 2, Unit A)"
S_UNIT_B = f"{_CH}, '2.15 Exercises' (Exercise Book 2, Unit B)"

SUPPLIER = "lucy-local"
CURRENCY = "GBP"
SHOP_TOOLS = ["draft_order", "list_stock", "supplier"]


def _shop_rows() -> list[dict[str, Any]]:
    # Chapter 1's snapshot, written out again rather than imported: the grader
    # must not depend on the book's files a learner might have edited.
    return [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]


def _prices() -> dict[str, int]:
    return {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}


MANGO = {"sku": "SKU-MANGO", "name": "Mango", "on_hand": 1, "reorder_point": 5}

CHECKS: tuple[Check, ...] = (
    Check(
        "imports",
        1,
        "chapter 2",
        "shop_tools.py imports and defines build_tools and replenishment_need.",
        "shop_tools.py must import cleanly and define build_tools and replenishment_need.",
        S_OWN_SHOP,
    ),
    Check(
        "ch2_stock_report",
        1,
        "chapter 2",
        "list_stock reports every row with its need, sorted by sku.",
        "list_stock must return every row with its `needed`, sorted by sku.",
        S_FUNCTIONS,
    ),
    Check(
        "ch2_vanilla_draft",
        1,
        "chapter 2",
        "The 6-tub vanilla draft costs 1,500 pence and leaves stock at 2.",
        "The 6-tub vanilla draft must cost 1,500 pence, say DRAFT and leave stock at 2.",
        S_FUNCTIONS,
    ),
    Check(
        "ch2_strict_arguments",
        1,
        "chapter 2",
        "True, '6', 6.0, 0, 1001 and an extra key are all refused as invalid_arguments.",
        "Strict argument models must refuse True, '6', 6.0, 0, 1001 and extra keys.",
        S_MODELS,
    ),
    Check(
        "ch2_unknown_tool",
        1,
        "chapter 2",
        "An unknown tool such as run_shell is refused as tool_not_allowed.",
        "A name the dispatcher does not know must get {'ok': False, 'error': 'tool_not_allowed'}.",
        S_DISPATCHER,
    ),
    Check(
        "ch2_business_refusals",
        1,
        "chapter 2",
        "Unknown skus, a wrong quantity and changed stock all fail as tool_failed.",
        "Unknown skus and quantities that differ from the current need must fail as tool_failed.",
        S_REFUSALS,
    ),
    Check(
        "ch2_read_only",
        1,
        "chapter 2",
        "A dispatcher whose allowlist omits draft_order neither shows nor runs it.",
        "`allowed` must limit both schemas() and invoke(): an omitted tool is refused.",
        S_DISPATCHER,
    ),
    Check(
        "ch2_own_copy",
        1,
        "chapter 2",
        "Each dispatcher works on its own copy of the shop's rows.",
        "build_tools must copy the rows: the caller's shop must neither change nor leak in.",
        S_OWN_SHOP,
    ),
    Check(
        "ch2_schemas",
        1,
        "chapter 2",
        "schemas() lists the three shop tools, sorted by name, as function schemas.",
        "schemas() must return the allowed tools' function schemas sorted by name.",
        S_TOOL,
    ),
    Check(
        "ex1_mango_1300",
        2,
        "exercise 1",
        "Mango at 325 pence: the 4-tub draft costs 1,300 and stock stays at 1.",
        "With mango at 325 pence the 4-tub draft must cost 1,300 and stock must stay at 1.",
        S_UNIT_A,
    ),
    Check(
        "ex1_mango_1400",
        1,
        "exercise 1",
        "Mango at 350 pence costs 1,400 with the same schemas: a data change only.",
        "A price change to 350 must give 1,400 with schemas() unchanged.",
        S_UNIT_A,
    ),
    Check(
        "ex1_missing_price",
        2,
        "exercise 1",
        "A product with no price fails visibly instead of borrowing or inventing one.",
        "When mango has no price, supplier and draft_order must fail, never use another price.",
        S_UNIT_A,
    ),
    Check(
        "ex1_data_change",
        1,
        "exercise 1",
        "A new product given only as data is reported, quoted and drafted correctly.",
        "A product added only to `shop` and `prices` must work through all three tools.",
        S_UNIT_A,
    ),
    Check(
        "ex1_duplicate_sku",
        1,
        "exercise 1",
        "Two rows with the same sku are refused with ValueError at construction.",
        "build_tools must raise ValueError when two rows share a sku.",
        S_UNIT_A,
    ),
    Check(
        "ex2_need_reserved",
        2,
        "exercise 2",
        "replenishment_need counts reserved tubs: vanilla 2 on hand, target 8, reserved 3 needs 9.",
        "replenishment_need must be max(0, reorder_point - on_hand + reserved).",
        S_UNIT_B,
    ),
    Check(
        "ex2_reserved_absent",
        1,
        "exercise 2",
        "A row without `reserved` counts it as 0.",
        "A row with no `reserved` key must count it as 0, not fail.",
        S_UNIT_B,
    ),
    Check(
        "ex2_above_target",
        1,
        "exercise 2",
        "Stock above target needs 0, never a negative number.",
        "A row above its target (after reservations) must need 0, never a negative number.",
        S_UNIT_B,
    ),
    Check(
        "ex2_report_reserved",
        1,
        "exercise 2",
        "list_stock's `needed` includes reserved tubs.",
        "list_stock must compute `needed` with replenishment_need, reserved tubs included.",
        S_UNIT_B,
    ),
    Check(
        "ex2_draft_reserved",
        2,
        "exercise 2",
        "With 3 vanilla reserved the 9-tub draft passes and the 6-tub draft fails.",
        "draft_order must check the quantity against replenishment_need, reserved included.",
        S_UNIT_B,
    ),
    Check(
        "ex3_probe_hidden",
        1,
        "exercise 3",
        "A tool given in extra_tools but not allowed has no schema.",
        "With allowed=None, schemas() must list the three shop tools only, not extra_tools.",
        S_UNIT_B,
    ),
    Check(
        "ex3_probe_refused",
        2,
        "exercise 3",
        "A hand-made request for the forbidden probe is refused and its handler never runs.",
        "An extra tool outside `allowed` must be refused as tool_not_allowed, unrun.",
        S_UNIT_B,
    ),
    Check(
        "ex3_probe_allowed",
        1,
        "exercise 3",
        "Naming the probe in `allowed` gives it a schema and makes it callable.",
        "A tool in extra_tools and named in `allowed` must appear in schemas() and run.",
        S_UNIT_B,
    ),
    Check(
        "ex3_duplicate_tool",
        1,
        "exercise 3",
        "A duplicate tool name is refused with ValueError at construction.",
        "build_tools must raise ValueError when an extra tool reuses a tool name.",
        S_UNIT_B,
    ),
)


# --- helpers ---------------------------------------------------------------


def _need(row: Mapping[str, Any]) -> int:
    # The grader's own arithmetic; it never asks the submission's function.
    return max(0, row["reorder_point"] - row["on_hand"] + row.get("reserved", 0))


def _token(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def _sku(rng: random.Random) -> str:
    return "SKU-" + "".join(rng.choice(string.ascii_uppercase) for _ in range(7))


def _extra_product(rng: random.Random, *, reserved: bool = False) -> dict[str, Any]:
    row: dict[str, Any] = {
        "sku": _sku(rng),
        "name": "Flavour " + _token(rng, 4),
        "on_hand": rng.randint(0, 12),
        "reorder_point": rng.randint(13, 30),
    }
    if reserved:
        row["reserved"] = rng.randint(0, 6)
    return row


def _shop(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "Lucy's Ice Cream", "products": rows}


class _Calls:
    """Random call ids, so an answer recorded from one run is useless in the next."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def __call__(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return tool_call("call-" + _token(self._rng, 12), name, arguments)


def _draft_value(sku: str, quantity: int, unit: int) -> dict[str, Any]:
    return {
        "currency": CURRENCY,
        "quantity": quantity,
        "sku": sku,
        "status": "DRAFT",
        "supplier": SUPPLIER,
        "total_pence": quantity * unit,
        "unit_cost_pence": unit,
    }


def _quote(sku: str, unit: int) -> dict[str, Any]:
    return {"currency": CURRENCY, "sku": sku, "supplier": SUPPLIER, "unit_cost_pence": unit}


def _ok(value: Any) -> dict[str, Any]:
    return {"ok": True, "value": value}


def _refused(error: str) -> dict[str, Any]:
    return {"ok": False, "error": error}


def _report_view(value: Any) -> list[list[Any]] | None:
    """The columns a stock report is graded on; extra columns a learner adds are fine."""
    if not (isinstance(value, dict) and value.get("ok") is True):
        return None
    rows = value.get("value")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return None
    keys = ("sku", "on_hand", "reorder_point", "needed")
    if not all(all(k in r for k in keys) for r in rows):
        return None
    return [[r[k] for k in keys] for r in rows]


def _expected_report(rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    return sorted(
        ([r["sku"], r["on_hand"], r["reorder_point"], _need(r)] for r in rows),
        key=lambda item: item[0],
    )


def _report_is(expected: list[list[Any]], value: Any, sku: str | None = None) -> bool:
    """Type-strict: a need of True is not a need of 1, nor 6.0 a need of 6."""
    view = _report_view(value)
    if view is None:
        return False
    if sku is not None:
        view = [row for row in view if row[0] == sku]
    return same(expected, view)


def _schema_names(value: Any) -> list[str] | None:
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


def _all_same(pairs: Sequence[tuple[Any, Result]]) -> bool:
    return all(r.status == "returned" and same(expected, r.value) for expected, r in pairs)


def _when(condition: bool, reason: str) -> str | None:
    return None if condition else reason


# --- the trials ------------------------------------------------------------


def trials(rng: random.Random) -> dict[str, Trial]:
    """One trial per check, with fresh random data for this run."""
    tc = _Calls(rng)
    made: dict[str, Trial] = {}
    builders: dict[str, Callable[[random.Random, _Calls], Trial]] = {
        "imports": _imports,
        "ch2_stock_report": _ch2_stock_report,
        "ch2_vanilla_draft": _ch2_vanilla_draft,
        "ch2_strict_arguments": _ch2_strict_arguments,
        "ch2_unknown_tool": _ch2_unknown_tool,
        "ch2_business_refusals": _ch2_business_refusals,
        "ch2_read_only": _ch2_read_only,
        "ch2_own_copy": _ch2_own_copy,
        "ch2_schemas": _ch2_schemas,
        "ex1_mango_1300": _ex1_mango_1300,
        "ex1_mango_1400": _ex1_mango_1400,
        "ex1_missing_price": _ex1_missing_price,
        "ex1_data_change": _ex1_data_change,
        "ex1_duplicate_sku": _ex1_duplicate_sku,
        "ex2_need_reserved": _ex2_need_reserved,
        "ex2_reserved_absent": _ex2_reserved_absent,
        "ex2_above_target": _ex2_above_target,
        "ex2_report_reserved": _ex2_report_reserved,
        "ex2_draft_reserved": _ex2_draft_reserved,
        "ex3_probe_hidden": _ex3_probe_hidden,
        "ex3_probe_refused": _ex3_probe_refused,
        "ex3_probe_allowed": _ex3_probe_allowed,
        "ex3_duplicate_tool": _ex3_duplicate_tool,
    }
    for check in CHECKS:
        made[check.id] = builders[check.id](rng, tc)
    return made


def _imports(rng: random.Random, tc: _Calls) -> Trial:
    def judge(results: Sequence[Result]) -> str | None:
        (found,) = results
        expected = {"build_tools": True, "replenishment_need": True}
        return _when(_all_same([(expected, found)]), "A required function is missing.")

    return Trial((attrs("build_tools", "replenishment_need"),), judge)


def _ch2_stock_report(rng: random.Random, tc: _Calls) -> Trial:
    extra = _extra_product(rng)
    rows = [*_shop_rows(), extra]
    rng.shuffle(rows)  # the report sorts by sku, whatever order the shop keeps
    prices = _prices() | {extra["sku"]: rng.randint(100, 999)}
    expected = _expected_report(rows)

    def judge(results: Sequence[Result]) -> str | None:
        _, report = results
        return _when(_report_is(expected, report.value), "The stock report is not right.")

    return Trial(
        (
            call("build_tools", _shop(rows), prices, save="d"),
            method("d", "invoke", tc("list_stock", {})),
        ),
        judge,
    )


def _ch2_vanilla_draft(rng: random.Random, tc: _Calls) -> Trial:
    rows = _shop_rows()
    expected_draft = _ok(_draft_value("SKU-VANILLA", 6, 250))
    assert expected_draft["value"]["total_pence"] == 1500

    def judge(results: Sequence[Result]) -> str | None:
        _, draft, report = results
        if not _all_same([(expected_draft, draft)]):
            return "The vanilla draft is not the 1,500-pence DRAFT for 6 tubs."
        return _when(
            _report_is([["SKU-VANILLA", 2, 8, 6]], report.value, "SKU-VANILLA"),
            "Drafting changed the stock.",
        )

    return Trial(
        (
            call("build_tools", _shop(rows), _prices(), save="d"),
            method("d", "invoke", tc("draft_order", {"sku": "SKU-VANILLA", "quantity": 6})),
            method("d", "invoke", tc("list_stock", {})),
        ),
        judge,
    )


def _ch2_strict_arguments(rng: random.Random, tc: _Calls) -> Trial:
    bad: list[tuple[str, dict[str, Any]]] = [
        ("draft_order", {"sku": "SKU-VANILLA", "quantity": True}),
        ("draft_order", {"sku": "SKU-VANILLA", "quantity": "6"}),
        ("draft_order", {"sku": "SKU-VANILLA", "quantity": 6.0}),
        ("draft_order", {"sku": "SKU-VANILLA", "quantity": 0}),
        ("draft_order", {"sku": "SKU-VANILLA", "quantity": 1001}),
        ("draft_order", {"sku": "SKU-VANILLA", "quantity": 6, "approved": True}),
        ("draft_order", {"sku": "SKU-VANILLA"}),
        ("supplier", {"sku": rng.randint(1, 99)}),
        ("list_stock", {_token(rng, 5): 1}),
    ]
    refusal = _refused("invalid_arguments")

    def judge(results: Sequence[Result]) -> str | None:
        return _when(
            _all_same([(refusal, r) for r in results[1:]]),
            "At least one malformed argument was accepted or coerced.",
        )

    steps = [call("build_tools", _shop(_shop_rows()), _prices(), save="d")]
    steps += [method("d", "invoke", tc(name, arguments)) for name, arguments in bad]
    return Trial(tuple(steps), judge)


def _ch2_unknown_tool(rng: random.Random, tc: _Calls) -> Trial:
    refusal = _refused("tool_not_allowed")

    def judge(results: Sequence[Result]) -> str | None:
        return _when(_all_same([(refusal, r) for r in results[1:]]), "An unknown tool ran.")

    return Trial(
        (
            call("build_tools", _shop(_shop_rows()), _prices(), save="d"),
            method("d", "invoke", tc("run_shell", {"command": "ls"})),
            method("d", "invoke", tc("tool_" + _token(rng), {})),
        ),
        judge,
    )


def _ch2_business_refusals(rng: random.Random, tc: _Calls) -> Trial:
    unknown = _sku(rng)
    moved = _shop_rows()
    moved[0]["on_hand"] = 9  # a delivery: vanilla now above target, so the old 6 is stale
    failed = _refused("tool_failed")

    def judge(results: Sequence[Result]) -> str | None:
        return _when(
            _all_same([(failed, results[i]) for i in (1, 2, 3, 5)]),
            "A request that contradicts the shop's data was not refused as tool_failed.",
        )

    return Trial(
        (
            call("build_tools", _shop(_shop_rows()), _prices(), save="d"),
            method("d", "invoke", tc("supplier", {"sku": unknown})),
            method("d", "invoke", tc("draft_order", {"sku": unknown, "quantity": 1})),
            method("d", "invoke", tc("draft_order", {"sku": "SKU-VANILLA", "quantity": 8})),
            call("build_tools", _shop(moved), _prices(), save="after_delivery"),
            method(
                "after_delivery", "invoke", tc("draft_order", {"sku": "SKU-VANILLA", "quantity": 6})
            ),
        ),
        judge,
    )


def _ch2_read_only(rng: random.Random, tc: _Calls) -> Trial:
    refusal = _refused("tool_not_allowed")
    quote = _ok(_quote("SKU-CHOCOLATE", 300))

    def judge(results: Sequence[Result]) -> str | None:
        _, schemas, draft, supplier = results
        if _schema_names(schemas.value) != ["list_stock", "supplier"]:
            return "schemas() should list only list_stock and supplier here."
        return _when(
            _all_same([(refusal, draft), (quote, supplier)]),
            "The omitted draft_order ran, or an allowed tool was refused.",
        )

    return Trial(
        (
            call(
                "build_tools",
                _shop(_shop_rows()),
                _prices(),
                allowed=["supplier", "list_stock"],
                save="d",
            ),
            method("d", "schemas"),
            method("d", "invoke", tc("draft_order", {"sku": "SKU-VANILLA", "quantity": 6})),
            method("d", "invoke", tc("supplier", {"sku": "SKU-CHOCOLATE"})),
        ),
        judge,
    )


def _ch2_own_copy(rng: random.Random, tc: _Calls) -> Trial:
    rows = _shop_rows()
    original = _shop(rows)
    later = rng.randint(9, 40)

    def judge(results: Sequence[Result]) -> str | None:
        _, _, _, report, shop_after = results
        if not _report_is([["SKU-VANILLA", 2, 8, 6]], report.value, "SKU-VANILLA"):
            return "A change to the caller's shop after build_tools reached the dispatcher."
        expected_shop = _shop(_shop_rows())
        expected_shop["products"][0]["on_hand"] = later
        return _when(
            shop_after.status == "returned" and same(expected_shop, shop_after.value),
            "The dispatcher changed the caller's shop.",
        )

    return Trial(
        (
            let("shop", original),
            call("build_tools", ref("shop"), _prices(), save="d"),
            # The caller's own data changes after construction; a copy must not see it.
            set_item("shop", ["products", 0, "on_hand"], later),
            method("d", "invoke", tc("list_stock", {})),
            get("shop"),
        ),
        judge,
    )


def _ch2_schemas(rng: random.Random, tc: _Calls) -> Trial:
    def judge(results: Sequence[Result]) -> str | None:
        _, schemas = results
        if _schema_names(schemas.value) != SHOP_TOOLS:
            return "Expected draft_order, list_stock, supplier, in that order."
        draft = schemas.value[0]["function"]["parameters"]
        properties = draft.get("properties")
        return _when(
            isinstance(properties, dict)
            and sorted(properties) == ["quantity", "sku"]
            and draft.get("additionalProperties") is False,
            "draft_order's parameters should be sku and quantity, extra keys forbidden.",
        )

    return Trial(
        (call("build_tools", _shop(_shop_rows()), _prices(), save="d"), method("d", "schemas")),
        judge,
    )


def _mango_shop() -> dict[str, Any]:
    return _shop([*_shop_rows(), dict(MANGO)])


def _ex1_mango_1300(rng: random.Random, tc: _Calls) -> Trial:
    expected = _ok(_draft_value("SKU-MANGO", 4, 325))
    quote = _ok(_quote("SKU-MANGO", 325))

    def judge(results: Sequence[Result]) -> str | None:
        _, draft, supplier, report = results
        if not (draft.status == "returned" and same(expected, draft.value)):
            return "Expected a DRAFT of 4 mango tubs at 325 pence: 1,300 pence in all."
        if not same(quote, supplier.value):
            return "supplier should quote mango at 325 pence."
        return _when(
            _report_is([["SKU-MANGO", 1, 5, 4]], report.value, "SKU-MANGO"),
            "Mango stock should stay at 1, need 4.",
        )

    return Trial(
        (
            call("build_tools", _mango_shop(), _prices() | {"SKU-MANGO": 325}, save="d"),
            method("d", "invoke", tc("draft_order", {"sku": "SKU-MANGO", "quantity": 4})),
            method("d", "invoke", tc("supplier", {"sku": "SKU-MANGO"})),
            method("d", "invoke", tc("list_stock", {})),
        ),
        judge,
    )


def _ex1_mango_1400(rng: random.Random, tc: _Calls) -> Trial:
    expected = _ok(_draft_value("SKU-MANGO", 4, 350))

    def judge(results: Sequence[Result]) -> str | None:
        _, _, before, draft, after = results
        if not (draft.status == "returned" and same(expected, draft.value)):
            return "Expected 4 mango tubs at 350 pence: 1,400 pence in all."
        return _when(
            before.status == "returned"
            and after.status == "returned"
            and _schema_names(before.value) is not None
            and same(before.value, after.value),
            "Changing a price changed schemas(): prices must stay data, not schema.",
        )

    return Trial(
        (
            call("build_tools", _mango_shop(), _prices() | {"SKU-MANGO": 325}, save="old"),
            call("build_tools", _mango_shop(), _prices() | {"SKU-MANGO": 350}, save="d"),
            method("old", "schemas"),
            method("d", "invoke", tc("draft_order", {"sku": "SKU-MANGO", "quantity": 4})),
            method("d", "schemas"),
        ),
        judge,
    )


def _ex1_missing_price(rng: random.Random, tc: _Calls) -> Trial:
    def judge(results: Sequence[Result]) -> str | None:
        _, supplier, draft, vanilla = results
        for result in (supplier, draft):
            value = result.value
            if not (result.status == "returned" and isinstance(value, dict)):
                return "The request should come back as a refusal, not break the dispatcher."
            if value.get("ok") is not False:
                return "Mango has no price, yet a quote or draft came back with one."
        return _when(
            same(_ok(_draft_value("SKU-VANILLA", 6, 250)), vanilla.value),
            "The products that do have prices should still draft normally.",
        )

    return Trial(
        (
            call("build_tools", _mango_shop(), _prices(), save="d"),
            method("d", "invoke", tc("supplier", {"sku": "SKU-MANGO"})),
            method("d", "invoke", tc("draft_order", {"sku": "SKU-MANGO", "quantity": 4})),
            method("d", "invoke", tc("draft_order", {"sku": "SKU-VANILLA", "quantity": 6})),
        ),
        judge,
    )


def _ex1_data_change(rng: random.Random, tc: _Calls) -> Trial:
    new = _extra_product(rng)
    unit = rng.randint(101, 999)
    rows = [*_shop_rows(), new]
    prices = _prices() | {new["sku"]: unit}
    need = _need(new)
    expected_report = _expected_report(rows)
    expected_quote = _ok(_quote(new["sku"], unit))
    expected_draft = _ok(_draft_value(new["sku"], need, unit))

    def judge(results: Sequence[Result]) -> str | None:
        _, report, quote, draft = results
        if not _report_is(expected_report, report.value):
            return "The new product is missing from list_stock, or its need is wrong."
        return _when(
            _all_same([(expected_quote, quote), (expected_draft, draft)]),
            "The new product's quote or draft does not use its own price and need.",
        )

    return Trial(
        (
            call("build_tools", _shop(rows), prices, save="d"),
            method("d", "invoke", tc("list_stock", {})),
            method("d", "invoke", tc("supplier", {"sku": new["sku"]})),
            method("d", "invoke", tc("draft_order", {"sku": new["sku"], "quantity": need})),
        ),
        judge,
    )


def _ex1_duplicate_sku(rng: random.Random, tc: _Calls) -> Trial:
    twin = {**_shop_rows()[0], "on_hand": rng.randint(0, 20)}
    extra = _extra_product(rng)
    twin_extra = {**extra, "name": "Copy"}

    def judge(results: Sequence[Result]) -> str | None:
        return _when(
            all(r.status == "raised" and "ValueError" in r.raised for r in results),
            "A shop with two rows under one sku was accepted.",
        )

    return Trial(
        (
            call("build_tools", _shop([*_shop_rows(), twin]), _prices(), may_raise=True),
            call(
                "build_tools",
                _shop([extra, *_shop_rows(), twin_extra]),
                _prices() | {extra["sku"]: 200},
                may_raise=True,
            ),
        ),
        judge,
    )


def _ex2_need_reserved(rng: random.Random, tc: _Calls) -> Trial:
    vanilla = {**_shop_rows()[0], "reserved": 3}
    extras = [_extra_product(rng, reserved=True) for _ in range(3)]
    expected = [9, *(_need(r) for r in extras)]

    def judge(results: Sequence[Result]) -> str | None:
        if not same(9, results[0].value):
            return "Vanilla with 2 on hand, target 8 and 3 reserved needs 9 tubs."
        return _when(
            _all_same(list(zip(expected, results, strict=True))),
            "A row with reserved tubs got the wrong need.",
        )

    return Trial(
        tuple(call("replenishment_need", row) for row in [vanilla, *extras]),
        judge,
    )


def _ex2_reserved_absent(rng: random.Random, tc: _Calls) -> Trial:
    rows = [*_shop_rows(), _extra_product(rng)]
    expected = [6, 0, 4, _need(rows[-1])]

    def judge(results: Sequence[Result]) -> str | None:
        return _when(
            _all_same(list(zip(expected, results, strict=True))),
            "Rows without `reserved` should need 6, 0 and 4 tubs as in chapter 2.",
        )

    return Trial(tuple(call("replenishment_need", row) for row in rows), judge)


def _ex2_above_target(rng: random.Random, tc: _Calls) -> Trial:
    target = rng.randint(3, 20)
    rows = [
        {"sku": "SKU-CHOCOLATE", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-CHOCOLATE", "on_hand": 7, "reorder_point": 6, "reserved": 0},
        {"sku": "SKU-VANILLA", "on_hand": 12, "reorder_point": 8, "reserved": 2},
        {
            "sku": _sku(rng),
            "on_hand": target + rng.randint(5, 30),
            "reorder_point": target,
            "reserved": rng.randint(0, 4),
        },
    ]

    def judge(results: Sequence[Result]) -> str | None:
        return _when(
            _all_same([(0, r) for r in results]),
            "A row above its target should need 0 tubs, never a negative number.",
        )

    return Trial(tuple(call("replenishment_need", row) for row in rows), judge)


def _reserved_rows(rng: random.Random) -> list[dict[str, Any]]:
    rows = _shop_rows()
    rows[0]["reserved"] = 3
    rows[1]["reserved"] = 0
    return [*rows, _extra_product(rng, reserved=True)]


def _ex2_report_reserved(rng: random.Random, tc: _Calls) -> Trial:
    rows = _reserved_rows(rng)
    prices = _prices() | {rows[-1]["sku"]: rng.randint(100, 999)}
    expected = _expected_report(rows)
    assert ["SKU-VANILLA", 2, 8, 9] in expected

    def judge(results: Sequence[Result]) -> str | None:
        _, report = results
        return _when(
            _report_is(expected, report.value),
            "list_stock's `needed` should be 9 for vanilla with 3 reserved.",
        )

    return Trial(
        (
            call("build_tools", _shop(rows), prices, save="d"),
            method("d", "invoke", tc("list_stock", {})),
        ),
        judge,
    )


def _ex2_draft_reserved(rng: random.Random, tc: _Calls) -> Trial:
    rows = _reserved_rows(rng)
    extra = rows[-1]
    unit = rng.randint(100, 999)
    prices = _prices() | {extra["sku"]: unit}
    nine = _ok(_draft_value("SKU-VANILLA", 9, 250))
    assert nine["value"]["total_pence"] == 2250
    extra_draft = _ok(_draft_value(extra["sku"], _need(extra), unit))
    failed = _refused("tool_failed")

    def judge(results: Sequence[Result]) -> str | None:
        _, nine_tubs, six_tubs, extra_result = results
        if not same(nine, nine_tubs.value):
            return "The 9-tub vanilla draft (2 on hand, target 8, 3 reserved) should pass."
        if not same(failed, six_tubs.value):
            return "The 6-tub vanilla draft ignores the 3 reserved tubs and should fail."
        return _when(same(extra_draft, extra_result.value), "A reserved-stock draft is wrong.")

    return Trial(
        (
            call("build_tools", _shop(rows), prices, save="d"),
            method("d", "invoke", tc("draft_order", {"sku": "SKU-VANILLA", "quantity": 9})),
            method("d", "invoke", tc("draft_order", {"sku": "SKU-VANILLA", "quantity": 6})),
            method(
                "d", "invoke", tc("draft_order", {"sku": extra["sku"], "quantity": _need(extra)})
            ),
        ),
        judge,
    )


def _probe_name(rng: random.Random) -> str:
    return "probe_" + _token(rng, 10)


def _ex3_probe_hidden(rng: random.Random, tc: _Calls) -> Trial:
    name = _probe_name(rng)

    def judge(results: Sequence[Result]) -> str | None:
        _, schemas = results
        return _when(
            _schema_names(schemas.value) == SHOP_TOOLS,
            "schemas() should show draft_order, list_stock and supplier only.",
        )

    return Trial(
        (
            call(
                "build_tools",
                _shop(_shop_rows()),
                _prices(),
                extra_tools=tup(probe(name, _token(rng))),
                save="d",
            ),
            method("d", "schemas"),
        ),
        judge,
    )


def _ex3_probe_refused(rng: random.Random, tc: _Calls) -> Trial:
    name = _probe_name(rng)
    refusal = _refused("tool_not_allowed")

    def judge(results: Sequence[Result]) -> str | None:
        _, forbidden, unknown, ran = results
        if not _all_same([(refusal, forbidden), (refusal, unknown)]):
            return "The forbidden probe was not refused exactly like an unknown name."
        return _when(same(0, ran.value), "The forbidden probe's handler ran.")

    return Trial(
        (
            call(
                "build_tools",
                _shop(_shop_rows()),
                _prices(),
                extra_tools=tup(probe(name, _token(rng))),
                save="d",
            ),
            method("d", "invoke", tc(name, {})),
            method("d", "invoke", tc(_probe_name(rng), {})),
            probe_count(name),
        ),
        judge,
    )


def _ex3_probe_allowed(rng: random.Random, tc: _Calls) -> Trial:
    name = _probe_name(rng)
    value = _token(rng, 16)

    def judge(results: Sequence[Result]) -> str | None:
        _, schemas, answer, ran = results
        if _schema_names(schemas.value) != sorted([*SHOP_TOOLS, name]):
            return "schemas() should list the allowed probe beside the shop tools, sorted."
        return _when(
            same(_ok(value), answer.value) and same(1, ran.value),
            "The allowed probe should run once and its value come back.",
        )

    return Trial(
        (
            call(
                "build_tools",
                _shop(_shop_rows()),
                _prices(),
                extra_tools=tup(probe(name, value)),
                allowed=[*SHOP_TOOLS, name],
                save="d",
            ),
            method("d", "schemas"),
            method("d", "invoke", tc(name, {})),
            probe_count(name),
        ),
        judge,
    )


def _ex3_duplicate_tool(rng: random.Random, tc: _Calls) -> Trial:
    twin = _probe_name(rng)

    def judge(results: Sequence[Result]) -> str | None:
        return _when(
            all(r.status == "raised" and "ValueError" in r.raised for r in results),
            "A configuration with two tools under one name was accepted.",
        )

    return Trial(
        (
            call(
                "build_tools",
                _shop(_shop_rows()),
                _prices(),
                extra_tools=tup(probe("supplier", _token(rng))),
                may_raise=True,
            ),
            call(
                "build_tools",
                _shop(_shop_rows()),
                _prices(),
                extra_tools=tup(probe(twin, "a"), probe(twin, "b")),
                allowed=[*SHOP_TOOLS, twin],
                may_raise=True,
            ),
        ),
        judge,
    )
