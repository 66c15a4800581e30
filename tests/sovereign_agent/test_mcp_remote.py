"""Remote tools over real stdio pipes: what joins, what a model sees, what a hostile server gets.

The supplier's server is the book's (`book/textbook/servers/supplier_mcp.py`,
built with the official SDK); the hostile ones are `mcp_servers/hostile.py`,
written by hand so they can break the protocol in ways the SDK never would.
"""

from __future__ import annotations

import inspect
import json
import os
import runpy
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bookproof.layout import REPO_ROOT
from sovereign_agent.loop import run_task
from sovereign_agent.mcp.remote import (
    Declared,
    RemoteFailure,
    RemoteTools,
    _Call,
    connect,
    dispatcher_with_remote,
)
from sovereign_agent.mcp.supplier import SUPPLIER_DECLARATIONS, SUPPLIER_SOURCE, Availability
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import build_tools
from sovereign_agent.tools import Dispatcher, ToolCall
from sovereign_agent.toolsets import SourcedTools
from sovereign_agent.trace.recorder import Recorder

ROOT = REPO_ROOT
SUPPLIER = [sys.executable, str(ROOT / "book/textbook/servers/supplier_mcp.py")]
HOSTILE = str(Path(__file__).with_name("mcp_servers") / "hostile.py")
DECLARED = (Declared("check_availability", Availability, "Tubs the supplier can deliver."),)
SHOP = runpy.run_path(
    str(
        ROOT
        / "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
    )
)["SHOP"]


def ask(call_id: str, tool: str, /, **arguments: Any) -> AssistantToolCall:
    return AssistantToolCall(id=call_id, name=tool, arguments_json=json.dumps(arguments))


def turn(*calls: AssistantToolCall) -> AssistantMessage:
    return AssistantMessage(tool_calls=calls)


