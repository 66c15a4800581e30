"""Support the book does not print: a client for the Anthropic Messages API.

The same neutral conversation, in a different dialect: system text moves to a
top-level field, tool calls and tool results become content blocks, and a
reply length (`max_tokens`) is required on every request.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from sovereign_agent.models._schema import function_parts, malformed, token_usage
from sovereign_agent.models.base import ModelConfigurationError
from sovereign_agent.models.http import HTTPSettings
from sovereign_agent.models.messages import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelReply,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from sovereign_agent.models.provider import HTTPModelClient
from sovereign_agent.models.streaming import MessagesAssembler

__all__ = ["ANTHROPIC_DEFAULT_BASE_URL", "AnthropicClient"]

ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
# The API version this client's request and reply shapes were written against.
ANTHROPIC_VERSION = "2023-06-01"


def _tool_input(call: AssistantToolCall) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments_json)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        # Anthropic only accepts an object here, and a reply from Anthropic
        # always carries one; anything else was put in the history by our own
        # code, which is a defect to fix, not a text to guess at.
        raise ValueError(f"tool call {call.id!r} has arguments that are not a JSON object")
    return value


def anthropic_request(
    messages: Sequence[Message],
) -> tuple[str | None, list[dict[str, Any]]]:
    """The top-level `system` text and the `messages` list of a Messages request.

    Consecutive turns of the same role are merged into one turn: the results
    of several tool calls must arrive together, in the user turn right after
    the assistant turn that asked for them.
    """
    system_parts: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].append(block)
        else:
            turns.append({"role": role, "content": [block]})

    for message in messages:
        if isinstance(message, SystemMessage):
            system_parts.append(message.content)
        elif isinstance(message, UserMessage):
            add("user", {"type": "text", "text": message.content})
        elif isinstance(message, ToolMessage):
            add(
                "user",
                {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id,
                    "content": message.content,
                },
            )
        elif isinstance(message, AssistantMessage):
            # The API refuses empty text blocks, so an assistant turn that only
            # asked for tools carries tool_use blocks alone.
            if message.content:
                add("assistant", {"type": "text", "text": message.content})
            for call in message.tool_calls:
                add(
                    "assistant",
                    {
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": _tool_input(call),
                    },
                )
        else:
            raise TypeError(f"not a conversation message: {type(message).__name__}")
    system = "\n\n".join(system_parts) if system_parts else None
    return system, turns


def anthropic_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`ExecutableTool.schema()` rewritten as Anthropic's `{name, description, input_schema}`."""
    wire: list[dict[str, Any]] = []
    for tool in tools:
        name, description, parameters = function_parts(tool)
        wire.append({"name": name, "description": description, "input_schema": parameters})
    return wire


def _tool_use(block: dict[str, Any], source: str) -> AssistantToolCall:
    call_id, name = block.get("id", ""), block.get("name", "")
    if not (isinstance(call_id, str) and isinstance(name, str)):
        raise malformed(source, "a tool_use id or name is not text")
    if "input" not in block:
        raise malformed(source, "a tool_use block has no input")
    # The Messages API defines `input` as an object. Anything else could not
    # be sent back in the next request's history, so it is refused here, as
    # an unreadable reply, rather than crashing a later turn.
    if not isinstance(block["input"], dict):
        raise malformed(source, "a tool_use input is not an object")
    try:
        arguments = json.dumps(block["input"], allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        # Not reachable from a reply `post_json` decoded (standard JSON, depth
        # checked), but `parse_message` is public and holds its promise alone.
        raise malformed(source, "a tool_use input is not JSON") from None
    return AssistantToolCall(id=call_id, name=name, arguments_json=arguments)


def parse_message(payload: dict[str, Any], *, source: str, model: str) -> ModelReply:
    """A Messages reply in neutral form; anything unreadable is a `ModelResponseError`."""
    blocks = payload.get("content")
    if not isinstance(blocks, list):
        raise malformed(source, "content is not a list")
    texts: list[str] = []
    calls: list[AssistantToolCall] = []
    for block in blocks:
        if not isinstance(block, dict):
            raise malformed(source, "a content block is not an object")
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise malformed(source, "a text block has no text")
            texts.append(text)
        elif kind == "tool_use":
            calls.append(_tool_use(block, source))
        # Other block kinds (thinking, for instance) are not part of the reply
        # the runtime acts on, so they are left out rather than refused.
    stop_reason = payload.get("stop_reason")
    answered_by = payload.get("model")
    return ModelReply(
        message=AssistantMessage(
            content="".join(texts) if texts else None, tool_calls=tuple(calls)
        ),
        model=answered_by if isinstance(answered_by, str) and answered_by else model,
        finish_reason=stop_reason if isinstance(stop_reason, str) else None,
        usage=token_usage(payload.get("usage"), "input_tokens", "output_tokens"),
    )


class AnthropicClient(HTTPModelClient):
    """Talks the Messages API. A key is always required: the API has no anonymous use."""

    provider = "anthropic"
    client_name = "the Anthropic client"
    key_variable = "ANTHROPIC_API_KEY"
    base_url_variable = "ANTHROPIC_BASE_URL"
    path = "/v1/messages"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str = ANTHROPIC_DEFAULT_BASE_URL,
        max_tokens: int = 1024,
        settings: HTTPSettings | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.max_tokens = max_tokens
        super().__init__(model, api_key=api_key, base_url=base_url, settings=settings, sleep=sleep)

    def _check_options(self) -> None:
        max_tokens = self.max_tokens
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ModelConfigurationError("max_tokens must be a positive whole number")

    def key_needed(self) -> str | None:
        return "the Anthropic API needs a key"

    def request_body(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> dict[str, Any]:
        """Exactly the JSON `complete` would send, so a reader can look before paying."""
        system, turns = anthropic_request(messages)
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if system is not None:
            body["system"] = system
        body["messages"] = turns
        if tools:
            body["tools"] = anthropic_tools(tools)
        return body

    def headers(self, key: str | None) -> dict[str, str]:
        # `key_needed` made sure at construction that there is one.
        return {"x-api-key": key or "", "anthropic-version": ANTHROPIC_VERSION}

    def parse_reply(self, payload: dict[str, Any], *, source: str) -> ModelReply:
        return parse_message(payload, source=source, model=self.model)

    def stream_assembler(self) -> MessagesAssembler:
        return MessagesAssembler(model=self.model)
