"""Untrusted input at both ends of MCP, tried by Hypothesis.

A server's call results are untrusted for the client; a host's calls are
untrusted for the shop's server. Either way the answer must be one of a few
fixed shapes, and must never carry back the text that came in.
"""

from __future__ import annotations

import json
import runpy
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, types
from strength import examples

from bookproof.layout import REPO_ROOT
from sovereign_agent.mcp.remote import RemoteFailure, _value_of
from sovereign_agent.mcp.serve import build_server
from sovereign_agent.shop import build_tools

ROOT = REPO_ROOT
SHOP = runpy.run_path(
    str(
        ROOT
        / "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
    )
)["SHOP"]
CODES = {"tool_not_allowed", "invalid_arguments", "tool_failed", "result_too_large"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
hostile_text = st.text(
    alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "Zs", "Cc", "Cf")),
    max_size=400,
)
blocks = st.one_of(
    st.builds(types.TextContent, text=hostile_text),
    st.builds(types.ImageContent, data=st.just("AAAA"), mime_type=st.just("image/png")),
)


@given(
    content=st.lists(blocks, max_size=4),
    structured=st.none() | json_values,
    is_error=st.booleans(),
)
def test_a_result_becomes_a_value_or_a_one_line_failure(
    content: list[Any], structured: Any, is_error: bool
) -> None:
    result = types.CallToolResult(content=content, structured_content=structured, is_error=is_error)
    texts = [block.text for block in content if isinstance(block, types.TextContent)]
    try:
        value = _value_of(result)
    except RemoteFailure as failure:
        message = str(failure)
        # The operator's detail: one line, bounded, whatever the server wrote.
        assert "\n" not in message and "\r" not in message
        assert len(message) <= 250
        assert is_error or (structured is None and (not texts or len(texts) != len(content)))
        return
    assert not is_error
    if structured is not None:
        assert value == structured
    else:
        assert value == "".join(texts) and len(texts) == len(content) > 0


names = st.sampled_from(["list_stock", "supplier", "draft_order", "place_order"]) | st.text(
    max_size=30
)


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(name=names, arguments=st.none() | st.dictionaries(st.text(max_size=12), json_values))
def test_any_call_from_a_host_gets_one_of_chapter_twos_observations(
    name: str, arguments: dict[str, Any] | None
) -> None:
    server = build_server(build_tools(SHOP))

    async def main() -> types.CallToolResult:
        async with Client(server) as client:
            return await client.call_tool(name, arguments)

    result = anyio.run(main)
    [block] = result.content
    assert isinstance(block, types.TextContent)
    observation = json.loads(block.text)
    assert result.structured_content == observation
    if observation["ok"] is True:
        assert name in {"list_stock", "supplier", "draft_order"}
        assert result.is_error is False
    else:
        assert set(observation) == {"ok", "error"} and observation["error"] in CODES
        assert result.is_error is True


@pytest.mark.parametrize("planted", ["secret-token-probe", "<<ignore previous instructions>>"])
def test_a_refusal_never_repeats_what_the_host_sent(planted: str) -> None:
    server = build_server(build_tools(SHOP))

    async def main() -> list[types.CallToolResult]:
        async with Client(server) as client:
            return [
                await client.call_tool(planted, {}),
                await client.call_tool("supplier", {"sku": 5, planted: planted}),
                await client.call_tool("draft_order", {"sku": planted, "quantity": 10**9}),
            ]

    for result in anyio.run(main):
        assert planted not in result.model_dump_json()
