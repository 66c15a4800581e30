"""Chapter 3 checkpoint: Lucy's morning plan as one bounded agent run.

Offline by default: chapter 3's scripted model reads the stock, drafts what is
needed, and answers with the plan. With SOVEREIGN_MODEL set (see chapter 1) the
same task goes to that provider instead. The draft lines are read from the
shop's own observations, so a provider that drafts the same prints the same
drafts; only the model line, the step count and the answer's wording may differ.
"""

import json
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sovereign_agent.loop import RunRecord, StopReason, run_task
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelError,
    ToolMessage,
    model_from_env,
)
from sovereign_agent.shop import build_tools
from sovereign_agent.tools import ToolCall

# Located beside this file, so the checkpoint runs from any working directory.
CHAPTER_1 = Path(__file__).with_name("profrod_sovereign_agent_ch01_first_model_call_checkpoint.py")

TASK = "Plan this morning's re-order."
# What a real model is told; the offline script already knows it.
SYSTEM = (
    "You help Lucy, who runs a small ice-cream shop, plan this morning's re-order. "
    "First call list_stock. Then, for every product whose `needed` is above 0, call "
    "draft_order with that sku and exactly that quantity; ask for all the drafts in one "
    "turn. A draft buys nothing. Finish with one short paragraph giving each draft and "
    "the total in pence."
)
# Three steps and three calls do the job; the bounds are for the runs that go wrong.
MAX_STEPS = 6
MAX_TOOL_CALLS = 8


# The functions below are chapter 3's listings, unchanged (a test compares them).
def tool_call(call_id: str, name: str, **arguments: Any) -> AssistantToolCall:
    """A tool call in the one form every client hands to the loop: arguments as JSON text."""
    return AssistantToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


def next_call_id(messages: Sequence[Message], offset: int = 0) -> str:
    """A fresh id, counting the calls already in the conversation, as a provider would."""
    made = sum(len(m.tool_calls) for m in messages if isinstance(m, AssistantMessage))
    return f"call-{made + 1 + offset}"


def latest_observations(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The answers to the model's most recent turn, in the order of its calls."""
    answers: list[dict[str, Any]] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        answers.insert(0, json.loads(message.content))
    return answers


def ask_for_stock(messages: Sequence[Message]) -> AssistantMessage:
    """Offline model, step 1: ask the shop instead of trusting a snapshot."""
    return AssistantMessage(tool_calls=(tool_call(next_call_id(messages), "list_stock"),))


def draft_what_is_needed(messages: Sequence[Message]) -> AssistantMessage:
    """Offline model, step 2: one draft per product below target, largest need first."""
    stock = latest_observations(messages)[-1]["value"]
    needed = sorted((row for row in stock if row["needed"] > 0), key=lambda row: -row["needed"])
    calls = [
        tool_call(next_call_id(messages, i), "draft_order", sku=row["sku"], quantity=row["needed"])
        for i, row in enumerate(needed)
    ]
    return AssistantMessage(tool_calls=tuple(calls))


def report_plan(messages: Sequence[Message]) -> AssistantMessage:
    """Offline model, step 3: a plan built only from the drafts the shop returned."""
    drafts = [obs["value"] for obs in latest_observations(messages) if obs["ok"]]
    parts = [f"{d['quantity']} tubs of {d['sku']} ({d['total_pence']:,} pence)" for d in drafts]
    total = sum(d["total_pence"] for d in drafts)
    return AssistantMessage(
        content=f"Draft {' and '.join(parts)}: {total:,} pence in all. Nothing is bought yet."
    )


SHOP_SCRIPT = (ask_for_stock, draft_what_is_needed, report_plan)


def show_run(record: RunRecord) -> None:
    """How a run ended, and the three trajectories, one line each."""
    print(f"stop: {record.stop_reason} after {record.steps} step(s)")
    print("requested:", ", ".join(record.requested) or "(none)")
    print("executed:", ", ".join(record.executed) or "(none)")
    print("refused:", ", ".join(f"{name} ({code})" for name, code in record.refused) or "(none)")


def drafts_in(record: RunRecord) -> list[dict[str, Any]]:
    """The drafts a run produced, each answer matched by id to a call of the turn it answers."""
    drafts = []
    names: dict[str, str] = {}
    for message in record.messages:
        if isinstance(message, AssistantMessage):
            # Only this turn's ids: a later reply that reuses an id must not
            # turn an earlier answer (a stock report, say) into a draft.
            names = {call.id: call.name for call in message.tool_calls}
        elif isinstance(message, ToolMessage) and names.get(message.tool_call_id) == "draft_order":
            observation = json.loads(message.content)
            if observation["ok"]:
                drafts.append(observation["value"])
    return drafts


def main() -> int:
    shop = runpy.run_path(str(CHAPTER_1))["SHOP"]
    try:
        model = model_from_env(offline_script=SHOP_SCRIPT)
    except ModelError as error:
        # A provider named but not configured: say so, and run nothing.
        print(f"cannot start: {error}", file=sys.stderr)
        return 2
    tools = build_tools(shop)
    record = run_task(
        model, tools, TASK, max_steps=MAX_STEPS, max_tool_calls=MAX_TOOL_CALLS, system=SYSTEM
    )
    print("model:", model.label)
    show_run(record)
    drafts = drafts_in(record)
    for draft in drafts:
        print(f"draft {draft['sku']}: {draft['quantity']} tubs, {draft['total_pence']:,} pence")
    print(f"drafts total: {sum(draft['total_pence'] for draft in drafts):,} pence")
    stock = tools.invoke(ToolCall(id="check-1", name="list_stock", arguments={}))["value"]
    print("vanilla on hand:", next(r["on_hand"] for r in stock if r["sku"] == "SKU-VANILLA"))
    if record.error is not None:
        print("error:", record.error)
    print("answer:", record.answer)
    return 0 if record.stop_reason is StopReason.FINAL_ANSWER else 1


if __name__ == "__main__":
    sys.exit(main())
