"""Taint: once a run has read untrusted text, nothing that writes runs again in that run.

Every ordering of reads, refused reads, drafts, purchases and stock reports a
scripted model can make, up to four calls (one per turn, or all in one turn),
is run against real handlers that log when they run. No writing handler runs
after a read that succeeded, and the run record and the trace name the read
that narrowed the run.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from bookproof.layout import REPO_ROOT
from sovereign_agent.documents import READ_DOCUMENT, READS_ONLY, build_document_tools
from sovereign_agent.loop import RunRecord, StopReason, run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import DraftArguments
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall
from sovereign_agent.trace import JsonLinesFile, Recorder

ROOT = REPO_ROOT
DOCUMENTS = ROOT / "book/textbook/documents"
SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
WRITERS = frozenset({"draft_order", "place_order"})

# What a scripted model may ask for: (tool, arguments). A read of a name the
# folder refuses is a call to the same tool that lets no text in.
MOVES: dict[str, tuple[str, dict[str, Any]]] = {
    "read": (READ_DOCUMENT, {"name": "vanilla-offer.md"}),
    "refused read": (READ_DOCUMENT, {"name": "../pyproject.toml"}),
    "draft": ("draft_order", {"sku": "SKU-VANILLA", "quantity": 6}),
    "buy": ("place_order", {"sku": "SKU-VANILLA", "quantity": 500}),
    "stock": ("list_stock", {}),
}


def logged(tool: ExecutableTool[Any], log: list[str]) -> ExecutableTool[Any]:
    """The same tool, writing its name to `log` each time its handler is entered."""
    handler = tool.handler

    def run(arguments: Any) -> Any:
        log.append(tool.name)
        return handler(arguments)

    return dataclasses.replace(tool, handler=run)


def approve(call: ToolCall) -> None:
    return None


def writer(name: str, *, consequential: bool) -> ExecutableTool[DraftArguments]:
    """A tool that would change something outside the shop's data: buy, or send."""
    return ExecutableTool(
        name=name,
        description=name,
        arguments=DraftArguments,
        handler=lambda arguments: "done",
        consequential=consequential,
    )


def buying_tools(log: list[str]) -> Dispatcher:
    """Lucy's tools and read_document, with place_order allowed and an approving authority."""
    tools = build_document_tools(SHOP, documents_root=str(DOCUMENTS))
    place_order = writer("place_order", consequential=True)
    registered = [logged(tool, log) for tool in (*tools.tools.values(), place_order)]
    return Dispatcher(registered, allowed=[*tools.allowed, "place_order"], before_write=approve)


def calls_for(moves: Sequence[str]) -> list[AssistantToolCall]:
    """The model's calls for `moves`, with the ids c1, c2, ... in order."""
    return [
        AssistantToolCall(
            id=f"c{n}", name=MOVES[move][0], arguments_json=json.dumps(MOVES[move][1])
        )
        for n, move in enumerate(moves, start=1)
    ]


def script(moves: Sequence[str], *, one_turn: bool) -> list[AssistantMessage]:
    calls = calls_for(moves)
    turns = [tuple(calls)] if one_turn else [(call,) for call in calls]
    return [*(AssistantMessage(tool_calls=turn) for turn in turns), AssistantMessage(content="ok")]


def run(
    moves: Sequence[str], *, one_turn: bool, recorder: Recorder | None = None
) -> tuple[RunRecord, list[str]]:
    log: list[str] = []
    record = run_task(
        ScriptedModel(script(moves, one_turn=one_turn)),
        buying_tools(log),
        "Plan the re-order.",
        max_steps=len(moves) + 2,
        max_tool_calls=len(moves) + 2,
        recorder=recorder,
    )
    return record, log


def check(moves: Sequence[str], record: RunRecord, log: list[str]) -> None:
    """The taint rule, judged from the moves alone, against what ran and what was recorded."""
    assert record.stop_reason is StopReason.FINAL_ANSWER
    first_read = next((n for n, move in enumerate(moves, start=1) if move == "read"), None)
    reads = [n for n, move in enumerate(moves, start=1) if move == "read"]
    # Before the first successful read, every call ran; after it, a writer never did.
    expected_log = [
        MOVES[move][0]
        for n, move in enumerate(moves, start=1)
        if first_read is None or n <= first_read or MOVES[move][0] not in WRITERS
    ]
    assert log == expected_log
    if first_read is not None:
        assert not WRITERS & set(log[first_read:])
    refused = [
        (MOVES[move][0], "tool_not_allowed")
        for n, move in enumerate(moves, start=1)
        if first_read is not None and n > first_read and MOVES[move][0] in WRITERS
    ]
    assert list(record.refused) == refused
    # One narrowing per successful read, under that read's call id; a refused read has none.
    assert [narrowing.call_id for narrowing in record.narrowings] == [f"c{n}" for n in reads]
    for index, narrowing in enumerate(record.narrowings):
        assert narrowing.reason == "untrusted text: vanilla-offer.md"
        assert set(narrowing.kept) == READS_ONLY
        assert narrowing.removed == (() if index else ("draft_order", "place_order"))
        assert narrowing.ignored == ()


ORDERINGS = [
    moves for length in range(1, 5) for moves in itertools.product(sorted(MOVES), repeat=length)
]


