"""A tool's schema is worked out once per argument model, and every caller gets its own copy."""

from __future__ import annotations

import runpy
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from sovereign_agent.shop import build_tools
from sovereign_agent.tools import ToolCall, parameters_schema

SHOP = runpy.run_path(
    "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
)["SHOP"]


def quantity_arguments(most: int) -> type[BaseModel]:
    # Every model this builds has the same name and the same field; only the
    # bound differs, so a cache keyed by anything but the class would mix them.
    class Arguments(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        quantity: int = Field(gt=0, le=most)

    return Arguments


def test_each_shop_tool_shows_exactly_its_argument_models_schema() -> None:
    tools = build_tools(SHOP).tools
    assert sorted(tools) == ["draft_order", "list_stock", "supplier"]
    for tool in tools.values():
        expected = tool.arguments.model_json_schema()
        assert tool.schema()["function"]["parameters"] == expected
        assert parameters_schema(tool.arguments) == expected


def test_changing_a_returned_schema_even_deep_inside_leaves_the_next_one_whole() -> None:
    tool = build_tools(SHOP).tools["draft_order"]
    expected = tool.arguments.model_json_schema()
    changed = tool.schema()
    parameters = changed["function"]["parameters"]
    parameters["properties"]["quantity"]["maximum"] = 5
    parameters["required"].append("approved_by_lucy")
    parameters["additionalProperties"] = True
    changed["function"]["name"] = "place_order"
    assert tool.schema()["function"]["parameters"] == expected
    assert tool.schema()["function"]["name"] == "draft_order"
    assert parameters_schema(tool.arguments) == expected


def test_changing_what_schemas_returned_does_not_change_the_next_step_or_the_hints() -> None:
    dispatcher = build_tools(SHOP, hints=True)
    expected = [
        dispatcher.tools[name].arguments.model_json_schema() for name in sorted(dispatcher.allowed)
    ]
    first = dispatcher.schemas()
    assert [schema["function"]["parameters"] for schema in first] == expected
    for schema in first:
        schema["function"]["parameters"]["properties"].clear()
    assert [schema["function"]["parameters"] for schema in dispatcher.schemas()] == expected
    # The hints are built from the schema too, and still say what the model was shown.
    refusal = dispatcher.invoke(
        ToolCall(id="call-1", name="draft_order", arguments={"sku": "SKU-VANILLA", "quantity": 0})
    )
    assert refusal["hints"] == [{"field": "quantity", "expected": "integer > 0 and <= 1000"}]


def test_two_models_of_the_same_name_and_shape_do_not_share_a_schema() -> None:
    small, large = quantity_arguments(10), quantity_arguments(20)
    assert small.__name__ == large.__name__ == "Arguments"
    # Asked in turns, so neither answer can be the other's left over.
    for _ in range(2):
        assert parameters_schema(small)["properties"]["quantity"]["maximum"] == 10
        assert parameters_schema(large)["properties"]["quantity"]["maximum"] == 20
    assert parameters_schema(small) == small.model_json_schema()
    assert parameters_schema(large) == large.model_json_schema()


def test_pydantic_is_asked_for_a_models_schema_once_however_often_the_tool_is() -> None:
    class Counted(BaseModel):
        asked: ClassVar[int] = 0

        sku: str

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            cls.asked += 1
            return super().model_json_schema(*args, **kwargs)

    copies = [parameters_schema(Counted) for _ in range(5)]
    assert Counted.asked == 1
    # Five equal copies, and no two of them the same object.
    assert all(copy == copies[0] for copy in copies)
    assert len({id(copy) for copy in copies}) == 5
