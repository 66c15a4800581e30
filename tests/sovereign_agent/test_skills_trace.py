"""A run that loads a skill, written down: the narrowing is an event, with its cause, in order."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bookproof.layout import REPO_ROOT
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.skills import build_skill_tools
from sovereign_agent.trace import Recorder, TraceFormatError, parse_trace, read_trace
from sovereign_agent.trace.format import ScopeNarrowedEvent

ROOT = REPO_ROOT
SKILLS = str(ROOT / "book/textbook/skills")
SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}


def ask(call_id: str, tool: str, /, **arguments: Any) -> AssistantToolCall:
    return AssistantToolCall(id=call_id, name=tool, arguments_json=json.dumps(arguments))


BULK = [
    AssistantMessage(tool_calls=(ask("c1", "load_skill", skill="bulk-buyer"),)),
    AssistantMessage(
        tool_calls=(
            ask("c2", "place_order", sku="SKU-VANILLA", quantity=500),
            ask("c3", "list_stock"),
        )
    ),
    AssistantMessage(content="I cannot place orders."),
]


def recorded(script: list[AssistantMessage]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    run_task(
        ScriptedModel(script),
        build_skill_tools(SHOP, skills_root=SKILLS, provenance="shop"),
        "Stock up for the festival.",
        max_steps=4,
        max_tool_calls=4,
        recorder=Recorder(events.append),
    )
    return events


def test_the_narrowing_is_written_right_after_the_outcome_that_caused_it() -> None:
    events = recorded(BULK)
    kinds = [event["event"] for event in events]
    assert kinds[3:7] == ["tool_call", "tool_outcome", "scope_narrowed", "model_request"]
    narrowed = events[5]
    assert {key: narrowed[key] for key in narrowed if key not in ("run", "seq", "v")} == {
        "event": "scope_narrowed",
        "gen_ai.operation.name": "execute_tool",
        "step": 1,
        "gen_ai.tool.name": "load_skill",
        "gen_ai.tool.call.id": "c1",
        "reason": "skill bulk-buyer",
        "kept": ["list_stock"],
        "removed": ["draft_order", "load_skill", "supplier"],
        "ignored": ["place_order"],
    }
    # From the next request on, the model is offered only what was kept.
    assert list(events[6]["tools"]) == ["list_stock"]


def test_a_skill_run_reads_back_and_its_setup_names_the_skills_folder() -> None:
    events = recorded(BULK)
    (run,) = parse_trace(json.dumps(event) + "\n" for event in events)
    assert run.complete
    assert next(e for e in run.events if isinstance(e, ScopeNarrowedEvent)).ignored == [
        "place_order"
    ]
    setup = run.started.setup
    assert setup is not None
    assert setup.factory == "sovereign_agent.skills:build_skill_tools"
    assert setup.arguments["skills_root"] == SKILLS
    assert setup.arguments["allowed"] == ["draft_order", "list_stock", "load_skill", "supplier"]
    # The recipe rebuilds the same tools: a replay starts where the run started.
    rebuilt = build_skill_tools(**setup.arguments)
    assert (
        rebuilt.schemas()
        == build_skill_tools(SHOP, skills_root=SKILLS, provenance="shop").schemas()
    )


def test_a_narrowing_out_of_place_is_refused_by_the_reader() -> None:
    events = recorded(BULK)
    moved = [events[0], events[1], events[5], *events[2:5], *events[6:]]
    for seq, event in enumerate(moved, start=1):
        event["seq"] = seq
    with pytest.raises(TraceFormatError, match="scope_narrowed cannot follow model_request"):
        parse_trace(json.dumps(event) + "\n" for event in moved)


def test_sovereign_trace_records_a_skill_run_in_another_process(tmp_path: Path) -> None:
    trace = tmp_path / "skills.jsonl"
    script = f"""
import json
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.skills import build_skill_tools
shop = {SHOP!r}
arguments = '{{"skill": "morning-reorder"}}'
load = AssistantToolCall(id="c1", name="load_skill", arguments_json=arguments)
model = ScriptedModel([AssistantMessage(tool_calls=(load,)), AssistantMessage(content="ok")])
tools = build_skill_tools(shop, skills_root={SKILLS!r}, provenance="shop")
run_task(model, tools, "Plan.", max_steps=3, max_tool_calls=3)
"""
    environment = {**os.environ, "SOVEREIGN_TRACE": str(trace)}
    subprocess.run([sys.executable, "-c", script], env=environment, check=True, timeout=120)
    (run,) = read_trace(trace)
    narrowed = [e for e in run.events if isinstance(e, ScopeNarrowedEvent)]
    assert [(e.reason, e.kept, e.removed) for e in narrowed] == [
        ("skill morning-reorder", ["draft_order", "list_stock"], ["load_skill", "supplier"])
    ]


def record_to_file(trace: Path, skills: Path) -> None:
    """A bulk-buyer run, traced through SOVEREIGN_TRACE in a process of its own."""
    script = f"""
import json
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.skills import build_skill_tools

def ask(call_id, tool, **arguments):
    return AssistantToolCall(id=call_id, name=tool, arguments_json=json.dumps(arguments))

model = ScriptedModel([
    AssistantMessage(tool_calls=(ask("c1", "load_skill", skill="bulk-buyer"),)),
    AssistantMessage(tool_calls=(ask("c2", "place_order", sku="SKU-VANILLA", quantity=500),
                                 ask("c3", "list_stock"))),
    AssistantMessage(content="I cannot place orders."),
])
tools = build_skill_tools({SHOP!r}, skills_root={str(skills)!r}, provenance="shop")
run_task(model, tools, "Stock up.", max_steps=4, max_tool_calls=4)
"""
    environment = {**os.environ, "SOVEREIGN_TRACE": str(trace)}
    subprocess.run([sys.executable, "-c", script], env=environment, check=True, timeout=120)


def replay(trace: Path) -> subprocess.CompletedProcess[str]:
    root = ["--root", str(trace.parent)]
    return subprocess.run(
        # The skills folder lies beside the trace: the root the replay may read under.
        [sys.executable, "-m", "sovereign_agent.trace", "replay", str(trace), *root],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    copy = tmp_path / "skills"
    shutil.copytree(SKILLS, copy)
    return copy


def test_a_recorded_skill_run_replays_from_its_setup(tmp_path: Path, skills: Path) -> None:
    trace = tmp_path / "bulk.jsonl"
    record_to_file(trace, skills)
    result = replay(trace)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "replayed 1 run(s): 1 match, 0 diverged" in result.stdout


def test_a_skill_that_now_lists_other_tools_is_a_divergence_at_its_narrowing(
    tmp_path: Path, skills: Path
) -> None:
    trace = tmp_path / "bulk.jsonl"
    record_to_file(trace, skills)
    skill = skills / "bulk-buyer" / "SKILL.md"
    skill.write_text(
        skill.read_text(encoding="utf-8").replace(
            "allowed-tools: list_stock, place_order", "allowed-tools: list_stock, supplier"
        ),
        encoding="utf-8",
    )
    result = replay(trace)
    assert result.returncode == 1
    # The narrowing event is the sixth, after the load's call and outcome.
    assert "event 6 (scope_narrowed)" in result.stdout, result.stdout
    assert "kept" in result.stdout
