"""Exercise Book 3: the checks for a submission's `agent_loop.py`.

The graded interface is the "grader's door" at the end of the starter
(`exercises/book03/agent_loop.py`), JSON in and JSON out:

- `run_scripted(replies, shop, prices, max_steps, max_tool_calls)` runs the
  submission's `run_task` with a scripted model whose replies are
  `{"content": text or None, "tool_calls": [[id, name, arguments_json], ...]}`;
- `run_next_move(shop, prices, delivery, max_steps, max_tool_calls)` runs it
  with the submission's `next_move` as every step, while `delivery`
  (sku -> tubs) reaches the freezer right after the first stock report;
- `run_patient(replies, shop, prices, max_steps, max_tool_calls, patience)`
  is `run_scripted`'s run with Unit C's `patience` handed to `run_task`
  (exercise 3, an open design task: graded by how runs end).

All three return the run as JSON: `stop_reason`, `steps`, `answer`, `error`,
`requested`, `executed`, `refused` ([name, code] pairs), `answers`
([tool_call_id, observation] pairs, in transcript order) and `drafts`
([sku, quantity, total_pence]).

Every expected value is computed here from data this module chose: call ids,
texts, an extra product and its price change on every run, beside the
chapter's fixed numbers (6 tubs, 1,500 pence, 2,600 pence ...).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Book, Trial
from bookproof.grade.questions import Question, attrs, call, expect, same

__all__ = ["BOOK"]

BOOK = Book(3, "Exercise Book 3: a bounded agent loop", module="agent_loop", chapter="Chapter 3")

S_IDS = BOOK.section("3.2 Call ids")
S_SETUP = BOOK.section("3.5 Refusing a run that could only fail")
S_PARSE = BOOK.section("3.6 Reading a request the model wrote")
S_LOOP = BOOK.section("3.8 The loop")
S_PLAN = BOOK.section("3.9 Lucy's morning plan, offline")
S_FAILURES = BOOK.section("3.10 Failures, one by one")
S_UNIT_A = BOOK.section("3.14 Exercises") + " (Exercise Book 3, Unit A)"
S_UNIT_B = BOOK.section("3.14 Exercises") + " (Exercise Book 3, Unit B)"
S_UNIT_C = BOOK.section("3.8 The loop") + " (Exercise Book 3, Unit C)"

MALFORMED = fx.refused("malformed_tool_call")
REPEATED = fx.refused("repeated_refusal")
_UNREADABLE = "The door did not return a run summary (did run_task or the door raise?)."


# --- data this book chooses ----------------------------------------------------------


def _need(row: Mapping[str, Any]) -> int:
    # Chapter 3's need has no reservations: the grader's own arithmetic.
    return max(0, int(row["reorder_point"]) - int(row["on_hand"]))


def _reply(*calls: tuple[str, str, Any], content: str | None = None) -> dict[str, Any]:
    """One scripted reply; arguments given as a dict are written as the JSON a model sends."""
    return {
        "content": content,
        "tool_calls": [
            [call_id, name, arguments if isinstance(arguments, str) else json.dumps(arguments)]
            for call_id, name, arguments in calls
        ],
    }


def _extra_scenario(rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, int]]:
    extra = fx.extra_product(rng)
    return [*fx.shop_rows(), extra], fx.prices() | {extra["sku"]: rng.randint(100, 999)}


def _scripted(
    replies: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    prices: dict[str, int],
    max_steps: int,
    max_tool_calls: int,
    *,
    raises: bool = False,
) -> Question:
    return call(
        "run_scripted", replies, fx.shop(rows), prices, max_steps, max_tool_calls, raises=raises
    )


def _next_move(
    rows: list[dict[str, Any]],
    prices: dict[str, int],
    delivery: dict[str, int],
    max_steps: int = 6,
    max_tool_calls: int = 12,
) -> Question:
    return call("run_next_move", fx.shop(rows), prices, delivery, max_steps, max_tool_calls)


def _expected_drafts(
    rows: list[dict[str, Any]], prices: Mapping[str, int], delivery: Mapping[str, int]
) -> list[tuple[Any, ...]]:
    """The drafts a correct policy ends with: each product's need after the delivery."""
    drafts = []
    for row in rows:
        need = max(0, row["reorder_point"] - row["on_hand"] - delivery.get(row["sku"], 0))
        if need > 0:
            drafts.append((row["sku"], need, need * prices[row["sku"]]))
    return sorted(drafts, key=repr)


