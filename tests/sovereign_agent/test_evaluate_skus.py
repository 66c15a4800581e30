"""Section 4.13's comparison: `sku` as an enum of the catalogue against chapter 2's free string.

The enum side must change nothing but the sku's type: same handlers, same
strictness, same quantity bounds. A wrong sku is refused by validation under
the enum (the handler never runs) and by the handler under the free string;
a new product in the enum's catalogue is a new schema, so a recorded run
diverges at its first request.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from morning_plan import PLAN, SHOP
from strength import examples

from sovereign_agent.evaluate import run_suite
from sovereign_agent.evaluate.skus import CATALOGUE, enum_arguments, enum_sku_tools
from sovereign_agent.evaluate.suite import load_suite
from sovereign_agent.evaluate.variants import variant_tools
from sovereign_agent.loop import run_task
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.tools import ToolCall
from sovereign_agent.trace import JsonLinesFile, Recorder, read_trace
from sovereign_agent.trace.replay import replay_run

ROOT = Path(__file__).resolve().parents[2]
# Written out, not read from the module under test.
SKUS = ["SKU-CHOCOLATE", "SKU-STRAWBERRY", "SKU-VANILLA"]


def draft(sku: object, quantity: object = 6) -> ToolCall:
    return ToolCall(id="d", name="draft_order", arguments={"sku": sku, "quantity": quantity})


def test_the_model_is_shown_every_sku_and_nothing_else_changes() -> None:
    free = variant_tools(SHOP, PRICES_PENCE).schemas()
    enum = enum_sku_tools(SHOP, PRICES_PENCE).schemas()
    assert [s["function"]["name"] for s in free] == [s["function"]["name"] for s in enum]
    for before, after in zip(free, enum, strict=True):
        properties = after["function"]["parameters"].get("properties", {})
        if "sku" in properties:
            assert properties["sku"] == {"enum": SKUS, "title": "Sku", "type": "string"}
            # Everything but the sku's line is chapter 2's schema.
            before["function"]["parameters"]["properties"].pop("sku")
            properties.pop("sku")
        assert before == after


@settings(max_examples=examples(200), deadline=None)
@given(sku=st.one_of(st.sampled_from(SKUS), st.text(max_size=30)))
def test_a_wrong_sku_is_refused_by_validation_under_the_enum_and_by_the_handler_otherwise(
    sku: str,
) -> None:
    free = variant_tools(SHOP, PRICES_PENCE).attempt(draft(sku))
    enum = enum_sku_tools(SHOP, PRICES_PENCE).attempt(draft(sku))
    if sku in SKUS:
        # A listed sku reaches the same handler, with the same answer.
        assert enum.observation == free.observation
        assert enum.handler_ran and free.handler_ran
    else:
        assert enum.observation == {"ok": False, "error": "invalid_arguments"}
        assert enum.handler_ran is False
        if 1 <= len(sku) <= 100:
            assert free.observation == {"ok": False, "error": "tool_failed"}
            assert free.handler_ran is True


def test_chapter_2s_other_rules_still_hold_under_the_enum() -> None:
    tools = enum_sku_tools(SHOP, PRICES_PENCE)
    for call in (draft("SKU-VANILLA", "6"), draft("SKU-VANILLA", 1001), draft("SKU-VANILLA", True)):
        assert tools.attempt(call).observation["error"] == "invalid_arguments"
    extra = ToolCall(
        id="x", name="draft_order", arguments={"sku": "SKU-VANILLA", "quantity": 6, "approved": 1}
    )
    assert tools.attempt(extra).observation["error"] == "invalid_arguments"


def test_an_empty_or_repeated_catalogue_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one sku, each once"):
        enum_arguments(())
    with pytest.raises(ValueError, match="at least one sku, each once"):
        enum_arguments(("SKU-VANILLA", "SKU-VANILLA"))


def test_the_suites_enum_variant_names_the_enum_factory() -> None:
    suite = load_suite(ROOT / "book/textbook/suites/sku_enum.toml")
    factories = {variant.name: variant.factory for variant in suite.variants}
    assert factories["enum sku"] == "sovereign_agent.evaluate.skus:enum_sku_tools"
    assert tuple(SKUS) == CATALOGUE


def test_a_new_product_in_the_enum_is_a_new_tool_version_and_a_replay_diverges(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "t.jsonl"
    run_task(
        ScriptedModel(PLAN),
        enum_sku_tools(SHOP, PRICES_PENCE),
        "Plan.",
        max_steps=6,
        max_tool_calls=8,
        recorder=Recorder(JsonLinesFile(trace)),
    )
    (run,) = read_trace(trace)
    assert replay_run(run, setup=enum_sku_tools).divergence is None
    mango = functools.partial(enum_sku_tools, catalogue=(*SKUS, "SKU-MANGO"))
    divergence = replay_run(run, setup=mango).divergence
    assert divergence is not None
    assert (divergence.line, divergence.kind) == (2, "model_request")
    assert "sku.enum" in divergence.what


def test_offline_the_enum_moves_only_the_invalid_choice_rate_as_section_4_13_says() -> None:
    # Section 4.13 states this run's result in words instead of printing its
    # table: seed 4, twenty repeats, every figure alike but invalid choices.
    suite = load_suite(ROOT / "book/textbook/suites/sku_enum.toml")
    free, enum = run_suite(suite, repeat=20, seed=4)
    assert (free.variant.name, enum.variant.name) == ("free-string sku", "enum sku")
    assert free.passes.shown() == enum.passes.shown()
    assert (free.mean_steps, free.mean_calls) == (enum.mean_steps, enum.mean_calls)
    assert free.recovered.shown() == enum.recovered.shown()
    assert free.confusion == enum.confusion
    assert free.invalid.shown().startswith("11.8% ")
    assert enum.invalid.shown().startswith("16.2% ")
