"""The faster argument reader refuses exactly what the bounds refused before it.

`nested_deeper_than` now stops at the first level without lists or objects,
and `parse_tool_call` reuses one decoder. Both are held here against
independent oracles: the walk chapter 3 printed before (32 levels, no early
exit), a recursive depth, and `json.loads` with the same option, over
arbitrary JSON values and texts, deep ones and long ones included.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from sovereign_agent.loop import (
    MAX_ARGUMENTS_CHARS,
    MAX_ARGUMENTS_DEPTH,
    nested_deeper_than,
    parse_tool_call,
    refuse_constant,
)
from sovereign_agent.models import AssistantToolCall


def previous_nested_deeper_than(value: object, depth: int) -> bool:
    """The walk as it was before the early exit, kept as the oracle."""
    level = [value]
    for _ in range(depth):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
    return any(isinstance(item, dict | list) for item in level)


def nesting(value: object) -> int:
    """How many levels of lists and objects a JSON value has, counted recursively."""
    if isinstance(value, dict):
        return 1 + max((nesting(child) for child in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((nesting(child) for child in value), default=0)
    return 0


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=20,
)


@st.composite
def deep_values(draw: st.DrawFn) -> object:
    """A JSON value wrapped in lists and objects around 25 to 40 levels: across the bound."""
    value: object = draw(json_values)
    for _ in range(draw(st.integers(25, 40))):
        if draw(st.booleans()):
            value = [draw(scalars), value] if draw(st.booleans()) else [value]
        else:
            value = {draw(st.text(max_size=3)): value}
    return value


any_values = st.one_of(json_values, deep_values())


@settings(max_examples=examples(400), deadline=None)
@given(value=any_values, depth=st.integers(0, 45))
def test_the_early_exit_answers_as_the_full_walk_did(value: object, depth: int) -> None:
    # The value's own depth and its neighbours are where an off-by-one would show.
    levels = nesting(value)
    for bound in {depth, max(0, levels - 1), levels, levels + 1}:
        assert nested_deeper_than(value, bound) == previous_nested_deeper_than(value, bound)
        assert nested_deeper_than(value, bound) == (levels > bound)


def old_verdict(text: str) -> dict[str, Any] | None:
    """What the reader accepted before: the arguments object, or None for malformed."""
    if len(text) > MAX_ARGUMENTS_CHARS:
        return None
    try:
        arguments = json.loads(text, parse_constant=refuse_constant)
    except (ValueError, RecursionError):
        return None
    if previous_nested_deeper_than(arguments, MAX_ARGUMENTS_DEPTH):
        return None
    return arguments if isinstance(arguments, dict) else None


texts = st.one_of(
    any_values.map(json.dumps),
    # Objects whose length sits around the bound: a long string value.
    st.integers(MAX_ARGUMENTS_CHARS - 40, MAX_ARGUMENTS_CHARS + 40).map(
        lambda size: '{"note": "' + "x" * max(0, size - 12) + '"}'
    ),
    st.text(max_size=40),
    st.sampled_from(
        ['{"a": NaN}', '{"a": -Infinity}', "\ufeff{}", "{} {}", '{"a": 1,}', "[" * 3000]
    ),
)


@settings(max_examples=examples(400), deadline=None)
@given(text=texts)
def test_the_reader_refuses_exactly_what_it_refused_before(text: str) -> None:
    call = parse_tool_call(AssistantToolCall(id="call-1", name="supplier", arguments_json=text))
    expected = old_verdict(text)
    if expected is None:
        assert call is None
    else:
        assert call is not None
        assert call.arguments == expected


@pytest.mark.parametrize("depth", [1, 31, 32, 33, 40, 2000])
def test_nesting_is_refused_from_33_levels(depth: int) -> None:
    text = '{"a": ' * depth + "1" + "}" * depth
    call = parse_tool_call(AssistantToolCall(id="call-1", name="supplier", arguments_json=text))
    # 2000 levels is also past the length bound: refused before parsing.
    assert (call is None) == (depth > MAX_ARGUMENTS_DEPTH)
