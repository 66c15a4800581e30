"""Support the book does not print: chapter 1's model layer, neutral messages and their clients."""

from sovereign_agent.models.anthropic import AnthropicClient
from sovereign_agent.models.base import (
    ModelClient,
    ModelConfigurationError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelUnavailableError,
)
from sovereign_agent.models.config import MODEL_VARIABLE, model_from_env
from sovereign_agent.models.http import HTTPSettings
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
from sovereign_agent.models.offline import ScriptedModel, ScriptStep
from sovereign_agent.models.openai_compat import OpenAICompatibleClient
from sovereign_agent.models.provider import HTTPModelClient

__all__ = [
    "MODEL_VARIABLE",
    "AnthropicClient",
    "AssistantMessage",
    "AssistantToolCall",
    "HTTPModelClient",
    "HTTPSettings",
    "Message",
    "ModelClient",
    "ModelConfigurationError",
    "ModelError",
    "ModelHTTPError",
    "ModelReply",
    "ModelResponseError",
    "ModelUnavailableError",
    "OpenAICompatibleClient",
    "ScriptStep",
    "ScriptedModel",
    "SystemMessage",
    "ToolMessage",
    "Usage",
    "UserMessage",
    "model_from_env",
]
