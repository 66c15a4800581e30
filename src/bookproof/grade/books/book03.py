"""Exercise Book 3: the checks for a submission's `agent_loop.py`.

The graded interface is the "grader's door" at the end of the starter
(`exercises/book03/agent_loop.py`), JSON in and JSON out:

- `run_scripted(replies, shop, prices, max_steps, max_tool_calls)` runs the
  submission's `run_task` with a scripted model whose replies are
  `{"content": text or None, "tool_calls": [[id, name, arguments_json], ...]}`;
- `run_next_move(shop, prices, delivery, max_steps, max_tool_calls)` runs it
  with the submission's `next_move` as every step, while `delivery`
  (sku -> tubs) reaches the freezer right after the first stock report.

Both return the run as JSON: `stop_reason`, `steps`, `answer`, `error`,
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
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bookproof.grade.checks import Check, Result, Trial, attrs, call, same

__all__ = ["BOOK", "CHECKS", "MODULE", "REQUIRED_FILES", "TITLE", "trials"]

BOOK = 3
TITLE = "Exercise Book 3: a bounded agent loop"
MODULE = "agent_loop"
REQUIRED_FILES = ("agent_loop.py",)

_CH = "Chapter 3"
S_IDS = f"{_CH}, '3.2 Call ids'"
S_SETUP = f"{_CH}, '3.5 Refusing a run that could only fail'"
S_PARSE = f"{_CH}, '3.6 Reading a request the model wrote'"
S_LOOP = f"{_CH}, '3.8 The loop'"
S_PLAN = f"{_CH}, '3.9 Lucy's morning plan, offline'"
S_FAILURES = f"{_CH}, '3.10 Failures, one by one'"
S_UNIT_A = f"{_CH}, '3.14 Exercises' (Exercise Book 3, Unit A)"
S_UNIT_B = f"{_CH}, '3.14 Exercises' (Exercise Book 3, Unit B)"

VANILLA = "SKU-VANILLA"
STRAWBERRY = "SKU-STRAWBERRY"
SUPPLIER = "lucy-local"
CURRENCY = "GBP"
MALFORMED = {"ok": False, "error": "malformed_tool_call"}
REPEATED = {"ok": False, "error": "repeated_refusal"}

CHECKS: tuple[Check, ...] = (
    Check(
        "imports",
        1,
        "chapter 3",
        "agent_loop.py imports and defines run_task, next_move and the grader's door.",
        "agent_loop.py must import cleanly and keep run_task, next_move, run_scripted "
        "and run_next_move.",
        S_LOOP,
    ),
    Check(
        "ch3_final_answer",
        1,
        "chapter 3",
        "A model that reads, drafts and answers ends with final_answer and its own text.",
        "A reply without tool calls must end the run with final_answer and that reply's text.",
        S_PLAN,
    ),
    Check(
        "ch3_ids_in_order",
        1,
        "chapter 3",
        "Several calls in one turn are all answered, in order, each under its own id.",
        "Answer every call of a turn in the model's order, each ToolMessage under its call's id.",
        S_IDS,
    ),
    Check(
        "ch3_step_limit",
        1,
        "chapter 3",
        "A model that never stops is ended by step_limit; its last calls are refused, not run.",
        "After max_steps model calls, stop with step_limit; answer the last step's calls "
        "with step_limit instead of running them.",
        S_FAILURES,
    ),
    Check(
        "ch3_tool_call_limit",
        1,
        "chapter 3",
        "Calls beyond the budget are answered tool_call_limit and the run stops after the turn.",
        "When the budget is spent mid-turn, answer the rest of the turn with tool_call_limit "
        "and stop without asking the model again.",
        S_LOOP,
    ),
    Check(
        "ch3_malformed",
        1,
        "chapter 3",
        "Malformed calls get the fixed malformed_tool_call answer, and the run goes on.",
        "Bad JSON, an empty id or an impossible name must be answered "
        "{'ok': False, 'error': 'malformed_tool_call'}, never echoed, never a crash.",
        S_PARSE,
    ),
    Check(
        "ch3_model_error",
        1,
        "chapter 3",
        "A ModelError ends the run with model_error and a one-line message.",
        "Catch ModelError (only ModelError) around model.complete and stop with model_error.",
        S_FAILURES,
    ),
    Check(
        "ch3_bad_bounds",
        1,
        "chapter 3",
        "Bounds that are not positive ints raise ValueError before the run.",
        "0, -1 and True are not valid bounds: run_task must raise ValueError at setup.",
        S_SETUP,
    ),
    Check(
        "ex1_no_delivery",
        1,
        "exercise 1",
        "With no delivery, next_move drafts every need once and answers.",
        "next_move must read the stock, draft every product with a need, and answer.",
        S_UNIT_A,
    ),
    Check(
        "ex1_delivery_recovers",
        2,
        "exercise 1",
        "After a delivery, refused drafts are re-drafted at the new need, each product once.",
        "When a draft is refused, read the stock again and draft the new need of the products "
        "not drafted yet; never draft a product twice.",
        S_UNIT_A,
    ),
    Check(
        "ex1_delivery_to_zero",
        1,
        "exercise 1",
        "After a refusal the stock is read again; a product the delivery filled is not drafted.",
        "Read the stock again after a refused draft; a product whose fresh need is 0 must not "
        "be drafted.",
        S_UNIT_A,
    ),
    Check(
        "ex1_nothing_needed",
        1,
        "exercise 1",
        "A shop that needs nothing gets a final answer of 0 pence and no drafts.",
        "With no product below target, answer after list_stock, stating 0 pence.",
        S_UNIT_A,
    ),
    Check(
        "ex1_answer_total",
        1,
        "exercise 1",
        "The final answer states the total of the drafts that succeeded, e.g. '1,850 pence'.",
        "The answer must state the total of the successful drafts as '<total:,> pence'.",
        S_UNIT_A,
    ),
    Check(
        "ex2_repeat_stops",
        2,
        "exercise 2",
        "A refused request sent again is answered repeated_refusal and ends the run.",
        "Remember each request the dispatcher refused; answer a repeat with repeated_refusal "
        "and stop with StopReason.REPEATED_REFUSAL.",
        S_UNIT_B,
    ),
    Check(
        "ex2_same_arguments",
        1,
        "exercise 2",
        "Arguments are compared as JSON objects: key order and spacing do not matter.",
        "Compare the parsed arguments (e.g. json.dumps(arguments, sort_keys=True)), not the text.",
        S_UNIT_B,
    ),
    Check(
        "ex2_not_a_repeat",
        1,
        "exercise 2",
        "New arguments, and repeats of calls that succeeded, run as usual.",
        "Only a request the dispatcher refused counts: other arguments or a repeated success "
        "must run normally.",
        S_UNIT_B,
    ),
    Check(
        "ex2_turn_answered",
        1,
        "exercise 2",
        "A repeat mid-turn: every call of the turn is still answered in order.",
        "The other calls of the turn must still be handled and answered, in order, "
        "before the run stops.",
        S_UNIT_B,
    ),
)


# --- data this module chooses ----------------------------------------------


def _shop_rows() -> list[dict[str, Any]]:
    # Chapter 1's snapshot, written out again: the grader must not depend on
    # book files a learner might have edited.
    return [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]


def _prices() -> dict[str, int]:
    return {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}


def _token(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def _call_id(rng: random.Random) -> str:
    return "call_" + _token(rng, 12)


def _need(row: Mapping[str, Any]) -> int:
    # The grader's own arithmetic; it never asks the submission.
    return max(0, row["reorder_point"] - row["on_hand"])


def _extra_product(rng: random.Random) -> dict[str, Any]:
    return {
        "sku": "SKU-" + "".join(rng.choice(string.ascii_uppercase) for _ in range(7)),
        "name": "Flavour " + _token(rng, 4),
        "on_hand": rng.randint(0, 12),
        "reorder_point": rng.randint(14, 30),
    }


def _shop(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "Lucy's Ice Cream", "products": rows}


def _reply(*calls: tuple[str, str, Any], content: str | None = None) -> dict[str, Any]:
    """One scripted reply; arguments given as a dict are written as the JSON a model sends."""
    return {
        "content": content,
        "tool_calls": [
            [call_id, name, arguments if isinstance(arguments, str) else json.dumps(arguments)]
            for call_id, name, arguments in calls
        ],
    }


def _quote(sku: str, unit: int) -> dict[str, Any]:
    return {"currency": CURRENCY, "sku": sku, "supplier": SUPPLIER, "unit_cost_pence": unit}


def _draft(sku: str, quantity: int, unit: int) -> dict[str, Any]:
    return {
        **_quote(sku, unit),
        "quantity": quantity,
        "status": "DRAFT",
        "total_pence": quantity * unit,
    }


def _refused(code: str) -> dict[str, Any]:
    return {"ok": False, "error": code}


# --- reading what came back ---------------------------------------------------

_KEYS = ("stop_reason", "steps", "answer", "error", "requested", "executed", "refused", "answers")


def _run(result: Result) -> dict[str, Any] | None:
    """The run summary, when it has the door's shape; None for anything else."""
    value = result.value
    if result.status != "returned" or not isinstance(value, dict):
        return None
    if not all(key in value for key in (*_KEYS, "drafts")):
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


