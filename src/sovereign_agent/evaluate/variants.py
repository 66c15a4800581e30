"""Support the book does not print: the shop's tools with full, emptied or shuffled descriptions.

A factory with JSON arguments, like `build_tools`, and it records its own
setup, so a run traced during an evaluation replays like any other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from sovereign_agent.shop import build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool, Setup

__all__ = ["Descriptions", "variant_tools"]

Descriptions = Literal["full", "names", "shuffled"]


def described(
    tools: Iterable[ExecutableTool[Any]], descriptions: Descriptions
) -> list[ExecutableTool[Any]]:
    """The tools with their descriptions kept, emptied, or each moved to its neighbour.

    "shuffled" gives each tool, in name order, the description of the next one:
    every description lands on the wrong tool, the same way every time.
    """
    ordered = sorted(tools, key=lambda tool: tool.name)
    if descriptions == "full":
        return ordered
    if descriptions == "names":
        return [dataclasses.replace(tool, description="") for tool in ordered]
    moved = [ordered[(index + 1) % len(ordered)].description for index in range(len(ordered))]
    return [
        dataclasses.replace(tool, description=text)
        for tool, text in zip(ordered, moved, strict=True)
    ]


def variant_tools(
    shop: Mapping[str, Any],
    prices: Mapping[str, int],
    *,
    descriptions: Descriptions = "full",
    hints: bool = False,
) -> Dispatcher:
    """The shop's tools over their own copy of `shop`, described as the variant says."""
    base = build_tools(shop, prices, hints=hints)
    assert base.setup is not None  # build_tools without an authority always has one
    setup = Setup(
        "sovereign_agent.evaluate.variants:variant_tools",
        {
            # The rows the tools work on, not a copy: written when a run starts.
            "shop": base.setup.arguments["shop"],
            "prices": dict(prices),
            "descriptions": descriptions,
            "hints": hints,
        },
    )
    return Dispatcher(
        described(base.tools.values(), descriptions), allowed=base.allowed, hints=hints, setup=setup
    )
