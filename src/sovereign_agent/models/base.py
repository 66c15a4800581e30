"""Support the book does not print: the interface every model client implements, and its errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from sovereign_agent.models.messages import Message, ModelReply

__all__ = [
    "ModelClient",
    "ModelConfigurationError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponseError",
    "ModelUnavailableError",
]


@runtime_checkable
class ModelClient(Protocol):
    """Anything that turns a conversation (and the tools on offer) into one reply.

    `tools` are function schemas in the shape `ExecutableTool.schema()` returns;
    each client translates them into its provider's own format.
    """

    @property
    def label(self) -> str:
        """What a reader is shown about who answered, e.g. `offline (scripted)`."""
        ...

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply: ...


class ModelError(Exception):
    """A model call failed in a way the caller should report, not crash on.

    Every message is one line and never contains an API key.
    """


class ModelConfigurationError(ModelError):
    """The client cannot be built: an unknown provider, a missing key or model name."""


class ModelUnavailableError(ModelError):
    """The server could not be reached, or did not answer within the timeout."""


class ModelHTTPError(ModelError):
    """The server answered with an HTTP error status."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class ModelResponseError(ModelError):
    """The server answered, but not with a reply we can read."""
