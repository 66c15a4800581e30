"""Chapter 5's reader files: the learner file, a provider, the runtime they match.

The runtime's `sovereign_agent.store` is the code the chapter teaches: every
function and class in it is defined exactly as in the learner file, and the
learner file exactly as in the chapter's listings (the verifier's rule).

The checkpoint's offline output and facts, and a silent learner import, are held
for every drafted chapter by tests/book/test_reader_files.py (its `FACTS` table).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chapter_files import checkpoint_output, constants, definitions
from chapter_files import run_checkpoint as run_script
from provider_stub import OPENAI_ROUTE, ProviderStub, openai_text, openai_tool_calls

import sovereign_agent.store
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch05_persistent_stock.md"
CHECKPOINT = TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch05_persistent_stock_checkpoint.py"
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch05_persistent_stock_learner.py"
LATER_LEARNER = (
    TEXTBOOK / "learner/profrod_sovereign_agent_ch06_reservations_and_deliveries_learner.py"
)
# Chapter 10 gives build_store_tools's tools their effect classes.
CH10_LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch10_durable_approvals_learner.py"
RUNTIME = Path(sovereign_agent.store.__file__)


def chapter_checkpoint_output() -> str:
    return checkpoint_output(CHAPTER)


def run_checkpoint(cwd: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    return run_script(CHECKPOINT, cwd, **variables)


def test_the_runtime_store_is_the_chapters_store_where_no_later_chapter_changed_it() -> None:
    # Chapters 6 and 10 redefine some of the store (and say so in their own
    # files' tests); everything else in store.py is chapter 5's, exactly.
    later = definitions(LATER_LEARNER) | definitions(CH10_LEARNER)
    later_constants = constants(LATER_LEARNER)
    runtime = definitions(RUNTIME)
    learner = definitions(LEARNER)
    assert set(learner) <= set(runtime)
    for name, tree in learner.items():
        if name not in later:
            assert runtime[name] == tree, f"{name} differs between store.py and the learner file"
    runtime_constants = constants(RUNTIME)
    for name, value in constants(LEARNER).items():
        if name not in later_constants:
            assert runtime_constants[name] == value, f"{name} differs from chapter 5's"


def test_the_runtime_exports_only_names_it_defines() -> None:
    # Which of them are exported is held by tests/test_public_names.py.
    public = set(definitions(RUNTIME)) | set(constants(RUNTIME))
    assert set(sovereign_agent.store.__all__) <= public


def test_importing_the_learner_file_prints_nothing_and_touches_no_file(tmp_path: Path) -> None:
    (tmp_path / "store.py").write_text(LEARNER.read_text(encoding="utf-8"), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-c", "import store, sys; sys.stderr.write(str(len(store.MIGRATIONS)))"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == "1"
    # No database was created: opening a store is something a caller does, never an import.
    assert not [
        path
        for path in tmp_path.iterdir()
        if path.name != "__pycache__" and path.name != "store.py"
    ]


def test_the_offline_checkpoint_asks_again_for_the_saved_draft(tmp_path: Path) -> None:
    # Its whole output, its facts and the empty folder: tests/book/test_reader_files.py.
    result = run_checkpoint(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == chapter_checkpoint_output()
    lines = result.stdout.splitlines()
    asked_again = json.loads(
        lines[lines.index("drafts saved: 2") - 1].removeprefix("asked again: ")
    )
    assert asked_again == {
        "ok": True,
        "value": {
            "sku": "SKU-VANILLA",
            "supplier": "lucy-local",
            "currency": "GBP",
            "unit_cost_pence": 250,
            "quantity": 6,
            "total_pence": 1500,
            "status": "DRAFT",
        },
    }


def test_a_provider_that_drafts_the_same_saves_the_same_drafts() -> None:
    vanilla = '{"sku": "SKU-VANILLA", "quantity": 6}'
    strawberry = '{"sku": "SKU-STRAWBERRY", "quantity": 4}'
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls([("call_a", "list_stock", "{}")]),
            openai_tool_calls(
                [("call_b", "draft_order", vanilla), ("call_c", "draft_order", strawberry)]
            ),
            openai_text("Two drafts, 2,600 pence."),
        )
        result = run_checkpoint(
            ROOT,
            SOVEREIGN_MODEL="openai:test-model",
            OPENAI_BASE_URL=stub.openai_base_url,
            OPENAI_API_KEY="x",
        )
    assert result.returncode == 0, result.stderr
    expected = chapter_checkpoint_output().splitlines()
    lines = result.stdout.splitlines()
    assert lines[1].startswith("model: openai:test-model")
    assert lines[0] == expected[0]
    assert lines[2:] == expected[2:]


def test_a_provider_that_drafts_a_wrong_quantity_saves_nothing_for_it() -> None:
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls([("call_a", "draft_order", '{"sku": "SKU-VANILLA", "quantity": 8}')]),
            openai_text("I drafted nothing."),
        )
        result = run_checkpoint(
            ROOT,
            SOVEREIGN_MODEL="openai:test-model",
            OPENAI_BASE_URL=stub.openai_base_url,
            OPENAI_API_KEY="x",
        )
    assert result.returncode == 0, result.stderr
    assert "saved draft" not in result.stdout
    # The operator's own request then saves the draft, and the second process sees it alone.
    assert "drafts saved: 1" in result.stdout
    assert (
        "second process sees: SKU-VANILLA 6 tubs (1,500 pence): 1,500 pence in all" in result.stdout
    )


def test_a_provider_named_without_its_key_is_refused_before_any_store_is_made(
    tmp_path: Path,
) -> None:
    result = run_checkpoint(tmp_path, SOVEREIGN_MODEL="anthropic:test-model")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "ANTHROPIC_API_KEY" in result.stderr
    assert list(tmp_path.iterdir()) == []
