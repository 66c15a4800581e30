"""Chapter 1's model layer: neutral messages and clients that speak them."""

from sovereign_agent.models.base import (
    ModelClient,
    ModelConfigurationError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelUnavailableError,
)
from sovereign_agent.models.messages import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelReply,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)

__all__ = [
    "AssistantMessage",
    "AssistantToolCall",
    "Message",
    "ModelClient",
    "ModelConfigurationError",
    "ModelError",
    "ModelHTTPError",
    "ModelReply",
    "ModelResponseError",
    "ModelUnavailableError",
    "SystemMessage",
    "ToolMessage",
    "Usage",
    "UserMessage",
]
