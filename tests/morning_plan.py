"""Lucy's shop and the morning plan as scripted replies, shared by the trace and evaluation tests.

from morning_plan import PLAN, SHOP, ask, turn
"""

from __future__ import annotations

import json
import runpy
from typing import Any

from bookproof.layout import REPO_ROOT
from sovereign_agent.models import AssistantMessage, AssistantToolCall

ROOT = REPO_ROOT
CHECKPOINTS = ROOT / "book/textbook/checkpoints"
CHAPTER_1 = CHECKPOINTS / "profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
CHAPTER_3 = CHECKPOINTS / "profrod_sovereign_agent_ch03_bounded_agent_loop_checkpoint.py"
SHOP: dict[str, Any] = runpy.run_path(str(CHAPTER_1))["SHOP"]
TASK = "Plan this morning's re-order."


def ask(call_id: str, name: str, **arguments: Any) -> AssistantToolCall:
    """A tool call as a provider hands it over: the arguments are JSON text."""
    return AssistantToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


def turn(*calls: AssistantToolCall) -> AssistantMessage:
    return AssistantMessage(tool_calls=calls)


# Read the stock, draft both needs in one turn, answer: three steps, three calls.
PLAN = [
    turn(ask("c1", "list_stock")),
    turn(
        ask("c2", "draft_order", sku="SKU-VANILLA", quantity=6),
        ask("c3", "draft_order", sku="SKU-STRAWBERRY", quantity=4),
    ),
    AssistantMessage(content="Draft 6 vanilla and 4 strawberry: 2,600 pence."),
]
