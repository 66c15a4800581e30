"""Safe hints: off by default; when on, built from the schema alone, never from what was sent."""

from __future__ import annotations

import json
import runpy
from typing import Any, Literal

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field
from strength import examples

from sovereign_agent.shop import build_tools
from sovereign_agent.tools import (
    ArgumentProblem,
    Dispatcher,
    ExecutableTool,
    ToolCall,
    expected_value,
    safe_hints,
)

SHOP = runpy.run_path(
    "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
)["SHOP"]
SECRET = "secret-token-9c41"


def draft(dispatcher: Dispatcher, **arguments: Any) -> dict[str, Any]:
    return dispatcher.invoke(ToolCall(id="call-1", name="draft_order", arguments=arguments))


def test_hints_are_off_by_default_so_chapter_2s_refusal_is_unchanged() -> None:
    observation = draft(build_tools(SHOP), sku="SKU-VANILLA", quantity="6")
    assert observation == {"ok": False, "error": "invalid_arguments"}
    assert build_tools(SHOP).hints is False


def test_a_quantity_sent_as_text_is_hinted_with_its_type_and_range() -> None:
    observation = draft(build_tools(SHOP, hints=True), sku="SKU-VANILLA", quantity="6")
    assert observation == {
        "ok": False,
        "error": "invalid_arguments",
        "hints": [{"field": "quantity", "expected": "integer > 0 and <= 1000"}],
    }


def test_a_missing_field_is_hinted_as_required() -> None:
    observation = draft(build_tools(SHOP, hints=True), quantity=6)
    assert observation["hints"] == [
        {"field": "sku", "expected": "required: string of 1 to 100 characters"}
    ]


def test_an_invented_key_is_never_named_only_the_declared_fields_are() -> None:
    observation = draft(build_tools(SHOP, hints=True), sku="SKU-VANILLA", quantity=6, approved=True)
    assert observation["hints"] == [
        {"field": None, "expected": "only the declared fields: quantity, sku"}
    ]
    assert "approved" not in json.dumps(observation)


def test_two_invented_keys_give_one_hint() -> None:
    observation = draft(build_tools(SHOP, hints=True), sku="SKU-VANILLA", quantity=6, a=1, b=2)
    assert len(observation["hints"]) == 1


def test_a_tool_without_arguments_says_it_takes_none() -> None:
    tools = build_tools(SHOP, hints=True)
    observation = tools.invoke(
        ToolCall(id="call-1", name="list_stock", arguments={"sku": "SKU-VANILLA"})
    )
    assert observation["hints"] == [{"field": None, "expected": "only the declared fields: none"}]


def test_hints_never_reach_other_refusals() -> None:
    tools = build_tools(SHOP, hints=True)
    unknown = tools.invoke(ToolCall(id="call-1", name="run_shell", arguments={"x": "6"}))
    failed = draft(tools, sku="SKU-VANILLA", quantity=8)
    assert unknown == {"ok": False, "error": "tool_not_allowed"}
    assert failed == {"ok": False, "error": "tool_failed"}


def test_the_operator_still_gets_every_problem_with_hints_on() -> None:
    outcome = build_tools(SHOP, hints=True).attempt(
        ToolCall(
            id="call-1",
            name="draft_order",
            arguments={"sku": "SKU-VANILLA", "quantity": "6", "approved": True},
        )
    )
    assert outcome.argument_problems == (
        ArgumentProblem(("quantity",), "int_type"),
        ArgumentProblem(("approved",), "extra_forbidden"),
    )


class Catalogue(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    flavour: Literal["vanilla", "mango"]
    note: str | None = Field(default=None, max_length=20)
    code: str = Field(pattern=r"^[A-Z]{3}$")
    weight: float = Field(ge=0.5, lt=9.5)


def test_expected_value_reads_choices_nullable_patterns_and_every_bound() -> None:
    properties = Catalogue.model_json_schema()["properties"]
    assert expected_value(properties["flavour"]) == 'one of "vanilla", "mango"'
    assert expected_value(properties["note"]) == "string of 0 to 20 characters or null"
    assert expected_value(properties["code"]) == "string matching ^[A-Z]{3}$"
    assert expected_value(properties["weight"]) == "number >= 0.5 and < 9.5"


def test_a_problem_outside_any_field_is_described_by_the_whole_schema() -> None:
    hints = safe_hints({"type": "object", "properties": {}}, [ArgumentProblem((), "model_type")])
    assert hints == [{"field": None, "expected": "object"}]


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
planted = st.builds(lambda tail: f"{SECRET}-{tail}", st.text(min_size=1, max_size=8))
values = scalars | planted | st.lists(scalars | planted, max_size=3)
invented = st.builds(lambda tail: f"zz-invented-{tail}", st.text(max_size=8))


@settings(max_examples=examples(300), deadline=None)
@given(
    arguments=st.dictionaries(
        st.sampled_from(["sku", "quantity"]) | invented, values | planted, max_size=5
    )
)
def test_a_hinted_refusal_never_carries_a_submitted_value_or_an_invented_key(
    arguments: dict[str, Any],
) -> None:
    tools = build_tools(SHOP, hints=True)
    observation = tools.invoke(ToolCall(id="call-1", name="draft_order", arguments=arguments))
    text = json.dumps(observation)
    assert SECRET not in text
    assert "zz-invented" not in text
    if not observation["ok"] and observation["error"] == "invalid_arguments":
        schema_text = json.dumps(tools.schemas())
        for hint in observation["hints"]:
            assert hint["field"] is None or hint["field"] in ("sku", "quantity")
            # Every word of a hint comes from the schema or from our own phrasing.
            for word in hint["expected"].replace(",", " ").split():
                assert word.strip('"') in schema_text or word in {
                    "required:",
                    "of",
                    "to",
                    "characters",
                    "and",
                    "or",
                    "only",
                    "the",
                    "declared",
                    "fields:",
                    "none",
                    "matching",
                    "one",
                    ">",
                    ">=",
                    "<",
                    "<=",
                }


def test_a_custom_tool_is_hinted_from_its_own_schema() -> None:
    tool = ExecutableTool("catalogue", "A catalogue entry.", Catalogue, lambda args: "ok")
    dispatcher = Dispatcher([tool], allowed=["catalogue"], hints=True)
    observation = dispatcher.invoke(
        ToolCall(
            id="call-1",
            name="catalogue",
            arguments={"flavour": "pistachio", "code": "AB", "weight": 12.0},
        )
    )
    assert observation["hints"] == [
        {"field": "flavour", "expected": 'one of "vanilla", "mango"'},
        {"field": "code", "expected": "string matching ^[A-Z]{3}$"},
        {"field": "weight", "expected": "number >= 0.5 and < 9.5"},
    ]
    assert "pistachio" not in json.dumps(observation)
