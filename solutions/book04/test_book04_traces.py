"""Unit A: a query over a trace, and a replay that parts ways where the exercise says.

Run inside this folder: `uv run pytest test_book04_traces.py`. Every expected
line number and total below was worked out by hand from chapter 4's event
order, not by calling the code under test.
"""

import json
from pathlib import Path
from typing import Any

import evidence
import pytest

from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import NoArguments, ProductArguments
from sovereign_agent.trace import JsonLinesFile, Recorder


def ask(call_id: str, name: str, **arguments: Any) -> AssistantToolCall:
    return AssistantToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


def refuse(call: evidence.ToolCall) -> None:
    raise PermissionError("not approved")


def broken(args: NoArguments) -> None:
    raise ZeroDivisionError("never expected")


def record(trace: Path, replies: list[AssistantMessage], dispatcher: evidence.Dispatcher) -> None:
    evidence.run_task(
        ScriptedModel(replies),
        dispatcher,
        "t",
        max_steps=3,
        max_tool_calls=6,
        recorder=Recorder(JsonLinesFile(trace)),
    )


def shop_with_a_write() -> evidence.Dispatcher:
    shop = evidence.build_tools(evidence.MORNING_SHOP)
    place = evidence.ExecutableTool(
        "place_order", "Place an order.", ProductArguments, lambda a: "placed", True
    )
    return evidence.Dispatcher(
        [*shop.tools.values(), place],
        allowed=[*shop.allowed, "place_order"],
        before_write=refuse,
    )


def test_a_clean_morning_has_no_failed_handler(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    assert evidence.record_morning(str(trace)) == 14
    assert evidence.handler_failures(str(trace)) == []


def test_a_failed_handler_is_found_with_its_line_and_exception(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    replies = [
        AssistantMessage(
            tool_calls=(
                ask("c1", "supplier", sku="SKU-PISTACHIO"),
                ask("c2", "place_order", sku="SKU-VANILLA"),
                ask("c3", "draft_order", sku="SKU-VANILLA", quantity=8),
            )
        ),
        AssistantMessage(content="done"),
    ]
    record(trace, replies, shop_with_a_write())
    found = evidence.handler_failures(str(trace))
    # Lines: 1 start, 2 request, 3 reply, then a call and an outcome per call:
    # c1 on 4-5, c2 on 6-7 (refused by the authority: not a handler), c3 on 8-9.
    assert [(f["line"], f["tool"], f["call_id"], f["exception"]) for f in found] == [
        (5, "supplier", "c1", "KeyError"),
        (9, "draft_order", "c3", "ValueError"),
    ]
    assert found[1]["message"] == "quantity 8 does not match the need of 6"
    assert len({f["run"] for f in found}) == 1


def test_failures_of_interleaved_runs_come_in_file_order(tmp_path: Path) -> None:
    first, second, trace = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "t.jsonl"
    failing = [AssistantMessage(tool_calls=(ask("c1", "supplier", sku="SKU-X"),))]
    record(first, failing, evidence.build_tools(evidence.MORNING_SHOP))
    record(second, failing, evidence.build_tools(evidence.MORNING_SHOP))
    a, b = first.read_text().splitlines(), second.read_text().splitlines()
    assert len(a) == len(b) == 7
    # Run b starts first (lines 1-3), all of run a follows (4-10), then the
    # rest of b (11-14): a's failed call is answered on line 8, b's on line 12.
    trace.write_text("\n".join(b[:3] + a + b[3:]) + "\n")
    found = evidence.handler_failures(str(trace))
    assert [failure["line"] for failure in found] == [8, 12]
    assert found[0]["run"] != found[1]["run"]


def test_the_strawberry_price_diverges_at_event_11(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    evidence.record_morning(str(trace))
    divergence = evidence.replay_at_290(str(trace))
    assert divergence is not None
    assert (divergence["seq"], divergence["kind"]) == (11, "tool_outcome")
    assert divergence["what"] == "gen_ai.tool.call.result"
    # 4 tubs at 275 pence, then at 290.
    assert '"total_pence": 1100' in divergence["recorded"]
    assert '"total_pence": 1160' in divergence["now"]


def test_the_setup_keeps_every_other_price_and_the_stock() -> None:
    recorded = evidence.build_tools(evidence.MORNING_SHOP).setup.arguments
    tools = evidence.strawberry_at_290(**json.loads(json.dumps(recorded)))
    quote = tools.invoke(
        evidence.ToolCall(id="q", name="supplier", arguments={"sku": "SKU-VANILLA"})
    )
    assert quote["value"]["unit_cost_pence"] == 250
    stock = tools.invoke(evidence.ToolCall(id="s", name="list_stock", arguments={}))
    assert [row["on_hand"] for row in stock["value"]] == [7, 1, 2]


def test_a_broken_handler_is_a_defect_and_not_a_failure_to_report(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    tool = evidence.ExecutableTool("broken", "A bug.", NoArguments, broken)
    with pytest.raises(ZeroDivisionError):
        record(
            trace,
            [AssistantMessage(tool_calls=(ask("c1", "broken"),))],
            evidence.Dispatcher([tool], allowed=["broken"]),
        )
