"""Chapter 7 checkpoint: two runs with skills; one drafts Lucy's re-order, one cannot buy.

Offline by default: the scripted model loads `morning-reorder` for the first
task and `bulk-buyer` for the second, and does what each skill says. With
SOVEREIGN_MODEL set (see chapter 1) the same tasks go to that provider, which
chooses its own skills from the catalogue. The narrowing lines, the drafts,
the orders placed and the stock come from the runtime and the shop, never
from the model's answer: a provider may word its answers differently and take
other steps, and still no skill can make `place_order` allowed.
"""

import runpy
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from sovereign_agent.loop import RunRecord, StopReason, run_task
from sovereign_agent.models import AssistantMessage, Message, ModelError, model_from_env
from sovereign_agent.shop import NoArguments
from sovereign_agent.skills import LOAD_SKILL, build_skill_tools, discover_skills
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall

# Located beside this file, so the checkpoint runs from any working directory.
CHECKPOINTS = Path(__file__).parent
CHAPTER_1 = CHECKPOINTS / "profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
CHAPTER_3 = CHECKPOINTS / "profrod_sovereign_agent_ch03_bounded_agent_loop_checkpoint.py"
SKILLS = CHECKPOINTS.parent / "skills"

MORNING_TASK = "Plan this morning's re-order."
BULK_TASK = "Stock up: a heatwave is coming."
# What a real model is told; the offline script already knows it.
SYSTEM = (
    "You help Lucy, who runs a small ice-cream shop. First choose the skill that fits the "
    "task and load it with load_skill; then follow its instructions with the tools you are "
    "offered. Finish with one short paragraph for Lucy."
)
MAX_STEPS = 6
MAX_TOOL_CALLS = 8

chapter_3 = runpy.run_path(str(CHAPTER_3))
tool_call = chapter_3["tool_call"]
next_call_id = chapter_3["next_call_id"]
show_run = chapter_3["show_run"]
drafts_in = chapter_3["drafts_in"]


# The functions below are chapter 7's listings, unchanged (a test compares them).
def load(name: str) -> Callable[[Sequence[Message]], AssistantMessage]:
    """Offline model: a step that loads the skill called `name`."""

    def step(messages: Sequence[Message]) -> AssistantMessage:
        return AssistantMessage(
            tool_calls=(tool_call(next_call_id(messages), LOAD_SKILL, skill=name),)
        )

    return step


def show_narrowings(record: RunRecord) -> None:
    """Each narrowing of a run: which call, why, and what it kept, removed and ignored."""
    for narrowing in record.narrowings:
        print(f"narrowed by {narrowing.tool} [{narrowing.call_id}]: {narrowing.reason}")
        for label in ("kept", "removed", "ignored"):
            print(f"  {label}:", ", ".join(getattr(narrowing, label)) or "(none)")


def buy_in_bulk(messages: Sequence[Message]) -> AssistantMessage:
    """Offline model, after loading bulk-buyer: do what the skill says, in one turn."""
    first = next_call_id(messages)
    again = next_call_id(messages, 1)
    return AssistantMessage(
        tool_calls=(
            tool_call(first, "list_stock"),
            tool_call(again, "place_order", sku="SKU-VANILLA", quantity=500),
        )
    )


def draft_instead(messages: Sequence[Message]) -> AssistantMessage:
    """Offline model: the order was refused, so try a draft of the same 500 tubs."""
    return AssistantMessage(
        tool_calls=(
            tool_call(next_call_id(messages), "draft_order", sku="SKU-VANILLA", quantity=500),
        )
    )


MORNING_SCRIPT = (load("morning-reorder"), *chapter_3["SHOP_SCRIPT"])
BULK_SCRIPT = (
    load("bulk-buyer"),
    buy_in_bulk,
    draft_instead,
    AssistantMessage(content="I could not place the bulk order: no tool here can buy or draft it."),
)


def main() -> int:
    shop = runpy.run_path(str(CHAPTER_1))["SHOP"]
    try:
        morning_model = model_from_env(offline_script=MORNING_SCRIPT)
        bulk_model = model_from_env(offline_script=BULK_SCRIPT)
    except ModelError as error:
        # A provider named but not configured: say so, and run nothing.
        print(f"cannot start: {error}", file=sys.stderr)
        return 2
    print("model:", morning_model.label)
    print("skills:", ", ".join(skill.name for skill in discover_skills(SKILLS)))

    print("task:", MORNING_TASK)
    # This chapter reads every folder as the shop's own; the package, from
    # chapter 8 on, reads an undeclared folder as outside, so it is declared.
    tools = build_skill_tools(shop, skills_root=str(SKILLS), provenance="shop")
    morning = run_task(
        morning_model,
        tools,
        MORNING_TASK,
        max_steps=MAX_STEPS,
        max_tool_calls=MAX_TOOL_CALLS,
        system=SYSTEM,
    )
    show_run(morning)
    show_narrowings(morning)
    drafts = drafts_in(morning)
    for draft in drafts:
        print(f"draft {draft['sku']}: {draft['quantity']} tubs, {draft['total_pence']:,} pence")
    print(f"drafts total: {sum(draft['total_pence'] for draft in drafts):,} pence")
    print("answer:", morning.answer)

    print("task:", BULK_TASK)
    orders: list[str] = []
    place_order = ExecutableTool(
        name="place_order",
        description="Place a real order with the supplier.",
        arguments=NoArguments,
        handler=lambda args: orders.append("500 tubs of SKU-VANILLA"),
        consequential=True,
    )
    skill_tools = build_skill_tools(shop, skills_root=str(SKILLS), provenance="shop")
    # Registered and not allowed: the shop could buy, and this run may not.
    with_place_order = Dispatcher(
        [*skill_tools.tools.values(), place_order], allowed=skill_tools.allowed
    )
    bulk = run_task(
        bulk_model,
        with_place_order,
        BULK_TASK,
        max_steps=MAX_STEPS,
        max_tool_calls=MAX_TOOL_CALLS,
        system=SYSTEM,
    )
    show_run(bulk)
    show_narrowings(bulk)
    print("orders placed:", len(orders))
    stock = skill_tools.invoke(ToolCall(id="check-1", name="list_stock", arguments={}))["value"]
    print("vanilla on hand:", next(r["on_hand"] for r in stock if r["sku"] == "SKU-VANILLA"))
    print("answer:", bulk.answer)
    finished = {morning.stop_reason, bulk.stop_reason} == {StopReason.FINAL_ANSWER}
    return 0 if finished and not orders else 1


if __name__ == "__main__":
    sys.exit(main())
