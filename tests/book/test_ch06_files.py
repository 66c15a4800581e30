"""Chapter 6's reader files: the learner file, a provider, the runtime they match.

The runtime's `sovereign_agent.store` is chapter 5's store with chapter 6's
changes: every definition and constant the chapter 6 learner file holds is in
the runtime exactly as written there (the need in `sovereign_agent.shop`, the
rest in the store), and the learner file exactly as in the chapter's listings
(the verifier's rule).

The checkpoint's offline output and facts, and a silent learner import, are held
for every drafted chapter by tests/book/test_reader_files.py (its `FACTS` table).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from chapter_files import checkpoint_output, constants, definitions, run_checkpoint
from provider_stub import OPENAI_ROUTE, ProviderStub, openai_text, openai_tool_calls

import sovereign_agent.shop
import sovereign_agent.store
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
TEXTBOOK = ROOT / "book/textbook"
CHAPTER = TEXTBOOK / "ch06_reservations_and_deliveries.md"
CHECKPOINT = (
    TEXTBOOK / "checkpoints/profrod_sovereign_agent_ch06_reservations_and_deliveries_checkpoint.py"
)
LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch06_reservations_and_deliveries_learner.py"
CHAPTER_5_LEARNER = TEXTBOOK / "learner/profrod_sovereign_agent_ch05_persistent_stock_learner.py"
STORE = Path(sovereign_agent.store.__file__)
SHOP = Path(sovereign_agent.shop.__file__)

# Chapter 10 appends migration 3 (its approvals) to the store, chapter 11
# migration 4 (its purchases), and chapter 12 its runs journal. Until a drafted
# chapter's learner file prints them, the runtime's MIGRATIONS is chapter 6's
# with exactly these appended, in this order, and nothing else.
LATER_MIGRATIONS = ("APPROVALS_V3", "PURCHASES_V4", "RUNS_JOURNAL")


def chapter_checkpoint_output() -> str:
    return checkpoint_output(CHAPTER)


def run_offline(cwd: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    return run_checkpoint(CHECKPOINT, cwd, **variables)


def run_with_provider(stub: ProviderStub) -> subprocess.CompletedProcess[str]:
    """The checkpoint, planned by a provider: the stub, speaking OpenAI's API."""
    return run_checkpoint(
        CHECKPOINT,
        ROOT,
        SOVEREIGN_MODEL="openai:test-model",
        OPENAI_BASE_URL=stub.openai_base_url,
        OPENAI_API_KEY="x",
    )


def test_the_runtime_holds_every_definition_of_the_learner_file_as_written() -> None:
    learner = definitions(LEARNER)
    runtime = {**definitions(STORE), **definitions(SHOP)}
    assert set(learner) <= set(runtime)
    for name, tree in learner.items():
        assert runtime[name] == tree, f"{name} differs between the runtime and the learner file"
    # The need lives in the shop, where chapter 2 put it; the store only imports it.
    assert "replenishment_need" in definitions(SHOP)
    assert "replenishment_need" not in definitions(STORE)
    runtime_constants = constants(STORE)
    for name, value in constants(LEARNER).items():
        if name == "MIGRATIONS":
            value = with_later_migrations(LEARNER)
        assert runtime_constants[name] == value, f"{name} differs from the learner file's"


def with_later_migrations(learner: Path) -> str:
    """The learner file's MIGRATIONS with exactly the later chapters' migrations appended."""
    for node in ast.parse(learner.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "MIGRATIONS"
            and isinstance(node.value, ast.Tuple)
        ):
            node.value.elts.extend(ast.Name(id=name, ctx=ast.Load()) for name in LATER_MIGRATIONS)
            return ast.dump(node.value, include_attributes=False)
    raise AssertionError(f"{learner.name} defines no MIGRATIONS tuple")


def test_the_runtime_store_is_chapter_5s_store_plus_chapter_6s() -> None:
    # Nothing in store.py comes from nowhere: each definition is taught by chapter 5 or 6,
    # and each constant too, but the migrations later chapters append.
    taught = set(definitions(CHAPTER_5_LEARNER)) | set(definitions(LEARNER))
    assert set(definitions(STORE)) <= taught
    taught_constants = set(constants(CHAPTER_5_LEARNER)) | set(constants(LEARNER))
    assert set(constants(STORE)) <= taught_constants | set(LATER_MIGRATIONS)


def test_the_runtime_migrates_with_chapter_6s_list_of_two_then_the_later_chapters() -> None:
    store = sovereign_agent.store
    later = tuple(getattr(store, name) for name in LATER_MIGRATIONS)
    assert (store.SCHEMA_V1, store.RESERVATIONS_V2, *later) == store.MIGRATIONS


def test_importing_the_learner_file_prints_nothing_and_touches_no_file(tmp_path: Path) -> None:
    (tmp_path / "reservations.py").write_text(LEARNER.read_text(encoding="utf-8"), encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import reservations, sys; sys.stderr.write(str(len(reservations.MIGRATIONS)))",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == "2"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == [
        "reservations.py"
    ]


def test_a_provider_that_drafts_the_same_saves_the_same_drafts() -> None:
    vanilla = '{"sku": "SKU-VANILLA", "quantity": 9}'
    chocolate = '{"sku": "SKU-CHOCOLATE", "quantity": 1}'
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls([("call_a", "list_stock", "{}")]),
            openai_tool_calls(
                [("call_b", "draft_order", vanilla), ("call_c", "draft_order", chocolate)]
            ),
            openai_text("Two drafts, 2,550 pence."),
        )
        result = run_with_provider(stub)
    assert result.returncode == 0, result.stderr
    expected = chapter_checkpoint_output().splitlines()
    lines = result.stdout.splitlines()
    model_line = expected.index("model: offline (scripted)")
    assert lines[model_line].startswith("model: openai:test-model")
    assert lines[:model_line] == expected[:model_line]
    assert lines[model_line + 1 :] == expected[model_line + 1 :]


def test_a_provider_that_drafts_chapter_5s_need_saves_nothing_for_it() -> None:
    # 6 vanilla and 4 strawberry: right for the freezer, wrong for the shop.
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls(
                [
                    ("call_a", "draft_order", '{"sku": "SKU-VANILLA", "quantity": 6}'),
                    ("call_b", "draft_order", '{"sku": "SKU-STRAWBERRY", "quantity": 4}'),
                ]
            ),
            openai_text("I drafted what the freezer needs."),
        )
        result = run_with_provider(stub)
    assert result.returncode == 0, result.stderr
    assert "saved draft" not in result.stdout
    assert "morning plan: no open draft: 0 pence in all" in result.stdout
    # The day goes on the same: the van and the cafe move no need.
    assert "receive 4 SKU-STRAWBERRY, expected: on hand 5, incoming 0, need 0" in result.stdout


def test_a_provider_named_without_its_key_is_refused_before_any_store_is_made(
    tmp_path: Path,
) -> None:
    result = run_offline(tmp_path, SOVEREIGN_MODEL="anthropic:test-model")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "ANTHROPIC_API_KEY" in result.stderr
    assert list(tmp_path.iterdir()) == []
