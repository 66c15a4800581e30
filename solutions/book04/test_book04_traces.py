"""Unit A: a query over a trace, and a replay that parts ways where the exercise says.

Run inside this folder: `uv run pytest test_book04_traces.py`. The tests reach
evidence.py only through the grader's door (plain values in and out, a trace
as its text), the way they reach it when the grader runs them. Every expected
line number and total below was worked out by hand from chapter 4's event
order, not by calling the code under test.
"""

import json

from evidence import (
    MORNING_PLAN,
    MORNING_SHOP,
    TASK,
    ToolCall,
    failures_in,
    record_run,
    replay_at_290,
    strawberry_at_290,
)

PRICES = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}


def ask(call_id, name, **arguments):
    """One call as a reply carries it: [id, name, arguments as JSON text]."""
    return [call_id, name, json.dumps(arguments)]


def morning():
    return record_run(TASK, MORNING_SHOP, PRICES, MORNING_PLAN, 6, 8)


def test_a_clean_morning_has_no_failed_handler():
    trace = morning()
    assert len(trace.splitlines()) == 14
    assert failures_in(trace) == []


def test_a_failed_handler_is_found_with_its_line_and_exception():
    replies = [
        {
            "content": None,
            "tool_calls": [
                ask("c1", "supplier", sku="SKU-PISTACHIO"),
                ask("c2", "place_order", sku="SKU-VANILLA"),
                ask("c3", "draft_order", sku="SKU-VANILLA", quantity=8),
            ],
        },
        {"content": "done", "tool_calls": []},
    ]
    trace = record_run("t", MORNING_SHOP, PRICES, replies, 3, 6, refuse_writes=True)
    found = failures_in(trace)
    # Lines: 1 start, 2 request, 3 reply, then a call and an outcome per call:
    # c1 on 4-5, c2 on 6-7 (refused by the authority: not a handler), c3 on 8-9.
    assert [(f["line"], f["tool"], f["call_id"], f["exception"]) for f in found] == [
        (5, "supplier", "c1", "KeyError"),
        (9, "draft_order", "c3", "ValueError"),
    ]
    assert found[1]["message"] == "quantity 8 does not match the need of 6"
    assert len({f["run"] for f in found}) == 1


def test_failures_of_interleaved_runs_come_in_file_order():
    # One call that fails, and no reply after it: start, request, reply, call,
    # outcome, a request the script cannot answer, the end. Seven lines a run.
    failing = [{"content": None, "tool_calls": [ask("c1", "supplier", sku="SKU-X")]}]
    a = record_run("t", MORNING_SHOP, PRICES, failing, 3, 6).splitlines(keepends=True)
    b = record_run("t", MORNING_SHOP, PRICES, failing, 3, 6).splitlines(keepends=True)
    assert len(a) == len(b) == 7
    # Run b starts first (lines 1-3), all of run a follows (4-10), then the
    # rest of b (11-14): a's failed call is answered on line 8, b's on line 12.
    found = failures_in("".join(b[:3] + a + b[3:]))
    assert [failure["line"] for failure in found] == [8, 12]
    assert found[0]["run"] != found[1]["run"]


def test_the_strawberry_price_diverges_at_event_11():
    divergence = replay_at_290(morning())
    assert divergence is not None
    assert (divergence["seq"], divergence["kind"]) == (11, "tool_outcome")
    assert divergence["what"] == "gen_ai.tool.call.result"
    # 4 tubs at 275 pence, then at 290.
    assert '"total_pence": 1100' in divergence["recorded"]
    assert '"total_pence": 1160' in divergence["now"]


def test_the_setup_keeps_every_other_price_and_the_stock():
    recorded = json.loads(morning().splitlines()[0])["setup"]["arguments"]
    tools = strawberry_at_290(**recorded)
    prices = {}
    for sku in ("SKU-VANILLA", "SKU-CHOCOLATE", "SKU-STRAWBERRY"):
        quote = tools.invoke(ToolCall(id="q", name="supplier", arguments={"sku": sku}))
        prices[sku] = quote["value"]["unit_cost_pence"]
    assert prices == {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 290}
    stock = tools.invoke(ToolCall(id="s", name="list_stock", arguments={}))
    assert [row["on_hand"] for row in stock["value"]] == [7, 1, 2]
