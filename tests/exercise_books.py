"""What the tests of an exercise book share: a hand-in folder, a child Python, a notebook's cells.

A hand-in is a fresh folder holding one module (the starter, the reference
solution, or a faulty version of it) and the solution's learner-side tests,
run by a real Python subprocess from inside the folder, as a learner runs them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import nbformat

from bookproof.notebooks.build import EXERCISE_TAG

__all__ = [
    "PYTEST",
    "check_cell_lines",
    "hand_in",
    "in_memory",
    "load_module",
    "notebook_script",
    "run_in",
]

# The learner-side tests, run inside a hand-in as a learner runs them.
PYTEST = ("-m", "pytest", "-q", "-p", "no:cacheprovider")

# A file system in memory, where the machine has one.
MEMORY = Path("/dev/shm")


def hand_in(tmp_path: Path, solutions: Path, module: str, text: str) -> Path:
    """A folder holding `module` with `text`, and every `test_*.py` of `solutions`."""
    folder = tmp_path / "hand-in"
    folder.mkdir()
    (folder / module).write_text(text, encoding="utf-8")
    for path in solutions.glob("test_*.py"):
        shutil.copyfile(path, folder / path.name)
    return folder


def load_module(text: str, tmp_path: Path, book: str, module: str) -> ModuleType:
    """`text` imported in this process as the grader's door sees it: `tmp_path/module.py`.

    Registered under `book_module` only while it runs (a dataclass or a
    Pydantic model looks its module up), so no two tests share one.
    """
    path = tmp_path / f"{module}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"{book}_{module}", path)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = loaded
    try:
        spec.loader.exec_module(loaded)
    finally:
        del sys.modules[spec.name]
    return loaded


def run_in(
    folder: Path, *argv: str, temporary_in_memory: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run the test interpreter with `argv` from inside `folder`.

    With `temporary_in_memory`, the child's temporary files (TMPDIR: Python's
    `tempfile`, pytest's `tmp_path`) go to a folder of their own in memory,
    where the machine has one. They are still real files, SQLite's
    included; only the wait for the disk at every commit is gone, which for
    a state machine committing at every step of hundreds of sequences is most
    of its time on a busy machine.
    """
    if not (temporary_in_memory and memory_usable()):
        return _run(folder, argv, dict(os.environ))
    with in_memory(folder) as temporary:
        return _run(folder, argv, {**os.environ, "TMPDIR": str(temporary)})


def memory_usable() -> bool:
    return MEMORY.is_dir() and os.access(MEMORY, os.W_OK)


@contextmanager
def in_memory(otherwise: Path) -> Iterator[Path]:
    """A new folder in memory, removed afterwards; where the machine has none, `otherwise`."""
    if not memory_usable():
        yield otherwise
        return
    with tempfile.TemporaryDirectory(dir=MEMORY, prefix="bookproof-tests-") as made:
        yield Path(made)


def _run(
    folder: Path, argv: tuple[str, ...], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def notebook_script(notebook: Path) -> str:
    """A notebook's code cells, those tagged as exercises left out, as one script."""
    cells = nbformat.read(notebook, as_version=4).cells
    return "\n\n".join(
        cell.source
        for cell in cells
        if cell.cell_type == "code" and EXERCISE_TAG not in cell.metadata.get("tags", [])
    )


def check_cell_lines(
    tmp_path: Path, book: Path, module: str, text: str, unit: str, *left_out: str
) -> list[str]:
    """What a unit's notebook prints with `text` as the learner's `module`, line by line.

    Its code cells, exercise cells left out, run as one script in a copy of the
    exercise book `book` (without `__pycache__` and the `left_out` patterns).
    """
    folder = tmp_path / book.name
    shutil.copytree(book, folder, ignore=shutil.ignore_patterns("__pycache__", *left_out))
    (folder / module).write_text(text, encoding="utf-8")
    (folder / "_cells.py").write_text(notebook_script(folder / f"{unit}.ipynb"), encoding="utf-8")
    result = run_in(folder, "_cells.py")
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()
