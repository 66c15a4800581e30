"""Each observation is encoded once: `attempt` measures the text the loop then sends.

`ToolOutcome.encoded` is the observation as JSON with sorted keys, made on
first read and kept. These tests hold that text to `json.dumps` (the oracle),
count the encodings a whole run makes, and check that a changed copy of an
outcome never carries its original's text.
"""

from __future__ import annotations

import json
import math
import runpy
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall, ToolMessage
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import NoArguments, build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall, ToolOutcome

SHOP = runpy.run_path(
    "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
)["SHOP"]

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=25,
)


def returning(value: Any, bound: int) -> Dispatcher:
    tool = ExecutableTool("echo", "Returns a fixed value.", NoArguments, lambda _: value)
    return Dispatcher([tool], allowed=["echo"], max_result_bytes=bound)


@settings(max_examples=examples(300), deadline=None)
@given(value=json_values, bound=st.integers(128, 2_000))
def test_the_measured_text_is_the_sent_text_and_json_dumps_agrees(value: Any, bound: int) -> None:
    outcome = returning(value, bound).attempt(ToolCall(id="c", name="echo", arguments={}))
    expected = json.dumps({"ok": True, "value": value}, allow_nan=False, sort_keys=True)
    if len(expected) > bound:
        assert outcome.observation == {"ok": False, "error": "result_too_large"}
        assert outcome.handler_ran
    else:
        assert outcome.observation == {"ok": True, "value": value}
        assert outcome.encoded == expected
    assert outcome.encoded == json.dumps(outcome.observation, sort_keys=True)


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, {1: "a", "b": 2}, {"when": object()}],
    # Named by hand: an object's repr holds its address, and both test workers must
    # collect the same names.
    ids=["nan", "inf", "int_key", "object_value"],
)
def test_a_value_that_is_not_json_is_the_tools_failure_at_the_result_stage(value: Any) -> None:
    outcome = returning(value, 4_096).attempt(ToolCall(id="c", name="echo", arguments={}))
    assert outcome.observation == {"ok": False, "error": "tool_failed"}
    assert outcome.failure is not None and outcome.failure.stage == "result"
    assert outcome.encoded == '{"error": "tool_failed", "ok": false}'


def test_a_changed_copy_is_encoded_afresh_never_with_its_originals_text() -> None:
    outcome = ToolOutcome({"ok": True, "value": "vanilla"}, handler_ran=True)
    assert outcome.encoded == '{"ok": true, "value": "vanilla"}'
    hidden = replace(outcome, observation={"ok": False, "error": "tool_not_allowed"})
    assert hidden.encoded == '{"error": "tool_not_allowed", "ok": false}'
    # The text is kept, not a field: equality and repr are the fields' alone.
    assert outcome == ToolOutcome({"ok": True, "value": "vanilla"}, handler_ran=True)
    assert "_encoded" not in repr(outcome)


def test_a_run_encodes_each_observation_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every JSON encoding in the process goes through JSONEncoder.encode
    # (json.dumps included), whichever encoder object makes it: count those
    # whose value is an observation.
    observations: list[Any] = []
    real_encode = json.JSONEncoder.encode

    def counting(self: json.JSONEncoder, value: Any) -> str:
        if isinstance(value, dict) and "ok" in value:
            observations.append(value)
        return real_encode(self, value)

    monkeypatch.setattr(json.JSONEncoder, "encode", counting)
    monkeypatch.delenv("SOVEREIGN_TRACE", raising=False)

    def ask(call_id: str, name: str, **arguments: Any) -> AssistantToolCall:
        return AssistantToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))

    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(
                    ask("c1", "list_stock"),
                    ask("c2", "draft_order", sku="SKU-VANILLA", quantity=6),
                    ask("c3", "run_shell", command="ls"),
                    AssistantToolCall(id="c4", name="draft_order", arguments_json="{"),
                )
            ),
            AssistantMessage(content="done"),
        ]
    )
    record = run_task(model, build_tools(SHOP), "t", max_steps=3, max_tool_calls=8)
    answers = [m for m in record.messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in answers] == ["c1", "c2", "c3", "c4"]
    # One encoding per answer: the dispatcher's measurement is the text sent.
    monkeypatch.undo()  # the oracle's own json.dumps below is not counted
    assert len(observations) == len(answers)
    for answer, observation in zip(answers, observations, strict=True):
        assert answer.content == json.dumps(observation, sort_keys=True)
    assert json.loads(answers[2].content) == {"ok": False, "error": "tool_not_allowed"}
    assert json.loads(answers[3].content) == {"ok": False, "error": "malformed_tool_call"}