def _refused_request(rng: random.Random) -> tuple[str, dict[str, Any], str]:
    """A request the shop's dispatcher refuses: (name, arguments, the refusal code)."""
    if rng.random() < 0.5:
        quantity = rng.choice([5, 7, 8, 12])
        return "draft_order", {"sku": fx.VANILLA, "quantity": quantity}, "tool_failed"
    return "run_shell", {"command": fx.token(rng)}, "tool_not_allowed"


# --- reading what came back -----------------------------------------------------------

_KEYS = ("stop_reason", "steps", "answer", "error", "requested", "executed", "refused", "answers")


def _run(value: Any) -> dict[str, Any] | None:
    """The run summary, when it has the door's shape; None for anything else."""
    if not isinstance(value, dict) or not all(key in value for key in (*_KEYS, "drafts")):
        return None
    answers = value["answers"]
    if not isinstance(answers, list) or not all(
        isinstance(a, list) and len(a) == 2 and isinstance(a[0], str) for a in answers
    ):
        return None
    return value


def _ids(run: Mapping[str, Any]) -> list[str]:
    return [answer[0] for answer in run["answers"]]


def _observations(run: Mapping[str, Any]) -> list[Any]:
    return [answer[1] for answer in run["answers"]]


def _drafts(run: Mapping[str, Any]) -> list[tuple[Any, ...]] | None:
    drafts = run["drafts"]
    if not isinstance(drafts, list) or not all(isinstance(d, list) for d in drafts):
        return None
    return sorted((tuple(d) for d in drafts), key=repr)


def _states_total(answer: Any, total: int) -> bool:
    # The total as the chapter writes it ("2,600 pence"), not part of a larger number.
    if not isinstance(answer, str):
        return False
    return re.search(rf"(?<![\d,]){re.escape(f'{total:,}')} pence", answer) is not None


# --- chapter 3, as the starter already has it -----------------------------------------


@BOOK.baseline(
    points=1,
    section=S_LOOP,
    asks="agent_loop.py imports and defines run_task, next_move and the grader's door.",
    hint="agent_loop.py must import cleanly and keep run_task, next_move, run_scripted "
    "and run_next_move.",
)
def imports(rng: random.Random) -> Trial:
    names = ("run_task", "next_move", "run_scripted", "run_next_move")
    found = yield attrs(*names)
    return expect(same(dict.fromkeys(names, True), found), "A required function is missing.")


@BOOK.baseline(
    points=1,
    section=S_PLAN,
    asks="A model that reads, drafts and answers ends with final_answer and its own text.",
    hint="A reply without tool calls must end the run with final_answer and that reply's text.",
)
def ch3_final_answer(rng: random.Random) -> Trial:
    rows, prices = _extra_scenario(rng)
    extra = rows[-1]
    unit = prices[extra["sku"]]
    a, b, c, d = (fx.call_id(rng) for _ in range(4))
    text = "Plan " + fx.token(rng, 10)
    replies = [
        _reply((a, "list_stock", {})),
        _reply(
            (b, "draft_order", {"sku": fx.VANILLA, "quantity": 6}),
            (c, "draft_order", {"sku": fx.STRAWBERRY, "quantity": 4}),
            (d, "draft_order", {"sku": extra["sku"], "quantity": _need(extra)}),
        ),
        _reply(content=text),
    ]
    drafts = sorted(
        [
            (fx.VANILLA, 6, 1500),
            (fx.STRAWBERRY, 4, 1100),
            (extra["sku"], _need(extra), _need(extra) * unit),
        ],
        key=repr,
    )
    run = _run((yield _scripted(replies, rows, prices, rng.randint(4, 8), rng.randint(4, 8))))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != "final_answer" or run["answer"] != text:
        return "The run should end with final_answer and the model's own text."
    if not same(3, run["steps"]) or _ids(run) != [a, b, c, d]:
        return "Expected 3 steps and 4 answers, one per call, in the model's order."
    if run["executed"] != ["list_stock", "draft_order", "draft_order", "draft_order"]:
        return "Every call of this run should have executed."
    return expect(_drafts(run) == drafts, "The drafts should be 1,500, 1,100 and the extra one.")


