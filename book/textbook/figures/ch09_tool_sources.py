"""Figure 9.1: which tools reach the model, from which source, and why the others do not.

Drawn from the parts themselves, with no connection: the supplier server's
own `list_tools` handler (book/textbook/servers/supplier_mcp.py) gives the
advertised list, `match_tools` judges it against the shop's
`SUPPLIER_DECLARATIONS` exactly as `connect` does, chapter 1's shop gives the
shop's tools, and chapter 9's checkpoint the run's allowlist.
"""

from __future__ import annotations

import runpy
import textwrap
from pathlib import Path
from typing import Any

import anyio

from bookproof.figures.diagrams import ACCENT, INK, MUTED, WARN, Canvas
from sovereign_agent.mcp.remote import Advertised, match_tools
from sovereign_agent.mcp.supplier import SUPPLIER_DECLARATIONS, SUPPLIER_SOURCE
from sovereign_agent.shop import build_tools

TEXTBOOK = Path(__file__).resolve().parent.parent
SERVER = TEXTBOOK / "servers" / "supplier_mcp.py"
CHAPTER_9 = (
    TEXTBOOK / "checkpoints" / "profrod_sovereign_agent_ch09_remote_tool_servers_checkpoint.py"
)


def advertised() -> list[Advertised]:
    """The server's tool list, as its own handler answers `tools/list` before any call."""
    server = runpy.run_path(str(SERVER))  # defines the server; starts nothing
    listing = anyio.run(server["list_tools"], None, None)
    return [Advertised(tool.name, tool.description, tool.input_schema) for tool in listing.tools]


WIDE, ROW = 2.0, 0.42
X_SERVER, X_DISPATCHER, X_MODEL = 0.2, 3.5, 6.4


def draw() -> Any:
    listing = advertised()
    joined, refused = match_tools(SUPPLIER_DECLARATIONS, listing)
    reasons = {refusal.name: refusal.reason for refusal in refused}
    checkpoint = runpy.run_path(str(CHAPTER_9))
    allowed = set(checkpoint["ALLOWED"])
    shop_tools = sorted(build_tools(checkpoint["SHOP"]).tools)
    # The supplier's tools first, in the server's order, so each arrow runs level.
    registered = [(declared.name, SUPPLIER_SOURCE) for declared in joined] + [
        (name, "shop") for name in shop_tools
    ]
    rows = max(len(listing), len(registered))
    height = 0.75 + ROW * rows + 0.6
    canvas = Canvas(X_MODEL + WIDE + 0.2, height)
    top = height - 0.3
    for x, title in (
        (X_SERVER, "the supplier's server advertises"),
        (X_DISPATCHER, "one dispatcher registers"),
        (X_MODEL, "the model is offered"),
    ):
        canvas.text(x, top, title, fontweight="bold", fontsize=8.5, ha="left")

    def row_y(index: int) -> float:
        return top - 0.45 - ROW * index

    where: dict[str, float] = {}
    for index, (name, source) in enumerate(registered):
        y = row_y(index)
        remote = source != "shop"
        canvas.box(X_DISPATCHER, y - 0.16, WIDE, 0.32, fill="#dbe7f0" if remote else "#eef4f8")
        canvas.text(X_DISPATCHER + 0.08, y, name, ha="left", fontsize=8)
        canvas.text(X_DISPATCHER + WIDE - 0.08, y, source, ha="right", fontsize=7, color=MUTED)
        where[name] = y
        if name in allowed:
            canvas.arrow((X_DISPATCHER + WIDE, y), (X_MODEL, y), color=ACCENT)
            canvas.box(X_MODEL, y - 0.16, WIDE, 0.32, fill="white", edge=ACCENT)
            canvas.text(X_MODEL + 0.08, y, name, ha="left", fontsize=8, color=ACCENT)
            canvas.text(X_MODEL + WIDE - 0.08, y, source, ha="right", fontsize=7, color=MUTED)
        else:
            canvas.text(
                X_DISPATCHER + WIDE + 0.1, y, "not allowed", ha="left", fontsize=7.5, color=MUTED
            )
    for index, tool in enumerate(listing):
        y = row_y(index)
        canvas.box(X_SERVER, y - 0.16, WIDE, 0.32, fill="white", dashed=True)
        canvas.text(X_SERVER + 0.08, y, tool.name, ha="left", fontsize=8)
        if tool.name in where:
            canvas.arrow((X_SERVER + WIDE, y), (X_DISPATCHER, where[tool.name]), color=INK)
            canvas.text(
                (X_SERVER + WIDE + X_DISPATCHER) / 2,
                (y + where[tool.name]) / 2 + 0.1,
                "joined",
                fontsize=6.5,
                color=INK,
            )
        else:
            canvas.text(
                X_SERVER + WIDE + 0.1,
                y,
                f"refused:\n{reasons[tool.name]}",
                ha="left",
                fontsize=7.5,
                color=WARN,
            )
    poisoned = next(tool for tool in listing if tool.name == "check_availability")
    canvas.text(
        0.2,
        0.4,
        textwrap.fill(
            "The server's descriptions never reach the model; check_availability's reads: "
            f"\u201c{poisoned.description}\u201d",
            130,
        ),
        ha="left",
        fontsize=6.5,
        color=MUTED,
    )
    return canvas.figure