def _when(condition: bool, reason: str) -> str | None:
    return None if condition else reason


_UNREADABLE = "The door did not return a run summary (did run_task or the door raise?)."


# --- the trials ---------------------------------------------------------------


def trials(rng: random.Random) -> dict[str, Trial]:
    """One trial per check, with fresh random data for this run."""
    builders: dict[str, Callable[[random.Random], Trial]] = {
        "imports": _imports,
        "ch3_final_answer": _ch3_final_answer,
        "ch3_ids_in_order": _ch3_ids_in_order,
        "ch3_step_limit": _ch3_step_limit,
        "ch3_tool_call_limit": _ch3_tool_call_limit,
        "ch3_malformed": _ch3_malformed,
        "ch3_model_error": _ch3_model_error,
        "ch3_bad_bounds": _ch3_bad_bounds,
        "ex1_no_delivery": _ex1_no_delivery,
        "ex1_delivery_recovers": _ex1_delivery_recovers,
        "ex1_delivery_to_zero": _ex1_delivery_to_zero,
        "ex1_nothing_needed": _ex1_nothing_needed,
        "ex1_answer_total": _ex1_answer_total,
        "ex2_repeat_stops": _ex2_repeat_stops,
        "ex2_same_arguments": _ex2_same_arguments,
        "ex2_not_a_repeat": _ex2_not_a_repeat,
        "ex2_turn_answered": _ex2_turn_answered,
    }
    return {check.id: builders[check.id](rng) for check in CHECKS}


