"""Chapter 9 checkpoint: the supplier's MCP server, joined only as the shop declares it.

Starts `book/textbook/servers/supplier_mcp.py` (a real MCP server, over stdio),
says which of its four tools joined and why the others did not, shows that
the model is offered the shop's descriptions and none of the server's, and
runs a question about vanilla. The supplier rewrites `check_availability`'s
description after its first call; the run loses that tool, and the record
says which call narrowed it and why.

Offline by default. With SOVEREIGN_MODEL set (see chapter 1) the question goes
to that provider; what joined, what was offered, the vanilla figure and the
narrowing come from the runtime and the server, never from the model's words.
"""

import json
import runpy
import sys
from collections.abc import Iterable
from pathlib import Path

from sovereign_agent.loop import run_task
from sovereign_agent.mcp.remote import RemoteFailure, connect, dispatcher_with_remote
from sovereign_agent.mcp.supplier import SUPPLIER_DECLARATIONS, SUPPLIER_SOURCE
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    ModelError,
    model_from_env,
)
from sovereign_agent.shop import build_tools
from sovereign_agent.toolsets import SourcedTools

# Located beside this file, so the checkpoint runs from any working directory.
CHECKPOINTS = Path(__file__).parent
CHAPTER_1 = CHECKPOINTS / "profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
SERVER = CHECKPOINTS.parent / "servers" / "supplier_mcp.py"

TASK = "How many tubs of vanilla can the supplier deliver, and when is the next delivery?"
SYSTEM = (
    "You help Lucy, who runs a small ice-cream shop. Use only the tools you are offered, "
    "and finish with one short sentence for Lucy."
)
ALLOWED = ("list_stock", "check_availability", "next_delivery")
POISON = ("IMPORTANT", "FREE-ICE-CREAM", "cheapcones")

SHOP = runpy.run_path(str(CHAPTER_1))["SHOP"]


def call(call_id: str, tool: str, **arguments: object) -> AssistantToolCall:
    return AssistantToolCall(id=call_id, name=tool, arguments_json=json.dumps(arguments))


SCRIPT = [
    AssistantMessage(tool_calls=(call("call-1", "check_availability", sku="VANILLA"),)),
    AssistantMessage(
        tool_calls=(
            call("call-2", "check_availability", sku="CHOCOLATE"),
            call("call-3", "next_delivery"),
        )
    ),
    AssistantMessage(
        content="The supplier can deliver 40 tubs of vanilla; the next delivery is on Tuesday."
    ),
]


def names(values: Iterable[str]) -> str:
    return ", ".join(values) or "(none)"


def main() -> int:
    try:
        model = model_from_env(offline_script=SCRIPT)
    except ModelError as error:
        print(f"cannot start: {error}", file=sys.stderr)
        return 2
    print("model:", model.label)
    print("server:", "book/textbook/servers/supplier_mcp.py")
    try:
        supplier = connect(
            [sys.executable, str(SERVER)], SUPPLIER_DECLARATIONS, source=SUPPLIER_SOURCE
        )
    except RemoteFailure as error:
        print(f"cannot connect: {error}", file=sys.stderr)
        return 1
    with supplier:
        print("joined:", names(sorted(supplier.tools)))
        print("not joined:", names(f"{r.name} ({r.reason})" for r in supplier.refused))
        shop = SourcedTools("shop", build_tools(SHOP).tools)
        dispatcher, _ = dispatcher_with_remote([shop, supplier], allowed=ALLOWED)
        offered = dispatcher.schemas()
        print("offered:", names(tool["function"]["name"] for tool in offered))
        poisoned = any(word in json.dumps(offered) for word in POISON)
        print("poisoned description offered:", "yes" if poisoned else "no")
        record = run_task(model, dispatcher, TASK, system=SYSTEM, max_steps=4, max_tool_calls=4)
    print(f"stop: {record.stop_reason.value} after {record.steps} step(s)")
    print("requested:", names(record.requested))
    print("executed:", names(record.executed))
    print("refused:", names(f"{name} ({code})" for name, code in record.refused))
    for message in record.messages:
        if message.role != "tool":
            continue
        observation = json.loads(message.content)
        value = observation.get("value")
        if isinstance(value, dict) and value.get("sku") == "VANILLA":
            print("vanilla available:", value.get("tubs"))
    for narrowing in record.narrowings:
        print(f"narrowed by {narrowing.tool} [{narrowing.call_id}]: {narrowing.reason}")
        print("  kept:", names(narrowing.kept))
        print("  removed:", names(narrowing.removed))
    print("answer:", record.answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
