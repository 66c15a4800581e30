"""No sequence of model replies can push the loop past its bounds or make it raise."""

from __future__ import annotations

import copy
import json
import runpy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strength import examples

from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall, ToolMessage
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import build_tools
from sovereign_agent.tools import Dispatcher, ToolCall, ToolOutcome

SHOP = runpy.run_path(
    "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
)["SHOP"]
SNAPSHOT = copy.deepcopy(SHOP)


class CountingDispatcher(Dispatcher):
    """The shop's real dispatcher, counting what reaches `attempt` and which handlers ran."""

    def __init__(self) -> None:
        shop = build_tools(SHOP)
        super().__init__(shop.tools.values(), allowed=shop.allowed)
        self.invoked = 0
        self.ran: list[str] = []

    def attempt(self, call: ToolCall) -> ToolOutcome:
        self.invoked += 1
        outcome = super().attempt(call)
        if outcome.handler_ran:
            self.ran.append(call.name)
        return outcome


class CountingModel(ScriptedModel):
    """The scripted model, counting every request, including the one that fails."""

    def __init__(self, script: list[AssistantMessage]) -> None:
        super().__init__(script)
        self.asked = 0

    def complete(self, messages: Any, *, tools: Any = ()) -> Any:
        self.asked += 1
        return super().complete(messages, tools=tools)


names = st.one_of(
    st.sampled_from(["list_stock", "supplier", "draft_order", "run_shell", "", "bad name"]),
    st.text(max_size=30),
)
ids = st.one_of(st.sampled_from(["c1", "c2", "c3", ""]), st.text(max_size=20))
valid_arguments = st.fixed_dictionaries(
    {},
    optional={
        "sku": st.sampled_from(["SKU-VANILLA", "SKU-STRAWBERRY", "SKU-CHOCOLATE", "SKU-X"]),
        "quantity": st.one_of(st.integers(-2, 10), st.booleans(), st.floats(), st.text()),
        "approved": st.booleans(),
    },
).map(lambda d: json.dumps(d, allow_nan=True))
arguments = st.one_of(
    valid_arguments,
    st.text(max_size=60),
    st.sampled_from(["[]", "null", "1", "{", '{"a": NaN}', "[" * 1500 + "]" * 1500]),
)
tool_calls = st.builds(AssistantToolCall, id=ids, name=names, arguments_json=arguments)
replies = st.builds(
    AssistantMessage,
    content=st.one_of(st.none(), st.text(max_size=40)),
    tool_calls=st.lists(tool_calls, max_size=6).map(tuple),
)


def with_fresh_ids(script: list[AssistantMessage]) -> list[AssistantMessage]:
    """The same replies with every call id made unique, so the run goes past its first turn."""
    fresh = []
    for turn, reply in enumerate(script):
        calls = tuple(
            call.model_copy(update={"id": f"{call.id}#{turn}.{index}"})
            for index, call in enumerate(reply.tool_calls)
        )
        fresh.append(reply.model_copy(update={"tool_calls": calls}))
    return fresh


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(replies, max_size=8),
    fresh_ids=st.booleans(),
    max_steps=st.integers(1, 6),
    max_tool_calls=st.integers(1, 6),
)
def test_no_reply_sequence_exceeds_a_bound_or_raises(
    script: list[AssistantMessage], fresh_ids: bool, max_steps: int, max_tool_calls: int
) -> None:
    # Drawn ids repeat often; half the runs get unique ones, so that long runs are common too.
    if fresh_ids:
        script = with_fresh_ids(script)
    model = CountingModel(script)
    dispatcher = CountingDispatcher()
    record = run_task(model, dispatcher, "t", max_steps=max_steps, max_tool_calls=max_tool_calls)

    assert model.asked == record.steps <= max_steps
    assert dispatcher.invoked <= max_tool_calls
    assert len(record.requested) == len(record.executed) + len(record.refused)
    # `executed` is exactly the calls whose handler ran, in order.
    assert list(record.executed) == dispatcher.ran
    assert SHOP == SNAPSHOT
    messages = list(record.messages)
    answered = messages
    if record.stop_reason is StopReason.DUPLICATE_CALL_ID:
        # The reply that reused an id is kept, unanswered; nothing in it ran.
        last = messages[-1]
        assert isinstance(last, AssistantMessage)
        ids = [call.id for call in last.tool_calls]
        earlier = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        assert len(set(ids)) < len(ids) or earlier & set(ids)
        assert record.refused[-len(ids) :] == tuple(
            (call.name, "duplicate_call_id") for call in last.tool_calls
        )
        answered = messages[:-1]
    # Every other call the model made is answered, in its order, right after its
    # turn, and no id is ever answered twice.
    all_answers = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert len(all_answers) == len(set(all_answers))
    for index, message in enumerate(answered):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            answers = messages[index + 1 : index + 1 + len(message.tool_calls)]
            assert all(isinstance(m, ToolMessage) for m in answers)
            assert [m.tool_call_id for m in answers] == [c.id for c in message.tool_calls]
            for answer in answers:
                observation: dict[str, Any] = json.loads(answer.content)
                assert answer.content == json.dumps(observation, sort_keys=True)
    # The stop reason agrees with what the record shows.
    last = messages[-1]
    if record.stop_reason is StopReason.FINAL_ANSWER:
        assert isinstance(last, AssistantMessage) and not last.tool_calls
        assert record.answer == last.content
    elif record.stop_reason is StopReason.STEP_LIMIT:
        assert record.steps == max_steps and isinstance(last, ToolMessage)
    elif record.stop_reason is StopReason.TOOL_CALL_LIMIT:
        assert "tool_call_limit" in {code for _, code in record.refused}
        assert dispatcher.invoked == max_tool_calls
    elif record.stop_reason is StopReason.DUPLICATE_CALL_ID:
        pass  # checked above
    else:
        assert record.stop_reason is StopReason.MODEL_ERROR
        assert record.steps == len(script) + 1
        assert record.error is not None and "\n" not in record.error


@settings(max_examples=examples(200), deadline=None)
@given(raw=tool_calls)
def test_a_refused_call_never_echoes_the_models_text(raw: AssistantToolCall) -> None:
    marked = AssistantToolCall(
        id=raw.id, name=raw.name, arguments_json=raw.arguments_json + "secret-token-42"
    )
    model = ScriptedModel([AssistantMessage(tool_calls=(marked,))])
    record = run_task(model, CountingDispatcher(), "t", max_steps=2, max_tool_calls=2)
    answer = [m for m in record.messages if isinstance(m, ToolMessage)]
    assert len(answer) == 1
    assert "secret-token" not in answer[0].content
