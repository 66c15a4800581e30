"""Run a chapter's checkpoint by its number, so a reader never types its file name.

The checkpoint files keep the long names they were published under (the
course's prefix, the chapter's number and its first working title), because
learners' notes and other courses refer to them; `book.toml` maps each
chapter to its file, and this door reads that map. The checkpoint then runs
exactly as if its path had been typed: same interpreter, working directory,
arguments and exit status.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bookproof.layout import DEFAULT_MANIFEST, REPO_ROOT, Manifest, ManifestError, load_manifest

__all__ = ["checkpoint_for", "main"]


class NoCheckpoint(Exception):
    """The chapter asked for has no checkpoint to run; the text is the line shown."""


def checkpoint_for(manifest: Manifest, number: int) -> Path:
    """The checkpoint file of drafted chapter `number`."""
    chapter = manifest.chapter(number)
    if chapter is None:
        numbers = [c.number for c in manifest.chapters]
        raise NoCheckpoint(
            f"the book has no chapter {number} (chapters {numbers[0]} to {numbers[-1]})"
        )
    if chapter.checkpoint is None:
        raise NoCheckpoint(
            f"chapter {number} ({chapter.title}) is planned: it has no checkpoint yet"
        )
    return chapter.checkpoint


def _listing(manifest: Manifest) -> str:
    lines = []
    for chapter in manifest.chapters:
        checkpoint = chapter.checkpoint
        where = str(checkpoint.relative_to(REPO_ROOT)) if checkpoint else "(planned)"
        lines.append(f"{chapter.number:>3}  {chapter.title:<32}  {where}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="checkpoint.py",
        description=(
            "Run chapter N's checkpoint, the chapter's code as one script, exactly as "
            "the chapter shows it. Offline unless SOVEREIGN_MODEL names a provider."
        ),
        epilog="Arguments after the chapter number are passed to the checkpoint.",
    )
    parser.add_argument("chapter", type=int, nargs="?", help="the chapter's number")
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.add_argument(
        "--list", action="store_true", help="list every chapter and its checkpoint file"
    )
    options = parser.parse_args(argv)
    try:
        manifest = load_manifest(DEFAULT_MANIFEST)
    except ManifestError as error:
        print(f"checkpoint: {error}", file=sys.stderr)
        return 2
    if options.list:
        print(_listing(manifest))
        return 0
    if options.chapter is None:
        parser.error("give a chapter number, or --list")
    try:
        script = checkpoint_for(manifest, options.chapter)
    except NoCheckpoint as error:
        print(f"checkpoint: {error}", file=sys.stderr)
        return 2
    os.chdir(REPO_ROOT)
    sys.stdout.flush()
    # Replacing this process, rather than starting a child, hands the
    # checkpoint the terminal, the signals and the exit status unchanged.
    os.execv(sys.executable, [sys.executable, str(script), *options.args])
