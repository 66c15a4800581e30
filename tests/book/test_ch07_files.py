"""Chapter 7's reader files: the learner file, the runtime module, and a runtime without YAML.

The runtime's `sovereign_agent.skills` is the code the chapter teaches. The
skills extra is optional: `import sovereign_agent`, and every earlier
chapter's code, must work on a machine where PyYAML is not installed.

The checkpoint's offline output and facts, and a silent learner import, are held
for every drafted chapter by tests/book/test_reader_files.py (its `FACTS` table).
"""

from __future__ import annotations

from pathlib import Path

from chapter_files import constants, definitions, parts, run_python
from provider_stub import OPENAI_ROUTE, ProviderStub, openai_text, openai_tool_calls

import sovereign_agent.skills

CHAPTER = parts(7).text
CHECKPOINT = parts(7).checkpoint
LEARNER = parts(7).learner
RUNTIME = Path(sovereign_agent.skills.__file__)
# Chapter 8 gives skills a provenance and a reader without a race: these three
# are its versions in the runtime, held by tests/book/test_ch08_files.py.
CHANGED_BY_CHAPTER_8 = {"read_skill", "load_skill_tool", "build_skill_tools"}

# Python, with PyYAML made impossible to import, as on a machine without the extra.
WITHOUT_YAML = "import sys; sys.modules['yaml'] = None\n"


def test_the_runtime_skills_module_is_the_one_the_chapter_teaches() -> None:
    runtime, learner = definitions(RUNTIME), definitions(LEARNER)
    # Every definition of the runtime's module is taught (`line_of` included).
    assert set(runtime) - set(learner) == set()
    for name in set(runtime) & set(learner) - CHANGED_BY_CHAPTER_8:
        assert runtime[name] == learner[name], f"{name} differs from the learner file"
    for name in CHANGED_BY_CHAPTER_8:
        # Changed, and shown in full, by chapter 8 (its learner file holds these).
        assert runtime[name] != learner[name], f"{name} is chapter 7's again"
    shared = set(constants(RUNTIME)) & set(constants(LEARNER))
    assert shared >= {"MAX_SKILL_BYTES", "MAX_SKILLS", "MAX_YAML_DEPTH", "SKILL_NAME", "LOAD_SKILL"}
    for name in shared:
        assert constants(RUNTIME)[name] == constants(LEARNER)[name], name


def test_the_runtime_exports_only_public_names_it_defines() -> None:
    # Which of them are exported is held by tests/test_public_names.py.
    public = {n for n in set(definitions(RUNTIME)) | set(constants(RUNTIME)) if n[0] != "_"}
    assert set(sovereign_agent.skills.__all__) <= public


def test_a_provider_that_follows_the_bulk_buyer_still_cannot_buy() -> None:
    order = '{"sku": "SKU-VANILLA", "quantity": 500}'
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            # The morning: the model chooses the bulk-buyer, and is left with list_stock.
            openai_tool_calls([("a1", "load_skill", '{"skill": "bulk-buyer"}')]),
            openai_tool_calls([("a2", "place_order", order), ("a3", "supplier", "{}")]),
            openai_text("Nothing could be ordered."),
            # The heatwave: the same again.
            openai_tool_calls([("b1", "load_skill", '{"skill": "bulk-buyer"}')]),
            openai_tool_calls([("b2", "place_order", order)]),
            openai_text("Nothing could be ordered."),
        )
        result = run_python(
            str(CHECKPOINT),
            SOVEREIGN_MODEL="openai:test-model",
            OPENAI_BASE_URL=stub.openai_base_url,
            OPENAI_API_KEY="x",
        )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("model: openai:test-model")
    assert lines.count("  ignored: place_order") == 2
    assert "refused: place_order (tool_not_allowed), supplier (tool_not_allowed)" in lines
    assert "drafts total: 0 pence" in lines
    assert "orders placed: 0" in lines


def test_a_provider_named_without_its_key_is_refused_before_any_run(tmp_path: Path) -> None:
    result = run_python(str(CHECKPOINT), cwd=tmp_path, SOVEREIGN_MODEL="anthropic:test-model")
    assert (result.returncode, result.stdout) == (2, "")
    assert "ANTHROPIC_API_KEY" in result.stderr


def test_the_runtime_and_the_earlier_chapters_work_without_pyyaml() -> None:
    modules = [
        "sovereign_agent",
        "sovereign_agent.tools",
        "sovereign_agent.loop",
        "sovereign_agent.shop",
        "sovereign_agent.store",
        "sovereign_agent.models",
        "sovereign_agent.trace",
        "sovereign_agent.trace.replay",
    ]
    script = WITHOUT_YAML + "".join(f"import {module}\n" for module in modules)
    assert run_python("-c", script).returncode == 0
    for number in (2, 3, 5):
        checkpoint = parts(number).checkpoint
        run = f"import runpy; runpy.run_path({str(checkpoint)!r}, run_name='__main__')"
        result = run_python("-c", WITHOUT_YAML + run)
        assert result.returncode == 0, (number, result.stderr)


def test_the_skills_module_without_pyyaml_names_the_extra_to_install() -> None:
    result = run_python("-c", WITHOUT_YAML + "import sovereign_agent.skills")
    assert result.returncode == 1
    assert "needs PyYAML: install the `skills` extra" in result.stderr
