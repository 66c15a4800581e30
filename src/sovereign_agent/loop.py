"""Printed in chapters 3, 7 and 13: the agent loop, where the model asks and the runtime decides.

One run is a small state machine. The runtime asks the model for a reply; a
reply without tool calls is the final answer; a reply with tool calls is
answered call by call, each observation sent back under the id of the call it
answers; then the runtime asks again. Two bounds, fixed before the run starts,
end every run that does not finish by itself; a reply that reuses a call id
cannot be answered at all, and ends the run too. The record of the run says in
one named reason why it ended, and keeps apart what the model asked for, what
ran (its handler was entered) and what was refused before any handler ran.

Chapter 4 has the loop tell a recorder what happens at each of those points,
so that a run can be written down, replayed and counted (`sovereign_agent.trace`).

Chapter 7 lets a tool narrow the run it is part of (a skill, and in chapter 8
a document nobody vouches for): when an outcome carries a `Narrowing`, the
loop scopes its dispatcher to what was kept, for the rest of the run, and the
record and the trace say which call narrowed it, why, and what it removed.

Chapter 13 names the stops its limits make (a `RunLimitReached` from the model
client ends the run under the limit's name, not as a model error), and hands
a turn's reads to a dispatcher that can run them side by side (`attempt_turn`),
each answered in the model's order; any other call still runs alone. The
trace takes up every call of such a batch before any outcome, and times each
call to its own answer, not to the batch's.

The definitions below are the ones the chapters print, line for line (a test
compares their syntax trees with the latest learner file that defines them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from enum import StrEnum
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from sovereign_agent.limits import RunLimitReached, may_run_concurrently
from sovereign_agent.models import (
    AssistantToolCall,
    Message,
    ModelClient,
    ModelError,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from sovereign_agent.tools import Dispatcher, Narrowing, Observation, ToolCall, ToolOutcome
from sovereign_agent.trace.recorder import Recorder, recorder_from_env

__all__ = [
    "RunRecord",
    "StopReason",
    "TurnDispatcher",
    "answer_together",
    "batch_from",
    "check_setup",
    "observation_message",
    "one_line",
    "parse_tool_call",
    "run_task",
    "runs_side_by_side",
]

# Arguments for the shop's tools fit in a few dozen characters and one level of
# nesting. The bounds keep a runaway model from making the runtime parse
# megabytes of text, and make deep nesting malformed on every Python version:
# how deep json.loads itself can go differs from one version to the next.
MAX_ARGUMENTS_CHARS = 4_096
MAX_ARGUMENTS_DEPTH = 32


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


class RunRecord(BaseModel):
    """Everything one run did, frozen once the run is over."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stop_reason: StopReason
    answer: str | None
    error: str | None
    steps: int
    messages: tuple[Message, ...]
    requested: tuple[str, ...]
    executed: tuple[str, ...]
    refused: tuple[tuple[str, str], ...]
    narrowings: tuple[Narrowing, ...] = ()


def check_setup(dispatcher: Dispatcher, *, max_steps: int, max_tool_calls: int) -> None:
    """Refuse a run that could only fail, before the model is asked anything."""
    for name, bound in (("max_steps", max_steps), ("max_tool_calls", max_tool_calls)):
        # bool is a subclass of int: True must not pass for a bound of 1.
        if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
            raise ValueError(f"{name} must be a positive int, got {bound!r}")
    for name in sorted(dispatcher.allowed & dispatcher.tools.keys()):
        # Otherwise every call to this tool would come back refused, and the
        # run would look like a model that keeps failing, not a missing setting.
        if dispatcher.tools[name].consequential and not dispatcher.has_write_authority:
            raise ValueError(f"tool {name!r} is allowed and consequential, but no before_write")


def refuse_constant(name: str) -> float:
    """NaN and Infinity are not JSON, though Python's parser accepts them by default."""
    raise ValueError(f"{name} is not JSON")


def refuse_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """One key twice in one object has no single meaning, though Python's parser keeps the last."""
    value = dict(pairs)
    if len(value) < len(pairs):
        raise ValueError("a key appears twice in one object")
    return value


# json.loads given an option builds a new decoder on every call. One decoder
# reads every call's arguments instead: it keeps nothing from one text to the
# next, as the decoder json.loads shares when given no option keeps nothing.
ARGUMENTS_DECODER = json.JSONDecoder(
    parse_constant=refuse_constant, object_pairs_hook=refuse_duplicate_keys
)


def nested_deeper_than(value: object, depth: int) -> bool:
    """Whether lists and objects nest more than `depth` levels deep in a parsed JSON value."""
    # Only lists and objects go down to the next level, so the walk ends at the
    # first level that holds none: a flat object takes one step, not `depth`.
    containers = [value] if isinstance(value, dict | list) else []
    for _ in range(depth):
        if not containers:
            return False
        containers = [
            child
            for item in containers
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]
    return bool(containers)


def parse_tool_call(raw: AssistantToolCall) -> ToolCall | None:
    """The model's raw request as a checked envelope, or None when it is malformed."""
    if len(raw.arguments_json) > MAX_ARGUMENTS_CHARS:
        return None
    try:
        arguments = ARGUMENTS_DECODER.decode(raw.arguments_json)
    except (ValueError, RecursionError):
        # Bad JSON, NaN or Infinity, a key twice in one object; or nesting deep
        # enough that this version of Python's parser gave up before our own bound applied.
        return None
    if nested_deeper_than(arguments, MAX_ARGUMENTS_DEPTH):
        return None
    try:
        return ToolCall(id=raw.id, name=raw.name, arguments=arguments)
    except ValueError:
        # Pydantic's ValidationError is a ValueError: a bad id or name, or
        # arguments that are not a JSON object.
        return None


# Built once, as ARGUMENTS_DECODER is (json.dumps given an option builds one
# per call); encode() keeps nothing from one observation to the next.
OBSERVATION_ENCODER = json.JSONEncoder(sort_keys=True, allow_nan=False)


def observation_message(call_id: str, observation: Observation) -> ToolMessage:
    """One answer to one call, under that call's id, as JSON with sorted keys."""
    return ToolMessage(tool_call_id=call_id, content=OBSERVATION_ENCODER.encode(observation))


def one_line(error: Exception) -> str:
    """A model error as one short line: its class, then its message."""
    text = " ".join(str(error).split())[:200]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


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