@BOOK.baseline(
    points=1,
    section=S_IDS,
    asks="Several calls in one turn are all answered, in order, each under its own id.",
    hint="Answer every call of a turn in the model's order, each ToolMessage under its call's id.",
)
def ch3_ids_in_order(rng: random.Random) -> Trial:
    prices = fx.prices()
    calls: list[tuple[str, str, Any]] = []
    expected: list[Any] = []
    for _ in range(rng.randint(3, 5)):
        kind = rng.choice(["supplier", "run_shell", "list_stock"])
        if kind == "supplier":
            sku = rng.choice(sorted(prices))
            calls.append((fx.call_id(rng), "supplier", {"sku": sku}))
            expected.append(fx.ok(fx.quote(sku, prices[sku])))
        elif kind == "run_shell":
            calls.append((fx.call_id(rng), "run_shell", {"command": fx.token(rng)}))
            expected.append(fx.refused("tool_not_allowed"))
        else:
            calls.append((fx.call_id(rng), "list_stock", {}))
            expected.append(None)  # a stock report; only its ok flag is graded here
    replies = [_reply(*calls), _reply(content="done")]
    run = _run((yield _scripted(replies, fx.shop_rows(), prices, 4, 10)))
    if run is None:
        return _UNREADABLE
    if _ids(run) != [c[0] for c in calls]:
        return "The answers should carry the calls' ids, in the order the model gave them."
    for want, got in zip(expected, _observations(run), strict=True):
        ok = isinstance(got, dict) and got.get("ok") is True
        if (want is None and not ok) or (want is not None and not same(want, got)):
            return "An answer does not match the call with its id (order mixed up?)."
    return expect(run["stop_reason"] == "final_answer", "The run should end with final_answer.")


@BOOK.baseline(
    points=1,
    section=S_FAILURES,
    asks="A model that never stops is ended by step_limit; its last calls are refused, not run.",
    hint="After max_steps model calls, stop with step_limit; answer the last step's calls "
    "with step_limit instead of running them.",
)
def ch3_step_limit(rng: random.Random) -> Trial:
    limit = rng.randint(2, 4)
    ids = [fx.call_id(rng) for _ in range(10)]
    replies = [_reply((i, "list_stock", {})) for i in ids]
    run = _run((yield _scripted(replies, fx.shop_rows(), fx.prices(), limit, 20)))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != "step_limit" or not same(limit, run["steps"]):
        return f"With max_steps={limit}, the run should stop with step_limit after {limit} steps."
    if run["executed"] != ["list_stock"] * (limit - 1):
        return "Only the steps before the last should run their calls."
    if _ids(run) != ids[:limit] or not same(fx.refused("step_limit"), _observations(run)[-1]):
        return "The last step's call should be answered step_limit under its id."
    return expect(run["answer"] is None, "A run cut off by a bound has no answer.")


