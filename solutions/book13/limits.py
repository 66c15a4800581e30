"""Exercise Book 13: chapter 13's limits, plus three more the shop asks for.

The reference solution: the starter with every exercise done. Chapter 13's
definitions are here unchanged (the slow supplier, `TokenBucket`, the metered
model, the two dialects' streams); the runtime's limits are the book's
package, `sovereign_agent.limits`. Exercise 1 writes a sliding-window rate
limit; Exercise 2 picks the cheapest model a budget can still pay for;
Exercise 3 (Unit C, an open design task) shares a day's money among its runs.
At the end, the grader's door: plain JSON in and out.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from sovereign_agent.effects import Effect
from sovereign_agent.limits import Limits, Price, RunLimits, VirtualTimeLoop
from sovereign_agent.loop import run_task
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    ModelReply,
    ModelResponseError,
    Usage,
)
from sovereign_agent.models.streaming import (
    ChatCompletionAssembler,
    MessagesAssembler,
    ServerEvent,
    StreamAssembler,
    assemble,
)
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall, ToolOutcome

# --- Chapter 13: the chapter's definitions, as it prints them ---------------------------

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


class TokenBucket:
    """Tokens that grow back at a steady rate; full when it is made."""

    def __init__(self, capacity: int, refill_per_s: float, clock: Callable[[], float]) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"capacity must be a positive int, got {capacity!r}")
        if not (math.isfinite(refill_per_s) and refill_per_s > 0):
            raise ValueError(f"refill_per_s must be a positive number, got {refill_per_s!r}")
        self.capacity = capacity
        self.refill_per_s = refill_per_s
        self._clock = clock
        self._tokens = float(capacity)
        self._updated = clock()

    def _refill(self) -> float:
        now = self._clock()
        # A clock that stepped back (it should not) grows nothing, rather than
        # taking tokens away or handing out a wait in the past.
        elapsed = max(0.0, now - self._updated)
        self._tokens = min(float(self.capacity), self._tokens + elapsed * self.refill_per_s)
        self._updated = max(now, self._updated)
        return self._tokens

    def wait_s(self) -> float:
        """Seconds until one token is there; 0.0 when one is there now. Takes nothing."""
        tokens = self._refill()
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.refill_per_s

    def take(self) -> float:
        """Take one token and return 0.0, or take nothing and return the seconds to wait."""
        wait = self.wait_s()
        if wait == 0.0:
            self._tokens -= 1.0
        return wait


class MeteredModel:
    """Asks about vanilla at every step; reading grows by what was written and answered."""

    label = "metered"

    def __init__(self) -> None:
        self.requests = 0

    def complete(self, messages: Any, *, tools: Any = ()) -> ModelReply:
        self.requests += 1
        call = AssistantToolCall(
            id=f"call_{self.requests}",
            name="check_availability",
            arguments_json='{"sku": "VANILLA"}',
        )
        return ModelReply(
            message=AssistantMessage(tool_calls=(call,)),
            model="shop-model",
            usage=Usage(input_tokens=400 * self.requests, output_tokens=50),
        )


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


def carried(event: ServerEvent) -> str:
    """What one event carries, without the fields every event of its dialect repeats."""
    if event.data == "[DONE]":
        return "[DONE]"
    data = json.loads(event.data)
    if "choices" in data:
        choice = data["choices"][0]
        finish = choice["finish_reason"]
        return json.dumps(choice["delta"]) + (f", finish_reason {finish}" if finish else "")
    return json.dumps({key: value for key, value in data.items() if key != "type"})


def streamed(data: bytes, assembler: StreamAssembler) -> str:
    """The calls a stream comes to, or the error that says it never finished."""
    try:
        reply = assemble([data], assembler)
    except ModelResponseError as error:
        return f"ModelResponseError: {error}"
    return ", ".join(f"{call.name} {call.arguments_json}" for call in reply.message.tool_calls)


# --- Exercise 1 (Unit A): a sliding-window rate limit ------------------------------------


def sliding_window_wait(allowed_at: Sequence[float], now: float, calls: int, per_s: float) -> float:
    """Seconds until one more call is allowed: at most `calls` calls in any `per_s` seconds.

    `allowed_at` are the times of the calls allowed so far; a call made at `t`
    counts while `now < t + per_s`. Raise ValueError for `calls` below 1, a
    `per_s` that is not above 0, or a time in `allowed_at` after `now`.
    """
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise ValueError(f"calls must be a positive int, got {calls!r}")
    if not (math.isfinite(per_s) and per_s > 0):
        raise ValueError(f"per_s must be a positive number, got {per_s!r}")
    if any(moment > now for moment in allowed_at):
        raise ValueError("a call was allowed after now")
    in_window = sorted(moment for moment in allowed_at if now < moment + per_s)
    if len(in_window) < calls:
        return 0.0
    # The window must lose enough calls to make room for one: the oldest of
    # the last `calls` of them leaves it first.
    return in_window[-calls] + per_s - now


# --- Exercise 2 (Unit B): the cheapest model a budget can pay for -----------------------


def cheapest_model(
    prices: Mapping[str, Sequence[int]], input_tokens: int, output_tokens: int, pence_left: int
) -> str | None:
    """The model whose cost for these tokens is least and within `pence_left`, or None.

    `prices` maps a model to [input, output] pence per million tokens. Costs
    are compared exactly (in millionths of a penny); a cost equal to what is
    left is affordable; equal costs go to the name that sorts first. Raise
    ValueError for a negative token count or a negative `pence_left`.
    """
    if min(input_tokens, output_tokens, pence_left) < 0:
        raise ValueError("token counts and pence left must not be negative")
    budget = pence_left * 1_000_000
    costs = [
        (input_tokens * price_in + output_tokens * price_out, model)
        for model, (price_in, price_out) in prices.items()
    ]
    affordable = sorted(cost for cost in costs if cost[0] <= budget)
    return affordable[0][1] if affordable else None


# --- Exercise 3 (Unit C, open design): a day's money, shared among its runs --------------


def run_budget(
    spent_today_micropence: int, daily_pence: int, reserve_pence: int, urgent: bool
) -> int | None:
    """The money budget, in whole pence, to give the day's next run; None not to start it.

    `spent_today_micropence` is what the day's runs have spent so far, in
    millionths of a penny, as chapter 13 counts it. Unit C says what Lucy
    needs of the day; how it is done is yours.
    """
    # What the day leaves to this run: urgent runs may spend the reserve too.
    ceiling = daily_pence if urgent else daily_pence - reserve_pence
    # Whole pence, rounded down: rounding up would hand a run money the day has not got.
    left = (ceiling * 1_000_000 - spent_today_micropence) // 1_000_000
    # A budget of nothing cannot be given (chapter 13's Limits wants at least 1p).
    return left if left >= 1 else None


# --- The grader's door: plain JSON in and out; leave it as it is ----------------------


def bucket_takes(capacity: int, refill_per_s: float, times: list[float]) -> list[float]:
    """A chapter bucket asked for one token at each of `times`: what each call was told."""
    now = [times[0] if times else 0.0]
    bucket = TokenBucket(capacity, refill_per_s, lambda: now[0])
    waits = []
    for moment in times:
        now[0] = moment
        waits.append(bucket.take())
    return waits


def stream_calls(events: list[dict[str, Any]], named: bool, cut: int | None) -> str:
    """The chapter's stream of `events` (Anthropic's when `named`), whole or cut at `cut` bytes."""
    data = wire(events, named=named)
    assembler = MessagesAssembler(model="m") if named else ChatCompletionAssembler(model="m")
    return streamed(data if cut is None else data[:cut], assembler)


class _DayModel:
    """Asks about vanilla `steps` times, then answers; each request reads 10,000 tokens more."""

    label = "day"

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.requests = 0

    def complete(self, messages: Any, *, tools: Any = ()) -> ModelReply:
        self.requests += 1
        usage = Usage(input_tokens=10_000 * self.requests, output_tokens=1_000)
        if self.requests > self.steps:
            return ModelReply(
                message=AssistantMessage(content="Done."), model="shop-model", usage=usage
            )
        call = AssistantToolCall(
            id=f"call_{self.requests}",
            name="check_availability",
            arguments_json='{"sku": "VANILLA"}',
        )
        return ModelReply(
            message=AssistantMessage(tool_calls=(call,)), model="shop-model", usage=usage
        )


def day_file(
    daily_pence: int, reserve_pence: int, price: list[int], runs: list[list[Any]]
) -> list[list[Any]]:
    """A day of runs, each [urgent, steps], in order: how each stopped and what it spent.

    Each run is given the money budget `run_budget` chooses from what the day
    has spent so far; a run it does not start is ["not_started", 0].
    """
    in_pence, out_pence = price
    prices = {
        "shop-model": Price(input_pence_per_million=in_pence, output_pence_per_million=out_pence)
    }
    spent = 0
    day: list[list[Any]] = []
    for urgent, steps in runs:
        budget = run_budget(spent, daily_pence, reserve_pence, urgent)
        if budget is None:
            day.append(["not_started", 0])
            continue
        with RunLimits(
            Limits(max_pence=budget, prices=prices), loop_factory=VirtualTimeLoop
        ) as run:
            record = run_task(
                run.model(_DayModel(steps)),
                run.dispatcher(supplier_tools(0.0)),
                "Can we get vanilla?",
                max_steps=steps + 2,
                max_tool_calls=steps + 2,
            )
        spent += run.spending.micropence
        day.append([record.stop_reason.value, run.spending.micropence])
    return day
