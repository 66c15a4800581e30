"""Partly printed, in chapters 3 and 4: what a run is measured by (calls, codes, recoveries).

Each measure is read from the run record alone (the transcript), so it means
the same thing for the offline stand-in and for a real model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sovereign_agent.loop import RunRecord, StopReason
from sovereign_agent.models import AssistantMessage, ToolMessage

__all__ = ["Call", "calls_of", "drafts_in", "invalid_choices", "recoveries", "shaped_for"]

# Refused before any handler ran, because of what the model wrote.
INVALID_CHOICES = frozenset({"tool_not_allowed", "invalid_arguments", "malformed_tool_call"})
# What a model can recover from: its invalid choices, and the shop saying no.
MISTAKES = INVALID_CHOICES | {"tool_failed"}
UNREADABLE = "(unreadable)"
NO_FIT = "(no tool fits)"


@dataclass(frozen=True)
class Call:
    """One call of a run: the tool asked for, the tool its arguments fit, and its answer's code."""

    asked: str
    fits: str
    code: str


def shaped_for(arguments_json: str, asked: str, tools: Sequence[Mapping[str, Any]]) -> str:
    """The tool a call's arguments were written for: read from what the model wrote, not its mind.

    It is the offered tool whose declared fields hold every key sent and whose
    required fields were all sent; the tool asked for, when it is one of them.
    """
    try:
        arguments = json.loads(arguments_json)
    except ValueError:
        return UNREADABLE
    if not isinstance(arguments, dict):
        return UNREADABLE
    sent = set(arguments)
    fits = []
    for schema in tools:
        parameters = schema["function"]["parameters"]
        declared = set(parameters.get("properties", {}))
        if sent <= declared and set(parameters.get("required", ())) <= sent:
            fits.append(schema["function"]["name"])
    if asked in fits:
        return asked
    return fits[0] if fits else NO_FIT


def calls_of(record: RunRecord, tools: Sequence[Mapping[str, Any]]) -> list[Call]:
    """Every call the model made in a run, in its order; `tools` are the schemas it was offered."""
    answers = {
        message.tool_call_id: json.loads(message.content)
        for message in record.messages
        if isinstance(message, ToolMessage)
    }
    turns = [m for m in record.messages if isinstance(m, AssistantMessage) and m.tool_calls]
    calls = []
    for index, turn in enumerate(turns):
        # The reply that reused an id was never answered: its calls were all refused.
        unanswered = record.stop_reason is StopReason.DUPLICATE_CALL_ID and index == len(turns) - 1
        for raw in turn.tool_calls:
            if unanswered:
                code = "duplicate_call_id"
            else:
                observation = answers[raw.id]
                code = "ok" if observation["ok"] else str(observation["error"])
            calls.append(Call(raw.name, shaped_for(raw.arguments_json, raw.name, tools), code))
    return calls


def invalid_choices(calls: Sequence[Call]) -> int:
    """How many calls were refused for what the model chose: a tool, its arguments, its syntax."""
    return sum(call.code in INVALID_CHOICES for call in calls)


def recoveries(calls: Sequence[Call]) -> tuple[int, int]:
    """(mistakes, recovered): refused or failed calls, and those followed by a corrected one.

    A mistake is corrected by a later call written for the same tool (its
    arguments fit it) that succeeds; a call that could not be read, or that no
    offered tool fits, by any later call that succeeds. Whether the correction
    did the whole job is for the expectations on the shop's final state to say.
    """
    mistakes = recovered = 0
    for index, call in enumerate(calls):
        if call.code not in MISTAKES:
            continue
        mistakes += 1
        later = calls[index + 1 :]
        if any(
            again.code == "ok" and call.fits in (UNREADABLE, NO_FIT, again.fits) for again in later
        ):
            recovered += 1
    return mistakes, recovered


# Chapter 3's own reading of a run's drafts, as its listing prints it.
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