@BOOK.baseline(
    points=1,
    section=S_LOOP,
    asks="Calls beyond the budget are answered tool_call_limit and the run stops after the turn.",
    hint="When the budget is spent mid-turn, answer the rest of the turn with tool_call_limit "
    "and stop without asking the model again.",
)
def ch3_tool_call_limit(rng: random.Random) -> Trial:
    budget = rng.randint(1, 3)
    calls: list[tuple[str, str, Any]] = [
        (fx.call_id(rng), "list_stock", {}) for _ in range(budget + 2)
    ]
    replies = [_reply(*calls), _reply(content="never asked")]
    run = _run((yield _scripted(replies, fx.shop_rows(), fx.prices(), 5, budget)))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != "tool_call_limit" or not same(1, run["steps"]):
        return "The run should stop with tool_call_limit, without asking the model again."
    if run["executed"] != ["list_stock"] * budget:
        return f"Exactly {budget} call(s) should have run."
    if _ids(run) != [c[0] for c in calls]:
        return "Every call of the turn needs an answer under its id, the excess ones too."
    limit = fx.refused("tool_call_limit")
    return expect(
        all(same(limit, o) for o in _observations(run)[budget:]),
        "The calls beyond the budget should be answered tool_call_limit.",
    )


@BOOK.baseline(
    points=1,
    section=S_PARSE,
    asks="Malformed calls get the fixed malformed_tool_call answer, and the run goes on.",
    hint="Bad JSON, an empty id or an impossible name must be answered "
    "{'ok': False, 'error': 'malformed_tool_call'}, never echoed, never a crash.",
)
def ch3_malformed(rng: random.Random) -> Trial:
    secret = "secret-token-" + fx.token(rng, 12)
    bad = [
        (fx.call_id(rng), "draft_order", '{"sku": "' + secret),
        ("", "list_stock", "{}"),
        (fx.call_id(rng), "run shell " + secret, "{}"),
        (fx.call_id(rng), "list_stock", "[1, 2]"),
    ]
    rng.shuffle(bad)
    good = fx.call_id(rng)
    replies = [_reply(*bad), _reply((good, "list_stock", {})), _reply(content="ok")]
    run = _run((yield _scripted(replies, fx.shop_rows(), fx.prices(), 5, 5)))
    if run is None:
        return _UNREADABLE
    if _ids(run)[:4] != [b[0] for b in bad]:
        return "Each malformed call still needs an answer under the id it came with."
    if not all(same(MALFORMED, o) for o in _observations(run)[:4]):
        return "Malformed calls should get exactly {'ok': False, 'error': 'malformed_tool_call'}."
    if secret in json.dumps(run["answers"]):
        return "An answer repeated the model's malformed text back to it."
    return expect(
        run["stop_reason"] == "final_answer" and run["executed"] == ["list_stock"],
        "After the malformed turn the run should go on, run list_stock, and finish.",
    )


@BOOK.baseline(
    points=1,
    section=S_FAILURES,
    asks="A ModelError ends the run with model_error and a one-line message.",
    hint="Catch ModelError (only ModelError) around model.complete and stop with model_error.",
)
def ch3_model_error(rng: random.Random) -> Trial:
    replies = [_reply((fx.call_id(rng), "list_stock", {}))]  # then the script runs out
    run = _run((yield _scripted(replies, fx.shop_rows(), fx.prices(), 5, 5)))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != "model_error" or not same(2, run["steps"]):
        return "When the model cannot answer, the run should stop with model_error."
    error = run["error"]
    return expect(
        isinstance(error, str) and "\n" not in error and "ModelResponseError" in error,
        "The record's error should be one line naming the error class.",
    )


