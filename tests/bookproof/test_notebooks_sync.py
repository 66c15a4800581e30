"""Every exercise notebook is exactly what its unit plan generates, and the sync reports drift."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from committed import EXERCISES
from hypothesis import given
from hypothesis import strategies as st

from bookproof.layout import REPO_ROOT
from bookproof.notebooks.build import EXERCISE_MARKER, EXERCISE_TAG, notebook_json, plan_cells
from bookproof.notebooks.sync import pending, plans

ROOT = REPO_ROOT
SCRIPT = ROOT / "scripts" / "sync_notebooks.py"


def _sync(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_committed_notebooks_match_their_plans() -> None:
    assert plans(ROOT), "no unit plans found under exercises/"
    stale = [f"{item.reason}: {item.notebook.relative_to(ROOT)}" for item in pending(ROOT)]
    assert stale == [], "run: uv run python scripts/sync_notebooks.py"


def test_book02_has_both_units_as_valid_nbformat_4_notebooks() -> None:
    for unit in ("unit_a", "unit_b"):
        notebook = nbformat.read(EXERCISES / "book02" / f"{unit}.ipynb", as_version=4)
        nbformat.validate(notebook)
        assert notebook.nbformat == 4
        exercises = [c for c in notebook.cells if EXERCISE_TAG in c.metadata.get("tags", [])]
        assert exercises and all(EXERCISE_MARKER in c.source for c in exercises)
        assert any(c.cell_type == "code" and c not in exercises for c in notebook.cells)


def test_check_names_the_stale_notebook_and_sync_repairs_it(tmp_path: Path) -> None:
    shutil.copytree(EXERCISES, tmp_path / "exercises")
    plan = tmp_path / "exercises" / "book02" / "unit_b.md"
    plan.write_text(plan.read_text(encoding="utf-8") + "\nOne more sentence.\n", encoding="utf-8")
    checked = _sync(tmp_path, "--check")
    assert checked.returncode == 1
    assert "stale: exercises/book02/unit_b.ipynb" in checked.stdout
    assert "unit_a" not in checked.stdout
    before = (tmp_path / "exercises" / "book02" / "unit_a.ipynb").read_bytes()
    assert _sync(tmp_path).returncode == 0
    assert _sync(tmp_path, "--check").returncode == 0
    # Regenerating an unchanged plan rewrites nothing: byte-identical output.
    assert (tmp_path / "exercises" / "book02" / "unit_a.ipynb").read_bytes() == before


def test_sync_is_generic_over_books(tmp_path: Path) -> None:
    book = tmp_path / "exercises" / "book07"
    book.mkdir(parents=True)
    (book / "unit_a.md").write_text("# Seven\n\n```python\nx = 1\n```\n", encoding="utf-8")
    (book / "unit_z.ipynb").write_text("{}", encoding="utf-8")
    checked = _sync(tmp_path, "--check")
    assert checked.returncode == 1
    assert "missing: exercises/book07/unit_a.ipynb" in checked.stdout
    assert "orphaned: exercises/book07/unit_z.ipynb" in checked.stdout


def test_plan_blocks_become_markdown_code_and_exercise_cells() -> None:
    plan = (
        "# Title\n\nProse.\n\n```python\nprint(1)\n```\n\n```bash\nls\n```\n\n"
        "```python exercise\n# add the mango row\n```\n\nEnd.\n"
    )
    cells = plan_cells(plan)
    assert [c.kind for c in cells] == ["markdown", "code", "markdown", "exercise", "markdown"]
    assert cells[1].source == "print(1)"
    assert cells[2].source == "```bash\nls\n```"
    assert cells[3].source == f"{EXERCISE_MARKER}\n# add the mango row"


def test_a_new_file_block_becomes_a_cell_that_writes_the_file_once(tmp_path: Path) -> None:
    template = 'import pytest\n\n\ndef test_first():\n    assert "a" == "a"\n'
    (cell,) = plan_cells(f"```python new-file=test_mine.py\n{template}```\n")
    assert cell.kind == "code"
    target = tmp_path / "test_mine.py"
    first = subprocess.run(
        [sys.executable, "-c", cell.source], cwd=tmp_path, capture_output=True, text=True
    )
    assert first.returncode == 0 and "wrote test_mine.py" in first.stdout
    assert target.read_text(encoding="utf-8") == template
    target.write_text("# the learner's own work\n", encoding="utf-8")
    again = subprocess.run(
        [sys.executable, "-c", cell.source], cwd=tmp_path, capture_output=True, text=True
    )
    assert "leaves it as it is" in again.stdout
    assert target.read_text(encoding="utf-8") == "# the learner's own work\n"


@pytest.mark.parametrize("name", ["../escape.py", "/tmp/x.py", "a b.py", ""])
def test_a_new_file_block_must_name_a_plain_file(name: str) -> None:
    with pytest.raises(ValueError, match="line 1"):
        plan_cells(f"```python new-file={name}\nx = 1\n```\n")


markdown_text = st.lists(
    st.sampled_from(
        [
            "# H\n",
            "text\n",
            "\n",
            "```python\nx = 1\n```\n",
            "```python exercise\n```\n",
            "```python new-file=test_x.py\nx = 1\n```\n",
            "```text\nout\n```\n",
            "- item\n",
            "| a | b |\n|---|---|\n| 1 | 2 |\n",
            "`code`\n",
        ]
    )
    | st.text(max_size=20),
    max_size=12,
).map("".join)


@given(markdown_text)
def test_any_plan_gives_a_valid_deterministic_notebook(plan: str) -> None:
    try:
        first = notebook_json(plan, source_name="unit_x.md")
    except ValueError:
        # Only an unknown `python` flag is refused, and it says where.
        return
    assert first == notebook_json(plan, source_name="unit_x.md")
    nbformat.validate(nbformat.reads(first, as_version=4))
