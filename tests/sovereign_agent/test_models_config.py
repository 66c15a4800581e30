"""Choosing the model from SOVEREIGN_MODEL and friends."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st
from provider_stub import ANTHROPIC_ROUTE, OPENAI_ROUTE, ProviderStub, anthropic_text, openai_text

from sovereign_agent.models import (
    AnthropicClient,
    AssistantMessage,
    ModelClient,
    ModelConfigurationError,
    ModelResponseError,
    OpenAICompatibleClient,
    ScriptedModel,
    UserMessage,
    model_from_env,
)
from sovereign_agent.models.recorded import RECORDED_LABEL, RECORDED_MORNING_BRIEF

KEY = "secret-token-config-31bb"
HI = [UserMessage(content="hi")]


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test loudly."""

    def refuse(*args, **kwargs):
        raise AssertionError("the offline model tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_offline_is_the_default_and_needs_no_network_and_no_key(no_network):
    model = model_from_env({})
    assert isinstance(model, ModelClient)
    assert model.label == RECORDED_LABEL
    assert "offline" in model.label
    reply = model.complete(HI)
    assert reply.message.content == RECORDED_MORNING_BRIEF
    assert reply.model == "offline"
    assert reply.usage is None


def test_the_recorded_example_answers_once_then_says_it_ran_out(no_network):
    model = model_from_env({"SOVEREIGN_MODEL": "offline"})
    model.complete(HI)
    with pytest.raises(ModelResponseError, match=r"no reply left after 1 step\(s\)"):
        model.complete(HI)


def test_each_call_to_model_from_env_gets_a_fresh_recording():
    model_from_env({}).complete(HI)
    assert model_from_env({}).complete(HI).message.content == RECORDED_MORNING_BRIEF


def test_a_caller_supplied_script_replaces_the_recording(no_network):
    model = model_from_env({}, offline_script=[AssistantMessage(content="scripted brief")])
    assert isinstance(model, ScriptedModel)
    assert model.label == "offline (scripted)"
    assert model.complete(HI).message.content == "scripted brief"


def test_blank_sovereign_model_means_offline():
    assert model_from_env({"SOVEREIGN_MODEL": "  "}).label == RECORDED_LABEL


def test_openai_reads_its_base_url_and_key_and_really_calls_that_server():
    with ProviderStub() as stub:
        stub.enqueue(OPENAI_ROUTE, openai_text("from the stub"))
        model = model_from_env(
            {
                "SOVEREIGN_MODEL": "openai:test-model",
                "OPENAI_BASE_URL": stub.openai_base_url + "/",
                "OPENAI_API_KEY": f"  {KEY}\n",  # pasted with spaces and a newline
            }
        )
        assert isinstance(model, OpenAICompatibleClient)
        assert model.complete(HI).message.content == "from the stub"
        assert stub.requests[0].headers["authorization"] == f"Bearer {KEY}"
        assert stub.requests[0].json["model"] == "test-model"


def test_anthropic_reads_its_base_url_and_key_and_really_calls_that_server():
    with ProviderStub() as stub:
        stub.enqueue(ANTHROPIC_ROUTE, anthropic_text("from the stub"))
        model = model_from_env(
            {
                "SOVEREIGN_MODEL": "anthropic:test-model",
                "ANTHROPIC_BASE_URL": stub.anthropic_base_url,
                "ANTHROPIC_API_KEY": KEY,
            }
        )
        assert isinstance(model, AnthropicClient)
        assert model.complete(HI).message.content == "from the stub"
        assert stub.requests[0].headers["x-api-key"] == KEY


def test_openai_default_base_url_without_a_key_fails_in_one_line():
    with pytest.raises(ModelConfigurationError) as caught:
        model_from_env({"SOVEREIGN_MODEL": "openai:gpt-4o-mini", "OPENAI_API_KEY": ""})
    assert str(caught.value) == (
        "OPENAI_API_KEY is not set; api.openai.com needs a key (or use SOVEREIGN_MODEL=offline)"
    )


def test_the_key_of_one_provider_is_never_sent_to_the_other():
    with ProviderStub() as stub:
        stub.enqueue(OPENAI_ROUTE, openai_text("ok"))
        model_from_env(
            {
                "SOVEREIGN_MODEL": "openai:m",
                "OPENAI_BASE_URL": stub.openai_base_url,
                "ANTHROPIC_API_KEY": KEY,
            }
        ).complete(HI)
        assert KEY not in str(stub.requests[0].headers)
        assert "authorization" not in stub.requests[0].headers


@pytest.mark.parametrize(
    "value", ["gemini:pro", "openai", "openai:", "anthropic:  ", "OFFLINE", "offline:x"]
)
def test_an_unknown_value_is_a_one_line_configuration_error(value):
    with pytest.raises(ModelConfigurationError) as caught:
        model_from_env({"SOVEREIGN_MODEL": value})
    assert str(caught.value).startswith("SOVEREIGN_MODEL=")
    assert str(caught.value).endswith("is not one of: offline, openai:<model>, anthropic:<model>")


@given(st.text(max_size=200))
def test_any_value_gives_a_client_or_a_one_line_configuration_error(value):
    environ = {"SOVEREIGN_MODEL": value, "OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
    try:
        model = model_from_env(environ)
    except ModelConfigurationError as error:
        assert "\n" not in str(error)
        assert KEY not in str(error)
    else:
        assert isinstance(model, ModelClient)
        assert KEY not in repr(model) and KEY not in model.label