@BOOK.baseline(
    points=1,
    section=S_IDS,
    asks="A reply that reuses a call id runs nothing and ends the run with duplicate_call_id.",
    hint="Before running a turn, check its ids: one used twice in the turn, or already "
    "answered earlier, makes the reply unreadable; stop with duplicate_call_id.",
)
def ch3_duplicate_call_id(rng: random.Random) -> Trial:
    first, again = fx.call_id(rng), fx.call_id(rng)
    within = [
        _reply((again, "list_stock", {}), (again, "supplier", {"sku": fx.VANILLA})),
        _reply(content="never asked"),
    ]
    across = [
        _reply((first, "list_stock", {})),
        _reply((first, "draft_order", {"sku": fx.VANILLA, "quantity": 6})),
        _reply(content="never asked"),
    ]
    for replies, steps, executed, answered in (
        (within, 1, [], []),
        (across, 2, ["list_stock"], [first]),
    ):
        run = _run((yield _scripted(replies, fx.shop_rows(), fx.prices(), 5, 5)))
        if run is None:
            return _UNREADABLE
        if run["stop_reason"] != "duplicate_call_id" or not same(steps, run["steps"]):
            return "A reply reusing a call id should end the run with duplicate_call_id."
        if run["executed"] != executed or _ids(run) != answered or run["drafts"] != []:
            return "Nothing in a reply that reuses a call id may run or be answered."
    return None


@BOOK.baseline(
    points=1,
    section=S_SETUP,
    asks="Bounds that are not positive ints raise ValueError before the run.",
    hint="0, -1 and True are not valid bounds: run_task must raise ValueError at setup.",
)
def ch3_bad_bounds(rng: random.Random) -> Trial:
    replies = [_reply(content="never asked")]
    for steps, calls in [(0, 5), (5, -rng.randint(1, 9)), (True, 5), (5, True)]:
        answer = yield _scripted(replies, fx.shop_rows(), fx.prices(), steps, calls, raises=True)
        if not answer.raised_a("ValueError"):
            return "A bound of 0, a negative bound or True was accepted."
    return None


# --- exercise 1: one policy for every step --------------------------------------------


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="After a delivery, refused drafts are re-drafted at the new need, each product once.",
    hint="After a delivery refused a draft, the loop did not end with the fresh needs drafted, "
    "or drafted one product twice.",
)
def ex1_delivery_recovers(rng: random.Random) -> Trial:
    rows, prices = _extra_scenario(rng)
    extra = rows[-1]
    delivery = {fx.VANILLA: rng.randint(1, 5), extra["sku"]: rng.randint(1, _need(extra) - 1)}
    run = _run((yield _next_move(rows, prices, delivery)))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != "final_answer":
        return "next_move should still reach a final answer within 6 steps."
    if _drafts(run) != _expected_drafts(rows, prices, delivery):
        return "The final drafts should be each product once, at its need after the delivery."
    # The shop refuses a stale draft inside its handler: the call ran, so it
    # is executed, and its answer is tool_failed.
    failed = [o for o in _observations(run) if same(fx.refused("tool_failed"), o)]
    return expect(
        len(failed) == 2 and run["refused"] == [],
        "Only the two drafts made from the old stock report should have failed.",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="With no delivery, next_move drafts every need once and answers.",
    hint="With no delivery in the way, the run did not read the stock, draft every product "
    "with a need and answer.",
    requires=ex1_delivery_recovers,
)
def ex1_no_delivery(rng: random.Random) -> Trial:
    rows, prices = _extra_scenario(rng)
    run = _run((yield _next_move(rows, prices, {})))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != "final_answer":
        return "The run should end with next_move's final answer."
    if _drafts(run) != _expected_drafts(rows, prices, {}):
        return "Each product below target should be drafted once, at its need."
    return expect(run["refused"] == [], "Nothing should be refused when nothing changes.")


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="After a refusal the stock is read again; a product the delivery filled is not drafted.",
    hint="A product whose need fell to 0 after a refused draft was drafted all the same.",
)
def ex1_delivery_to_zero(rng: random.Random) -> Trial:
    rows, prices = fx.shop_rows(), fx.prices()
    delivery = {fx.VANILLA: 6 + rng.randint(0, 5)}
    expected = _expected_drafts(rows, prices, delivery)
    assert expected == [(fx.STRAWBERRY, 4, 1100)]
    run = _run((yield _next_move(rows, prices, delivery)))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != "final_answer":
        return "next_move should still reach a final answer."
    if run["executed"].count("list_stock") != 2:
        return "After a refused draft, read the stock again before answering."
    return expect(
        _drafts(run) == expected,
        "Vanilla was filled by the delivery: only strawberry (4 tubs, 1,100 pence) remains.",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="A shop that needs nothing gets a final answer of 0 pence and no drafts.",
    hint="With no product below its target, the run did not answer straight after reading the "
    "stock, stating 0 pence.",
)
def ex1_nothing_needed(rng: random.Random) -> Trial:
    rows = fx.shop_rows()
    for row in rows:
        row["on_hand"] = row["reorder_point"] + rng.randint(0, 6)
    run = _run((yield _next_move(rows, fx.prices(), {})))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != "final_answer" or run["executed"] != ["list_stock"]:
        return "With nothing to re-order, read the stock once and answer."
    return expect(_states_total(run["answer"], 0), "The answer should state 0 pence.")


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="The final answer states the total of the drafts that succeeded, e.g. '1,850 pence'.",
    hint="The answer did not state the total of the drafts that succeeded, in pence as Unit A "
    "writes it.",
)
def ex1_answer_total(rng: random.Random) -> Trial:
    rows, prices = _extra_scenario(rng)
    delivery = {fx.VANILLA: rng.randint(1, 5)}
    total = sum(d[2] for d in _expected_drafts(rows, prices, delivery))
    run = _run((yield _next_move(rows, prices, delivery)))
    if run is None:
        return _UNREADABLE
    return expect(
        run["stop_reason"] == "final_answer" and _states_total(run["answer"], total),
        "The answer should state the total of the drafts that succeeded, as '<n:,> pence'.",
    )


