"""Narrowing: a scope is an intersection, a skill only takes tools away, and the record says so."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from bookproof.layout import REPO_ROOT
from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import NoArguments, build_tools
from sovereign_agent.skills import LOAD_SKILL, Skill, build_skill_tools, load_skill_tool
from sovereign_agent.tools import (
    Dispatcher,
    ExecutableTool,
    Narrow,
    Narrowing,
    Setup,
    ToolCall,
)

ROOT = REPO_ROOT
SKILLS = str(ROOT / "book/textbook/skills")
SHOP = runpy.run_path(
    str(
        ROOT
        / "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
    )
)["SHOP"]
NAMES = ("alpha", "beta", "gamma", "delta", "place_order", LOAD_SKILL)


def ask(call_id: str, tool: str, /, **arguments: Any) -> AssistantToolCall:
    return AssistantToolCall(id=call_id, name=tool, arguments_json=json.dumps(arguments))


def turn(*calls: AssistantToolCall) -> AssistantMessage:
    return AssistantMessage(tool_calls=calls)


def offered(model: ScriptedModel) -> list[list[str]]:
    """The tool names the model was offered, step by step."""
    return [[tool["function"]["name"] for tool in tools] for _, tools in model.calls]


def plain(name: str, value: Any = "done") -> ExecutableTool[NoArguments]:
    return ExecutableTool(
        name=name, description=name, arguments=NoArguments, handler=lambda _: value
    )


def test_scoped_allows_the_intersection_and_keeps_everything_else() -> None:
    def authority(call: ToolCall) -> None:
        return None

    setup = Setup("sovereign_agent.shop:build_tools", {"shop": {"products": []}})
    wide = Dispatcher(
        [plain("alpha"), plain("beta"), plain("gamma")],
        allowed=["alpha", "beta", "missing"],
        before_write=authority,
        max_result_bytes=4_096,
        hints=True,
        setup=setup,
    )
    narrow = wide.scoped(["beta", "gamma", "missing", "zeta"])
    assert narrow.allowed == {"beta", "missing"}
    assert narrow.tools == wide.tools
    assert all(narrow.tools[name] is wide.tools[name] for name in wide.tools)
    assert (narrow.has_write_authority, narrow.max_result_bytes, narrow.hints) == (
        True,
        4_096,
        True,
    )
    # The setup would build the wider dispatcher: a scoped one cannot claim it.
    assert (wide.setup, narrow.setup) == (setup, None)
    assert [schema["function"]["name"] for schema in narrow.schemas()] == ["beta"]
    assert narrow.invoke(ToolCall(id="c1", name="alpha", arguments={})) == {
        "ok": False,
        "error": "tool_not_allowed",
    }


def test_scoped_refuses_one_string_for_a_list_of_names() -> None:
    with pytest.raises(TypeError, match="not one string"):
        build_tools(SHOP).scoped("list_stock")


def test_narrow_refuses_keep_that_is_not_a_frozenset() -> None:
    with pytest.raises(TypeError, match="frozenset, not list"):
        Narrow("value", keep=["list_stock"], reason="test")  # type: ignore[arg-type]


name_sets = st.frozensets(st.sampled_from(NAMES))


@settings(max_examples=examples(200), deadline=None)
@given(allowed=name_sets, scopes=st.lists(name_sets, max_size=5))
def test_scoping_again_and_again_only_ever_shrinks(
    allowed: frozenset[str], scopes: list[frozenset[str]]
) -> None:
    dispatcher = Dispatcher([plain(name) for name in NAMES], allowed=allowed)
    expected = set(allowed)
    for names in scopes:
        before = dispatcher.allowed
        dispatcher = dispatcher.scoped(names)
        expected &= names
        assert dispatcher.allowed <= before
        assert dispatcher.allowed <= names
    assert dispatcher.allowed == expected


def test_a_handler_returning_narrow_gives_the_value_and_a_narrowing() -> None:
    keep = frozenset({"alpha", "place_order"})
    narrowing_tool = plain("narrow", Narrow({"read": True}, keep=keep, reason="a test"))
    dispatcher = Dispatcher(
        [narrowing_tool, plain("alpha"), plain("beta")], allowed=["narrow", "alpha", "beta"]
    )
    outcome = dispatcher.attempt(ToolCall(id="c7", name="narrow", arguments={}))
    assert outcome.observation == {"ok": True, "value": {"read": True}}
    assert outcome.narrowing == Narrowing(
        call_id="c7",
        tool="narrow",
        reason="a test",
        kept=("alpha",),
        removed=("beta", "narrow"),
        ignored=("place_order",),
    )


def test_a_narrowing_holds_even_when_its_value_never_reaches_the_model() -> None:
    huge = Narrow("x" * 1_000, keep=frozenset(), reason="big")
    not_json = Narrow(float("nan"), keep=frozenset(), reason="nan")
    dispatcher = Dispatcher(
        [plain("huge", huge), plain("odd", not_json)], allowed=["huge", "odd"], max_result_bytes=128
    )
    too_large = dispatcher.attempt(ToolCall(id="c1", name="huge", arguments={}))
    failed = dispatcher.attempt(ToolCall(id="c2", name="odd", arguments={}))
    assert too_large.observation["error"] == "result_too_large"
    assert failed.observation["error"] == "tool_failed"
    assert too_large.narrowing is not None and too_large.narrowing.reason == "big"
    assert failed.narrowing is not None and failed.narrowing.removed == ("huge", "odd")


def run_skills(*script: AssistantMessage, **options: Any) -> tuple[Any, ScriptedModel]:
    model = ScriptedModel(script)
    tools = build_skill_tools(SHOP, skills_root=SKILLS, provenance="shop", **options)
    record = run_task(model, tools, "Plan the morning.", max_steps=6, max_tool_calls=8)
    return record, model


def test_morning_reorder_narrows_to_its_two_tools_and_the_run_drafts() -> None:
    record, model = run_skills(
        turn(ask("c1", "load_skill", skill="morning-reorder")),
        turn(ask("c2", "list_stock")),
        turn(
            ask("c3", "draft_order", sku="SKU-VANILLA", quantity=6),
            ask("c4", "draft_order", sku="SKU-STRAWBERRY", quantity=4),
        ),
        AssistantMessage(content="Two drafts, 2,600 pence."),
    )
    assert record.stop_reason is StopReason.FINAL_ANSWER
    assert offered(model) == [
        ["draft_order", "list_stock", "load_skill", "supplier"],
        ["draft_order", "list_stock"],
        ["draft_order", "list_stock"],
        ["draft_order", "list_stock"],
    ]
    assert record.executed == ("load_skill", "list_stock", "draft_order", "draft_order")
    assert record.narrowings == (
        Narrowing(
            call_id="c1",
            tool="load_skill",
            reason="skill morning-reorder",
            kept=("draft_order", "list_stock"),
            removed=("load_skill", "supplier"),
            ignored=(),
        ),
    )
    loaded = json.loads(record.messages[2].content)
    assert loaded["value"]["skill"] == "morning-reorder"
    assert loaded["value"]["instructions"].startswith("# Morning re-order")


def test_bulk_buyer_gets_nothing_more_and_the_record_names_what_was_ignored() -> None:
    record, model = run_skills(
        turn(ask("c1", "load_skill", skill="bulk-buyer")),
        turn(
            ask("c2", "place_order", sku="SKU-VANILLA", quantity=500),
            ask("c3", "draft_order", sku="SKU-VANILLA", quantity=6),
        ),
        AssistantMessage(content="I cannot place orders."),
    )
    assert offered(model)[1:] == [["list_stock"], ["list_stock"]]
    assert record.refused == (
        ("place_order", "tool_not_allowed"),
        ("draft_order", "tool_not_allowed"),
    )
    (narrowing,) = record.narrowings
    assert (narrowing.kept, narrowing.removed, narrowing.ignored) == (
        ("list_stock",),
        ("draft_order", "load_skill", "supplier"),
        ("place_order",),
    )


def test_bulk_buyer_gets_nothing_more_even_when_place_order_is_registered() -> None:
    orders: list[str] = []
    place_order = ExecutableTool(
        name="place_order",
        description="Place a real order.",
        arguments=NoArguments,
        handler=lambda _: orders.append("500 vanilla"),
        consequential=True,
    )
    base = build_skill_tools(SHOP, skills_root=SKILLS, provenance="shop")
    tools = Dispatcher(
        [*base.tools.values(), place_order], allowed=base.allowed, before_write=lambda call: None
    )
    model = ScriptedModel(
        [
            turn(ask("c1", "load_skill", skill="bulk-buyer")),
            turn(ask("c2", "place_order")),
            AssistantMessage(content="Not placed."),
        ]
    )
    record = run_task(model, tools, "Stock up.", max_steps=4, max_tool_calls=4)
    assert (orders, record.refused) == ([], (("place_order", "tool_not_allowed"),))
    assert record.narrowings[0].ignored == ("place_order",)


def test_a_second_skill_narrows_further_and_cannot_bring_a_tool_back() -> None:
    record, model = run_skills(
        turn(ask("c1", "load_skill", skill="price-check")),
        turn(ask("c2", "load_skill", skill="morning-reorder")),
        turn(ask("c3", "draft_order", sku="SKU-VANILLA", quantity=6)),
        AssistantMessage(content="I can no longer draft."),
    )
    assert offered(model) == [
        ["draft_order", "list_stock", "load_skill", "supplier"],
        ["list_stock", "load_skill", "supplier"],
        ["list_stock"],
        ["list_stock"],
    ]
    first, second = record.narrowings
    assert (first.kept, first.removed, first.ignored) == (
        ("list_stock", "load_skill", "supplier"),
        ("draft_order",),
        (),
    )
    assert (second.kept, second.removed, second.ignored) == (
        ("list_stock",),
        ("load_skill", "supplier"),
        ("draft_order",),
    )
    assert record.refused == (("draft_order", "tool_not_allowed"),)


def test_a_run_that_did_not_allow_load_skill_cannot_load_one() -> None:
    record, model = run_skills(
        turn(ask("c1", "load_skill", skill="bulk-buyer")),
        AssistantMessage(content="No skills here."),
        allowed=["list_stock", "draft_order"],
    )
    assert offered(model)[0] == ["draft_order", "list_stock"]
    assert (record.refused, record.narrowings) == ((("load_skill", "tool_not_allowed"),), ())


def test_an_unknown_skill_fails_and_a_bad_name_is_invalid_and_neither_narrows() -> None:
    record, _ = run_skills(
        turn(ask("c1", "load_skill", skill="stock-thief"), ask("c2", "load_skill", skill="../x")),
        AssistantMessage(content="No such skill."),
    )
    assert [json.loads(m.content)["error"] for m in record.messages[2:4]] == [
        "tool_failed",
        "invalid_arguments",
    ]
    assert record.narrowings == ()


def test_a_skill_that_lists_no_tools_leaves_the_run_as_it_was() -> None:
    skill = Skill("advice", "Advice only.", None, "Be kind.", Path("advice/SKILL.md"))
    tools = Dispatcher(
        [load_skill_tool([skill], provenance="shop"), plain("alpha")],
        allowed=["load_skill", "alpha"],
    )
    model = ScriptedModel(
        [turn(ask("c1", "load_skill", skill="advice")), AssistantMessage(content="ok")]
    )
    record = run_task(model, tools, "Help.", max_steps=3, max_tool_calls=3)
    assert record.narrowings == ()
    assert offered(model) == [["alpha", "load_skill"], ["alpha", "load_skill"]]


def test_the_model_is_told_each_skills_name_and_description_and_nothing_more() -> None:
    schema = (
        build_skill_tools(SHOP, skills_root=SKILLS, provenance="shop").tools[LOAD_SKILL].schema()
    )
    description = schema["function"]["description"]
    assert description.endswith(
        "Skills:\n"
        "- bulk-buyer: Stock up before a heatwave or a festival by buying in bulk. "
        "Use it when a busy week is coming.\n"
        "- morning-reorder: Plan Lucy's morning re-order from the live stock report. "
        "Use it when asked what to re-order today. It drafts orders and never buys.\n"
        "- price-check: Look up what the supplier charges for each product, in pence. "
        "Use it when asked about prices or costs."
    )
    assert "place_order" not in description
    assert "500 tubs" not in description


skill_lists = st.lists(
    st.tuples(st.sampled_from(["one", "two", "three"]), name_sets | st.none()), max_size=4
)


@settings(max_examples=examples(150), deadline=None)
@given(run_allowed=name_sets, loads=skill_lists)
def test_the_tools_offered_are_always_within_the_run_and_every_skill_loaded(
    run_allowed: frozenset[str], loads: list[tuple[str, frozenset[str] | None]]
) -> None:
    # Each load names a skill and what that skill lists (None: lists nothing).
    skills = {
        f"{name}-{index}": Skill(f"{name}-{index}", name, tools, "Do it.", Path(f"{name}/SKILL.md"))
        for index, (name, tools) in enumerate(loads)
    }
    tools = Dispatcher(
        [
            load_skill_tool(list(skills.values()), provenance="shop"),
            *(plain(n) for n in NAMES if n != LOAD_SKILL),
        ],
        allowed=run_allowed,
    )
    script = [turn(ask(f"c{i}", LOAD_SKILL, skill=name)) for i, name in enumerate(skills)]
    model = ScriptedModel([*script, AssistantMessage(content="done")])
    record = run_task(
        model, tools, "Go.", max_steps=len(script) + 1, max_tool_calls=len(script) + 1
    )

    # The rule, computed independently: a load runs only while load_skill is
    # still offered, and each one that runs leaves the intersection.
    expected = [set(run_allowed)]
    for name in skills:
        now, listed = set(expected[-1]), skills[name].allowed_tools
        if LOAD_SKILL in now and listed is not None:
            now &= listed
        expected.append(now)
    assert [set(step) for step in offered(model)] == expected
    for narrowing in record.narrowings:
        assert set(narrowing.kept) <= run_allowed
        assert not set(narrowing.ignored) & set(narrowing.kept)
    assert all(code == "tool_not_allowed" for _, code in record.refused)