def children_running(marker: str) -> list[int]:
    """Processes whose parent is this one and whose command line holds `marker`, zombies too."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and marker.encode() in cmdline:
            found.append(int(stat.parent.name))
    return found


def hostile(mode: str, *, call_timeout: float = 1.0) -> RemoteTools:
    return connect(
        [sys.executable, HOSTILE, mode], DECLARED, source="mcp:hostile", call_timeout=call_timeout
    )


def check(tools: RemoteTools, sku: str = "VANILLA") -> Any:
    dispatcher = Dispatcher(tools.tools.values(), allowed=tools.tools.keys())
    return dispatcher.attempt(ToolCall(id="c1", name="check_availability", arguments={"sku": sku}))


# --- the supplier: what joins, what the model is shown, the rug pull ----------------


@pytest.fixture(scope="module")
def supplier_run() -> Iterator[tuple[RemoteTools, ScriptedModel, Any, list[dict[str, Any]]]]:
    """One run of the shop with the supplier's server: the server's state changes after a call."""
    events: list[dict[str, Any]] = []
    with connect(SUPPLIER, SUPPLIER_DECLARATIONS, source=SUPPLIER_SOURCE) as supplier:
        shop = SourcedTools("shop", build_tools(SHOP).tools)
        dispatcher, _ = dispatcher_with_remote(
            [shop, supplier], allowed=["list_stock", "check_availability", "next_delivery"]
        )
        model = ScriptedModel(
            [
                turn(ask("a1", "check_availability", sku="VANILLA")),
                turn(ask("a2", "check_availability", sku="CHOCOLATE"), ask("a3", "next_delivery")),
                turn(ask("a4", "list_stock")),
                AssistantMessage(content="done"),
            ]
        )
        record = run_task(
            model,
            dispatcher,
            "Can we restock?",
            max_steps=6,
            max_tool_calls=6,
            recorder=Recorder(events.append),
        )
        yield supplier, model, record, events


def test_declared_matching_tools_join_and_the_others_are_refused_with_a_reason(
    supplier_run: Any,
) -> None:
    supplier, _, _, _ = supplier_run
    assert sorted(supplier.tools) == ["check_availability", "next_delivery"]
    assert {(refusal.name, refusal.reason) for refusal in supplier.refused} == {
        ("place_order", "schema_mismatch"),
        ("apply_discount_code", "undeclared"),
    }


def test_the_model_is_shown_the_shops_descriptions_never_the_servers(supplier_run: Any) -> None:
    _, model, _, _ = supplier_run
    first_offer = {tool["function"]["name"]: tool["function"] for tool in model.calls[0][1]}
    assert first_offer["check_availability"]["description"] == (
        "How many tubs of one SKU the supplier can deliver next time."
    )
    shown = json.dumps([tools for _, tools in model.calls])
    # The supplier's poisoned words, and every tool that did not join, never reach the model.
    for absent in ("IMPORTANT", "FREE-ICE-CREAM", "cheapcones", "place_order", "apply_discount"):
        assert absent not in shown


def test_a_tool_whose_description_changes_mid_session_is_lost_for_the_rest_of_the_run(
    supplier_run: Any,
) -> None:
    supplier, model, record, events = supplier_run
    observations = [json.loads(m.content) for m in record.messages if m.role == "tool"]
    assert observations[0] == {"ok": True, "value": {"sku": "VANILLA", "tubs": 40}}
    assert observations[1] == {"ok": False, "error": "tool_not_allowed"}
    assert observations[2] == {"ok": True, "value": {"weekday": "Tuesday"}}
    [narrowing] = record.narrowings
    assert (narrowing.call_id, narrowing.reason) == ("a1", "tool_changed")
    assert narrowing.removed == ("check_availability",)
    # The shop's own tool survives the supplier's narrowing.
    assert narrowing.kept == ("list_stock", "next_delivery")
    assert supplier.lost == {"check_availability"}
    offered = [[tool["function"]["name"] for tool in tools] for _, tools in model.calls]
    assert "check_availability" in offered[0] and "check_availability" not in offered[1]
    assert [e["reason"] for e in events if e["event"] == "scope_narrowed"] == ["tool_changed"]


def test_a_lost_tool_is_refused_by_its_own_handler_too(supplier_run: Any) -> None:
    supplier, _, _, _ = supplier_run
    outcome = check(supplier)
    assert outcome.observation == {"ok": False, "error": "tool_failed"}
    assert "changed on the server" in outcome.failure.message


# --- hostile servers ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "detail"),
    [
        ("hang", "no answer within"),
        ("wrong_id", "no answer within"),
        ("die", "Connection closed"),
        ("garbage", "not JSON-RPC"),
        ("error", "the server reported an error"),
        ("malformed", "CallToolResult"),
        ("image", "ImageContent, not text"),
        ("rpc_error", "MCPError"),
    ],
)
def test_a_misbehaving_server_is_a_tool_failed_with_the_detail_for_the_operator(
    mode: str, detail: str
) -> None:
    started = time.monotonic()
    # A server that never answers costs each call its whole timeout: there a
    # shorter one proves the same in half the time (the hang's bound is tested
    # below). A server that does answer keeps the default, as slack for a busy machine.
    never_answers = detail == "no answer within"
    with hostile(mode, call_timeout=0.5 if never_answers else 1.0) as tools:
        outcome = check(tools)
        again = check(tools)
    assert outcome.observation == {"ok": False, "error": "tool_failed"}
    assert outcome.handler_ran
    assert detail in outcome.failure.message
    # Nothing the server said reaches the model, secrets included.
    assert "secret-token" not in json.dumps(outcome.observation)
    assert again.observation == {"ok": False, "error": "tool_failed"}
    # A hang is bounded by the call's timeout, and closing is bounded too.
    assert time.monotonic() - started < 15


def test_a_result_larger_than_the_bound_never_reaches_the_model() -> None:
    with hostile("huge") as tools:
        outcome = check(tools)
    assert outcome.observation == {"ok": False, "error": "result_too_large"}
    assert "secret-token" not in json.dumps(outcome.observation)


def test_a_server_that_floods_notifications_still_answers_in_order() -> None:
    with hostile("flood", call_timeout=20) as tools:
        first, second = check(tools), check(tools)
    assert first.observation == second.observation == {"ok": True, "value": "40"}


def test_a_hang_fails_once_the_call_timeout_has_passed_and_not_before() -> None:
    with hostile("hang", call_timeout=0.5) as tools:
        started = time.monotonic()
        outcome = check(tools)
        took = time.monotonic() - started
    assert outcome.failure.error_type == "TimeoutError"
    assert 0.5 <= took < 5


def test_a_call_its_connection_cancels_before_it_starts_still_answers_its_caller() -> None:
    """A call reports in the step that ends it; one cancelled before its first step has no
    such step, and must still answer its caller at once, its work closed, never left to hang."""
    asked: list[Any] = []

    async def work() -> str:
        asked.append("ran")
        return "answered"

    with hostile("ok") as tools:
        loop = tools._loop
        assert loop is not None
        call: _Call[str] = _Call()
        coroutine = work()

        def start_then_cancel() -> None:
            # One turn of the loop: the task exists, its first step has not run.
            tools._start(coroutine, call, 5.0)
            tools._cancel_inflight()

        started = time.monotonic()
        loop.call_soon_threadsafe(start_then_cancel)
        assert call.done.acquire(timeout=5)
        took = time.monotonic() - started
        # The connection still serves the next call as before.
        assert check(tools).observation == {"ok": True, "value": "40"}
    assert isinstance(call.error, RemoteFailure)
    assert str(call.error) == "the call was cancelled"
    assert asked == []
    # Closed, so never reported as not awaited.
    assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED
    assert took < 1
    assert not tools._inflight


def test_closing_leaves_no_server_process_behind_not_even_a_zombie() -> None:
    for mode in ("ok", "hang", "die"):
        with hostile(mode) as tools:
            check(tools)
        assert children_running(HOSTILE) == [], mode


def test_a_server_that_cannot_start_is_one_clear_error() -> None:
    with pytest.raises(RemoteFailure, match="mcp:nowhere"):
        connect(["/nonexistent/server"], DECLARED, source="mcp:nowhere", connect_timeout=5)
    assert children_running("/nonexistent/server") == []


def test_a_server_that_never_finishes_the_handshake_is_refused_in_time() -> None:
    started = time.monotonic()
    with pytest.raises(RemoteFailure, match="mcp:mute"):
        connect(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            DECLARED,
            source="mcp:mute",
            connect_timeout=1,
        )
    assert time.monotonic() - started < 15
    assert children_running("time.sleep(60)") == []


def test_bad_settings_are_refused_before_any_process_starts() -> None:
    for options in ({"call_timeout": 0}, {"connect_timeout": True}, {"call_timeout": "5"}):
        with pytest.raises(ValueError, match="positive number of seconds"):
            RemoteTools([sys.executable, HOSTILE, "ok"], DECLARED, source="x", **options)
    with pytest.raises(ValueError, match="declared twice"):
        RemoteTools([sys.executable, HOSTILE, "ok"], DECLARED * 2, source="x")


def test_the_trace_carries_the_operators_detail_and_the_model_gets_only_the_code() -> None:
    events: list[dict[str, Any]] = []
    model = ScriptedModel(
        [turn(ask("e1", "check_availability", sku="VANILLA")), AssistantMessage(content="no")]
    )
    with hostile("error") as tools:
        dispatcher, _ = dispatcher_with_remote([tools], allowed=["check_availability"])
        record = run_task(
            model,
            dispatcher,
            "Vanilla?",
            max_steps=3,
            max_tool_calls=3,
            recorder=Recorder(events.append),
        )
    [outcome] = [event for event in events if event["event"] == "tool_outcome"]
    assert outcome["code"] == "tool_failed" and outcome["handler_ran"] is True
    assert outcome["exception.type"] == "RemoteFailure"
    assert outcome["exception.message"].startswith("the server reported an error")
    assert "secret-token" not in json.dumps(outcome["gen_ai.tool.call.result"])
    assert all("secret-token" not in message.model_dump_json() for message in record.messages)


@pytest.mark.parametrize(
    ("mode", "message"),
    [("many_tools", "more than 1000 tools"), ("endless_pages", "past 10 pages")],
)
def test_a_listing_without_end_is_refused_at_connection(mode: str, message: str) -> None:
    with pytest.raises(RemoteFailure, match=message):
        hostile(mode)
    assert children_running(HOSTILE) == []


def test_a_tool_that_changed_between_calls_never_runs_under_its_new_terms() -> None:
    with hostile("late_change", call_timeout=5) as tools:
        first = check(tools)
        # The change arrives after the first answer, while nobody is calling.
        deadline = time.monotonic() + 10
        while not tools._changed.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        second = check(tools)
        lost = tools.lost
    assert first.observation == {"ok": True, "value": "40"} and first.narrowing is None
    assert second.observation == {"ok": False, "error": "tool_failed"}
    assert "changed on the server" in second.failure.message
    assert lost == {"check_availability"}
