"""Chapter 1's checkpoint and learner file, run as a reader runs them: in their own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from chapter_files import parts
from provider_stub import (
    ANTHROPIC_ROUTE,
    OPENAI_ROUTE,
    ProviderStub,
    anthropic_error,
    anthropic_text,
    openai_error,
    openai_text,
)

from bookproof.layout import default_layout

CHAPTER_1 = parts(1)
ROOT = default_layout().root
CHECKPOINT = CHAPTER_1.checkpoint
LEARNER = CHAPTER_1.learner
KEY = "secret-token-checkpoint-5e0d"
STUB_BRIEF = "Stub brief: order 6 vanilla and 4 strawberry."


def clean_environment(**settings: str) -> dict[str, str]:
    """The caller's environment without any model setting, plus `settings`."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("SOVEREIGN_", "OPENAI_", "ANTHROPIC_"))
    }
    env.update(settings)
    return env


def run(path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(path)],
        cwd=ROOT,
        env=clean_environment(**settings),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_openai_checkpoint_sends_the_snapshot_and_prints_the_servers_reply():
    with ProviderStub() as stub:
        stub.enqueue(OPENAI_ROUTE, openai_text(STUB_BRIEF))
        result = run(
            CHECKPOINT,
            SOVEREIGN_MODEL="openai:test-model",
            OPENAI_BASE_URL=stub.openai_base_url,
            OPENAI_API_KEY=KEY,
        )
        [request] = stub.requests
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        f"Morning brief from openai:test-model at {stub.openai_base_url}\n\n{STUB_BRIEF}\n"
    )
    assert request.path == OPENAI_ROUTE
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.json
    assert body["model"] == "test-model"
    system, user = body["messages"]
    assert system["role"] == "system" and "morning brief" in system["content"]
    assert user["role"] == "user"
    snapshot = json.loads(user["content"].split("\n\n")[1])
    assert [(row["sku"], row["on_hand"]) for row in snapshot["products"]] == [
        ("SKU-VANILLA", 2),
        ("SKU-CHOCOLATE", 7),
        ("SKU-STRAWBERRY", 1),
    ]


def test_anthropic_checkpoint_sends_the_snapshot_and_prints_the_servers_reply():
    with ProviderStub() as stub:
        stub.enqueue(ANTHROPIC_ROUTE, anthropic_text(STUB_BRIEF))
        result = run(
            CHECKPOINT,
            SOVEREIGN_MODEL="anthropic:test-model",
            ANTHROPIC_BASE_URL=stub.anthropic_base_url,
            ANTHROPIC_API_KEY=KEY,
        )
        [request] = stub.requests
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        f"Morning brief from anthropic:test-model at {stub.base_url}\n\n{STUB_BRIEF}\n"
    )
    assert request.headers["x-api-key"] == KEY
    body = request.json
    assert "morning brief" in body["system"]
    [turn] = body["messages"]
    [block] = turn["content"]
    assert turn["role"] == "user" and block["type"] == "text"
    assert '"on_hand": 2' in block["text"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"SOVEREIGN_MODEL": "openai:gpt-4o-mini"},
            "cannot start: OPENAI_API_KEY is not set; api.openai.com needs a key "
            "(or use SOVEREIGN_MODEL=offline)",
        ),
        (
            {"SOVEREIGN_MODEL": "mistral:large"},
            "cannot start: SOVEREIGN_MODEL='mistral:large' is not one of: "
            "offline, openai:<model>, anthropic:<model>",
        ),
    ],
)
def test_configuration_errors_are_one_line_on_stderr_with_status_2(settings, message):
    result = run(CHECKPOINT, **settings)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == message + "\n"


def test_a_provider_error_is_one_line_without_traceback_or_key():
    with ProviderStub() as stub:
        stub.enqueue(OPENAI_ROUTE, openai_error(401, f"Incorrect API key provided: {KEY}"))
        stub.enqueue(ANTHROPIC_ROUTE, anthropic_error(401, f"invalid x-api-key {KEY}"))
        results = [
            run(
                CHECKPOINT,
                SOVEREIGN_MODEL="openai:test-model",
                OPENAI_BASE_URL=stub.openai_base_url,
                OPENAI_API_KEY=KEY,
            ),
            run(
                CHECKPOINT,
                SOVEREIGN_MODEL="anthropic:test-model",
                ANTHROPIC_BASE_URL=stub.anthropic_base_url,
                ANTHROPIC_API_KEY=KEY,
            ),
        ]
    for result in results:
        assert result.returncode == 1
        assert result.stderr.startswith("error: HTTP 401 from http://127.0.0.1:")
        assert result.stderr.count("\n") == 1
        assert "Traceback" not in result.stderr
        assert KEY not in result.stderr + result.stdout


def test_importing_the_checkpoint_defines_shop_and_does_nothing_else():
    code = (
        "import runpy, socket\n"
        "def refuse(*a, **k): raise AssertionError('network used on import')\n"
        "socket.socket.connect = refuse\n"
        f"ns = runpy.run_path({str(CHECKPOINT)!r})\n"
        "import json; print(json.dumps(ns['SHOP'], sort_keys=True))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean_environment(SOVEREIGN_MODEL="openai:x", OPENAI_BASE_URL="http://127.0.0.1:9/v1"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    shop = json.loads(result.stdout)
    assert shop["products"] == [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]


def test_the_learner_file_is_silent_on_import_and_gives_the_recorded_brief_offline():
    code = (
        "import runpy\n"
        f"ns = runpy.run_path({str(LEARNER)!r})\n"
        "from sovereign_agent.models import model_from_env\n"
        "brief = ns['morning_brief'](model_from_env({}), ns['SHOP'])\n"
        "needs = [ns['replenishment_need'](row) for row in ns['SHOP']['products']]\n"
        "import sys; sys.stderr.write(repr(needs) + '|' + brief.splitlines()[3])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == "[6, 0, 4]|- Vanilla (SKU-VANILLA): 2 tubs on hand, target 8. Order 6."
