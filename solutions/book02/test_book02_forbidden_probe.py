"""Exercise 3 (Unit B): registered is not allowed; two tools under one name is no configuration.

Two different failures: a forbidden probe is refused per request (caller
authority), a duplicate name stops construction (ambiguous configuration).
"""

from __future__ import annotations

import pytest
from shop_tools import SHOP, ExecutableTool, NoArguments, ToolCall, build_tools

PRICES = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}
SHOP_TOOLS = ["draft_order", "list_stock", "supplier"]


def make_probe(runs: list[str], name: str = "probe") -> ExecutableTool:
    def handler(_: NoArguments) -> str:
        runs.append(name)
        return "probe ran"

    return ExecutableTool(
        name=name, description="A harmless probe.", arguments=NoArguments, handler=handler
    )


def names(dispatcher) -> list[str]:
    return [schema["function"]["name"] for schema in dispatcher.schemas()]


def ask(dispatcher, name: str) -> dict:
    return dispatcher.invoke(ToolCall(id="call-1", name=name, arguments={}))


def test_registered_probe_has_no_schema_unless_allowed() -> None:
    tools = build_tools(SHOP, PRICES, extra_tools=(make_probe([]),))
    assert names(tools) == SHOP_TOOLS


def test_hand_made_request_for_the_probe_is_refused_and_never_runs() -> None:
    runs: list[str] = []
    tools = build_tools(SHOP, PRICES, extra_tools=(make_probe(runs),))
    assert ask(tools, "probe") == {"ok": False, "error": "tool_not_allowed"}
    # The same answer as for a name that does not exist: the refusal is no oracle.
    assert ask(tools, "no_such_tool") == {"ok": False, "error": "tool_not_allowed"}
    assert runs == []


def test_allowing_the_probe_by_name_makes_it_callable() -> None:
    runs: list[str] = []
    tools = build_tools(
        SHOP, PRICES, extra_tools=(make_probe(runs),), allowed=[*SHOP_TOOLS, "probe"]
    )
    assert names(tools) == ["draft_order", "list_stock", "probe", "supplier"]
    assert ask(tools, "probe") == {"ok": True, "value": "probe ran"}
    assert runs == ["probe"]


def test_a_tool_named_like_a_shop_tool_is_refused_at_construction() -> None:
    with pytest.raises(ValueError):
        build_tools(SHOP, PRICES, extra_tools=(make_probe([], name="supplier"),))


def test_two_extra_tools_under_one_name_are_refused_at_construction() -> None:
    with pytest.raises(ValueError):
        build_tools(SHOP, PRICES, extra_tools=(make_probe([]), make_probe([])))
