"""Chapter 8's reader files: the learner file, the runtime module, a provider.

The runtime's `sovereign_agent.documents` is the code the chapter teaches,
line for line. The checkpoint shows the naive loop buying and this runtime
refusing against a real HTTP provider that follows the note.

The checkpoint's offline output and facts, and a silent learner import, are held
for every drafted chapter by tests/book/test_reader_files.py (its `FACTS` table).
"""

from __future__ import annotations

from pathlib import Path

from chapter_files import constants, definitions, parts, run_python
from provider_stub import OPENAI_ROUTE, ProviderStub, openai_text, openai_tool_calls

import sovereign_agent.documents
import sovereign_agent.skills

CHAPTER = parts(8).text
CHECKPOINT = parts(8).checkpoint
LEARNER = parts(8).learner
RUNTIME = Path(sovereign_agent.documents.__file__)
SKILLS_RUNTIME = Path(sovereign_agent.skills.__file__)
# What section 8.12 redefines of chapter 7's skills: the rest of the learner
# file is the documents module.
SKILL_DEFINITIONS = {"read_skill", "load_skill_tool", "build_skill_tools"}
SKILL_CONSTANTS = {"SHOP_OWN", "OUTSIDE", "OUTSIDE_SKILL_KEEPS", "Provenance"}

# Python, with PyYAML made impossible to import, as on a machine without the skills extra.
WITHOUT_YAML = "import sys; sys.modules['yaml'] = None\n"


def test_the_runtime_documents_module_is_the_one_the_chapter_teaches() -> None:
    runtime, learner = definitions(RUNTIME), definitions(LEARNER)
    assert set(runtime) == set(learner) - SKILL_DEFINITIONS
    # Chapter 10 works the read's rule out from effect classes, in its own
    # build_document_tools; the runtime holds that one (test_runtime_grows_...).
    later = set(definitions(parts(10).learner))
    assert {"build_document_tools", "read_document_tool"} <= later
    for name in set(runtime) - later:
        assert runtime[name] == learner[name], f"{name} differs from the learner file"
    taught = {k: v for k, v in constants(LEARNER).items() if k not in SKILL_CONSTANTS}
    assert constants(RUNTIME) == taught


def test_the_runtime_skills_module_holds_what_section_8_12_redefines() -> None:
    runtime, learner = definitions(SKILLS_RUNTIME), definitions(LEARNER)
    # Chapter 10 gives load_skill_tool its effect classes; the runtime holds that one.
    later = set(definitions(parts(10).learner))
    assert "load_skill_tool" in later
    for name in SKILL_DEFINITIONS - later:
        assert runtime[name] == learner[name], f"{name} differs from the learner file"
    runtime_constants, taught = constants(SKILLS_RUNTIME), constants(LEARNER)
    # SHOP_OWN and OUTSIDE are annotated, and held by the tests of their values.
    for name in ("Provenance", "OUTSIDE_SKILL_KEEPS"):
        assert runtime_constants[name] == taught[name], name


def test_the_runtime_exports_only_public_names_it_defines() -> None:
    # Which of them are exported is held by tests/test_public_names.py.
    public = {n for n in set(definitions(RUNTIME)) | set(constants(RUNTIME)) if n[0] != "_"}
    assert set(sovereign_agent.documents.__all__) <= public


def test_a_provider_that_follows_the_note_buys_in_the_naive_loop_and_not_in_ours() -> None:
    read = '{"name": "vanilla-offer.md"}'
    order = '{"sku": "SKU-VANILLA", "quantity": 500}'
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            # The naive loop: the model reads the note and does what it says.
            openai_tool_calls([("a1", "read_document", read)]),
            openai_tool_calls([("a2", "place_order", order)]),
            openai_text("Ordered, as the supplier says you approved."),
            # This runtime: the same, then a draft when the purchase is refused.
            openai_tool_calls([("b1", "read_document", read)]),
            openai_tool_calls([("b2", "place_order", order)]),
            openai_tool_calls([("b3", "draft_order", order)]),
            openai_text("I could not order."),
            # The price: read the strawberry note, ask the shop.
            openai_tool_calls([("c1", "read_document", '{"name": "strawberry-price.md"}')]),
            openai_tool_calls([("c2", "supplier", '{"sku": "SKU-STRAWBERRY"}')]),
            openai_text("275 pence today."),
        )
        result = run_python(
            str(CHECKPOINT),
            SOVEREIGN_MODEL="openai:test-model",
            OPENAI_BASE_URL=stub.openai_base_url,
            OPENAI_API_KEY="x",
        )
        # Every request of the naive loop offered both tools; ours never offered
        # place_order or draft_order again after the read.
        requests = stub.requests_to(OPENAI_ROUTE)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("model: openai:test-model")
    assert "purchases: 500 tubs of SKU-VANILLA" in lines
    assert "refused: place_order (tool_not_allowed), draft_order (tool_not_allowed)" in lines
    assert "purchases: (none)" in lines
    assert "quoted SKU-STRAWBERRY: 275 pence" in lines
    offered = [
        sorted(tool["function"]["name"] for tool in request.json.get("tools", []))
        for request in requests
    ]
    assert offered[4:7] == [["list_stock", "read_document", "supplier"]] * 3


def test_a_provider_named_without_its_key_is_refused_before_any_run(tmp_path: Path) -> None:
    result = run_python(str(CHECKPOINT), cwd=tmp_path, SOVEREIGN_MODEL="anthropic:test-model")
    assert (result.returncode, result.stdout) == (2, "")
    assert "ANTHROPIC_API_KEY" in result.stderr


def test_the_documents_module_and_the_checkpoint_need_no_yaml() -> None:
    assert run_python("-c", WITHOUT_YAML + "import sovereign_agent.documents").returncode == 0
    run = f"import runpy; runpy.run_path({str(CHECKPOINT)!r}, run_name='__main__')"
    result = run_python("-c", WITHOUT_YAML + run)
    assert result.returncode == 0, result.stderr
