"""Which remote tools join: exactly those declared, advertised once, with the declared schema.

No server here: `match_tools` decides from what a server advertised, so
Hypothesis can try many advertised schemas against the declared ones.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sovereign_agent.mcp.remote import Advertised, Declared, match_tools, schema_matches
from sovereign_agent.mcp.supplier import SUPPLIER_DECLARATIONS, Availability, SupplierOrder
from sovereign_agent.shop import NoArguments
from sovereign_agent.tools import parameters_schema

MODELS = (Availability, SupplierOrder, NoArguments)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def reordered(value: Any) -> Any:
    """The same JSON with every object's keys in reverse order."""
    if isinstance(value, dict):
        return {key: reordered(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(item) for item in value]
    return value


@st.composite
def mutated(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with one change somewhere: a key set to another value, or a key added."""
    changed = copy.deepcopy(schema)
    target = changed
    while True:
        objects = [key for key, value in target.items() if isinstance(value, dict) and value]
        if not objects or draw(st.booleans()):
            break
        target = target[draw(st.sampled_from(objects))]
    key = draw(st.sampled_from([*target, "x-extra"]))
    value = draw(json_values)
    target[key] = value
    return changed


@given(st.sampled_from(MODELS), st.data())
def test_a_schema_matches_exactly_when_it_is_the_declared_one(
    model: Any, data: st.DataObject
) -> None:
    declared = parameters_schema(model)
    advertised = data.draw(mutated(declared))
    assert schema_matches(model, advertised) == (
        json.dumps(advertised, sort_keys=True) == json.dumps(declared, sort_keys=True)
    )
    assert schema_matches(model, reordered(declared))


@given(st.dictionaries(st.text(max_size=10), json_values, max_size=5))
def test_an_arbitrary_advertised_schema_never_matches_by_accident(schema: dict[str, Any]) -> None:
    for model in MODELS:
        assert not schema_matches(model, schema)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["check_availability", "next_delivery", "place_order", "other"]),
            st.sampled_from(MODELS),
            st.booleans(),
        ),
        max_size=6,
    )
)
def test_a_tool_joins_exactly_when_declared_advertised_once_and_matching(
    offers: list[tuple[str, Any, bool]],
) -> None:
    advertised = []
    for name, model, poisoned in offers:
        schema = parameters_schema(model)
        if poisoned:
            schema["properties"]["extra"] = {"type": "string"}
        advertised.append(Advertised(name, "anything the server likes", schema))
    joined, refused = match_tools(SUPPLIER_DECLARATIONS, advertised)
    for declaration in SUPPLIER_DECLARATIONS:
        copies = [tool for tool in advertised if tool.name == declaration.name]
        expected = len(copies) == 1 and schema_matches(
            declaration.arguments, copies[0].input_schema
        )
        assert (declaration in joined) == expected
    joined_names = {declaration.name for declaration in joined}
    refused_names = [refusal.name for refusal in refused]
    # Every name either side mentions is accounted for exactly once.
    mentioned = {d.name for d in SUPPLIER_DECLARATIONS} | {tool.name for tool in advertised}
    assert len(refused_names) == len(set(refused_names))
    assert joined_names.isdisjoint(refused_names)
    assert joined_names | set(refused_names) == mentioned
    assert all(r.reason == "undeclared" for r in refused if r.name == "other")


def test_an_unserialisable_schema_is_a_mismatch_not_a_crash() -> None:
    assert not schema_matches(NoArguments, {"type": "object", "enum": {1, 2}})
    assert not schema_matches(NoArguments, {"type": "object", "maximum": float("nan")})


def test_the_reasons_are_the_documented_ones() -> None:
    declared = (Declared("a", NoArguments, "A."), Declared("b", NoArguments, "B.", remote="bee"))
    joined, refused = match_tools(
        declared,
        [
            Advertised("bee", None, parameters_schema(NoArguments)),
            Advertised("c", None, {}),
            Advertised("c", None, {}),
        ],
    )
    assert [d.name for d in joined] == ["b"]
    assert {(r.name, r.reason) for r in refused} == {("a", "not_advertised"), ("c", "undeclared")}
    joined, refused = match_tools(
        declared[:1], [Advertised("a", None, parameters_schema(NoArguments))] * 2
    )
    assert joined == () and [r.reason for r in refused] == ["advertised_twice"]