def _imports(rng: random.Random) -> Trial:
    names = ("run_task", "next_move", "run_scripted", "run_next_move")

    def judge(results: Sequence[Result]) -> str | None:
        (found,) = results
        expected = dict.fromkeys(names, True)
        return _when(
            found.status == "returned" and same(expected, found.value),
            "A required function is missing.",
        )

    return Trial((attrs(*names),), judge)


def _scripted(
    replies: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    prices: dict[str, int],
    max_steps: int,
    max_tool_calls: int,
    **kwargs: Any,
) -> Any:
    return call("run_scripted", replies, _shop(rows), prices, max_steps, max_tool_calls, **kwargs)


def _ch3_final_answer(rng: random.Random) -> Trial:
    extra = _extra_product(rng)
    unit = rng.randint(100, 999)
    rows = [*_shop_rows(), extra]
    prices = _prices() | {extra["sku"]: unit}
    a, b, c, d = (_call_id(rng) for _ in range(4))
    text = "Plan " + _token(rng, 10)
    replies = [
        _reply((a, "list_stock", {})),
        _reply(
            (b, "draft_order", {"sku": VANILLA, "quantity": 6}),
            (c, "draft_order", {"sku": STRAWBERRY, "quantity": 4}),
            (d, "draft_order", {"sku": extra["sku"], "quantity": _need(extra)}),
        ),
        _reply(content=text),
    ]
    drafts = sorted(
        [
            (VANILLA, 6, 1500),
            (STRAWBERRY, 4, 1100),
            (extra["sku"], _need(extra), _need(extra) * unit),
        ],
        key=repr,
    )

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if run["stop_reason"] != "final_answer" or run["answer"] != text:
            return "The run should end with final_answer and the model's own text."
        if not same(3, run["steps"]) or _ids(run) != [a, b, c, d]:
            return "Expected 3 steps and 4 answers, one per call, in the model's order."
        if run["executed"] != ["list_stock", "draft_order", "draft_order", "draft_order"]:
            return "Every call of this run should have executed."
        return _when(_drafts(run) == drafts, "The drafts should be 1,500, 1,100 and the extra one.")

    return Trial((_scripted(replies, rows, prices, rng.randint(4, 8), rng.randint(4, 8)),), judge)


