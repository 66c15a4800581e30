"""The faster argument reader refuses exactly what the bounds refused before it.

`nested_deeper_than` now stops at the first level without lists or objects,
and `parse_tool_call` reuses one decoder. Both are held here against
independent oracles: the walk chapter 3 printed before (32 levels, no early
exit), a recursive depth, and `json.loads` with the same option, over
arbitrary JSON values and texts, deep ones and long ones included.

One refusal is newer than the rest: an object that names a key twice is
malformed (Python's parser keeps the last value without a word). It is held
against an oracle that counts each object's keys, over texts built to double
a key at any depth, and through a whole run, where the model sees the fixed
code and the handler never runs.
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
    run_task,
)
from sovereign_agent.models import AssistantMessage, AssistantToolCall, ToolMessage
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import DraftArguments
from sovereign_agent.tools import Dispatcher, ExecutableTool


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


def doubles_a_key(text: str) -> bool:
    """Whether any object in a valid JSON text names one key twice, by counting its keys."""
    doubled = False

    def count(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal doubled
        keys = [key for key, _ in pairs]
        doubled = doubled or len(set(keys)) != len(keys)
        return {}

    json.loads(text, object_pairs_hook=count)
    return doubled


def old_verdict(text: str) -> dict[str, Any] | None:
    """What the reader accepts: what it accepted before, less an object that names a key twice."""
    if len(text) > MAX_ARGUMENTS_CHARS:
        return None
    try:
        arguments = json.loads(text, parse_constant=refuse_constant)
    except (ValueError, RecursionError):
        return None
    if doubles_a_key(text):
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
        [
            '{"a": NaN}',
            '{"a": -Infinity}',
            "\ufeff{}",
            "{} {}",
            '{"a": 1,}',
            "[" * 3000,
            '{"a": 1, "a": 1}',
            '{"a": {"b": 1, "b": 2}}',
        ]
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


def member(key: str, value: object) -> str:
    return f"{json.dumps(key)}: {json.dumps(value)}"


@st.composite
def doubled_key_texts(draw: st.DrawFn) -> str:
    """An object text naming one key twice, wrapped in 0 to 5 lists or objects."""
    others = draw(st.dictionaries(st.text(max_size=3), json_values, max_size=3))
    key = draw(st.text(max_size=3).filter(lambda name: name not in others))
    members = [member(name, value) for name, value in others.items()]
    # The same key twice, at any two places, with values equal or not.
    first, second = draw(json_values), draw(json_values)
    members.insert(draw(st.integers(0, len(members))), member(key, first))
    members.insert(draw(st.integers(0, len(members))), member(key, second))
    text = "{" + ", ".join(members) + "}"
    for _ in range(draw(st.integers(0, 5))):
        text = f"[{text}]" if draw(st.booleans()) else '{"outer": ' + text + "}"
    if not text.startswith("{"):
        text = '{"outer": ' + text + "}"
    return text


@settings(max_examples=examples(300), deadline=None)
@given(text=doubled_key_texts())
def test_an_object_that_names_a_key_twice_is_malformed_at_any_depth(text: str) -> None:
    # Python's own parser accepts every one of these, keeping the last value.
    assert isinstance(json.loads(text), dict)
    assert doubles_a_key(text)
    if len(text) <= MAX_ARGUMENTS_CHARS:
        raw = AssistantToolCall(id="call-1", name="draft_order", arguments_json=text)
        assert parse_tool_call(raw) is None


@pytest.mark.parametrize(
    "text",
    [
        '{"sku": "SKU-VANILLA", "quantity": 6, "quantity": 600}',
        '{"quantity": 600, "sku": "SKU-VANILLA", "quantity": 6}',
        # The same key spelled two ways: JSON reads both as "quantity".
        '{"sku": "SKU-VANILLA", "quantity": 6, "\\u0071uantity": 600}',
        '{"sku": "SKU-VANILLA", "quantity": 6, "quantity": 6}',
    ],
    ids=["last-wins", "first-wins", "escaped", "same-value"],
)
def test_a_doubled_quantity_never_reaches_the_handler_and_the_model_sees_a_fixed_code(
    text: str,
) -> None:
    drafted: list[DraftArguments] = []
    tool = ExecutableTool("draft_order", "drafts", DraftArguments, drafted.append)
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(
                    AssistantToolCall(id="call-1", name="draft_order", arguments_json=text),
                )
            ),
            AssistantMessage(content="ok"),
        ]
    )
    dispatcher = Dispatcher([tool], allowed=["draft_order"])
    record = run_task(model, dispatcher, "t", max_steps=3, max_tool_calls=3)
    assert drafted == []
    answers = [m for m in record.messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content) for m in answers] == [
        ("call-1", '{"error": "malformed_tool_call", "ok": false}')
    ]
    assert record.refused == (("draft_order", "malformed_tool_call"),)
    assert record.executed == ()
    # The model was told the code, and nothing of what it sent.
    sent_back = model.calls[1][0][-1]
    assert isinstance(sent_back, ToolMessage)
    assert "600" not in sent_back.content