@pytest.mark.parametrize("one_turn", [False, True], ids=["one call per turn", "all in one turn"])
def test_no_writing_handler_runs_after_a_read_in_any_ordering_up_to_four_calls(
    one_turn: bool,
) -> None:
    assert len(ORDERINGS) == 5 + 25 + 125 + 625
    for moves in ORDERINGS:
        record, log = run(moves, one_turn=one_turn)
        try:
            check(moves, record, log)
        except AssertionError as failure:
            raise AssertionError(f"{moves} ({'one turn' if one_turn else 'turns'})") from failure


@settings(max_examples=examples(150), deadline=None)
@given(
    moves=st.lists(st.sampled_from(sorted(MOVES)), min_size=1, max_size=8),
    cuts=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_no_writing_handler_runs_after_a_read_however_calls_are_grouped_in_turns(
    moves: list[str], cuts: list[bool]
) -> None:
    # The same moves, split into turns wherever `cuts` says.
    turns: list[list[AssistantToolCall]] = [[]]
    for call, cut in zip(calls_for(moves), cuts, strict=False):
        turns[-1].append(call)
        if cut:
            turns.append([])
    messages = [AssistantMessage(tool_calls=tuple(turn)) for turn in turns if turn]
    log: list[str] = []
    record = run_task(
        ScriptedModel([*messages, AssistantMessage(content="ok")]),
        buying_tools(log),
        "Plan the re-order.",
        max_steps=len(messages) + 1,
        max_tool_calls=len(moves),
    )
    check(moves, record, log)


def test_the_trace_records_each_narrowing_right_after_the_read_that_caused_it(
    tmp_path: Path,
) -> None:
    moves = ("draft", "refused read", "read", "buy", "read", "draft")
    events: list[dict[str, Any]] = []
    record, _ = run(moves, one_turn=False, recorder=Recorder(events.append))
    kinds = [(event["event"], event.get("gen_ai.tool.call.id")) for event in events]
    narrowed = [n for n, (kind, _) in enumerate(kinds) if kind == "scope_narrowed"]
    assert [kinds[n] for n in narrowed] == [("scope_narrowed", "c3"), ("scope_narrowed", "c5")]
    for n in narrowed:
        assert kinds[n - 1] == ("tool_outcome", kinds[n][1])
        assert events[n - 1]["code"] == "ok"
    assert events[narrowed[0]]["removed"] == ["draft_order", "place_order"]
    assert events[narrowed[0]]["reason"] == "untrusted text: vanilla-offer.md"
    # The refused read's outcome is in the trace, with no narrowing after it.
    refused = kinds.index(("tool_outcome", "c2"))
    assert events[refused]["code"] == "tool_failed"
    assert kinds[refused + 1][0] != "scope_narrowed"
    assert record.refused == (
        ("place_order", "tool_not_allowed"),
        ("draft_order", "tool_not_allowed"),
    )


def test_taint_lasts_one_run_and_the_next_run_on_the_same_tools_starts_whole() -> None:
    log: list[str] = []
    tools = buying_tools(log)
    for _ in range(2):
        record = run_task(
            ScriptedModel(script(("read", "draft"), one_turn=False)),
            tools,
            "Plan the re-order.",
            max_steps=4,
            max_tool_calls=4,
        )
        assert record.refused == (("draft_order", "tool_not_allowed"),)
        assert tools.allowed == {
            "draft_order",
            "list_stock",
            "place_order",
            READ_DOCUMENT,
            "supplier",
        }
    draft = run_task(
        ScriptedModel(script(("draft",), one_turn=False)),
        tools,
        "Plan the re-order.",
        max_steps=3,
        max_tool_calls=3,
    )
    assert draft.executed == ("draft_order",)


def test_a_tool_added_beside_read_document_is_removed_by_default() -> None:
    # Nobody marked it consequential or listed it anywhere: it still does not survive a read.
    tools = build_document_tools(SHOP, documents_root=str(DOCUMENTS))
    note = writer("email_supplier", consequential=False)
    wider = Dispatcher([*tools.tools.values(), note], allowed=[*tools.allowed, "email_supplier"])
    outcome = wider.attempt(
        ToolCall(id="c1", name=READ_DOCUMENT, arguments={"name": "vanilla-offer.md"})
    )
    assert outcome.narrowing is not None
    assert outcome.narrowing.removed == ("draft_order", "email_supplier")


def test_no_consequential_tool_is_among_those_a_read_keeps() -> None:
    tools = build_document_tools(SHOP, documents_root=str(DOCUMENTS))
    kept = READS_ONLY & tools.tools.keys()
    assert kept == READS_ONLY
    assert not any(tools.tools[name].consequential for name in kept)


def test_a_document_run_replays_and_a_changed_note_diverges(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for note in DOCUMENTS.iterdir():
        (folder / note.name).write_bytes(note.read_bytes())
    trace = tmp_path / "run.jsonl"
    run_task(
        ScriptedModel(script(("read", "draft", "stock"), one_turn=False)),
        build_document_tools(SHOP, documents_root=str(folder)),
        "Plan the re-order.",
        max_steps=5,
        max_tool_calls=5,
        recorder=Recorder(JsonLinesFile(trace)),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOVEREIGN_")}
    root = ["--root", str(tmp_path)]  # the notes lie under it

    def replay() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sovereign_agent.trace", "replay", str(trace), *root],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )

    assert replay().returncode == 0
    note = folder / "vanilla-offer.md"
    note.write_text(note.read_text(encoding="utf-8") + "P.S. 900 tubs.\n", encoding="utf-8")
    diverged = replay()
    assert diverged.returncode == 1
    assert "(tool_outcome)" in diverged.stdout
