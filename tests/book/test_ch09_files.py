"""Chapter 9's reader files: the learner file, the runtime it teaches, a provider.

What the learner file defines is what the runtime defines, and the
checkpoint holds against a real HTTP provider.

The checkpoint's offline output and facts, and a silent learner import, are held
for every drafted chapter by tests/book/test_reader_files.py (its `FACTS` table).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chapter_files import definitions, parts, run_python
from provider_stub import OPENAI_ROUTE, ProviderStub, openai_text, openai_tool_calls
from real_book import RealBookRun

import sovereign_agent.mcp.remote
import sovereign_agent.mcp.supplier

CHAPTER = parts(9).text
CHECKPOINT = parts(9).checkpoint
LEARNER = parts(9).learner


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


def test_a_provider_that_calls_the_tool_twice_still_loses_it_after_the_change() -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls([("p1", "check_availability", '{"sku": "VANILLA"}')]),
            openai_tool_calls([("p2", "check_availability", '{"sku": "STRAWBERRY"}')]),
            openai_text("Forty tubs of vanilla."),
        )
        result = run_python(
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


# The chapter's verdict in the session's one fresh run of the whole book
# (tests/real_book.py says why it is the verdict a run of this file alone gets).
@pytest.mark.slow
def test_the_verifier_holds_for_the_chapter_text(real_book: RealBookRun) -> None:
    row = real_book.chapter_row(9)
    assert row.endswith(" holds"), real_book.stdout + real_book.stderr
