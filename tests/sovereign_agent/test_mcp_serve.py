"""The shop's tools served over MCP, driven by the official SDK's client.

The server runs as `python -m sovereign_agent.mcp serve --store FILE`, a real
process over real pipes, on a real store file; the host is the SDK's
`ClientSession` over `stdio_client`. What a host gets back is chapter 2's
observation, refusals included. Options and stores the command refuses, and
its help, are its `main`'s to answer before it serves anything: called here,
in this process.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from shop_store import seeded_store

from bookproof.layout import REPO_ROOT
from sovereign_agent.mcp.__main__ import main as mcp_main
from sovereign_agent.mcp.serve import build_server
from sovereign_agent.shop import NoArguments
from sovereign_agent.tools import Dispatcher, ExecutableTool

ROOT = REPO_ROOT


def serve(store: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "sovereign_agent.mcp", "serve", "--store", str(store), *extra],
        cwd=str(ROOT),
    )


def drafts_in(store: Path) -> list[tuple[str, int]]:
    with closing(sqlite3.connect(store)) as connection:
        return connection.execute("SELECT sku, quantity FROM drafts ORDER BY sku").fetchall()


def observed(result: types.CallToolResult) -> Any:
    """The observation a result carries; its text and its structured content must agree."""
    [block] = result.content
    assert isinstance(block, types.TextContent)
    observation = json.loads(block.text)
    assert result.structured_content == observation
    assert result.is_error == (observation["ok"] is not True)
    return observation


def session_with(parameters: StdioServerParameters, work: Any) -> Any:
    async def main() -> Any:
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await work(session)

    return anyio.run(main)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One server process, one host session, every call a test below looks at."""
    store = seeded_store(tmp_path_factory.mktemp("serve") / "shop.db")

    async def work(session: ClientSession) -> dict[str, Any]:
        listing = await session.list_tools()
        calls = {
            "quote": ("supplier", {"sku": "SKU-VANILLA"}),
            "coerced": ("draft_order", {"sku": "SKU-VANILLA", "quantity": "6"}),
            "invented": ("list_stock", {"secret-token-probe": 1}),
            "unknown": ("place_order", {"sku": "SKU-VANILLA", "quantity": 6}),
            "bad_name": ("no such tool!", {}),
            "draft": ("draft_order", {"sku": "SKU-VANILLA", "quantity": 6}),
            "no_arguments": ("supplier", None),
        }
        results = {key: await session.call_tool(name, args) for key, (name, args) in calls.items()}
        return {"listing": listing, "results": results}

    return {"store": store, **session_with(serve(store), work)}


def test_list_tools_gives_the_shops_three_tools_with_their_schemas(served: dict[str, Any]) -> None:
    tools = {tool.name: tool for tool in served["listing"].tools}
    assert sorted(tools) == ["draft_order", "list_stock", "supplier"]
    assert tools["draft_order"].input_schema["properties"]["quantity"]["type"] == "integer"
    assert tools["draft_order"].input_schema["additionalProperties"] is False


def test_a_valid_call_gets_the_dispatchers_observation(served: dict[str, Any]) -> None:
    assert observed(served["results"]["quote"]) == {
        "ok": True,
        "value": {
            "currency": "GBP",
            "sku": "SKU-VANILLA",
            "supplier": "lucy-local",
            "unit_cost_pence": 250,
        },
    }


def test_malformed_calls_get_chapter_twos_refusal_and_nothing_of_what_was_sent(
    served: dict[str, Any],
) -> None:
    results = served["results"]
    for key in ("coerced", "invented", "no_arguments"):
        assert observed(results[key]) == {"error": "invalid_arguments", "ok": False}, key
    assert "secret-token" not in results["invented"].model_dump_json()


def test_an_unknown_or_unservable_name_is_tool_not_allowed(served: dict[str, Any]) -> None:
    for key in ("unknown", "bad_name"):
        assert observed(served["results"][key]) == {"error": "tool_not_allowed", "ok": False}


def test_a_served_call_really_writes_to_the_store(served: dict[str, Any]) -> None:
    draft = observed(served["results"]["draft"])
    assert draft["ok"] is True and draft["value"]["status"] == "DRAFT"
    assert drafts_in(served["store"]) == [("SKU-VANILLA", 6)]


def test_allow_narrows_what_is_served_and_called(tmp_path: Path) -> None:
    store = seeded_store(tmp_path / "shop.db")

    async def work(session: ClientSession) -> tuple[list[str], Any]:
        names = [tool.name for tool in (await session.list_tools()).tools]
        draft = await session.call_tool("draft_order", {"sku": "SKU-VANILLA", "quantity": 6})
        return names, observed(draft)

    names, draft = session_with(serve(store, "--allow", "list_stock"), work)
    assert names == ["list_stock"]
    assert draft == {"error": "tool_not_allowed", "ok": False}
    assert drafts_in(store) == []


def test_a_consequential_tool_is_never_served_even_with_an_authority() -> None:
    ran: list[str] = []
    order = ExecutableTool(
        name="place_order",
        description="Order tubs.",
        arguments=NoArguments,
        handler=lambda _: ran.append("placed"),
        consequential=True,
    )
    stock = ExecutableTool(
        name="list_stock", description="Stock.", arguments=NoArguments, handler=lambda _: []
    )
    dispatcher = Dispatcher(
        [order, stock], allowed=["place_order", "list_stock"], before_write=lambda call: None
    )

    async def main() -> tuple[list[str], Any]:
        async with Client(build_server(dispatcher)) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            return names, observed(await client.call_tool("place_order", {}))

    names, result = anyio.run(main)
    assert names == ["list_stock"]
    assert result == {"error": "tool_not_allowed", "ok": False}
    assert ran == []


def mcp_command(capsys: pytest.CaptureFixture[str], *argv: str) -> subprocess.CompletedProcess[str]:
    """What `python -m sovereign_agent.mcp` exits with and prints, by its `main` here."""
    capsys.readouterr()  # only what this command prints
    try:
        status = mcp_main(list(argv))
    except SystemExit as exit:  # argparse's --help and usage errors
        status = exit.code
    printed = capsys.readouterr()
    return subprocess.CompletedProcess(list(argv), status, printed.out, printed.err)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "--store", "missing.db"], "error: no store at missing.db"),
        (
            ["serve", "--store", "{store}", "--allow", "place_order"],
            "no shop tool named place_order",
        ),
    ],
)
def test_unusable_options_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str,
    tmp_path: Path,
) -> None:
    store = seeded_store(tmp_path / "shop.db")
    args = [arg.replace("{store}", str(store)) for arg in args]
    monkeypatch.chdir(tmp_path)
    done = mcp_command(capsys, *args)
    assert done.returncode == 2
    assert done.stderr.strip() == message or done.stderr.strip().endswith(message)
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""
    assert not (tmp_path / "missing.db").exists()


def test_a_file_that_is_not_a_store_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("not a database, secret-token-notes\n" * 100)
    done = mcp_command(capsys, "serve", "--store", str(bogus))
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1
    assert "secret-token" not in done.stderr


def test_help_explains_the_refusals(capsys: pytest.CaptureFixture[str]) -> None:
    done = mcp_command(capsys, "serve", "--help")
    assert done.returncode == 0
    assert "invalid_arguments" in done.stdout and "consequential" in done.stdout
