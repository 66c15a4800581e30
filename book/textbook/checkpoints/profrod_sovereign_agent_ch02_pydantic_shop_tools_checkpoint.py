"""Chapter 2 checkpoint: the shop's tools behind a dispatcher that checks every request.

Prints the stock report, the 1,500-pence vanilla draft, and the refusal of a
Boolean quantity. Offline and deterministic: no model is involved.
"""

import json
import runpy
from pathlib import Path

from sovereign_agent.shop import build_tools
from sovereign_agent.tools import Dispatcher, ToolCall

# Located beside this file, so the checkpoint runs from any working directory.
CHAPTER_1 = Path(__file__).with_name("profrod_sovereign_agent_ch01_first_model_call_checkpoint.py")


def main() -> None:
    shop = runpy.run_path(str(CHAPTER_1))["SHOP"]
    tools: Dispatcher = build_tools(shop)

    report = tools.invoke(ToolCall(id="call-1", name="list_stock", arguments={}))
    print([(row["sku"], row["needed"]) for row in report["value"]])

    draft = tools.invoke(
        ToolCall(id="call-2", name="draft_order", arguments={"sku": "SKU-VANILLA", "quantity": 6})
    )
    print(json.dumps(draft, sort_keys=True))

    refused = tools.invoke(
        ToolCall(
            id="call-3", name="draft_order", arguments={"sku": "SKU-VANILLA", "quantity": True}
        )
    )
    print(json.dumps(refused, sort_keys=True))


if __name__ == "__main__":
    main()
