"""Support the book does not print: `python -m sovereign_agent.mcp serve --store FILE`.

Serves the shop's tools over the store in FILE to one MCP host on stdin and
stdout, until the host closes stdin. Exit status: 0 when the host hung up,
2 when the store or the options cannot be used.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

EPILOG = """\
Every call goes through the shop's dispatcher: a tool outside --allow, or one
that does not exist, is refused as tool_not_allowed; arguments that break a
tool's schema are refused as invalid_arguments; a result too large is refused
as result_too_large. A consequential tool is never served. stdout carries the
protocol alone; messages go to stderr.

The store must exist already (create it with the shop's seeding code): a
mistyped path is refused, never answered with an empty shop.

exit status: 0 the host closed the connection, 2 unusable store or options.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sovereign_agent.mcp",
        description="Serve Lucy's shop tools to an MCP host over stdio.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="serve the shop's tools over the store in FILE on stdin and stdout",
        description="Serve the shop's tools over the store in FILE on stdin and stdout.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--store", required=True, metavar="FILE", help="the shop's SQLite store")
    serve.add_argument(
        "--allow",
        action="append",
        metavar="TOOL",
        help="serve only this tool (repeat for several); default: all three shop tools",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    from sovereign_agent.shop import SHOP_TOOL_NAMES
    from sovereign_agent.store import StoreError, build_store_tools, open_store

    # Options first, before the SDK's import (the slow part) and before any file is opened.
    allowed = SHOP_TOOL_NAMES if options.allow is None else tuple(options.allow)
    unknown = sorted(set(allowed) - set(SHOP_TOOL_NAMES))
    if unknown:
        print(f"error: no shop tool named {', '.join(unknown)}", file=sys.stderr)
        return 2
    if not os.path.isfile(options.store):
        print(f"error: no store at {options.store}", file=sys.stderr)
        return 2
    # Imported here so that `--help` and a bad option work, and say so, without the SDK.
    try:
        import anyio

        from sovereign_agent.mcp.serve import run_stdio
    except ImportError as error:
        print(f"error: {error.name} is missing: install sovereign-agent[mcp]", file=sys.stderr)
        return 2
    try:
        connection = open_store(options.store)
    except StoreError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        anyio.run(run_stdio, build_store_tools(connection, allowed=allowed))
    except KeyboardInterrupt:
        pass
    finally:
        connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