def _ch3_ids_in_order(rng: random.Random) -> Trial:
    prices = _prices()
    calls: list[tuple[str, str, Any]] = []
    expected: list[Any] = []
    for _ in range(rng.randint(3, 5)):
        kind = rng.choice(["supplier", "run_shell", "list_stock"])
        if kind == "supplier":
            sku = rng.choice(sorted(prices))
            calls.append((_call_id(rng), "supplier", {"sku": sku}))
            expected.append({"ok": True, "value": _quote(sku, prices[sku])})
        elif kind == "run_shell":
            calls.append((_call_id(rng), "run_shell", {"command": _token(rng)}))
            expected.append(_refused("tool_not_allowed"))
        else:
            calls.append((_call_id(rng), "list_stock", {}))
            expected.append(None)  # a stock report; only its ok flag is graded here
    replies = [_reply(*calls), _reply(content="done")]

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if _ids(run) != [c[0] for c in calls]:
            return "The answers should carry the calls' ids, in the order the model gave them."
        for want, got in zip(expected, _observations(run), strict=True):
            ok = isinstance(got, dict) and got.get("ok") is True
            if (want is None and not ok) or (want is not None and not same(want, got)):
                return "An answer does not match the call with its id (order mixed up?)."
        return _when(run["stop_reason"] == "final_answer", "The run should end with final_answer.")

    return Trial((_scripted(replies, _shop_rows(), prices, 4, 10),), judge)


def _ch3_step_limit(rng: random.Random) -> Trial:
    limit = rng.randint(2, 4)
    ids = [_call_id(rng) for _ in range(10)]
    replies = [_reply((i, "list_stock", {})) for i in ids]

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if run["stop_reason"] != "step_limit" or not same(limit, run["steps"]):
            return (
                f"With max_steps={limit}, the run should stop with step_limit after {limit} steps."
            )
        if run["executed"] != ["list_stock"] * (limit - 1):
            return "Only the steps before the last should run their calls."
        if _ids(run) != ids[:limit] or not same(_refused("step_limit"), _observations(run)[-1]):
            return "The last step's call should be answered step_limit under its id."
        return _when(run["answer"] is None, "A run cut off by a bound has no answer.")

    return Trial((_scripted(replies, _shop_rows(), _prices(), limit, 20),), judge)


def _ch3_tool_call_limit(rng: random.Random) -> Trial:
    budget = rng.randint(1, 3)
    calls = [(_call_id(rng), "list_stock", {}) for _ in range(budget + 2)]
    replies = [_reply(*calls), _reply(content="never asked")]

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if run["stop_reason"] != "tool_call_limit" or not same(1, run["steps"]):
            return "The run should stop with tool_call_limit, without asking the model again."
        if run["executed"] != ["list_stock"] * budget:
            return f"Exactly {budget} call(s) should have run."
        if _ids(run) != [c[0] for c in calls]:
            return "Every call of the turn needs an answer under its id, the excess ones too."
        limit = _refused("tool_call_limit")
        return _when(
            all(same(limit, o) for o in _observations(run)[budget:]),
            "The calls beyond the budget should be answered tool_call_limit.",
        )

    return Trial((_scripted(replies, _shop_rows(), _prices(), 5, budget),), judge)


def _ch3_malformed(rng: random.Random) -> Trial:
    secret = "secret-token-" + _token(rng, 12)
    bad = [
        (_call_id(rng), "draft_order", '{"sku": "' + secret),
        ("", "list_stock", "{}"),
        (_call_id(rng), "run shell " + secret, "{}"),
        (_call_id(rng), "list_stock", "[1, 2]"),
    ]
    rng.shuffle(bad)
    good = _call_id(rng)
    replies = [_reply(*bad), _reply((good, "list_stock", {})), _reply(content="ok")]

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if _ids(run)[:4] != [b[0] for b in bad]:
            return "Each malformed call still needs an answer under the id it came with."
        if not all(same(MALFORMED, o) for o in _observations(run)[:4]):
            return (
                "Malformed calls should get exactly {'ok': False, 'error': 'malformed_tool_call'}."
            )
        if secret in json.dumps(run["answers"]):
            return "An answer repeated the model's malformed text back to it."
        return _when(
            run["stop_reason"] == "final_answer" and run["executed"] == ["list_stock"],
            "After the malformed turn the run should go on, run list_stock, and finish.",
        )

    return Trial((_scripted(replies, _shop_rows(), _prices(), 5, 5),), judge)


def _ch3_model_error(rng: random.Random) -> Trial:
    replies = [_reply((_call_id(rng), "list_stock", {}))]  # then the script runs out

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if run["stop_reason"] != "model_error" or not same(2, run["steps"]):
            return "When the model cannot answer, the run should stop with model_error."
        error = run["error"]
        return _when(
            isinstance(error, str) and "\n" not in error and "ModelResponseError" in error,
            "The record's error should be one line naming the error class.",
        )

    return Trial((_scripted(replies, _shop_rows(), _prices(), 5, 5),), judge)


