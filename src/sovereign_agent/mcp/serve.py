"""Support the book does not print: the shop's own tools, served to any MCP host over stdio.

The reverse of `sovereign_agent.mcp.remote`. Whoever connects (a desktop
assistant, an IDE, another agent) is a model's host the shop does not control,
so every call goes through chapter 2's `Dispatcher`, the same one a run uses:
its allowlist, its strict validation, its bounded observations and its fixed
refusal codes. The host gets exactly the observation a model of the shop's
own would get, as JSON text and as structured content, with `isError` set
for a refusal.

A consequential tool is never served, not even listed: approving a write
needs a person, and a host that connected over a pipe is not one (chapter 10
brings approvals that live in the store). The SDK's own validation of call
arguments is left off, so that a malformed call gets chapter 2's
`invalid_arguments`, not another library's wording of the problem.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from pydantic import ValidationError

from sovereign_agent.effects import needs_authority
from sovereign_agent.tools import Dispatcher, Observation, ToolCall, parameters_schema

__all__ = ["SERVER_NAME", "build_server", "observation_result", "run_stdio", "servable"]

SERVER_NAME = "lucy-shop"


def servable(dispatcher: Dispatcher) -> Dispatcher:
    """The dispatcher narrowed to what may be served: allowed, registered, spending nothing.

    In effect classes (chapter 10): a tool that can spend or run code needs
    an authority, and an MCP host is no authority of the shop's.
    """
    names = [
        name
        for name in dispatcher.allowed & dispatcher.tools.keys()
        if not needs_authority(dispatcher.tools[name].effect_classes)
    ]
    return dispatcher.scoped(names)


def observation_result(observation: Observation) -> types.CallToolResult:
    """One observation as an MCP result: the same JSON as text and as structured content."""
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(observation, sort_keys=True, allow_nan=False))],
        structured_content=observation,
        is_error=observation.get("ok") is not True,
    )


def build_server(dispatcher: Dispatcher) -> Server[Any]:
    """An MCP server offering `dispatcher`'s servable tools, checked by it on every call."""
    served = servable(dispatcher)
    # Call ids for the dispatcher's envelope; the host's JSON-RPC ids are its
    # own business and may be any string or number.
    call_ids = itertools.count(1)

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = [
            types.Tool(
                name=name,
                description=served.tools[name].description,
                input_schema=parameters_schema(served.tools[name].arguments),
            )
            for name in sorted(served.allowed)
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            call = ToolCall(
                id=f"mcp-{next(call_ids)}", name=params.name, arguments=params.arguments or {}
            )
        except ValidationError:
            # A name no tool could have: the same answer as an unknown name.
            return observation_result({"ok": False, "error": "tool_not_allowed"})
        # Synchronous on purpose: the store's SQLite connection belongs to this
        # thread, and a stdio server answers one host, one call at a time.
        return observation_result(served.invoke(call))

    return Server(
        SERVER_NAME,
        version="1",
        instructions="Lucy's ice-cream shop: stock, supplier quotes and draft re-orders.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def run_stdio(dispatcher: Dispatcher) -> None:
    """Serve `dispatcher`'s servable tools on stdin and stdout until the host closes stdin."""
    server = build_server(dispatcher)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
