"""Effect classes (chapter 10): what a tool can do, and the policies written over it.

Each property draws random sets of classes for random tools and runs them
through the real dispatcher, the real loop, the real approval authority over
a real store, and the real recorder: a run that has read untrusted text never
executes a tool that writes, spends, sends or runs code; every call that can
spend meets an approval, and runs only with one; chapter 2's boolean is what
the classes say it is.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from approvals_fixture import Clock, friday_store
from hypothesis import given, settings
from hypothesis import strategies as st
from morning_plan import PLAN, SHOP
from scratch import memory_folder
from strength import examples

from sovereign_agent.approvals import (
    OrderArguments,
    approve,
    build_approved_store_tools,
    list_approvals,
)
from sovereign_agent.approvals.ledger import canonical_arguments
from sovereign_agent.documents import (
    READ_DOCUMENT,
    READS_ONLY,
    build_document_tools,
    read_document_tool,
)
from sovereign_agent.effects import (
    CONSEQUENTIAL,
    NEEDS_APPROVAL,
    NEEDS_AUTHORITY,
    NOT_CONSEQUENTIAL,
    Effect,
    classes_of_consequential,
    kept_after_untrusted_text,
    needs_authority,
)
from sovereign_agent.generated_code import build_code_tool
from sovereign_agent.loop import run_task
from sovereign_agent.mcp.remote import Declared
from sovereign_agent.mcp.serve import servable
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.purchasing import SupplierDesk, build_purchasing_tools
from sovereign_agent.shop import NoArguments, build_tools
from sovereign_agent.store import build_store_tools, open_store
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall
from sovereign_agent.trace import JsonLinesFile, Recorder, read_trace, recorder_from_env
from sovereign_agent.trace.format import EffectName
from sovereign_agent.trace.recorded_remote import _recorded_tool
from sovereign_agent.trace.replay import replay_run

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ROOT / "book/textbook/documents"
# Written out, not read from the module under test.
LEAVES_THE_SHOP_OR_SPENDS = {"money", "egress", "code"}

class_sets = st.frozensets(st.sampled_from(list(Effect)), min_size=1)


def tool(name: str, classes: frozenset[Effect], log: list[str]) -> ExecutableTool[NoArguments]:
    """A tool that declares `classes` and writes its name to `log` when its handler runs."""

    def handler(arguments: NoArguments) -> str:
        log.append(name)
        return "done"

    return ExecutableTool(name, f"Does {name}.", NoArguments, handler, effects=classes)


def approve_everything(call: ToolCall) -> None:
    return None


# --- the declaration ------------------------------------------------------------


@settings(max_examples=examples(200), deadline=None)
@given(classes=class_sets)
def test_the_boolean_is_worked_out_from_the_declared_classes(classes: frozenset[Effect]) -> None:
    declared = ExecutableTool("t", "T.", NoArguments, lambda a: None, effects=classes)
    assert declared.effect_classes == classes
    assert declared.consequential == bool({"money", "code"} & set(classes))


@pytest.mark.parametrize(
    ("consequential", "expected"), [(False, {"read"}), (True, {"write", "money", "egress", "code"})]
)
def test_a_tool_declared_only_with_the_boolean_stands_for_its_documented_classes(
    consequential: bool, expected: set[str]
) -> None:
    old_style = ExecutableTool("t", "T.", NoArguments, lambda a: None, consequential=consequential)
    assert old_style.effects == frozenset()  # nothing declared: visibly so
    assert set(old_style.effect_classes) == expected
    assert old_style.consequential is consequential


def test_the_mapping_round_trips_chapter_2s_boolean() -> None:
    assert needs_authority(classes_of_consequential(True)) is True
    assert needs_authority(classes_of_consequential(False)) is False
    assert set(Effect) == CONSEQUENTIAL | NOT_CONSEQUENTIAL
    # Every class an approval must cover also makes the dispatcher ask its authority.
    assert NEEDS_APPROVAL <= NEEDS_AUTHORITY


def test_contradicting_declarations_and_unknown_classes_are_refused() -> None:
    with pytest.raises(ValueError, match="consequential, but its classes"):
        ExecutableTool(
            "draft",
            "D.",
            NoArguments,
            lambda a: None,
            consequential=True,
            effects=frozenset({Effect.WRITE}),
        )
    with pytest.raises(ValueError, match="'spend' is not a valid Effect"):
        ExecutableTool("t", "T.", NoArguments, lambda a: None, effects=frozenset({"spend"}))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a frozenset, not str"):
        ExecutableTool("t", "T.", NoArguments, lambda a: None, effects="money")  # type: ignore[arg-type]


def test_replacing_a_field_keeps_what_the_tool_declared() -> None:
    order = ExecutableTool(
        "order", "O.", NoArguments, lambda a: None, effects=frozenset({Effect.MONEY})
    )
    renamed = dataclasses.replace(order, description="Orders.")
    assert renamed.effects == {Effect.MONEY} and renamed.consequential is True


def test_the_trace_spells_exactly_the_classes_there_are() -> None:
    assert set(EffectName.__args__) == {effect.value for effect in Effect}


# --- every tool the runtime builds declares its classes -----------------------------


def test_the_shops_tools_declare_their_classes_in_memory_and_in_the_store(tmp_path: Path) -> None:
    expected = {"list_stock": {"read"}, "supplier": {"read"}, "draft_order": {"write"}}
    store = open_store(tmp_path / "s.db")
    for dispatcher in (build_tools(SHOP), build_store_tools(store)):
        assert {name: set(t.effects) for name, t in dispatcher.tools.items()} == expected


def test_place_order_declares_money_and_so_meets_the_authority(tmp_path: Path) -> None:
    store = open_store(friday_store(tmp_path / "s.db"))
    dispatcher, _ = build_approved_store_tools(store)
    order = dispatcher.tools["place_order"]
    assert set(order.effects) == {"write", "money"}
    assert order.consequential is True


def test_every_tool_the_runtimes_factories_build_declares_its_classes(tmp_path: Path) -> None:
    # Nothing left to chapter 2's boolean: each tool says what it can do. Skills
    # need the optional YAML extra, so they are imported where they are used.
    from sovereign_agent.skills import build_skill_tools

    store = open_store(friday_store(tmp_path / "s.db"))
    approved, _ = build_approved_store_tools(store)
    # Never contacted: building the tools sends nothing.
    purchasing, _ = build_purchasing_tools(store, SupplierDesk("http://127.0.0.1:9"))
    dispatchers = (
        build_tools(SHOP),
        build_store_tools(store),
        approved,
        purchasing,
        build_document_tools(SHOP, documents_root=str(DOCUMENTS)),
        build_skill_tools(SHOP, skills_root=str(ROOT / "book/textbook/skills"), provenance="shop"),
        Dispatcher([build_code_tool(tmp_path)], allowed=["run_python"]),
    )
    undeclared = [
        name for dispatcher in dispatchers for name, t in dispatcher.tools.items() if not t.effects
    ]
    assert undeclared == []
    assert set(purchasing.tools["place_order"].effects) == {"write", "money", "egress"}
    assert set(build_code_tool(tmp_path).effects) == {"code"}


@settings(max_examples=examples(100), deadline=None)
@given(extra=st.lists(class_sets, min_size=1, max_size=6))
def test_without_an_authority_nothing_that_can_spend_or_run_code_ever_runs(
    extra: list[frozenset[Effect]],
) -> None:
    # run_python's case among every other: code (or money) needs the authority it lacks.
    log: list[str] = []
    tools = [tool(f"tool_{n}", classes, log) for n, classes in enumerate(extra)]
    dispatcher = Dispatcher(tools, allowed=[t.name for t in tools])
    for t in tools:
        outcome = dispatcher.attempt(ToolCall(id=t.name, name=t.name, arguments={}))
        needs_one = bool({"money", "code"} & {c.value for c in t.effects})
        assert outcome.handler_ran is not needs_one
        if needs_one:
            assert outcome.observation == {"ok": False, "error": "write_authority_required"}
    assert set(log) == {
        t.name for t in tools if not {"money", "code"} & {c.value for c in t.effects}
    }


@pytest.mark.parametrize("consequential", [False, True])
def test_a_remote_tool_is_egress_whatever_it_is_declared(consequential: bool) -> None:
    declaration = Declared(
        name="ask", arguments=NoArguments, description="Asks.", consequential=consequential
    )
    remote = _recorded_tool(declaration, deque())
    assert Effect.EGRESS in remote.effect_classes
    assert remote.consequential is consequential


# --- untrusted text: a tainted run never writes, spends, sends or runs code ----------


@settings(max_examples=examples(100), deadline=None)
@given(
    extra=st.lists(class_sets, min_size=1, max_size=6),
    order=st.randoms(use_true_random=False),
    one_turn=st.booleans(),
)
def test_a_run_that_read_untrusted_text_never_executes_what_leaves_the_shop_or_spends(
    extra: list[frozenset[Effect]], order: Any, one_turn: bool
) -> None:
    log: list[str] = []
    extras = [tool(f"tool_{n}", classes, log) for n, classes in enumerate(extra)]
    notes = build_document_tools(SHOP, documents_root=str(DOCUMENTS))
    everything = {**notes.tools, **{t.name: t for t in extras}}
    # The rule, worked out from the classes, handed to the reader as build_document_tools does.
    keep = kept_after_untrusted_text(everything)
    reader = read_document_tool(DOCUMENTS.resolve(), keep=keep)
    tools = [*(t for t in notes.tools.values() if t.name != READ_DOCUMENT), reader, *extras]
    dispatcher = Dispatcher(tools, allowed=[t.name for t in tools], before_write=approve_everything)
    after = [
        AssistantToolCall(id=f"x{n}", name=t.name, arguments_json="{}")
        for n, t in enumerate(extras)
    ]
    order.shuffle(after)
    read = AssistantToolCall(
        id="read", name=READ_DOCUMENT, arguments_json='{"name": "vanilla-offer.md"}'
    )
    turns = [(read, *after)] if one_turn else [(read,), *((call,) for call in after)]
    record = run_task(
        ScriptedModel(
            [*(AssistantMessage(tool_calls=t) for t in turns), AssistantMessage(content="ok")]
        ),
        dispatcher,
        "Read the note.",
        max_steps=len(turns) + 1,
        max_tool_calls=len(after) + 1,
    )
    assert [narrowing.call_id for narrowing in record.narrowings] == ["read"]
    classes_of = {t.name: {c.value for c in t.effect_classes} for t in extras}
    ran = set(log)
    assert not any(classes_of[name] & (LEAVES_THE_SHOP_OR_SPENDS | {"write"}) for name in ran)
    # And what only reads still ran: the rule removes by class, not everything.
    assert ran == {name for name, classes in classes_of.items() if classes == {"read"}}


def test_a_tool_that_declares_no_classes_is_removed_after_a_read_whatever_its_boolean() -> None:
    # Chapter 8's safe default: a tool nobody classed is not trusted to only read.
    plain = ExecutableTool("plain", "P.", NoArguments, lambda a: None)
    read = ExecutableTool("read", "R.", NoArguments, lambda a: None, effects=frozenset({"read"}))
    assert plain.effect_classes == {Effect.READ}
    assert kept_after_untrusted_text({"plain": plain, "read": read}) == {"read"}


def test_the_chapter_8_rule_worked_out_from_the_classes_keeps_what_chapter_8_listed() -> None:
    notes = build_document_tools(SHOP, documents_root=str(DOCUMENTS))
    assert kept_after_untrusted_text(notes.tools) == READS_ONLY


def test_the_names_an_outside_skill_keeps_are_exactly_the_tools_declared_to_only_read() -> None:
    # Chapter 8 prints OUTSIDE_SKILL_KEEPS as names, before chapter 10 has classes;
    # build_skill_tools now works the set out from the classes, and chapter 8's
    # names stay load_skill's default: the two must agree for chapter 8's tools.
    from sovereign_agent.skills import OUTSIDE_SKILL_KEEPS, build_skill_tools

    skills = build_skill_tools(
        SHOP, skills_root=str(ROOT / "book/textbook/skills"), provenance="shop"
    )
    assert kept_after_untrusted_text(skills.tools) == OUTSIDE_SKILL_KEEPS


# --- approvals cover every call that can spend ---------------------------------


@settings(max_examples=examples(40), deadline=None)
@given(extra=st.lists(class_sets, min_size=1, max_size=5), approved=st.booleans())
def test_every_call_that_can_spend_meets_the_approval_authority_and_runs_only_approved(
    extra: list[frozenset[Effect]], approved: bool
) -> None:
    with tempfile.TemporaryDirectory(dir=memory_folder()) as folder:
        clock = Clock()
        store = open_store(friday_store(Path(folder) / "s.db"))
        approved_tools, authority = build_approved_store_tools(store, run_id="r", clock=clock)
        log: list[str] = []
        extras = [tool(f"tool_{n}", classes, log) for n, classes in enumerate(extra)]
        tools = [*approved_tools.tools.values(), *extras]
        dispatcher = Dispatcher(tools, allowed=[t.name for t in tools], before_write=authority)
        order = ToolCall(
            id="o", name="place_order", arguments={"sku": "SKU-VANILLA", "quantity": 2}
        )
        if approved:
            dispatcher.attempt(order)  # asks: one PENDING approval
            (pending,) = list_approvals(store)
            approve(store, pending.id, "lucy", clock=clock)
        outcomes = {
            t.name: dispatcher.attempt(ToolCall(id=t.name, name=t.name, arguments={}))
            for t in extras
        }
        placed = dispatcher.attempt(order)
        for t in extras:
            classes = {c.value for c in t.effect_classes}
            if "money" in classes:
                # No amount rule for it: an approval can never be given, so it never runs.
                assert outcomes[t.name].observation == {"ok": False, "error": "tool_failed"}
                assert t.name not in log
        assert placed.handler_ran is approved
        used = [a for a in list_approvals(store) if a.status == "USED"]
        orders = store.execute("SELECT count(*) FROM orders").fetchone()[0]
        # Every order the run placed used exactly one approval of exactly its call.
        assert orders == len(used) == (1 if approved else 0)
        if approved:
            called = OrderArguments.model_validate(order.arguments, strict=True)
            assert used[0].arguments == canonical_arguments(called)
        store.close()


# --- serving: nothing that needs an authority is ever served ------------------------


@settings(max_examples=examples(100), deadline=None)
@given(extra=st.lists(class_sets, min_size=1, max_size=6))
def test_a_served_dispatcher_offers_nothing_that_can_spend_or_run_code(
    extra: list[frozenset[Effect]],
) -> None:
    tools = [tool(f"tool_{n}", classes, []) for n, classes in enumerate(extra)]
    served = servable(
        Dispatcher(tools, allowed=[t.name for t in tools], before_write=approve_everything)
    )
    for t in tools:
        spends_or_runs = bool({"money", "code"} & {c.value for c in t.effect_classes})
        assert (t.name in served.allowed) is not spends_or_runs


# --- the trace records each call's classes, and replay holds them ----------------


def test_the_trace_records_each_calls_classes_and_replay_diverges_when_they_change(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "t.jsonl"
    run_task(
        ScriptedModel(PLAN),
        build_tools(SHOP),
        "Plan this morning's re-order.",
        max_steps=6,
        max_tool_calls=8,
        recorder=Recorder(JsonLinesFile(trace), effects=True),
    )
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    classes = {
        (e["event"], e["gen_ai.tool.name"]): e["effects"]
        for e in events
        if e["event"] in {"tool_call", "tool_outcome"}
    }
    assert classes[("tool_call", "list_stock")] == ["read"]
    assert classes[("tool_outcome", "draft_order")] == ["write"]
    (run,) = read_trace(trace)
    assert replay_run(run).divergence is None

    def spending_drafts(**arguments: Any) -> Dispatcher:
        tools = build_tools(**arguments)
        return Dispatcher(
            [
                dataclasses.replace(t, effects=frozenset({Effect.WRITE, Effect.MONEY}))
                if t.name == "draft_order"
                else t
                for t in tools.tools.values()
            ],
            allowed=tools.allowed,
            before_write=approve_everything,
        )

    divergence = replay_run(run, setup=spending_drafts).divergence
    assert divergence is not None
    assert (divergence.kind, divergence.what) == ("tool_call", "effects")
    assert "money" in divergence.now and "money" not in divergence.recorded


def test_the_recorder_sovereign_trace_makes_always_writes_the_classes(tmp_path: Path) -> None:
    trace = tmp_path / "env.jsonl"
    run_task(
        ScriptedModel(PLAN),
        build_tools(SHOP),
        "Plan.",
        max_steps=6,
        max_tool_calls=8,
        recorder=recorder_from_env({"SOVEREIGN_TRACE": str(trace)}),
    )
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    calls = [e for e in events if e["event"] in {"tool_call", "tool_outcome"}]
    assert calls and all(call["effects"] in (["read"], ["write"]) for call in calls)


def test_a_recorder_built_by_hand_writes_no_classes_unless_asked() -> None:
    events: list[dict[str, Any]] = []
    run_task(
        ScriptedModel(PLAN),
        build_tools(SHOP),
        "Plan.",
        max_steps=6,
        max_tool_calls=8,
        recorder=Recorder(events.append),
    )
    assert not any("effects" in event for event in events)


def test_an_outside_skill_keeps_what_the_run_hands_load_skill_and_nothing_it_lists_beyond() -> None:
    from sovereign_agent.skills import LOAD_SKILL, discover_skills, load_skill_tool

    skills = discover_skills(ROOT / "book/textbook/skills")
    loader = load_skill_tool(skills, provenance="outside", keep=frozenset({LOAD_SKILL, "supplier"}))
    shop = build_tools(SHOP)
    dispatcher = Dispatcher(
        [*shop.tools.values(), loader], allowed=[*shop.allowed, LOAD_SKILL], before_write=None
    )
    record = run_task(
        ScriptedModel(
            [
                AssistantMessage(
                    tool_calls=(
                        AssistantToolCall(
                            id="load",
                            name=LOAD_SKILL,
                            arguments_json=json.dumps({"skill": skills[0].name}),
                        ),
                    )
                ),
                AssistantMessage(content="ok"),
            ]
        ),
        dispatcher,
        "Load a skill.",
        max_steps=2,
        max_tool_calls=1,
    )
    (narrowing,) = record.narrowings
    # Whatever the skill lists, only what the run handed load_skill can stay.
    assert set(narrowing.kept) <= {LOAD_SKILL, "supplier"}
    assert "draft_order" in narrowing.removed and "list_stock" in narrowing.removed
