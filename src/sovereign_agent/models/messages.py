"""Support the book does not print: provider-neutral conversation records.

Every provider speaks its own dialect; the rest of the runtime speaks only
these types. Clients translate at the edge, so the agent loop of chapter 3
never learns which provider answered.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AssistantMessage",
    "AssistantToolCall",
    "Message",
    "ModelReply",
    "SystemMessage",
    "ToolMessage",
    "Usage",
    "UserMessage",
]

_RECORD = ConfigDict(extra="forbid", frozen=True)


class AssistantToolCall(BaseModel):
    """A tool request exactly as the model wrote it, before anyone trusts it.

    `arguments_json` stays raw text: a model can produce text that is not a JSON
    object, or omit the id, and deciding what that means is the runtime's job
    (chapter 3 turns it into a refusal), not the client's.
    """

    model_config = _RECORD

    id: str
    name: str
    arguments_json: str


class SystemMessage(BaseModel):
    model_config = _RECORD
    role: Literal["system"] = "system"
    content: str


class UserMessage(BaseModel):
    model_config = _RECORD
    role: Literal["user"] = "user"
    content: str


class AssistantMessage(BaseModel):
    model_config = _RECORD
    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: tuple[AssistantToolCall, ...] = ()


class ToolMessage(BaseModel):
    """The runtime's answer to one tool call, matched to it by id."""

    model_config = _RECORD
    role: Literal["tool"] = "tool"
    tool_call_id: str
    content: str


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage,
    Field(discriminator="role"),
]


class Usage(BaseModel):
    """Token counts, when the provider reports them."""

    model_config = _RECORD
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)


class ModelReply(BaseModel):
    """One model turn: the assistant message plus what the provider said about it."""

    model_config = _RECORD
    message: AssistantMessage
    model: str
    finish_reason: str | None = None
    usage: Usage | None = None
