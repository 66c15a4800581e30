"""Building the site as a reader and CI do: the real script, in a subprocess."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from bs4 import BeautifulSoup, Tag

from bookproof.layout import REPO_ROOT

REPO = REPO_ROOT
BUILD_SCRIPT = REPO / "scripts" / "build_site.py"
FIXTURE_BOOK = Path(__file__).resolve().parent / "fixture_book"
CHAPTER_1 = Path("book/textbook/ch01_counting_tubs.md")
CHAPTER_2 = Path("book/textbook/ch02_pricing_tubs.md")


def build(manifest: Path, out: Path, *arguments: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--manifest", str(manifest), "--out", str(out)]
        + [str(argument) for argument in arguments],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def copy_fixture_book(tmp_path: Path) -> Path:
    """A private copy of the fixture book; returns the root of its repository."""
    root = tmp_path / "fixture_book"
    shutil.copytree(FIXTURE_BOOK, root)
    return root


def manifest_of(root: Path) -> Path:
    return root / "book" / "textbook" / "book.toml"


def page(html: Path, relative: str) -> BeautifulSoup:
    return BeautifulSoup((html / relative).read_text(encoding="utf-8"), "html.parser")


def one(soup: BeautifulSoup | Tag, selector: str) -> Tag:
    """The element `selector` finds; a missing one fails the test, naming the selector."""
    found = soup.select_one(selector)
    assert found is not None, f"nothing matches {selector!r}"
    return found


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
