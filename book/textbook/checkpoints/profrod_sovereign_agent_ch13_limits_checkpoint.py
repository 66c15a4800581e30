"""Chapter 13 (Limits): the chapter's code as one script; offline, it prints
exactly the chapter's checkpoint-output block.

Every time it prints is read from a virtual clock (`VirtualTimeLoop`): a
supplier that takes 30 s takes no real time, and 2.0 s is exactly 2.0 s.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from sovereign_agent.effects import Effect
from sovereign_agent.limits import Limits, RateLimit, RunLimits, VirtualTimeLoop
from sovereign_agent.loop import run_task
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    ModelResponseError,
    ScriptedModel,
)
from sovereign_agent.models.streaming import (
    ChatCompletionAssembler,
    MessagesAssembler,
    StreamAssembler,
    assemble,
)
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall, ToolOutcome

# What the supplier can deliver, per product (chapter 9's fixture).
SUPPLIER = {"VANILLA": 40, "CHOCOLATE": 12, "STRAWBERRY": 0}
# What a call that only reads declares.
READS = frozenset({Effect.READ})


class SkuArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: str


def supplier_tools(seconds: float, effects: frozenset[Effect] = READS) -> Dispatcher:
    """The supplier's availability check, taking `seconds` to answer each call.

    It declares its effect classes (chapter 10): a read, unless told otherwise.
    """

    async def check_availability(arguments: SkuArguments) -> dict[str, Any]:
        await asyncio.sleep(seconds)
        return {"sku": arguments.sku, "tubs": SUPPLIER[arguments.sku]}

    tool = ExecutableTool(
        "check_availability",
        "Tubs the supplier can deliver.",
        SkuArguments,
        check_availability,
        effects=effects,
    )
    return Dispatcher([tool], allowed=["check_availability"])


def ask(call_id: str, sku: str) -> ToolCall:
    return ToolCall(id=call_id, name="check_availability", arguments={"sku": sku})


def said(outcome: ToolOutcome) -> str:
    """An outcome in a few words: the tubs, or the refusal and its wait."""
    observation = outcome.observation
    if observation["ok"]:
        return f"{observation['value']['sku']} {observation['value']['tubs']}"
    wait = observation.get("retry_after_s")
    return observation["error"] + ("" if wait is None else f" (retry in {wait} s)")


def turn_events() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One turn, "Checking." and a call for VANILLA, as each provider streams it."""
    fragments = ['{"sku": ', '"VANILLA"}']

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"object": "chat.completion.chunk", "model": "shop-model", "choices": [choice]}

    call = {"index": 0, "id": "call_1", "type": "function"}
    chat = [
        chunk({"role": "assistant", "content": "Checking."}),
        chunk({"tool_calls": [{**call, "function": {"name": "check_availability"}}]}),
        *(
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]})
            for part in fragments
        ),
        chunk({}, "tool_calls"),
    ]
    tool_use = {"type": "tool_use", "id": "call_1", "name": "check_availability", "input": {}}
    messages = [
        {"type": "message_start", "message": {"model": "shop-model", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Checking."},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": tool_use},
        *(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": part},
            }
            for part in fragments
        ),
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    return chat, messages


def wire(events: list[dict[str, Any]], *, named: bool) -> bytes:
    """Events as the bytes a server sends: Anthropic names each, OpenAI ends with [DONE]."""
    lines = [
        (f"event: {event['type']}\n" if named else "") + f"data: {json.dumps(event)}\n\n"
        for event in events
    ]
    return ("".join(lines) + ("" if named else "data: [DONE]\n\n")).encode()


def streamed(data: bytes, assembler: StreamAssembler) -> str:
    """The calls a stream comes to, or the error that says it never finished."""
    try:
        reply = assemble([data], assembler)
    except ModelResponseError as error:
        return f"ModelResponseError: {error}"
    return ", ".join(f"{call.name} {call.arguments_json}" for call in reply.message.tool_calls)


def main() -> None:
    # 1. A supplier that takes 30 s is stopped at 2.0 s.
    run = RunLimits(Limits(tool_timeout_s=2.0), loop_factory=VirtualTimeLoop)
    slow = run.dispatcher(supplier_tools(30.0))
    outcome = slow.attempt(ask("call_1", "VANILLA"))
    print(f"slow supplier: {said(outcome)} at {run.elapsed_s():.1f} s")
    run.close()

    # 2. Two calls a second: the third within that second waits.
    limits = Limits(tool_rates={"check_availability": RateLimit(calls=2, per_s=1.0)})
    run = RunLimits(limits, loop_factory=VirtualTimeLoop)
    quick = run.dispatcher(supplier_tools(0.2))
    for number, sku in enumerate(["VANILLA", "CHOCOLATE", "STRAWBERRY"], start=1):
        started = run.elapsed_s()
        outcome = quick.attempt(ask(f"call_{number}", sku))
        print(f"call {number} at {started:.1f} s: {said(outcome)}")
    run.close()

    # 3. Three reads of 0.2 s: one after another, then side by side.
    calls = [ask(f"call_{n}", sku) for n, sku in enumerate(SUPPLIER, start=1)]
    for effects in (frozenset(), READS):
        run = RunLimits(Limits(), loop_factory=VirtualTimeLoop)
        outcomes = run.dispatcher(supplier_tools(0.2, effects)).attempt_turn(calls)
        how = "side by side" if effects else "one after another"
        answers = ", ".join(said(outcome) for outcome in outcomes)
        print(f"three reads, {how}: {answers}; done at {run.elapsed_s():.1f} s")
        run.close()

    # 4. The same turn asked for by a model: the loop runs the reads side by
    #    side; then, with a deadline of 5 s and calls that run alone, the run
    #    stops under the deadline's name.
    three_reads = AssistantMessage(
        tool_calls=tuple(
            AssistantToolCall(id=call.id, name=call.name, arguments_json=json.dumps(call.arguments))
            for call in calls
        )
    )
    for limits, effects in ((Limits(), READS), (Limits(deadline_s=5.0), frozenset())):
        run = RunLimits(limits, loop_factory=VirtualTimeLoop)
        seconds = 0.2 if limits.deadline_s is None else 3.0
        record = run_task(
            run.model(ScriptedModel([three_reads, AssistantMessage(content="Checked.")])),
            run.dispatcher(supplier_tools(seconds, effects)),
            "Check all three.",
            max_steps=2,
            max_tool_calls=3,
        )
        print(f"three reads in a run: stop {record.stop_reason} at {run.elapsed_s():.1f} s")
        run.close()

    # 5. The same turn streamed in both dialects, then cut part-way.
    chat, messages = turn_events()
    for name, data, assembler in (
        ("chat completions", wire(chat, named=False), ChatCompletionAssembler(model="m")),
        ("messages", wire(messages, named=True), MessagesAssembler(model="m")),
    ):
        print(f"{name}, whole: {streamed(data, assembler)}")
    cut = wire(messages, named=True)
    print(f"messages, cut: {streamed(cut[: len(cut) // 2], MessagesAssembler(model='m'))}")


if __name__ == "__main__":
    main()
