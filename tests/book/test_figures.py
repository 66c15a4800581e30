"""Every figure the book keeps is shown by a chapter, and every figure a chapter shows is kept.

The verifier holds each figure a chapter shows to what its script draws; a
script or drawing no chapter shows would escape it, so none may exist.
"""

from __future__ import annotations

from pathlib import Path

from bookproof.verify.environment import DEFAULT_MANIFEST
from bookproof.verify.figures import find_figures
from bookproof.verify.manifest import load_manifest

FIGURES = DEFAULT_MANIFEST.parent / "figures"


def shown_figures() -> dict[Path, str]:
    """Each figure file the drafted chapters show, with the figure's number."""
    shown: dict[Path, str] = {}
    for chapter in load_manifest(DEFAULT_MANIFEST).chapters:
        if chapter.text is None:
            continue
        text = chapter.text.read_text(encoding="utf-8")
        for figure in find_figures(chapter.text, text, chapter.number):
            assert figure.problem is None, f"{chapter.text}:{figure.line}: {figure.problem}"
            assert figure.svg not in shown, f"{figure.svg.name} is shown twice"
            shown[figure.svg] = figure.number
    return shown


def test_every_figure_file_and_script_is_shown_by_exactly_one_chapter() -> None:
    shown = shown_figures()
    kept = {path.with_suffix(".svg") for path in FIGURES.glob("*.py")}
    kept |= set(FIGURES.glob("*.svg"))
    assert kept == set(shown)
    for svg in shown:
        assert svg.with_suffix(".py").is_file(), f"no script draws {svg.name}"


def test_every_drafted_chapter_from_3_on_has_a_figure() -> None:
    numbers = set(shown_figures().values())
    manifest = load_manifest(DEFAULT_MANIFEST)
    drafted = [c.number for c in manifest.chapters if c.drafted and c.number >= 3]
    assert len(drafted) >= 8
    assert {f"{number}.1" for number in drafted} <= numbers
