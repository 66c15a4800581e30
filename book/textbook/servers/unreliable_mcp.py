"""A supplier's server on a bad day: `python unreliable_mcp.py hang` or `... die`.

Built with the official SDK like `supplier_mcp.py`, it advertises
`check_availability` with the very schema the shop declares, so the tool
joins; then every call either never gets an answer (`hang`) or ends the
process mid-call (`die`). Chapter 9 shows what a run makes of both.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

MODE = sys.argv[1] if len(sys.argv) > 1 else "hang"

SCHEMA = {
    "additionalProperties": False,
    "properties": {"sku": {"pattern": "^[A-Z]{1,20}$", "title": "Sku", "type": "string"}},
    "required": ["sku"],
    "title": "Availability",
    "type": "object",
}


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    tool = types.Tool(name="check_availability", description="Tubs.", input_schema=SCHEMA)
    return types.ListToolsResult(tools=[tool])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if MODE == "die":
        os._exit(1)
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


server = Server("unreliable", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
