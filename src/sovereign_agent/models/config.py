"""Support the book does not print: the model the environment names, offline unless it names one.

    SOVEREIGN_MODEL = offline (the default) | openai:<model> | anthropic:<model>
    OPENAI_BASE_URL, OPENAI_API_KEY         for openai:<model>
    ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY   for anthropic:<model>

Offline is the default so that running a chapter never spends money or needs
a network by surprise; a real provider is something the reader asks for.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping

from sovereign_agent.models.anthropic import ANTHROPIC_DEFAULT_BASE_URL, AnthropicClient
from sovereign_agent.models.base import ModelClient, ModelConfigurationError
from sovereign_agent.models.http import HTTPSettings
from sovereign_agent.models.offline import ScriptedModel, ScriptStep
from sovereign_agent.models.openai_compat import OPENAI_DEFAULT_BASE_URL, OpenAICompatibleClient
from sovereign_agent.models.recorded import recorded_morning_brief_model

__all__ = ["MODEL_VARIABLE", "model_from_env"]

MODEL_VARIABLE = "SOVEREIGN_MODEL"


def _setting(environ: Mapping[str, str], name: str) -> str | None:
    # An exported but empty variable means "not set", as most shells' users expect.
    value = environ.get(name, "").strip()
    return value or None


def model_from_env(
    environ: Mapping[str, str] | None = None,
    *,
    offline_script: Iterable[ScriptStep] | None = None,
    settings: HTTPSettings | None = None,
    sleep: Callable[[float], None] | None = None,
) -> ModelClient:
    """The model `SOVEREIGN_MODEL` names; offline (no network, no key) unless it names a provider.

    Offline, the replies come from `offline_script` when the caller gives one,
    else from chapter 1's recorded example. A value we do not understand is an
    error: guessing would quietly send a reader's data somewhere they did not choose.
    """
    env = os.environ if environ is None else environ
    choice = _setting(env, MODEL_VARIABLE) or "offline"
    provider, _, model = choice.partition(":")
    wait = sleep or time.sleep
    if choice == "offline":
        if offline_script is None:
            return recorded_morning_brief_model()
        return ScriptedModel(offline_script)
    if provider == "openai" and model.strip():
        return OpenAICompatibleClient(
            model.strip(),
            api_key=_setting(env, "OPENAI_API_KEY"),
            base_url=_setting(env, "OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL,
            settings=settings,
            sleep=wait,
        )
    if provider == "anthropic" and model.strip():
        return AnthropicClient(
            model.strip(),
            api_key=_setting(env, "ANTHROPIC_API_KEY"),
            base_url=_setting(env, "ANTHROPIC_BASE_URL") or ANTHROPIC_DEFAULT_BASE_URL,
            settings=settings,
            sleep=wait,
        )
    shown = choice if len(choice) <= 60 else choice[:57] + "..."
    raise ModelConfigurationError(
        f"{MODEL_VARIABLE}={shown!r} is not one of: offline, openai:<model>, anthropic:<model>"
    )
