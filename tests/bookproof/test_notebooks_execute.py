"""Every exercise notebook's non-exercise cells run, in order, beside the starter they import.

No Jupyter kernel: the code cells (minus those tagged `exercise`) are joined
into one script and run by a real Python subprocess whose working directory
is a temporary copy of the exercise folder, as a learner's would be.

Each notebook's first run, beside the untouched starter, is made once for the
whole file and shared: the test that it runs, the test that running it again
keeps the learner's files (it runs the second time in the folder the first
run left) and the test of what the starter shows all read that one run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from committed import EXERCISES
from exercise_books import in_memory

from bookproof.layout import REPO_ROOT
from bookproof.notebooks.build import EXERCISE_TAG

ROOT = REPO_ROOT
NOTEBOOKS = sorted((EXERCISES).glob("book[0-9][0-9]/unit_*.ipynb"))


def _script(notebook_path: Path) -> str:
    notebook = nbformat.read(notebook_path, as_version=4)
    cells = [
        cell.source
        for cell in notebook.cells
        if cell.cell_type == "code" and EXERCISE_TAG not in cell.metadata.get("tags", [])
    ]
    return "\n\n".join(cells) + "\n"


def _run(
    folder: Path, script: str, temporary: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The cells as one script in `folder`; its temporary files (TMPDIR) in `temporary` if given."""
    (folder / "_notebook_cells.py").write_text(script, encoding="utf-8")
    env = dict(os.environ) if temporary is None else {**os.environ, "TMPDIR": str(temporary)}
    return subprocess.run(
        [sys.executable, "_notebook_cells.py"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@dataclass(frozen=True)
class FirstRun:
    """A notebook's cells run once beside the untouched starter, and the folder they left."""

    folder: Path
    temporary: Path
    script: str
    completed: subprocess.CompletedProcess[str]


FirstRuns = Callable[[Path], FirstRun]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirstRuns]:
    """Each notebook's first run, made when a test first asks for it and kept for the file.

    The copies live in memory where the machine has a file system there: the
    cells write real SQLite stores and run pytest over the learner's tests,
    and on a shared disk every commit waited for it.
    """
    made: dict[Path, FirstRun] = {}
    with in_memory(tmp_path_factory.mktemp("notebooks")) as base:

        def of(notebook: Path) -> FirstRun:
            if notebook not in made:
                own = base / f"{notebook.parent.name}_{notebook.stem}"
                folder, temporary = own / notebook.parent.name, own / "tmp"
                shutil.copytree(
                    notebook.parent, folder, ignore=shutil.ignore_patterns("__pycache__")
                )
                temporary.mkdir()
                script = _script(notebook)
                completed = _run(folder, script, temporary)
                made[notebook] = FirstRun(folder, temporary, script, completed)
            return made[notebook]

        yield of


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_notebook_setup_and_check_cells_run_with_the_starter(
    first_run: FirstRuns, notebook: Path
) -> None:
    completed = first_run(notebook).completed
    assert completed.returncode == 0, completed.stderr


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_running_the_cells_again_never_overwrites_the_learners_files(
    first_run: FirstRuns, notebook: Path
) -> None:
    first = first_run(notebook)
    assert first.completed.returncode == 0
    # Again in the folder the first run left (no other test runs anything there).
    folder, script = first.folder, first.script
    created = sorted(path for path in folder.glob("test_*.py"))
    for path in created:
        path.write_text("# my own tests\n", encoding="utf-8")
    again = _run(folder, script, first.temporary)
    assert again.returncode == 0, again.stderr
    for path in created:
        assert path.read_text(encoding="utf-8") == "# my own tests\n"


def test_book02_check_cells_show_the_exercises_done_with_the_solution(tmp_path: Path) -> None:
    folder = tmp_path / "book02"
    shutil.copytree(EXERCISES / "book02", folder)
    shutil.copyfile(ROOT / "solutions" / "book02" / "shop_tools.py", folder / "shop_tools.py")
    unit_a = _run(folder, _script(folder / "unit_a.ipynb"))
    assert unit_a.returncode == 0, unit_a.stderr
    assert '"total_pence": 1500' in unit_a.stdout
    assert "two mango rows: refused with ValueError" in unit_a.stdout
    unit_b = _run(folder, _script(folder / "unit_b.ipynb"))
    assert unit_b.returncode == 0, unit_b.stderr
    assert "report need for vanilla: 9" in unit_b.stdout
    assert '{"error": "tool_not_allowed", "ok": false}' in unit_b.stdout
    assert '{"ok": true, "value": "probe ran"}' in unit_b.stdout
    assert "two probes, one name: refused with ValueError" in unit_b.stdout
    unit_c = _run(folder, _script(folder / "unit_c.ipynb"))
    assert unit_c.returncode == 0, unit_c.stderr
    assert "{'sku': 'SKU-CHOCOLATE', 'tubs': 3} -> tool_failed" in unit_c.stdout
    assert "{'sku': 'SKU-STRAWBERRY', 'tubs': '2'} -> invalid_arguments" in unit_c.stdout
    assert unit_c.stdout.count("promised: [{'sku': 'SKU-CHOCOLATE', 'tubs': 3}]") == 2


def test_starter_shows_the_exercises_not_yet_done(first_run: FirstRuns) -> None:
    unit_b = first_run(EXERCISES / "book02" / "unit_b.ipynb").completed
    assert "need with 3 reserved: 6" in unit_b.stdout
    assert "two probes, one name: built" in unit_b.stdout
