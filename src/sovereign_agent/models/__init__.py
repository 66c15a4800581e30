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
from sovereign_agent.models.http import HTTPSettings, Secret
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
from sovereign_agent.models.recorded import (
    RECORDED_LABEL,
    RECORDED_MORNING_BRIEF,
    recorded_morning_brief_model,
)

__all__ = [
    "MODEL_VARIABLE",
    "RECORDED_LABEL",
    "RECORDED_MORNING_BRIEF",
    "AnthropicClient",
    "AssistantMessage",
    "AssistantToolCall",
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
    "Secret",
    "SystemMessage",
    "ToolMessage",
    "Usage",
    "UserMessage",
    "model_from_env",
    "recorded_morning_brief_model",
]
