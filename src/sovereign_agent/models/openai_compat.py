"""Support the book does not print: a client for OpenAI Chat Completions and servers copying it.

Ollama, vLLM and the llama.cpp server all answer `POST {base_url}/chat/completions`
in this shape, so one client covers a paid provider and a model on your own
machine; only the base URL changes.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from sovereign_agent.models._schema import function_parts, malformed, token_usage
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
from sovereign_agent.models.streaming import ChatCompletionAssembler

__all__ = ["OPENAI_DEFAULT_BASE_URL", "OpenAICompatibleClient"]

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The neutral conversation in Chat Completions form; the shapes map one to one."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage | UserMessage):
            wire.append({"role": message.role, "content": message.content})
        elif isinstance(message, AssistantMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments_json},
                    }
                    for call in message.tool_calls
                ]
            wire.append(entry)
        elif isinstance(message, ToolMessage):
            wire.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
            )
        else:
            raise TypeError(f"not a conversation message: {type(message).__name__}")
    return wire


def openai_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`ExecutableTool.schema()` already is the Chat Completions shape; we only check it."""
    wire: list[dict[str, Any]] = []
    for tool in tools:
        name, description, parameters = function_parts(tool)
        wire.append(
            {
                "type": "function",
                "function": {"name": name, "description": description, "parameters": parameters},
            }
        )
    return wire


def _tool_call(raw: object, source: str) -> AssistantToolCall:
    if not isinstance(raw, dict):
        raise malformed(source, "a tool call is not an object")
    function = raw.get("function")
    if not isinstance(function, dict):
        raise malformed(source, "a tool call has no function object")
    call_id, name = raw.get("id", ""), function.get("name", "")
    if not (isinstance(call_id, str) and isinstance(name, str)):
        raise malformed(source, "a tool call's id or name is not text")
    arguments = function.get("arguments", "")
    if isinstance(arguments, dict | list):
        # Some local servers send the arguments already parsed; the neutral
        # record keeps text, so it is written back as the JSON it was.
        try:
            arguments = json.dumps(arguments, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            raise malformed(source, "tool call arguments are not JSON") from None
    if not isinstance(arguments, str):
        raise malformed(source, "tool call arguments are not text")
    # No check that the arguments parse: that is the runtime's decision to
    # make, and to refuse visibly (chapter 3), not the transport's.
    return AssistantToolCall(id=call_id, name=name, arguments_json=arguments)


def parse_chat_completion(payload: dict[str, Any], *, source: str, model: str) -> ModelReply:
    """One `choices[0]` reply in neutral form; anything else is a `ModelResponseError`."""
    choices = payload.get("choices")
    if not (isinstance(choices, list) and choices):
        raise malformed(source, "no choices")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise malformed(source, "choices[0] is not an object")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise malformed(source, "choices[0] has no message object")
    content = message.get("content")
    if not (content is None or isinstance(content, str)):
        raise malformed(source, "message content is not text")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise malformed(source, "tool_calls is not a list")
    calls = tuple(_tool_call(raw, source) for raw in raw_calls)
    finish_reason = choice.get("finish_reason")
    answered_by = payload.get("model")
    return ModelReply(
        message=AssistantMessage(content=content, tool_calls=calls),
        model=answered_by if isinstance(answered_by, str) and answered_by else model,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=token_usage(payload.get("usage"), "prompt_tokens", "completion_tokens"),
    )


def _is_openai(base_url: str) -> bool:
    return urllib.parse.urlsplit(base_url).hostname == "api.openai.com"


class OpenAICompatibleClient(HTTPModelClient):
    """Talks Chat Completions to OpenAI or to a local server with the same API.

    The key is required for api.openai.com and optional anywhere else: Ollama
    and llama.cpp ignore it, and asking a reader to invent a fake key teaches
    them to paste keys where none is needed. With no key, no Authorization
    header is sent at all.
    """

    provider = "openai"
    client_name = "the OpenAI-compatible client"
    key_variable = "OPENAI_API_KEY"
    base_url_variable = "OPENAI_BASE_URL"
    path = "/chat/completions"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = OPENAI_DEFAULT_BASE_URL,
        settings: HTTPSettings | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(model, api_key=api_key, base_url=base_url, settings=settings, sleep=sleep)

    def key_needed(self) -> str | None:
        return "api.openai.com needs a key" if _is_openai(self.base_url) else None

    def request_body(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> dict[str, Any]:
        """Exactly the JSON `complete` would send, so a reader can look before paying."""
        body: dict[str, Any] = {"model": self.model, "messages": openai_messages(messages)}
        if tools:
            body["tools"] = openai_tools(tools)
        return body

    def headers(self, key: str | None) -> dict[str, str]:
        return {} if key is None else {"Authorization": f"Bearer {key}"}

    def parse_reply(self, payload: dict[str, Any], *, source: str) -> ModelReply:
        return parse_chat_completion(payload, source=source, model=self.model)

    def stream_body(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> dict[str, Any]:
        # Without include_usage a streamed reply carries no token counts, and
        # a run with a budget could not be held to it.
        body = super().stream_body(messages, tools=tools)
        body["stream_options"] = {"include_usage": True}
        return body

    def stream_assembler(self) -> ChatCompletionAssembler:
        return ChatCompletionAssembler(model=self.model)
