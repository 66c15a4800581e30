"""The reader's doors: a chapter's checkpoint by number, and a workspace for the exercises."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bookproof.layout import REPO_ROOT
from bookproof.workspace import WorkspaceError, start_book

ROOT = REPO_ROOT
MANIFEST = tomllib.loads((ROOT / "book" / "textbook" / "book.toml").read_text(encoding="utf-8"))
DRAFTED = [c for c in MANIFEST["chapters"] if c["status"] == "drafted"]
PLANNED = [c for c in MANIFEST["chapters"] if c["status"] == "planned"]


def script(name: str, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SOVEREIGN_", "OPENAI_", "ANTHROPIC_"))
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / name), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**clean, **env},
        cwd=ROOT,
    )


def test_a_checkpoint_runs_by_its_chapter_number_exactly_as_by_its_file() -> None:
    by_number = script("checkpoint.py", "2")
    by_file = subprocess.run(
        [sys.executable, str(ROOT / "book" / "textbook" / DRAFTED[1]["checkpoint"])],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd="/",
    )
    assert by_number.returncode == by_file.returncode == 0
    assert by_number.stdout == by_file.stdout
    assert '"total_pence": 1500' in by_number.stdout


def test_the_checkpoint_passes_on_its_exit_status() -> None:
    result = script("checkpoint.py", "3", SOVEREIGN_MODEL="anthropic:test-model")
    assert result.returncode == 2
    assert result.stderr.startswith("cannot start: ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["99"], "checkpoint: the book has no chapter 99 (chapters 1 to 14)\n"),
        (["0"], "checkpoint: the book has no chapter 0 (chapters 1 to 14)\n"),
    ]
    + [
        (
            [str(c["number"])],
            f"checkpoint: chapter {c['number']} ({c['title']}) is planned: "
            "it has no checkpoint yet\n",
        )
        for c in PLANNED[:1]
    ],
)
def test_a_chapter_without_a_checkpoint_is_one_line_and_status_2(argv, message) -> None:
    result = script("checkpoint.py", *argv)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", message)


def test_the_list_names_every_chapter_and_its_file() -> None:
    result = script("checkpoint.py", "--list")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert len(lines) == len(MANIFEST["chapters"])
    for chapter, line in zip(MANIFEST["chapters"], lines, strict=True):
        assert line.split()[0] == str(chapter["number"])
        assert line.endswith(chapter.get("checkpoint", "(planned)"))


MODEL_CHECKPOINTS = [
    c
    for c in DRAFTED
    if "model_from_env"
    in (ROOT / "book" / "textbook" / c["checkpoint"]).read_text(encoding="utf-8")
]


@pytest.mark.parametrize("chapter", MODEL_CHECKPOINTS, ids=lambda c: f"ch{c['number']:02d}")
def test_every_checkpoint_reports_a_missing_prerequisite_the_same_way(chapter) -> None:
    """A provider named without its key: one line on stderr, nothing on stdout, status 2."""
    result = script("checkpoint.py", str(chapter["number"]), SOVEREIGN_MODEL="openai:test-model")
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("cannot start: ")
    assert result.stderr.count("\n") == 1
    assert "OPENAI_API_KEY" in result.stderr


# Checkpoints that never ask a provider, each with its reason: every other
# one must build its model from the environment, so none is left out silently.
OFFLINE_ONLY = {
    2: "chapter 2 runs no model",
    10: "chapter 10's scripted model only sets up the approvals the chapter is about",
    11: "chapter 11's scripted model only places the approved orders the chapter sends",
    12: "chapter 12's scripted morning model must answer the same way after a worker dies",
    13: "chapter 13's limits are met by local tools and hand-written streams, on a virtual clock",
    14: "chapter 14's scripted model writes the exact program whose sandboxed run it shows",
}


def test_every_model_checkpoint_is_covered() -> None:
    assert [c["number"] for c in MODEL_CHECKPOINTS] == [
        c["number"] for c in DRAFTED if c["number"] not in OFFLINE_ONLY
    ]


def test_starting_a_book_copies_the_exercise_book_file_for_file(tmp_path: Path) -> None:
    started = start_book(2, into=tmp_path / "book02")
    assert started.fresh
    # The copy is made from the folder on disk, as the learner has it (work
    # done there by mistake comes along), so that is what it is compared with.
    starter = REPO_ROOT / "exercises" / "book02"
    assert sorted(p.name for p in started.folder.iterdir()) == sorted(
        p.name for p in starter.iterdir() if p.is_file()
    )
    assert (started.folder / "shop_tools.py").read_bytes() == (
        starter / "shop_tools.py"
    ).read_bytes()
    # No half-made folder is left beside it.
    assert [p.name for p in tmp_path.iterdir()] == ["book02"]


def test_starting_again_never_overwrites_work_and_brings_back_what_is_missing(
    tmp_path: Path,
) -> None:
    folder = start_book(2, into=tmp_path / "book02").folder
    (folder / "shop_tools.py").write_text("# my work\n", encoding="utf-8")
    (folder / "test_book02_mango.py").write_text("def test_mine(): pass\n", encoding="utf-8")
    (folder / "unit_a.ipynb").unlink()

    again = start_book(2, into=folder)

    assert not again.fresh
    assert again.copied == (Path("unit_a.ipynb"),)
    assert (folder / "shop_tools.py").read_text(encoding="utf-8") == "# my work\n"
    assert (folder / "test_book02_mango.py").exists()
    assert start_book(2, into=folder).copied == ()


def test_a_file_where_the_folder_should_be_is_refused(tmp_path: Path) -> None:
    (tmp_path / "book02").write_text("not a folder", encoding="utf-8")
    with pytest.raises(WorkspaceError, match="exists and is not a folder"):
        start_book(2, into=tmp_path / "book02")
    assert (tmp_path / "book02").read_text(encoding="utf-8") == "not a folder"


def test_the_command_says_where_to_work_and_refuses_a_book_it_cannot_copy(
    tmp_path: Path,
) -> None:
    made = script("start_exercises.py", "3", "--into", str(tmp_path / "mine"))
    assert made.returncode == 0, made.stderr
    assert f"jupyter lab {tmp_path / 'mine'}" in made.stdout
    assert f"grade_exercises.py --book 3 {tmp_path / 'mine'}" in made.stdout
    missing = script("start_exercises.py", "99")
    assert missing.returncode == 2
    assert missing.stderr == "start_exercises: the book has no chapter 99 (chapters 1 to 14)\n"
    assert not (tmp_path / "book99").exists()


# A book with a planned chapter: every chapter of this book may be drafted,
# and the refusal still has to hold for a book that is not finished.
FIXTURE_BOOK = Path(__file__).parent / "verify_fixtures" / "book_good"


def test_a_planned_book_is_refused_and_nothing_is_made(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="is planned: it has no exercise book yet"):
        start_book(2, root=FIXTURE_BOOK, into=tmp_path / "book02")
    assert not (tmp_path / "book02").exists()


def test_the_workspace_is_ignored_by_git() -> None:
    assert "/work/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