def _ch3_bad_bounds(rng: random.Random) -> Trial:
    replies = [_reply(content="never asked")]
    bounds = [(0, 5), (5, -rng.randint(1, 9)), (True, 5), (5, True)]

    def judge(results: Sequence[Result]) -> str | None:
        return _when(
            all(r.status == "raised" and "ValueError" in r.raised for r in results),
            "A bound of 0, a negative bound or True was accepted.",
        )

    return Trial(
        tuple(
            _scripted(replies, _shop_rows(), _prices(), steps, calls, may_raise=True)
            for steps, calls in bounds
        ),
        judge,
    )


def _next_move(
    rows: list[dict[str, Any]],
    prices: dict[str, int],
    delivery: dict[str, int],
    max_steps: int = 6,
    max_tool_calls: int = 12,
) -> Any:
    return call("run_next_move", _shop(rows), prices, delivery, max_steps, max_tool_calls)


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


def _extra_scenario(rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, int]]:
    extra = _extra_product(rng)
    return [*_shop_rows(), extra], _prices() | {extra["sku"]: rng.randint(100, 999)}


def _ex1_no_delivery(rng: random.Random) -> Trial:
    rows, prices = _extra_scenario(rng)
    expected = _expected_drafts(rows, prices, {})

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if run["stop_reason"] != "final_answer":
            return "The run should end with next_move's final answer."
        if _drafts(run) != expected:
            return "Each product below target should be drafted once, at its need."
        return _when(run["refused"] == [], "Nothing should be refused when nothing changes.")

    return Trial((_next_move(rows, prices, {}),), judge)


def _ex1_delivery_recovers(rng: random.Random) -> Trial:
    rows, prices = _extra_scenario(rng)
    extra = rows[-1]
    delivery = {VANILLA: rng.randint(1, 5), extra["sku"]: rng.randint(1, _need(extra) - 1)}
    expected = _expected_drafts(rows, prices, delivery)

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if run["stop_reason"] != "final_answer":
            return "next_move should still reach a final answer within 6 steps."
        if _drafts(run) != expected:
            return "The final drafts should be each product once, at its need after the delivery."
        # The shop refuses a stale draft inside its handler: the call ran, so it
        # is executed, and its answer is tool_failed.
        failed = [o for o in _observations(run) if same(_refused("tool_failed"), o)]
        return _when(
            len(failed) == 2 and run["refused"] == [],
            "Only the two drafts made from the old stock report should have failed.",
        )

    return Trial((_next_move(rows, prices, delivery),), judge)


def _ex1_delivery_to_zero(rng: random.Random) -> Trial:
    rows, prices = _shop_rows(), _prices()
    delivery = {VANILLA: 6 + rng.randint(0, 5)}
    expected = _expected_drafts(rows, prices, delivery)
    assert expected == [(STRAWBERRY, 4, 1100)]

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if run["stop_reason"] != "final_answer":
            return "next_move should still reach a final answer."
        if run["executed"].count("list_stock") != 2:
            return "After a refused draft, read the stock again before answering."
        return _when(
            _drafts(run) == expected,
            "Vanilla was filled by the delivery: only strawberry (4 tubs, 1,100 pence) remains.",
        )

    return Trial((_next_move(rows, prices, delivery),), judge)


def _ex1_nothing_needed(rng: random.Random) -> Trial:
    rows = _shop_rows()
    for row in rows:
        row["on_hand"] = row["reorder_point"] + rng.randint(0, 6)

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if run["stop_reason"] != "final_answer" or run["executed"] != ["list_stock"]:
            return "With nothing to re-order, read the stock once and answer."
        return _when(_states_total(run["answer"], 0), "The answer should state 0 pence.")

    return Trial((_next_move(rows, _prices(), {}),), judge)


def _ex1_answer_total(rng: random.Random) -> Trial:
    rows, prices = _extra_scenario(rng)
    delivery = {VANILLA: rng.randint(1, 5)}
    total = sum(d[2] for d in _expected_drafts(rows, prices, delivery))

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        return _when(
            run["stop_reason"] == "final_answer" and _states_total(run["answer"], total),
            "The answer should state the total of the drafts that succeeded, as '<n:,> pence'.",
        )

    return Trial((_next_move(rows, prices, delivery),), judge)