# --- exercise 2: a refused request sent again ends the run --------------------------------


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="A refused request sent again is answered repeated_refusal and ends the run.",
    hint="A request the dispatcher had already refused was asked again and the run went on, "
    "instead of stopping as a repeated refusal.",
)
def ex2_repeat_stops(rng: random.Random) -> Trial:
    name, arguments, code = _refused_request(rng)
    a, b = fx.call_id(rng), fx.call_id(rng)
    replies = [_reply((a, name, arguments)), _reply((b, name, arguments)), _reply(content="x")]
    run = _run((yield _scripted(replies, fx.shop_rows(), fx.prices(), 5, 5)))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != "repeated_refusal" or not same(2, run["steps"]):
        return "The repeat should end the run with repeated_refusal after 2 steps."
    if not same([[a, fx.refused(code)], [b, REPEATED]], run["answers"]):
        return "The repeat should be answered repeated_refusal under its own id, and not run."
    # A draft the shop refused ran its handler (executed); an unknown tool never did.
    first_ran = code == "tool_failed"
    executed = [name] if first_ran else []
    refused = [[name, "repeated_refusal"]]
    if not first_ran:
        refused.insert(0, [name, code])
    return expect(
        run["executed"] == executed and run["refused"] == refused,
        "The trajectories should show the dispatcher's first answer, then the repeat.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="Arguments are compared as JSON objects: key order and spacing do not matter.",
    hint="The same refused request, with its arguments written in another order or spacing, "
    "was not seen as a repeat.",
)
def ex2_same_arguments(rng: random.Random) -> Trial:
    quantity = rng.choice([5, 7, 8, 12])
    first = json.dumps({"sku": fx.VANILLA, "quantity": quantity})
    again = f'{{"quantity":{quantity},   "sku":"{fx.VANILLA}"}}'  # same object, other text
    a, b = fx.call_id(rng), fx.call_id(rng)
    replies = [
        _reply((a, "draft_order", first)),
        _reply((b, "draft_order", again)),
        _reply(content="x"),
    ]
    run = _run((yield _scripted(replies, fx.shop_rows(), fx.prices(), 5, 5)))
    if run is None:
        return _UNREADABLE
    return expect(
        run["stop_reason"] == "repeated_refusal" and same([b, REPEATED], run["answers"][-1]),
        "The same arguments in another key order are the same request.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="New arguments, and repeats of calls that succeeded, run as usual.",
    hint="A call that was not a repeat of a refused one (other arguments, or a repeated "
    "success) was stopped.",
    requires=ex2_repeat_stops,
)
def ex2_not_a_repeat(rng: random.Random) -> Trial:
    ids = [fx.call_id(rng) for _ in range(6)]
    replies = [
        _reply((ids[0], "draft_order", {"sku": fx.VANILLA, "quantity": 8})),
        _reply((ids[1], "draft_order", {"sku": fx.VANILLA, "quantity": 6})),
        _reply((ids[2], "list_stock", {})),
        _reply((ids[3], "list_stock", {})),
        _reply((ids[4], "run_shell", {"command": fx.token(rng)})),
        _reply((ids[5], "run_shell", {"command": fx.token(rng, 9)})),
        _reply(content="done"),
    ]
    run = _run((yield _scripted(replies, fx.shop_rows(), fx.prices(), 8, 8)))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != "final_answer":
        return "No request here repeats a refused one: the run should reach its final answer."
    return expect(
        run["executed"] == ["draft_order", "draft_order", "list_stock", "list_stock"],
        "Both drafts (the shop refuses the first inside its handler) and both stock "
        "reports should have run.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A repeat mid-turn: every call of the turn is still answered in order.",
    hint="When a repeat stopped the run, the turn's other calls were left unanswered or "
    "answered out of order.",
)
def ex2_turn_answered(rng: random.Random) -> Trial:
    name, arguments, _ = _refused_request(rng)
    a, b, c, d = (fx.call_id(rng) for _ in range(4))
    replies = [
        _reply((a, name, arguments)),
        _reply(
            (b, "list_stock", {}), (c, name, arguments), (d, "supplier", {"sku": fx.STRAWBERRY})
        ),
        _reply(content="never asked"),
    ]
    run = _run((yield _scripted(replies, fx.shop_rows(), fx.prices(), 5, 8)))
    if run is None:
        return _UNREADABLE
    if _ids(run) != [a, b, c, d]:
        return "Every call of the turn needs its answer, in the model's order."
    observations = _observations(run)
    if not (isinstance(observations[1], dict) and observations[1].get("ok") is True):
        return "The call before the repeat should still run."
    if not same(REPEATED, observations[2]):
        return "The repeat should be answered repeated_refusal."
    if not same(fx.ok(fx.quote(fx.STRAWBERRY, 275)), observations[3]):
        return "The call after the repeat should still be handled as usual."
    return expect(
        run["stop_reason"] == "repeated_refusal" and same(2, run["steps"]),
        "After answering the turn, the run should stop with repeated_refusal.",
    )


