"""Chapter 2's reader-facing files: the checkpoint's exact output, the learner file's behaviour."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from chapter_files import definitions, parts

from bookproof.layout import default_layout

ROOT = default_layout().root
CHECKPOINT = parts(2).checkpoint
LEARNER = parts(2).learner
CHAPTER_1 = parts(1).checkpoint

EXPECTED_CHECKPOINT = (
    "[('SKU-CHOCOLATE', 0), ('SKU-STRAWBERRY', 4), ('SKU-VANILLA', 6)]\n"
    '{"ok": true, "value": {"currency": "GBP", "quantity": 6, "sku": "SKU-VANILLA", '
    '"status": "DRAFT", "supplier": "lucy-local", "total_pence": 1500, "unit_cost_pence": 250}}\n'
    '{"error": "invalid_arguments", "ok": false}\n'
)


def run_python(code_or_path: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    if isinstance(code_or_path, Path):
        argv = [sys.executable, str(code_or_path)]
    else:
        argv = [sys.executable, "-c", code_or_path]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_checkpoint_runs_from_any_working_directory(tmp_path: Path) -> None:
    result = run_python(CHECKPOINT, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED_CHECKPOINT


def test_chapter_1_fixture_is_importable_without_side_effects(tmp_path: Path) -> None:
    code = (
        "import runpy, json; "
        f"shop = runpy.run_path({str(CHAPTER_1)!r})['SHOP']; "
        "import sys; sys.stderr.write(json.dumps(shop['products']))"
    )
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert len(json.loads(result.stderr)) == 3


def test_learner_file_imports_silently_without_the_runtime(tmp_path: Path) -> None:
    # Saved and imported the way a reader does: as a module of their own.
    (tmp_path / "shop_tools.py").write_text(LEARNER.read_text(encoding="utf-8"), encoding="utf-8")
    code = (
        "import sys\n"
        "import shop_tools\n"
        "roots = {m.split('.')[0] for m in sys.modules}\n"
        "leaked = sorted(roots & {'sovereign_agent', 'bookproof'})\n"
        "sys.stderr.write(repr(leaked))\n"
    )
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr == "[]"


def test_learner_file_loads_through_importlib_without_registration(tmp_path: Path) -> None:
    # Tools (the verifier, the grader) load files by path; the learner file must
    # not depend on being registered in sys.modules first.
    code = (
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('shop_tools', {str(LEARNER)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
    )
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


def test_learner_file_drafts_1500_pence_from_its_own_build_tools(tmp_path: Path) -> None:
    code = (
        "import json, runpy\n"
        f"ns = runpy.run_path({str(LEARNER)!r})\n"
        "first, second = ns['build_tools'](ns['SHOP']), ns['build_tools'](ns['SHOP'])\n"
        "call = ns['ToolCall']\n"
        "request = {'sku': 'SKU-VANILLA', 'quantity': 6}\n"
        "draft = first.invoke(call(id='c1', name='draft_order', arguments=request))\n"
        "report = first.invoke(call(id='c2', name='list_stock', arguments={}))\n"
        "report['value'][2]['on_hand'] = 99\n"
        "other = second.invoke(call(id='c3', name='list_stock', arguments={}))\n"
        "other_stock = [row['on_hand'] for row in other['value']]\n"
        "print(json.dumps([draft, other_stock, ns['SHOP']['products'][0]['on_hand']]))\n"
    )
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    draft, other_stock, fixture_vanilla = json.loads(result.stdout)
    assert draft["ok"] is True
    assert draft["value"]["total_pence"] == 1500
    assert draft["value"]["status"] == "DRAFT"
    assert other_stock == [7, 1, 2]
    assert fixture_vanilla == 2


def test_learner_fixture_is_the_chapter_1_fixture(tmp_path: Path) -> None:
    code = (
        "import json, runpy\n"
        f"learner = runpy.run_path({str(LEARNER)!r})['SHOP']\n"
        f"chapter_1 = runpy.run_path({str(CHAPTER_1)!r})['SHOP']\n"
        "print(json.dumps(learner == chapter_1))\n"
    )
    assert run_python(code, cwd=tmp_path).stdout.strip() == "true"


def test_every_learner_definition_lives_in_the_runtime() -> None:
    # The learner file is self-contained by design. Whether each copy is the
    # runtime's current version is held by test_runtime_grows_with_the_chapters;
    # this test says the copy holds nothing the runtime lacks, and the chapter's core.
    runtime = definitions(ROOT / "src/sovereign_agent/tools.py") | definitions(
        ROOT / "src/sovereign_agent/shop.py"
    )
    learner = definitions(LEARNER)
    assert set(learner) <= set(runtime)
    taught = {
        "ToolCall",
        "ExecutableTool",
        "ToolOutcome",
        "Dispatcher",
        "build_tools",
        "draft_order",
    }
    assert taught <= set(learner)