def _refused_request(rng: random.Random) -> tuple[str, dict[str, Any], str]:
    """A request the shop's dispatcher refuses: (name, arguments, the refusal code)."""
    if rng.random() < 0.5:
        return "draft_order", {"sku": VANILLA, "quantity": rng.choice([5, 7, 8, 12])}, "tool_failed"
    return "run_shell", {"command": _token(rng)}, "tool_not_allowed"


def _ex2_repeat_stops(rng: random.Random) -> Trial:
    name, arguments, code = _refused_request(rng)
    a, b = _call_id(rng), _call_id(rng)
    replies = [_reply((a, name, arguments)), _reply((b, name, arguments)), _reply(content="x")]

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if run["stop_reason"] != "repeated_refusal" or not same(2, run["steps"]):
            return "The repeat should end the run with repeated_refusal after 2 steps."
        if not same([[a, _refused(code)], [b, REPEATED]], run["answers"]):
            return "The repeat should be answered repeated_refusal under its own id, and not run."
        # A draft the shop refused ran its handler (executed); an unknown tool never did.
        first_ran = code == "tool_failed"
        executed = [name] if first_ran else []
        refused = (
            [[name, "repeated_refusal"]]
            if first_ran
            else [[name, code], [name, "repeated_refusal"]]
        )
        return _when(
            run["executed"] == executed and run["refused"] == refused,
            "The trajectories should show the dispatcher's first answer, then the repeat.",
        )

    return Trial((_scripted(replies, _shop_rows(), _prices(), 5, 5),), judge)


def _ex2_same_arguments(rng: random.Random) -> Trial:
    quantity = rng.choice([5, 7, 8, 12])
    first = json.dumps({"sku": VANILLA, "quantity": quantity})
    again = f'{{"quantity":{quantity},   "sku":"{VANILLA}"}}'  # same object, other text
    a, b = _call_id(rng), _call_id(rng)
    replies = [
        _reply((a, "draft_order", first)),
        _reply((b, "draft_order", again)),
        _reply(content="x"),
    ]

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        return _when(
            run["stop_reason"] == "repeated_refusal" and same([b, REPEATED], run["answers"][-1]),
            "The same arguments in another key order are the same request.",
        )

    return Trial((_scripted(replies, _shop_rows(), _prices(), 5, 5),), judge)


def _ex2_not_a_repeat(rng: random.Random) -> Trial:
    ids = [_call_id(rng) for _ in range(6)]
    replies = [
        _reply((ids[0], "draft_order", {"sku": VANILLA, "quantity": 8})),
        _reply((ids[1], "draft_order", {"sku": VANILLA, "quantity": 6})),
        _reply((ids[2], "list_stock", {})),
        _reply((ids[3], "list_stock", {})),
        _reply((ids[4], "run_shell", {"command": _token(rng)})),
        _reply((ids[5], "run_shell", {"command": _token(rng, 9)})),
        _reply(content="done"),
    ]

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if run["stop_reason"] != "final_answer":
            return "No request here repeats a refused one: the run should reach its final answer."
        return _when(
            run["executed"] == ["draft_order", "draft_order", "list_stock", "list_stock"],
            "Both drafts (the shop refuses the first inside its handler) and both stock "
            "reports should have run.",
        )

    return Trial((_scripted(replies, _shop_rows(), _prices(), 8, 8),), judge)


def _ex2_turn_answered(rng: random.Random) -> Trial:
    name, arguments, _ = _refused_request(rng)
    a, b, c, d = (_call_id(rng) for _ in range(4))
    replies = [
        _reply((a, name, arguments)),
        _reply((b, "list_stock", {}), (c, name, arguments), (d, "supplier", {"sku": STRAWBERRY})),
        _reply(content="never asked"),
    ]

    def judge(results: Sequence[Result]) -> str | None:
        run = _run(results[0])
        if run is None:
            return _UNREADABLE
        if _ids(run) != [a, b, c, d]:
            return "Every call of the turn needs its answer, in the model's order."
        observations = _observations(run)
        if not (isinstance(observations[1], dict) and observations[1].get("ok") is True):
            return "The call before the repeat should still run."
        if not same(REPEATED, observations[2]):
            return "The repeat should be answered repeated_refusal."
        if not same({"ok": True, "value": _quote(STRAWBERRY, 275)}, observations[3]):
            return "The call after the repeat should still be handled as usual."
        return _when(
            run["stop_reason"] == "repeated_refusal" and same(2, run["steps"]),
            "After answering the turn, the run should stop with repeated_refusal.",
        )

    return Trial((_scripted(replies, _shop_rows(), _prices(), 5, 8),), judge)
