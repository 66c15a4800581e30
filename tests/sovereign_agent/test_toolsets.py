"""Tools from several sources, joined: one allowlist, chapter 2's order of checks, no name twice."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from strength import examples

from bookproof.layout import REPO_ROOT
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall, ScriptedModel
from sovereign_agent.shop import DraftArguments, NoArguments, ProductArguments, build_tools
from sovereign_agent.skills import discover_skills, load_skill_tool
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall
from sovereign_agent.toolsets import (
    SourcedTools,
    Toolset,
    combined_dispatcher,
    join_toolsets,
)

ROOT = REPO_ROOT
SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
AVAILABLE = {"SKU-VANILLA": 40, "SKU-CHOCOLATE": 12, "SKU-STRAWBERRY": 0}


class Ran:
    """Handlers that note every call they receive, so a test can see what ran."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def handler(self, name: str, result: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def run(arguments: Any) -> Any:
            self.calls.append(name)
            return result(arguments)

        return run


def supplier_server(ran: Ran) -> SourcedTools:
    """A stand-in for the supplier's remote tools: two that read, one that would buy."""
    return SourcedTools.of(
        "mcp:supplier",
        [
            ExecutableTool(
                "check_availability",
                "Tubs the supplier can deliver for one product.",
                ProductArguments,
                ran.handler("check_availability", lambda a: AVAILABLE[a.sku]),
            ),
            ExecutableTool(
                "next_delivery",
                "The supplier's next delivery day.",
                NoArguments,
                ran.handler("next_delivery", lambda a: "Tuesday"),
            ),
            ExecutableTool(
                "place_order",
                "Buy tubs from the supplier.",
                DraftArguments,
                ran.handler("place_order", lambda a: "ordered"),
                consequential=True,
            ),
        ],
    )


def shop() -> SourcedTools:
    return SourcedTools("shop", build_tools(SHOP).tools)


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments)


def test_a_name_two_sources_offer_is_refused_naming_both() -> None:
    ran = Ran()
    clash = SourcedTools.of(
        "skills:vendor",
        [ExecutableTool("list_stock", "Another list.", NoArguments, ran.handler("x", list))],
    )
    with pytest.raises(ValueError) as refused:
        join_toolsets([shop(), supplier_server(ran), clash])
    assert (
        str(refused.value) == "tool name 'list_stock' is offered by both 'shop' and 'skills:vendor'"
    )


@pytest.mark.parametrize(
    ("toolsets", "message"),
    [
        (lambda: [shop(), SourcedTools("shop", {})], "two toolsets share the source label 'shop'"),
        (lambda: [SourcedTools(" ", {})], "a toolset's source must be a non-empty label, not ' '"),
        (
            lambda: [SourcedTools("shop", {"stock": build_tools(SHOP).tools["list_stock"]})],
            "source 'shop' lists tool 'list_stock' under the name 'stock'",
        ),
    ],
    ids=["one label twice", "empty label", "key is not the tool's name"],
)
def test_a_join_that_could_mislead_is_refused(
    toolsets: Callable[[], list[Toolset]], message: str
) -> None:
    with pytest.raises(ValueError) as refused:
        join_toolsets(toolsets())
    assert str(refused.value) == message


def test_one_source_listing_one_name_twice_is_refused() -> None:
    tool = build_tools(SHOP).tools["list_stock"]
    with pytest.raises(ValueError, match="duplicate tool name 'list_stock' within source 'shop'"):
        SourcedTools.of("shop", [tool, tool])


def test_the_joined_tools_keep_each_tools_source_and_the_order_given() -> None:
    joined = join_toolsets([shop(), supplier_server(Ran())])
    assert [tool.name for tool in joined.tools] == [
        "list_stock",
        "supplier",
        "draft_order",
        "check_availability",
        "next_delivery",
        "place_order",
    ]
    assert joined.source_of("draft_order") == "shop"
    assert joined.source_of("check_availability") == "mcp:supplier"
    assert joined.source_of("run_shell") is None
    assert isinstance(shop(), Toolset)


def test_one_allowlist_spans_every_source() -> None:
    ran = Ran()
    dispatcher, _ = combined_dispatcher(
        [shop(), supplier_server(ran)], allowed=["list_stock", "check_availability"]
    )
    names = [schema["function"]["name"] for schema in dispatcher.schemas()]
    assert names == ["check_availability", "list_stock"]
    assert dispatcher.invoke(call("check_availability", sku="SKU-VANILLA")) == {
        "ok": True,
        "value": 40,
    }
    # Registered in both sources' lists, allowed in neither: one refusal for both,
    # the same one an unknown name gets.
    for name in ("next_delivery", "supplier", "no_such_tool"):
        assert dispatcher.invoke(call(name)) == {"ok": False, "error": "tool_not_allowed"}
    assert ran.calls == ["check_availability"]


def test_chapter_2s_order_of_checks_holds_for_a_remote_tool() -> None:
    ran = Ran()
    refusals: list[str] = []

    def lucy_says_no(request: ToolCall) -> None:
        refusals.append(request.name)
        raise PermissionError("Lucy has not approved this order")

    allowed = ["place_order", "check_availability", "draft_order"]
    without, _ = combined_dispatcher([shop(), supplier_server(ran)], allowed=allowed)
    with_authority, _ = combined_dispatcher(
        [shop(), supplier_server(ran)], allowed=allowed, before_write=lucy_says_no
    )
    # 2 before 3: bad arguments are refused before the question of authority.
    bad = call("place_order", sku="SKU-VANILLA", quantity="6")
    assert without.invoke(bad) == {"ok": False, "error": "invalid_arguments"}
    # 3: a consequential tool with nobody to authorise it never runs.
    good = call("place_order", sku="SKU-VANILLA", quantity=6)
    assert without.invoke(good) == {"ok": False, "error": "write_authority_required"}
    # 4: the authority is asked, refuses, and the handler never runs.
    outcome = with_authority.attempt(good)
    assert outcome.observation == {"ok": False, "error": "tool_failed"}
    assert outcome.failure is not None and outcome.failure.stage == "before_write"
    assert refusals == ["place_order"] and ran.calls == []
    # 6: an expected failure of a remote handler is a code, its text for the operator only.
    failed = with_authority.attempt(call("check_availability", sku="SKU-MANGO"))
    assert failed.observation == {"ok": False, "error": "tool_failed"}
    assert failed.handler_ran and failed.failure is not None
    assert failed.failure.error_type == "KeyError"


