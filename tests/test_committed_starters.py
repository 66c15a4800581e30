"""The project's tests read the exercise starters as committed, whatever a learner did to them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from committed import EXERCISES, ROOT, export_index

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(root: Path, *argv: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *argv], capture_output=True, text=True, check=True
    ).stdout


def test_an_edit_in_the_working_tree_is_not_what_the_tests_read(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "exercises" / "book02").mkdir(parents=True)
    starter = repo / "exercises" / "book02" / "shop_tools.py"
    starter.write_text("STARTER = 1\n", encoding="utf-8")
    git(repo.parent, "init", "-q", str(repo))
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "starter")
    # What a learner does by mistake: edits the starter, adds a test, deletes a plan.
    starter.write_text("MY_WORK = 1\n", encoding="utf-8")
    (repo / "exercises" / "book02" / "test_mine.py").write_text("x = 1\n", encoding="utf-8")

    exported = export_index(repo, "exercises", tmp_path / "export")

    assert exported is not None
    assert (exported / "book02" / "shop_tools.py").read_text(encoding="utf-8") == "STARTER = 1\n"
    assert not (exported / "book02" / "test_mine.py").exists()
    assert starter.read_text(encoding="utf-8") == "MY_WORK = 1\n"


def test_a_folder_outside_git_is_read_from_disk(tmp_path: Path) -> None:
    assert export_index(tmp_path, "exercises", tmp_path / "export") is None


def test_this_checkouts_starters_are_the_indexed_ones() -> None:
    listed = git(ROOT, "ls-files", "exercises").split()
    assert listed, "no exercises are tracked"
    for name in listed:
        indexed = subprocess.run(
            ["git", "-C", str(ROOT), "show", f":{name}"], capture_output=True, check=True
        ).stdout
        assert (EXERCISES.parent / name).read_bytes() == indexed, name
