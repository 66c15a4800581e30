"""Replies are untrusted input: any JSON object parses, or fails as a ModelResponseError."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from sovereign_agent.models import ModelReply, ModelResponseError
from sovereign_agent.models.anthropic import parse_message
from sovereign_agent.models.openai_compat import parse_chat_completion

SOURCE = "http://127.0.0.1:1/v1/x"
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)

# Shapes close to real replies, so the fuzzing reaches past the first check.
openai_like = st.fixed_dictionaries(
    {
        "choices": st.lists(
            st.fixed_dictionaries(
                {
                    "message": st.fixed_dictionaries(
                        {},
                        optional={
                            "content": json_values,
                            "tool_calls": st.lists(
                                st.fixed_dictionaries(
                                    {},
                                    optional={
                                        "id": json_values,
                                        "function": st.dictionaries(
                                            st.sampled_from(["name", "arguments"]), json_values
                                        ),
                                    },
                                ),
                                max_size=3,
                            )
                            | json_values,
                        },
                    )
                    | json_values
                },
                optional={"finish_reason": json_values},
            ),
            max_size=2,
        ),
    },
    optional={"usage": json_values, "model": json_values},
)
anthropic_like = st.fixed_dictionaries(
    {
        "content": st.lists(
            st.fixed_dictionaries(
                {"type": st.sampled_from(["text", "tool_use", "thinking"]) | json_values},
                optional={
                    "text": json_values,
                    "id": json_values,
                    "name": json_values,
                    "input": json_values,
                },
            )
            | json_values,
            max_size=4,
        )
        | json_values
    },
    optional={"usage": json_values, "stop_reason": json_values, "model": json_values},
)


def outcome(parse, payload) -> ModelReply | None:
    try:
        return parse(payload, source=SOURCE, model="asked-for")
    except ModelResponseError as error:
        assert str(error).startswith(f"the reply from {SOURCE} is malformed: ")
        return None


@given(openai_like | st.dictionaries(st.text(max_size=8), json_values))
def test_any_chat_completion_payload_parses_or_is_refused(payload):
    reply = outcome(parse_chat_completion, payload)
    if reply is not None:
        for call in reply.message.tool_calls:
            assert isinstance(call.arguments_json, str)


@given(anthropic_like | st.dictionaries(st.text(max_size=8), json_values))
def test_any_messages_payload_parses_or_is_refused(payload):
    reply = outcome(parse_message, payload)
    if reply is not None:
        for call in reply.message.tool_calls:
            # Anthropic's input object travels on as JSON text that reads back the same.
            json.loads(call.arguments_json)
