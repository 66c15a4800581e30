"""Chapter 13 (Limits): the file the chapter asks the reader to save.

The supplier the chapter makes slow, the token bucket of section 13.4, the
metered model of section 13.5, chapter 3's loop as section 13.7 changes it
(stops named by their limit, a turn's reads side by side), and the two
dialects' streams of section 13.8.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from sovereign_agent.effects import Effect
from sovereign_agent.limits import RunLimitReached, may_run_concurrently
from sovereign_agent.loop import (
    RunRecord,
    check_setup,
    one_line,
    parse_tool_call,
)
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelClient,
    ModelError,
    ModelReply,
    ModelResponseError,
    SystemMessage,
    ToolMessage,
    Usage,
    UserMessage,
)
from sovereign_agent.models.streaming import ServerEvent, StreamAssembler, assemble
from sovereign_agent.tools import Dispatcher, ExecutableTool, Narrowing, ToolCall, ToolOutcome
from sovereign_agent.trace import Recorder, recorder_from_env

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


class StopReason(StrEnum):
    """Why a run ended. The runtime names it; the model never chooses it."""

    FINAL_ANSWER = "final_answer"
    STEP_LIMIT = "step_limit"
    TOOL_CALL_LIMIT = "tool_call_limit"
    MODEL_ERROR = "model_error"
    DUPLICATE_CALL_ID = "duplicate_call_id"
    # Chapter 13: one of the run's limits refused its next model request.
    TOKEN_BUDGET = "token_budget"
    MONEY_BUDGET = "money_budget"
    DEADLINE = "deadline"


@runtime_checkable
class TurnDispatcher(Protocol):
    """A dispatcher that can answer several calls of one turn together (chapter 13).

    `answered` hears each call's id as soon as that call's outcome is known.
    """

    def attempt_turn(
        self, calls: Sequence[ToolCall], *, answered: Callable[[str], None] | None = None
    ) -> list[ToolOutcome]: ...


def runs_side_by_side(dispatcher: Dispatcher, call: ToolCall) -> bool:
    """Whether `call` may run beside others of its turn: a dispatcher that can, and a read."""
    tool = dispatcher.tools.get(call.name)
    return (
        isinstance(dispatcher, TurnDispatcher)
        and tool is not None
        and call.name in dispatcher.allowed
        and may_run_concurrently(tool)
    )


def batch_from(dispatcher: Dispatcher, ready: Mapping[int, ToolCall], first: int) -> list[int]:
    """The call at `first` and the reads right after it that may run beside it, by index.

    A call that may not run beside others is a batch of one. The run of reads
    stops at the first call that is not one, or that the loop itself refused
    (it is not `ready`).
    """
    batch = [first]
    if runs_side_by_side(dispatcher, ready[first]):
        while batch[-1] + 1 in ready and runs_side_by_side(dispatcher, ready[batch[-1] + 1]):
            batch.append(batch[-1] + 1)
    return batch


def answer_together(
    dispatcher: Dispatcher,
    ready: Mapping[int, ToolCall],
    batch: Sequence[int],
    answered: Callable[[str], None],
) -> dict[int, ToolOutcome]:
    """The outcomes of one batch of calls, run side by side; `answered` hears of each as it ends.

    A batch of one is answered by `attempt`, as chapter 3 answered every call.
    """
    if len(batch) == 1 or not isinstance(dispatcher, TurnDispatcher):
        return {batch[0]: dispatcher.attempt(ready[batch[0]])}
    outcomes = dispatcher.attempt_turn([ready[index] for index in batch], answered=answered)
    return dict(zip(batch, outcomes, strict=True))


def run_task(
    model: ModelClient,
    dispatcher: Dispatcher,
    task: str,
    *,
    max_steps: int,
    max_tool_calls: int,
    system: str | None = None,
    recorder: Recorder | None = None,
) -> RunRecord:
    """Let the model work on one task, inside bounds the runtime set and enforces.

    Everything the run does is told to `recorder`; without one, to a recorder
    for the file SOVEREIGN_TRACE names, which records nothing when it is unset.
    A tool may narrow the run's tools for the rest of it; nothing widens them.
    """
    check_setup(dispatcher, max_steps=max_steps, max_tool_calls=max_tool_calls)
    trace = recorder_from_env() if recorder is None else recorder
    messages: list[Message] = [] if system is None else [SystemMessage(content=system)]
    messages.append(UserMessage(content=task))
    trace.run_started(
        model, dispatcher, task, system=system, max_steps=max_steps, max_tool_calls=max_tool_calls
    )
    requested: list[str] = []
    executed: list[str] = []
    refused: list[tuple[str, str]] = []
    narrowings: list[Narrowing] = []
    answered_ids: set[str] = set()
    steps = 0
    dispatched = 0

    def finish(
        reason: StopReason, answer: str | None = None, error: str | None = None
    ) -> RunRecord:
        record = RunRecord(
            stop_reason=reason,
            answer=answer,
            error=error,
            steps=steps,
            messages=tuple(messages),
            requested=tuple(requested),
            executed=tuple(executed),
            refused=tuple(refused),
            narrowings=tuple(narrowings),
        )
        trace.run_finished(record)
        return record

    while True:
        steps += 1
        # The tools on offer are asked for at every step, not once: what a
        # run may use can narrow while it runs.
        tools = dispatcher.schemas()
        trace.model_request(messages, tools)
        try:
            reply = model.complete(tuple(messages), tools=tools)
        except RunLimitReached as error:
            # Not the provider failing: the run's own limit, named as its stop.
            return finish(StopReason(error.limit), error=one_line(error))
        except ModelError as error:
            return finish(StopReason.MODEL_ERROR, error=one_line(error))
        trace.model_reply(reply)
        messages.append(reply.message)
        calls = reply.message.tool_calls
        if not calls:
            return finish(StopReason.FINAL_ANSWER, answer=reply.message.content)
        ids = [raw.id for raw in calls]
        if len(set(ids)) < len(ids) or not answered_ids.isdisjoint(ids):
            # One id, two answers: no provider accepts that transcript, and no
            # one could tell which answer belongs to which call. Nothing in
            # this reply runs, and the run ends here.
            requested.extend(raw.name for raw in calls)
            refused.extend((raw.name, "duplicate_call_id") for raw in calls)
            return finish(StopReason.DUPLICATE_CALL_ID)
        answered_ids.update(ids)
        # The model gets no step after this one, so nothing it asks for now
        # would ever be read: answer each call with a refusal instead of running it.
        stop = StopReason.STEP_LIMIT if steps == max_steps else None
        # The loop's own checks first, for the whole turn in the model's order:
        # a call that passes them is `ready` for the dispatcher.
        refusals: list[str | None] = []
        ready: dict[int, ToolCall] = {}
        for index, raw in enumerate(calls):
            requested.append(raw.name)
            call = parse_tool_call(raw)
            refusal: str | None = None
            if call is None:
                # A fixed code: the model's own malformed text is never echoed back.
                refusal = "malformed_tool_call"
            elif stop is StopReason.STEP_LIMIT:
                refusal = "step_limit"
            elif dispatched == max_tool_calls:
                # The budget is spent mid-turn: the rest of this turn is refused,
                # and the model is not asked again.
                refusal = "tool_call_limit"
                stop = StopReason.TOOL_CALL_LIMIT
            else:
                dispatched += 1
                ready[index] = call
            refusals.append(refusal)
        answered: dict[int, ToolOutcome] = {}
        for index, raw in enumerate(calls):
            refusal = refusals[index]
            if refusal is not None:
                trace.tool_call(raw)
                # Stopped by the loop itself: nothing ran, and the model gets a code.
                outcome = ToolOutcome({"ok": False, "error": refusal}, handler_ran=False)
            else:
                if index not in answered:
                    batch = batch_from(dispatcher, ready, index)
                    # Every call of a batch is taken up before any of them runs;
                    # the trace times each from here to its own answer.
                    for member in batch:
                        trace.tool_call(calls[member])
                    answered.update(answer_together(dispatcher, ready, batch, trace.tool_answered))
                outcome = answered.pop(index)
                if outcome.handler_ran and raw.name not in dispatcher.allowed:
                    # It ran beside a read that then narrowed the run without it:
                    # it ran, but the narrowed run does not show what it read.
                    outcome = replace(
                        outcome, observation={"ok": False, "error": "tool_not_allowed"}
                    )
            trace.tool_outcome(raw, outcome)
            if outcome.narrowing is not None:
                # From the next call on, the run has only what was kept; scoped()
                # intersects, so no tool can widen the run by asking to.
                dispatcher = dispatcher.scoped(outcome.narrowing.kept)
                narrowings.append(outcome.narrowing)
                trace.scope_narrowed(outcome.narrowing)
            # A call whose handler ran is executed, whatever the model was told:
            # a handler that failed, or whose result was too large, still ran.
            if outcome.handler_ran:
                executed.append(raw.name)
            else:
                refused.append((raw.name, str(outcome.observation["error"])))
            # Every call is answered, in the model's order, under its own id:
            # a provider rejects a transcript with an unanswered call. The text
            # is the outcome's own encoding, made once (`attempt` measured it).
            messages.append(ToolMessage(tool_call_id=raw.id, content=outcome.encoded))
        if stop is not None:
            return finish(stop)


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