# Random toolsets: tools with random names, argument models, consequence and
# behaviour, dealt out to random sources. Handlers are pure, so two
# dispatchers over the same tools can be asked the same calls.
ARGUMENT_MODELS: tuple[type[BaseModel], ...] = (NoArguments, ProductArguments, DraftArguments)
BEHAVIOURS: dict[str, Callable[[Any], Any]] = {
    "value": lambda a: a.model_dump(),
    "raises": lambda a: {}["missing"],
    "too_large": lambda a: "x" * 20_000,
    "not_json": lambda a: {1: "a", "b": 2},
}
NAMES = st.sampled_from(["list_stock", "supplier", "draft_order", "check_availability", "t_1"])


@st.composite
def toolsets(draw: st.DrawFn) -> list[SourcedTools]:
    names = draw(st.lists(NAMES | st.from_regex(r"[a-z_]{1,8}", fullmatch=True), unique=True))
    tools = [
        ExecutableTool(
            name,
            f"Tool {name}.",
            draw(st.sampled_from(ARGUMENT_MODELS)),
            BEHAVIOURS[draw(st.sampled_from(sorted(BEHAVIOURS)))],
            consequential=draw(st.booleans()),
        )
        for name in names
    ]
    count = draw(st.integers(1, 4))
    dealt: list[list[ExecutableTool[Any]]] = [[] for _ in range(count)]
    for tool in tools:
        dealt[draw(st.integers(0, count - 1))].append(tool)
    return [SourcedTools.of(f"source-{i}", share) for i, share in enumerate(dealt)]


calls = st.builds(
    ToolCall,
    id=st.just("c1"),
    name=NAMES | st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
    arguments=st.fixed_dictionaries(
        {},
        optional={
            "sku": st.sampled_from(["SKU-VANILLA", "", 6]),
            "quantity": st.sampled_from([6, "6", 0]),
            "approved": st.just(True),
        },
    ),
)


def refuse_strawberry(request: ToolCall) -> None:
    if request.arguments.get("sku") == "SKU-STRAWBERRY":
        raise PermissionError("no strawberry")


@settings(max_examples=examples(300), deadline=None)
@given(
    sets=toolsets(),
    allowed=st.lists(NAMES | st.from_regex(r"[a-z_]{1,8}", fullmatch=True), max_size=6),
    requests=st.lists(calls, min_size=1, max_size=6),
    authority=st.booleans(),
    hints=st.booleans(),
)
def test_the_combined_dispatcher_answers_every_call_as_one_dispatcher_over_the_same_tools(
    sets: list[SourcedTools],
    allowed: list[str],
    requests: list[ToolCall],
    authority: bool,
    hints: bool,
) -> None:
    before_write = refuse_strawberry if authority else None
    single = Dispatcher(
        [tool for toolset in sets for tool in toolset.tools.values()],
        allowed=allowed,
        before_write=before_write,
        max_result_bytes=4_096,
        hints=hints,
    )
    combined, joined = combined_dispatcher(
        sets, allowed=allowed, before_write=before_write, max_result_bytes=4_096, hints=hints
    )
    assert combined.schemas() == single.schemas()
    assert combined.allowed == single.allowed
    for request in requests:
        assert combined.attempt(request) == single.attempt(request)
    for toolset in sets:
        for name in toolset.tools:
            assert joined.source_of(name) == toolset.source


def test_a_skill_loaded_from_one_source_narrows_the_tools_of_every_source() -> None:
    # Three sources, one run: the shop's tools, a skill loader's, the supplier's.
    # Loading morning-reorder (allowed-tools: list_stock draft_order) narrows
    # the joined dispatcher as chapter 7 narrows the shop's: the supplier's
    # check_availability goes too, because one allowlist spans every source.
    ran = Ran()
    skills = SourcedTools.of(
        "skills:lucy",
        [load_skill_tool(discover_skills(ROOT / "book/textbook/skills"), provenance="shop")],
    )
    dispatcher, joined = combined_dispatcher(
        [shop(), skills, supplier_server(ran)],
        allowed=["list_stock", "draft_order", "load_skill", "check_availability"],
    )
    script = [
        asks("s1", "load_skill", {"skill": "morning-reorder"}),
        asks("a1", "check_availability", {"sku": "SKU-VANILLA"}),
        AssistantMessage(content="Done."),
    ]
    record = run_task(ScriptedModel(script), dispatcher, "Plan.", max_steps=4, max_tool_calls=4)
    (narrowing,) = record.narrowings
    assert joined.source_of(narrowing.tool) == "skills:lucy"
    assert narrowing.removed == ("check_availability", "load_skill")
    assert record.refused == (("check_availability", "tool_not_allowed"),)
    assert ran.calls == []


def asks(call_id: str, name: str, arguments: dict[str, Any]) -> AssistantMessage:
    call = AssistantToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))
    return AssistantMessage(tool_calls=(call,))
