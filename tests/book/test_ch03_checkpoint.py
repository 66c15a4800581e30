"""Chapter 3's checkpoint, run as a reader runs it: offline, and against a provider stub."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from chapter_files import checkpoint_output, parts
from chapter_files import run_checkpoint as run_script
from provider_stub import (
    ANTHROPIC_ROUTE,
    OPENAI_ROUTE,
    ProviderStub,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_calls,
)

from bookproof.layout import default_layout

ROOT = default_layout().root
CHAPTER = parts(3).text
CHECKPOINT = parts(3).checkpoint
ANSWER = (
    "Draft 6 tubs of SKU-VANILLA (1,500 pence) and 4 tubs of SKU-STRAWBERRY (1,100 pence): "
    "2,600 pence in all. Nothing is bought yet."
)
VANILLA = '{"sku": "SKU-VANILLA", "quantity": 6}'
STRAWBERRY = '{"sku": "SKU-STRAWBERRY", "quantity": 4}'


def run_checkpoint(cwd: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    return run_script(CHECKPOINT, cwd, **variables)


def same_run_as_offline(stdout: str, label_prefix: str) -> None:
    expected = checkpoint_output(CHAPTER).splitlines()
    lines = stdout.splitlines()
    assert lines[0].startswith(f"model: {label_prefix}"), lines[0]
    assert "127.0.0.1" in lines[0]
    assert lines[1:] == expected[1:]


def test_openai_provider_through_the_stub_prints_the_same_drafts() -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls([("call_a", "list_stock", "{}")]),
            openai_tool_calls(
                [("call_b", "draft_order", VANILLA), ("call_c", "draft_order", STRAWBERRY)]
            ),
            openai_text(ANSWER),
        )
        result = run_checkpoint(
            ROOT,
            SOVEREIGN_MODEL="openai:test-model",
            OPENAI_BASE_URL=stub.openai_base_url,
            OPENAI_API_KEY="x",
        )
        requests = stub.requests_to(OPENAI_ROUTE)
        assert stub.pending(OPENAI_ROUTE) == 0
    assert result.returncode == 0, result.stderr
    same_run_as_offline(result.stdout, "openai:test-model")

    assert len(requests) == 3
    first: dict[str, Any] = requests[0].json
    assert first["model"] == "test-model"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "draft_order" in first["messages"][0]["content"]
    assert [t["function"]["name"] for t in first["tools"]] == [
        "draft_order",
        "list_stock",
        "supplier",
    ]
    assert requests[0].headers["authorization"] == "Bearer x"
    last = requests[2].json["messages"]
    tool_answers = [
        (m["tool_call_id"], json.loads(m["content"])) for m in last if m["role"] == "tool"
    ]
    assert [call_id for call_id, _ in tool_answers] == ["call_a", "call_b", "call_c"]
    assert tool_answers[1][1]["value"]["total_pence"] == 1500
    assert tool_answers[2][1]["value"]["total_pence"] == 1100


def test_anthropic_provider_through_the_stub_prints_the_same_drafts() -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            ANTHROPIC_ROUTE,
            anthropic_tool_use([("toolu_a", "list_stock", {})]),
            anthropic_tool_use(
                [
                    ("toolu_b", "draft_order", json.loads(VANILLA)),
                    ("toolu_c", "draft_order", json.loads(STRAWBERRY)),
                ]
            ),
            anthropic_text(ANSWER),
        )
        result = run_checkpoint(
            ROOT,
            SOVEREIGN_MODEL="anthropic:test-model",
            ANTHROPIC_BASE_URL=stub.anthropic_base_url,
            ANTHROPIC_API_KEY="x",
        )
        requests = stub.requests_to(ANTHROPIC_ROUTE)
    assert result.returncode == 0, result.stderr
    same_run_as_offline(result.stdout, "anthropic:test-model")
    last = requests[2].json
    assert "list_stock" in last["system"]
    results = [
        block["tool_use_id"]
        for turn in last["messages"]
        if turn["role"] == "user"
        for block in turn["content"]
        if block["type"] == "tool_result"
    ]
    assert results == ["toolu_a", "toolu_b", "toolu_c"]


def test_a_provider_that_drafts_differently_prints_different_drafts() -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls([("call_a", "draft_order", '{"sku": "SKU-VANILLA", "quantity": 8}')]),
            openai_text("I drafted nothing."),
        )
        result = run_checkpoint(
            ROOT, SOVEREIGN_MODEL="openai:test-model", OPENAI_BASE_URL=stub.openai_base_url
        )
    assert result.returncode == 0, result.stderr
    # The shop refused 8 tubs inside the handler: the call ran, and drafted nothing.
    assert "executed: draft_order\nrefused: (none)\n" in result.stdout
    assert "draft SKU-VANILLA" not in result.stdout
    assert "drafts total: 0 pence" in result.stdout
    assert "answer: I drafted nothing." in result.stdout


def test_a_provider_error_ends_the_run_with_model_error_and_exit_status_1() -> None:
    with ProviderStub() as stub:  # nothing scripted: every request gets a 404
        result = run_checkpoint(
            ROOT, SOVEREIGN_MODEL="openai:test-model", OPENAI_BASE_URL=stub.openai_base_url
        )
    assert result.returncode == 1
    assert "stop: model_error after 1 step(s)" in result.stdout
    assert "error: ModelHTTPError:" in result.stdout
    assert "\nanswer: None\n" in result.stdout


def test_a_provider_named_without_its_key_is_refused_before_any_run() -> None:
    result = run_checkpoint(ROOT, SOVEREIGN_MODEL="anthropic:test-model")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "ANTHROPIC_API_KEY" in result.stderr
