"""Chapter 9's reader files: the checkpoint's facts, the learner file, and the runtime it teaches.

Chapter 9 is not in the manifest as drafted until its exercise book exists,
so the drift rules the verifier applies to drafted chapters are held here
directly: what the learner file defines is what the runtime defines, and the
checkpoint prints the chapter's block from any folder, offline and against a
real HTTP provider.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from provider_stub import OPENAI_ROUTE, ProviderStub, openai_text, openai_tool_calls
from verifying import verify

import sovereign_agent.mcp.remote
import sovereign_agent.mcp.supplier
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch09_remote_tool_servers.md"
CHECKPOINT = TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch09_remote_tool_servers_checkpoint.py"
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch09_remote_tool_servers_learner.py"
PROVIDER_VARIABLES = (
    "SOVEREIGN_MODEL",
    "SOVEREIGN_TRACE",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
)

# The facts the chapter promises, written out independently of the code.
FACTS = (
    "joined: check_availability, next_delivery",
    "not joined: place_order (schema_mismatch), apply_discount_code (undeclared)",
    "poisoned description offered: no",
    "vanilla available: 40",
    "narrowed by check_availability [call-1]: tool_changed",
    "  removed: check_availability",
)


def definitions(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: ast.dump(node, include_attributes=False)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    }


def chapter_checkpoint_output() -> str:
    tokens = MarkdownIt("commonmark").parse(CHAPTER.read_text(encoding="utf-8"))
    blocks = [t.content for t in tokens if t.type == "fence" and t.info == "checkpoint-output"]
    assert len(blocks) == 1
    return blocks[0]


def python(*argv: str, cwd: Path = ROOT, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
    env.update(variables)
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_learner_file_defines_what_the_runtime_defines() -> None:
    learner = definitions(LEARNER)
    runtime = definitions(Path(sovereign_agent.mcp.remote.__file__)) | definitions(
        Path(sovereign_agent.mcp.supplier.__file__)
    )
    assert set(learner) == {
        "Availability",
        "SupplierOrder",
        "Declared",
        "Advertised",
        "Refusal",
        "schema_matches",
        "match_tools",
    }
    for name, tree in learner.items():
        assert runtime[name] == tree, f"{name} differs from the runtime"


def test_importing_the_learner_file_prints_nothing(tmp_path: Path) -> None:
    result = python(str(LEARNER), cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_the_offline_checkpoint_prints_the_chapters_output_and_its_facts(tmp_path: Path) -> None:
    result = python(str(CHECKPOINT), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == chapter_checkpoint_output()
    lines = result.stdout.splitlines()
    for fact in FACTS:
        assert fact in lines, fact
    assert list(tmp_path.iterdir()) == []


def test_a_provider_that_calls_the_tool_twice_still_loses_it_after_the_change() -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls([("p1", "check_availability", '{"sku": "VANILLA"}')]),
            openai_tool_calls([("p2", "check_availability", '{"sku": "STRAWBERRY"}')]),
            openai_text("Forty tubs of vanilla."),
        )
        result = python(
            str(CHECKPOINT),
            SOVEREIGN_MODEL="openai:test-model",
            OPENAI_BASE_URL=stub.openai_base_url,
            OPENAI_API_KEY="x",
        )
        requests = stub.requests_to(OPENAI_ROUTE)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("model: openai:test-model")
    assert "vanilla available: 40" in lines
    assert "refused: check_availability (tool_not_allowed)" in lines
    assert "narrowed by check_availability [p1]: tool_changed" in lines
    offered = [
        sorted(tool["function"]["name"] for tool in request.json.get("tools", []))
        for request in requests
    ]
    assert offered[0] == ["check_availability", "list_stock", "next_delivery"]
    assert offered[1] == offered[2] == ["list_stock", "next_delivery"]
    # The server's own words never went to the provider.
    assert all("IMPORTANT" not in request.body.decode() for request in requests)


@pytest.mark.slow
def test_the_verifier_holds_for_the_chapter_text() -> None:
    result = verify(CHAPTER)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "everything verified holds" in result.stdout
