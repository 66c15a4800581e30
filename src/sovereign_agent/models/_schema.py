"""Support the book does not print: reading the neutral tool schema and a provider's reply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from sovereign_agent.models.base import ModelResponseError
from sovereign_agent.models.messages import Usage


def function_parts(tool: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """Name, description and JSON-schema parameters of one `ExecutableTool.schema()`.

    A schema in any other shape is our own mistake, not the model's, so it
    raises `ValueError` before anything is sent.
    """
    function = tool.get("function") if tool.get("type") == "function" else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise ValueError('a tool schema must look like {"type": "function", "function": {...}}')
    parameters = function.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(parameters, Mapping):
        raise ValueError(
            f"the parameters of tool {function['name']!r} must be a JSON schema object"
        )
    return function["name"], str(function.get("description", "")), dict(parameters)


def token_usage(raw: Any, input_key: str, output_key: str) -> Usage | None:
    """Token counts when the provider sent plausible ones; usage is never worth failing a reply."""
    if not isinstance(raw, Mapping):
        return None
    given, produced = raw.get(input_key), raw.get(output_key)
    if _count(given) and _count(produced):
        return Usage(input_tokens=given, output_tokens=produced)
    return None


def _count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def malformed(source: str, what: str) -> ModelResponseError:
    """The error for a reply that is JSON but not in its provider's shape, naming the field."""
    return ModelResponseError(f"the reply from {source} is malformed: {what}")
