"""Support the book does not print: the offline default, a model whose replies come from a script.

Deterministic, free, and needing no network or key, so that CI and a reader
on a train get the book's exact output. Its label says it is offline wherever
a reader sees who answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sovereign_agent.models.base import ModelResponseError
from sovereign_agent.models.messages import AssistantMessage, Message, ModelReply

__all__ = ["ScriptStep", "ScriptedModel"]

# A step is either a fixed reply or a function of the conversation so far, so a
# script can answer from the observations it was sent, as a real model would.
ScriptStep = AssistantMessage | Callable[[Sequence[Message]], AssistantMessage]


class ScriptedModel:
    """Replays its script one step per call; running out is an error, never a silent stop."""

    def __init__(self, script: Iterable[ScriptStep], *, label: str = "offline (scripted)") -> None:
        self._script = list(script)
        self._label = label
        self.calls: list[tuple[tuple[Message, ...], tuple[dict[str, Any], ...]]] = []

    @property
    def label(self) -> str:
        return self._label

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        if len(self.calls) >= len(self._script):
            raise ModelResponseError(
                f"the offline script has no reply left after {len(self._script)} step(s)"
            )
        step = self._script[len(self.calls)]
        self.calls.append((tuple(messages), tuple(tools)))
        message = step(messages) if callable(step) else step
        return ModelReply(
            message=message,
            model="offline",
            finish_reason="tool_calls" if message.tool_calls else "stop",
        )
