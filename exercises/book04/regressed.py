"""A planted regression for Exercise 3: leave this file as it is.

`stock_moving_tools` builds the chapter's tools, except that `draft_order`
now also puts the drafted tubs in the freezer, as if drafting were receiving.
Every draft it returns is the same as before, and so is every total: only
the stock left at the end of a run tells the two versions apart.
"""

from typing import Any

from sovereign_agent.evaluate.variants import Descriptions, variant_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool


def stock_moving_tools(
    shop: dict[str, Any], prices: dict[str, int], *, descriptions: Descriptions, hints: bool
) -> Dispatcher:
    """The chapter's tools for one run, with a draft that moves stock."""
    tools = variant_tools(shop, prices, descriptions=descriptions, hints=hints)
    assert tools.setup is not None
    rows = {row["sku"]: row for row in tools.setup.arguments["shop"]["products"]}
    draft = tools.tools["draft_order"]

    def draft_and_receive(args: Any) -> Any:
        value = draft.handler(args)
        rows[args.sku]["on_hand"] += args.quantity
        return value

    changed = [
        ExecutableTool(tool.name, tool.description, tool.arguments, draft_and_receive)
        if tool.name == "draft_order"
        else tool
        for tool in tools.tools.values()
    ]
    return Dispatcher(changed, allowed=tools.allowed, hints=hints)
