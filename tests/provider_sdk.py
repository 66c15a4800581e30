"""The providers' official SDK types, imported when a test first needs them.

The stub's replies are held to the types of OpenAI's and Anthropic's own SDKs.
Importing those types (Anthropic's alone defines hundreds of Pydantic models)
takes a couple of CPU seconds; at a test module's top they were imported
while collecting, by every xdist worker, before its first test. Behind this
function only the worker that runs such a test pays, once. Tests take them
through a module-scoped fixture, so the import never falls inside a
Hypothesis example (whose deadline would count it).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter

__all__ = ["ProviderSdk", "provider_sdk"]


@dataclass(frozen=True)
class ProviderSdk:
    """The SDK types the stub's replies, errors and stream events must validate against."""

    chat_completion: type[BaseModel]
    chat_completion_chunk: type[BaseModel]
    openai_error: type[BaseModel]
    anthropic_message: type[BaseModel]
    anthropic_error: type[BaseModel]
    anthropic_event: TypeAdapter[Any]


@functools.cache
def provider_sdk() -> ProviderSdk:
    from anthropic.types import ErrorResponse, Message, RawMessageStreamEvent
    from openai.types import ErrorObject
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    return ProviderSdk(
        chat_completion=ChatCompletion,
        chat_completion_chunk=ChatCompletionChunk,
        openai_error=ErrorObject,
        anthropic_message=Message,
        anthropic_error=ErrorResponse,
        anthropic_event=TypeAdapter(RawMessageStreamEvent),
    )