# --- exercise 3 (Unit C): a stop rule, an open design task ----------------------------
#
# The unit gives Lucy's needs (a run whose turns, `patience` of them in a row,
# ran nothing stops no_progress; a turn where anything ran starts the count
# again; a patience that could only fail is refused) and leaves the design to
# the learner. What is graded is runs only: how each ended, after how many
# steps, which calls ran and that every call was answered. Every call that
# must not run is a tool the shop never offers, with a command never sent
# before, so that Unit B's repeated_refusal, done or not, never decides a
# check here; a handler that ran and failed is never used, so whether it
# counts as running stays the learner's choice.

NO_PROGRESS = "no_progress"


def _patient(
    replies: list[dict[str, Any]],
    max_steps: int,
    patience: Any,
    *,
    raises: bool = False,
) -> Question:
    return call(
        "run_patient",
        replies,
        fx.shop(fx.shop_rows()),
        fx.prices(),
        max_steps,
        # Never the bound that decides: every call of these runs may be sent.
        4 * max_steps,
        patience,
        raises=raises,
    )


def _fresh_ids(rng: random.Random, count: int) -> list[str]:
    ids: list[str] = []
    while len(ids) < count:
        candidate = fx.call_id(rng)
        if candidate not in ids:
            ids.append(candidate)
    return ids


