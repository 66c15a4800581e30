"""A learner's own copy of an exercise book, in a folder the repository ignores.

The committed books in `exercises/` are the starters every learner begins
from, and the project's own tests read them. Work done there would be one
`git checkout` away from being lost and would change what those tests see, so
the learner works in `work/bookNN/` instead: the same files, the notebooks
opened there, their cells writing there, and the grader pointed there.

Starting a book that was started before never overwrites anything: the files
already there are the learner's work, so only files missing from the copy
(a notebook deleted by mistake, say) are brought back.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bookproof.layout import REPO_ROOT, BookLayout, ManifestError, load_manifest

__all__ = ["WORKSPACE", "Started", "WorkspaceError", "main", "start_book", "starter_files"]

# Relative to the repository root; `.gitignore` lists it, so nothing a learner
# writes there shows up as a change to the project.
WORKSPACE = Path("work")


class WorkspaceError(Exception):
    """A request the command cannot carry out; its text is the one line shown."""


@dataclass(frozen=True)
class Started:
    """Where the book is, whether this run made the folder, and what it copied."""

    folder: Path
    fresh: bool
    copied: tuple[Path, ...]


def _starter(root: Path, number: int) -> Path:
    try:
        manifest = load_manifest(BookLayout(root).manifest)
    except ManifestError as error:
        raise WorkspaceError(str(error)) from None
    chapter = manifest.chapter(number)
    if chapter is None:
        numbers = [c.number for c in manifest.chapters]
        raise WorkspaceError(
            f"the book has no chapter {number} (chapters {numbers[0]} to {numbers[-1]})"
        )
    if chapter.exercises is None:
        raise WorkspaceError(
            f"chapter {number} ({chapter.title}) is planned: it has no exercise book yet"
        )
    if not chapter.exercises.is_dir():
        raise WorkspaceError(f"exercise book {number} is missing: {chapter.exercises}")
    return chapter.exercises


def starter_files(folder: Path) -> list[Path]:
    """The starter's regular files, relative to it; caches and links are no part of a book."""
    found: list[Path] = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        if path.is_file() and not path.is_symlink():
            found.append(relative)
    return found


def start_book(number: int, *, root: Path = REPO_ROOT, into: Path | None = None) -> Started:
    """Copy exercise book `number` to the workspace, or bring back what is missing from it.

    A fresh folder is filled beside its final place and renamed into it, so
    an interrupted copy never leaves half a book that a second run would take
    for the learner's work.
    """
    starter = _starter(root, number)
    target = into if into is not None else root / WORKSPACE / starter.name
    files = starter_files(starter)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            for relative in files:
                (staging / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(starter / relative, staging / relative)
            os.replace(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return Started(target, fresh=True, copied=tuple(files))
    if not target.is_dir() or target.is_symlink():
        raise WorkspaceError(f"{target} exists and is not a folder: nothing was copied")
    missing = [relative for relative in files if not (target / relative).exists()]
    for relative in missing:
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(starter / relative, target / relative)
    return Started(target, fresh=False, copied=tuple(missing))


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="start_exercises.py",
        description=(
            "Copy an exercise book into work/bookNN/, a folder the repository ignores, "
            "and work there: open its notebooks there and grade that folder. Run it "
            "again later and it brings back missing files only; it never overwrites "
            "your work."
        ),
    )
    parser.add_argument("book", type=int, help="the exercise book's number (its chapter's)")
    parser.add_argument(
        "--into",
        type=Path,
        metavar="DIR",
        help="copy into DIR instead of work/bookNN (for a second attempt, say)",
    )
    args = parser.parse_args(argv)
    try:
        started = start_book(args.book, into=args.into)
    except WorkspaceError as error:
        print(f"start_exercises: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"start_exercises: cannot copy the book: {error}", file=sys.stderr)
        return 1
    shown = _shown(started.folder, Path.cwd())
    if started.fresh:
        print(f"Exercise Book {args.book} copied to {shown}/ ({len(started.copied)} files).")
    elif started.copied:
        count = len(started.copied)
        print(f"{shown}/ already holds your work; brought back {count} missing file(s):")
        for relative in started.copied:
            print(f"  {relative}")
    else:
        print(f"{shown}/ already holds your work and nothing is missing; nothing was copied.")
    print()
    print("Open its notebooks with:")
    print(f"  uv run --group notebooks jupyter lab {shown}")
    print("Check your work with:")
    print(f"  uv run python scripts/grade_exercises.py --book {args.book} {shown}")
    return 0
