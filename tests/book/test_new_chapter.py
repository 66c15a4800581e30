"""`scripts/new_chapter.py`: a planned chapter laid out on a scratch copy of the repository.

The laid-out chapter, once marked drafted, is accepted by the verifier (its
listing, checkpoint, learner file and folders), by the site build, and by the
manifest-driven structure test. The scratch copy holds the manifest only, the
book's other chapters marked planned: the rest of the book is proved by CI's
own verifier run and site build, and the question here is the new chapter's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from chapter_files import chapter_problems

from bookproof.layout import BookLayout, default_layout, load_manifest

REPO = default_layout()
TITLE = "Remote tool servers"


def run_script(script: str, *arguments: str | Path) -> subprocess.CompletedProcess[str]:
    """One of the repository's scripts, run as an author runs it."""
    return subprocess.run(
        [sys.executable, str(REPO.root / "scripts" / script), *map(str, arguments)],
        cwd=REPO.root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture
def scratch(tmp_path: Path) -> BookLayout:
    """A repository holding this book's manifest, every chapter in it planned, and nothing else.

    Each chapter's parts are unnamed too, as before its author laid them out:
    chapter 9, laid out here, is drafted in the real book.
    """
    layout = BookLayout(tmp_path / "repo")
    layout.textbook.mkdir(parents=True)
    text = REPO.manifest.read_text(encoding="utf-8")
    text = re.sub(
        r'^(?:text|checkpoint|learner|exercises|solutions) = ".*"\n', "", text, flags=re.M
    )
    layout.manifest.write_text(text.replace('status = "drafted"', 'status = "planned"'), "utf-8")
    return layout


def files_under(root: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def draft(layout: BookLayout, number: int) -> None:
    """Mark chapter `number` drafted, as its author does once it is written."""
    text = layout.manifest.read_text(encoding="utf-8")
    entry = re.compile(rf'(number = {number}\n(?:.+\n)*?)status = "planned"')
    layout.manifest.write_text(entry.sub(r'\1status = "drafted"', text, count=1), "utf-8")


def test_a_new_chapter_verifies_builds_and_has_all_its_parts(scratch: BookLayout) -> None:
    made = run_script("new_chapter.py", "--root", scratch.root, "9", TITLE)
    assert made.returncode == 0, made.stderr
    assert made.stderr == ""
    parts = scratch.planned_parts(9, TITLE)
    assert f"wrote {parts.text.relative_to(scratch.root)}" in made.stdout
    # Still planned, but already naming its parts: drafting it is one word.
    chapter = load_manifest(scratch.manifest).chapter(9)
    assert chapter is not None and not chapter.drafted
    assert 'text = "ch09_remote_tool_servers.md"' in scratch.manifest.read_text("utf-8")

    draft(scratch, 9)
    chapter = load_manifest(scratch.manifest).chapter(9)
    assert chapter is not None and chapter.drafted
    assert chapter_problems(scratch, chapter) == []

    # One build, which verifies the drafted chapter first (every listing,
    # checkpoint and learner file), then publishes it.
    out = scratch.root / "site"
    built = run_script("build_site.py", "--manifest", scratch.manifest, "--out", out)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "1 chapter(s) verified, 1 hold" in built.stdout
    html = out / "html"
    page = (html / "book/textbook/ch09_remote_tool_servers.html").read_text("utf-8")
    assert "Chapter 9. Remote tool servers" in page
    assert (html / "exercises/book09/README.html").is_file()
    assert (html / "exercises/book09/unit_a.html").is_file()
    assert "Skeleton" in (html / "glossary.html").read_text("utf-8")


def test_a_part_gone_missing_is_named(scratch: BookLayout) -> None:
    assert run_script("new_chapter.py", "--root", scratch.root, "9", TITLE).returncode == 0
    draft(scratch, 9)
    chapter = load_manifest(scratch.manifest).chapter(9)
    assert chapter is not None
    parts = scratch.parts(chapter)
    (parts.exercises / "unit_b.ipynb").unlink()
    parts.learner.unlink()
    problems = chapter_problems(scratch, chapter)
    assert f"chapter 9: no file {parts.learner}" in problems
    assert any("unit_b.ipynb" in problem for problem in problems)


def test_it_never_overwrites_and_refuses_before_writing_anything(scratch: BookLayout) -> None:
    parts = scratch.planned_parts(9, TITLE)
    parts.learner.parent.mkdir(parents=True)
    parts.learner.write_text("# the author's own work\n", encoding="utf-8")
    before = files_under(scratch.root)
    refused = run_script("new_chapter.py", "--root", scratch.root, "9", TITLE)
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr.count("\n") == 1
    assert refused.stderr.startswith("new_chapter: chapter 9 already has files: ")
    assert str(parts.learner.relative_to(scratch.root)) in refused.stderr
    assert files_under(scratch.root) == before


def test_laying_out_twice_refuses_the_second_time(scratch: BookLayout) -> None:
    assert run_script("new_chapter.py", "--root", scratch.root, "9", TITLE).returncode == 0
    before = files_under(scratch.root)
    again = run_script("new_chapter.py", "--root", scratch.root, "9", TITLE)
    assert (again.returncode, again.stdout) == (2, "")
    assert "already has files" in again.stderr
    draft(scratch, 9)
    drafted = run_script("new_chapter.py", "--root", scratch.root, "9", TITLE)
    assert drafted.stderr == "new_chapter: chapter 9 is already drafted: nothing to lay out\n"
    assert files_under(scratch.root) == {**before, scratch.manifest: scratch.manifest.read_bytes()}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["15", "Extra"], "new_chapter: chapter 15 is not in "),
        (["9", "Remote servers"], "new_chapter: chapter 9 is titled 'Remote tool servers'"),
        (["9", "Remote\ntool servers"], "new_chapter: bad title "),
        (["9", '"; status = "drafted'], "new_chapter: bad title "),
        (["9", TITLE, "--module", "class"], "new_chapter: bad module name 'class'"),
    ],
)
def test_bad_requests_are_one_line_and_write_nothing(
    scratch: BookLayout, arguments: list[str], message: str
) -> None:
    before = files_under(scratch.root)
    refused = run_script("new_chapter.py", "--root", scratch.root, *arguments)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr.startswith(message), refused.stderr
    assert refused.stderr.count("\n") == 1
    assert files_under(scratch.root) == before


def test_help_names_the_arguments() -> None:
    shown = run_script("new_chapter.py", "--help")
    assert shown.returncode == 0
    assert "number" in shown.stdout and "title" in shown.stdout and "--module" in shown.stdout