def _idle(rng: random.Random, call_id: str) -> tuple[str, str, Any]:
    """A call that never runs: a tool the shop does not offer, a command never sent before."""
    return (call_id, "run_shell", {"command": f"{fx.token(rng, 6)} {call_id}"})


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_C,
    asks="A run whose last `patience` turns ran nothing stops no_progress, once the turn is "
    "answered and before the model is asked again.",
    hint="A run whose turns ran nothing, as many in a row as its patience, went on asking the "
    "model, stopped too soon, or stopped for another reason.",
)
def ex3_no_progress_stops(rng: random.Random) -> Trial:
    patience = rng.randint(1, 3)
    ids = _fresh_ids(rng, patience + 1)
    replies = [_reply((ids[0], "list_stock", {}))]
    replies += [_reply(_idle(rng, call_id)) for call_id in ids[1:]]
    replies.append(_reply(content="never asked"))
    run = _run((yield _patient(replies, patience + 4, patience)))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != NO_PROGRESS or not same(patience + 1, run["steps"]):
        return (
            f"With a patience of {patience}, the run should stop no_progress after the "
            f"{patience} turns in a row that ran nothing, {patience + 1} steps in all."
        )
    return expect(
        _ids(run) == ids and run["executed"] == ["list_stock"],
        "Every call should be answered, in order, and only the stock report should run.",
    )


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_C,
    asks="Turns are counted, not calls, and only in a row: a turn where anything ran starts "
    "the count again.",
    hint="A run was stopped no_progress though no run of turns that ran nothing was as long "
    "as its patience (a turn where something ran, or several calls in one turn, were "
    "counted against it).",
    requires=ex3_no_progress_stops,
)
def ex3_progress_starts_again(rng: random.Random) -> Trial:
    patience = rng.randint(2, 4)
    quiet = patience - 1
    ids = iter(_fresh_ids(rng, 4 * patience + 2))
    replies = [_reply(_idle(rng, next(ids))) for _ in range(quiet)]
    # One call runs beside one that does not: the run moved on.
    moved = [_idle(rng, next(ids)), (next(ids), "supplier", {"sku": fx.STRAWBERRY})]
    rng.shuffle(moved)
    replies.append(_reply(*moved))
    # Two calls a turn now: more calls that ran nothing than the patience, in fewer turns.
    replies += [_reply(_idle(rng, next(ids)), _idle(rng, next(ids))) for _ in range(quiet)]
    total = fx.token(rng, 5)
    replies.append(_reply(content=f"Done: {total}."))
    run = _run((yield _patient(replies, 2 * quiet + 3, patience)))
    if run is None:
        return _UNREADABLE
    if run["stop_reason"] != "final_answer":
        return (
            f"With a patience of {patience}, no {patience} turns in a row ran nothing here: "
            "the run should reach its final answer."
        )
    return expect(
        same(2 * quiet + 2, run["steps"]) and run["executed"] == ["supplier"],
        "The run should take every scripted turn, and only the supplier's quote should run.",
    )


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_C,
    asks="A patience that is not a whole number of at least one turn is refused with "
    "ValueError before the model is asked.",
    hint="A patience of 0, a negative one, or True was accepted, or refused with another error.",
)
def ex3_patience_checked(rng: random.Random) -> Trial:
    replies = [_reply(content="never asked")]
    for patience in (0, -rng.randint(1, 5), True):
        answer = yield _patient(replies, 3, patience, raises=True)
        if not answer.raised_a("ValueError"):
            return "A patience of 0, below 0, or True should be refused with ValueError."
    return None
