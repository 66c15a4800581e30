"""Support the book does not print: an offline stand-in for a model that chooses tools by words.

It is not a model and makes no claim to behave like one. It exists so that
an evaluation can run offline, and give the same numbers for the same seed,
while still meeting the failures a real model meets: a quantity sent as
text, a tool nobody offered, a misspelled sku, a tool chosen by misleading
words. Every slip is drawn from a seeded random generator; every other
decision follows fixed rules, written below.

The job is the chapter 3 plan: read the stock, draft every product below its
target in one turn, answer. Two intents, "read" and "draft", each choose a
tool with `choose_tool`: the offered tool whose name and description share
the most words with the intent's phrase. That is the deterministic selector
the evaluation compares descriptions with; a smoke test of the measuring,
not a study of how a model reads.

After a refusal it does what the observation lets it do:

- `tool_not_allowed`: choose again among the offered tools;
- `invalid_arguments` with safe hints: a hint naming a field it sent with the
  wrong type is fixed at once, and that field never slips again; a hint
  asking for other fields means the tool was the wrong one, and the next
  best is tried;
- `invalid_arguments` bare: it cannot tell which, so it reads the stock
  again and retries the same tool; refused that way twice, it tries the next
  best one (unless the tool has worked before: then the arguments were wrong);
- `tool_failed`: the shop said no, so it reads the stock again and drafts afresh.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sovereign_agent.evaluate.suite import ModelSlips
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelReply,
    ToolMessage,
)

__all__ = ["SloppyModel"]

# What each step of the job is for, in the words a selector matches against.
_INTENTS: Mapping[str, str] = {
    "read": "list every product with its stock and the tubs needed",
    "draft": "draft a re-order of the tubs needed for one sku",
}
_INVENTED_TOOL = "check_freezer"


def _words(text: str) -> set[str]:
    """The lower-case words of a text; `draft_order` is the words draft and order."""
    return set(re.findall(r"[a-z]+", text.lower()))


def choose_tool(
    intent: str, tools: Sequence[Mapping[str, Any]], avoid: frozenset[str] = frozenset()
) -> str | None:
    """The offered tool whose name and description share the most words with the intent.

    Ties go to the name first in alphabetical order, so the choice is the same
    every time; a tool in `avoid` is never chosen; None when nothing is left.
    """
    wanted = _words(_INTENTS[intent])
    scored = []
    for schema in tools:
        function = schema["function"]
        if function["name"] in avoid:
            continue
        overlap = wanted & _words(f"{function['name']} {function.get('description', '')}")
        scored.append((-len(overlap), function["name"]))
    return min(scored)[1] if scored else None


@dataclass
class _Call:
    intent: str
    tool: str
    sku: str | None = None


@dataclass
class _Memory:
    stock: list[dict[str, Any]] | None = None
    reread: bool = False
    drafted: dict[str, dict[str, Any]] = field(default_factory=dict)
    sent: dict[str, _Call] = field(default_factory=dict)
    avoid: dict[str, set[str]] = field(default_factory=lambda: {"read": set(), "draft": set()})
    worked: dict[str, set[str]] = field(default_factory=lambda: {"read": set(), "draft": set()})
    bare_refusals: dict[tuple[str, str], int] = field(default_factory=dict)
    careful: set[str] = field(default_factory=set)


class SloppyModel:
    """A model client that plays the morning plan by fixed rules, with slips drawn from `rng`."""

    def __init__(self, rng: random.Random, slips: ModelSlips) -> None:
        self._rng = rng
        self._slips = slips
        self._memory = _Memory()
        self.asked = 0

    @property
    def label(self) -> str:
        return "offline (scripted stand-in with planted slips)"

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        self.asked += 1
        self._learn(messages)
        message = self._next_message(messages, tools)
        return ModelReply(
            message=message,
            model="offline-stand-in",
            finish_reason="tool_calls" if message.tool_calls else "stop",
        )

    # -- what the last turn taught it -------------------------------------
    def _learn(self, messages: Sequence[Message]) -> None:
        memory = self._memory
        refused: set[tuple[str, str]] = set()
        for message in messages:
            if not isinstance(message, ToolMessage) or message.tool_call_id not in memory.sent:
                continue
            call = memory.sent.pop(message.tool_call_id)
            observation = json.loads(message.content)
            if observation.get("error") == "invalid_arguments" and "hints" not in observation:
                refused.add((call.intent, call.tool))
            self._read_answer(call, observation)
        # A bare refusal counts once per turn, however many calls it answered:
        # refused in two turns, a tool that never worked is given up.
        for intent, tool in refused:
            count = memory.bare_refusals[(intent, tool)] = (
                memory.bare_refusals.get((intent, tool), 0) + 1
            )
            if count >= 2 and tool not in memory.worked[intent]:
                memory.avoid[intent].add(tool)

    def _read_answer(self, call: _Call, observation: dict[str, Any]) -> None:
        memory = self._memory
        if observation.get("ok") is True:
            value = observation["value"]
            if call.intent == "read" and isinstance(value, list):
                memory.stock, memory.reread = value, False
                memory.worked["read"].add(call.tool)
            elif call.intent == "draft" and isinstance(value, dict) and "quantity" in value:
                memory.drafted[str(value.get("sku"))] = value
                memory.worked["draft"].add(call.tool)
            else:
                # It answered, but not with what this step needed: the wrong tool.
                memory.avoid[call.intent].add(call.tool)
            return
        error = observation.get("error")
        if error == "invalid_arguments" and "hints" in observation:
            self._read_hints(call, observation["hints"])
        elif error == "invalid_arguments":
            # Counted in `_learn`, once per turn; a draft is retried on fresh figures.
            memory.reread = memory.reread or call.intent == "draft"
        elif error == "tool_failed":
            memory.reread = True

    def _read_hints(self, call: _Call, hints: list[dict[str, Any]]) -> None:
        memory = self._memory
        # A hint about the type of a field it sent can be fixed; any other
        # hint (a field it lacks, a field the tool does not have) means the
        # tool does not fit this step.
        fixable = [
            hint
            for hint in hints
            if hint.get("field") in ("quantity", "sku")
            and not str(hint.get("expected", "")).startswith("required")
        ]
        if len(fixable) == len(hints):
            memory.careful.update(str(hint["field"]) for hint in fixable)
        else:
            memory.avoid[call.intent].add(call.tool)

    # -- what it does next -------------------------------------------------
    def _next_message(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
    ) -> AssistantMessage:
        memory = self._memory
        made = sum(len(m.tool_calls) for m in messages if isinstance(m, AssistantMessage))
        if memory.stock is None or memory.reread:
            # Drawn every time, whether or not it applies, so that the same seed
            # gives the same slips to every variant that asks the same questions.
            invents = self._rng.random() < self._slips.invented_tool
            tool = _INVENTED_TOOL if invents else self._choose("read", tools)
            if tool is None:
                return AssistantMessage(content="I could not find a tool to read the stock.")
            return self._send([(_Call("read", tool), {})], made)
        needed = sorted(
            (row for row in memory.stock if row.get("needed", 0) > 0),
            key=lambda row: -row["needed"],
        )
        pending = [row for row in needed if row["sku"] not in memory.drafted]
        if not pending:
            return AssistantMessage(content=self._plan())
        tool = self._choose("draft", tools)
        if tool is None:
            return AssistantMessage(content="I could not find a tool to draft an order.")
        calls = []
        for row in pending:
            misspells = self._rng.random() < self._slips.wrong_sku
            as_text = self._rng.random() < self._slips.quantity_as_text
            sku = row["sku"].lower() if misspells else row["sku"]
            quantity: int | str = row["needed"]
            if as_text and "quantity" not in memory.careful:
                quantity = str(quantity)
            calls.append((_Call("draft", tool, row["sku"]), {"sku": sku, "quantity": quantity}))
        return self._send(calls, made)

    def _choose(self, intent: str, tools: Sequence[dict[str, Any]]) -> str | None:
        return choose_tool(intent, tools, frozenset(self._memory.avoid[intent]))

    def _send(self, calls: list[tuple[_Call, dict[str, Any]]], made: int) -> AssistantMessage:
        written = []
        for offset, (call, arguments) in enumerate(calls):
            call_id = f"call-{made + 1 + offset}"
            self._memory.sent[call_id] = call
            written.append(
                AssistantToolCall(id=call_id, name=call.tool, arguments_json=json.dumps(arguments))
            )
        return AssistantMessage(tool_calls=tuple(written))

    def _plan(self) -> str:
        drafts = list(self._memory.drafted.values())
        if not drafts:
            return "Nothing needs re-ordering today."
        parts = [f"{d['quantity']} tubs of {d['sku']} ({d['total_pence']:,} pence)" for d in drafts]
        total = sum(d["total_pence"] for d in drafts)
        return f"Draft {' and '.join(parts)}: {total:,} pence in all. Nothing is bought yet."
