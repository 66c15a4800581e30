"""Support the book does not print: the Model Context Protocol, both ways.

`sovereign_agent.mcp.remote` joins a remote server's tools to a run, only as
the shop declares them; `sovereign_agent.mcp.serve` serves the shop's own tools
to any MCP host through chapter 2's dispatcher. Both need the official SDK,
installed with the `mcp` extra (`pip install "sovereign-agent[mcp]"`): nothing
else in the runtime imports it, so this package imports nothing eagerly.
"""
