"""The learner file may define only what the chapter's listings define, identically."""

from __future__ import annotations

from pathlib import Path

from bookproof.verify.chapter import parse_chapter
from bookproof.verify.drift import find_drift

CHAPTER = """\
# Drift

```python
def need(on_hand: int, target: int) -> int:
    return max(0, target - on_hand)
```

```python skip
class Freezer:
    '''Holds tubs.'''

    tubs: int = 0
```

```python skip
def not_python(:
```

```text
def shown_only() -> None:
    pass
```
"""


def drift_of(tmp_path: Path, learner_source: str) -> list[tuple[str, int]]:
    learner = tmp_path / "learner.py"
    learner.write_text(learner_source, encoding="utf-8")
    chapter = parse_chapter(tmp_path / "chapter.md", CHAPTER)
    drifts, error = find_drift(chapter, learner, chapter_label="ch", file_label="learner")
    assert error is None
    return [(drift.name, drift.line) for drift in drifts]


def test_definitions_copied_from_run_and_skipped_listings_do_not_drift(tmp_path: Path) -> None:
    source = (
        "import math\n\nLIMIT = 3\n\n\n"
        "def need(on_hand: int, target: int) -> int:\n"
        "    # comments and blank lines are not part of the AST\n\n"
        "    return max(0, target - on_hand)\n\n\n"
        'class Freezer:\n    """Holds tubs."""\n\n    tubs: int = 0\n'
    )
    assert drift_of(tmp_path, source) == []


def test_a_changed_body_annotation_or_docstring_drifts(tmp_path: Path) -> None:
    assert drift_of(
        tmp_path, "def need(on_hand, target):\n    return max(0, target - on_hand)\n"
    ) == [("need", 1)]
    assert drift_of(tmp_path, "class Freezer:\n    '''Holds ice.'''\n\n    tubs: int = 0\n") == [
        ("Freezer", 1)
    ]


def test_a_definition_only_in_a_text_block_or_nowhere_drifts(tmp_path: Path) -> None:
    source = "def shown_only() -> None:\n    pass\n\n\nasync def invented() -> None:\n    pass\n"
    assert drift_of(tmp_path, source) == [("shown_only", 1), ("invented", 5)]


def test_the_diff_shows_listing_then_learner(tmp_path: Path) -> None:
    learner = tmp_path / "learner.py"
    learner.write_text("def need(on_hand: int, target: int) -> int:\n    return target - on_hand\n")
    chapter = parse_chapter(tmp_path / "chapter.md", CHAPTER)
    (drift,), _ = find_drift(chapter, learner, chapter_label="ch.md", file_label="l.py")
    assert "--- listing (ch.md:3)" in drift.diff and "+++ learner (l.py:1)" in drift.diff
    assert "-    return max(0, target - on_hand)" in drift.diff
    assert "+    return target - on_hand" in drift.diff


def test_a_learner_file_that_does_not_parse_is_reported(tmp_path: Path) -> None:
    learner = tmp_path / "learner.py"
    learner.write_text("def broken(:\n")
    chapter = parse_chapter(tmp_path / "chapter.md", CHAPTER)
    drifts, error = find_drift(chapter, learner, chapter_label="ch", file_label="l.py")
    assert drifts == [] and error is not None and error.startswith("l.py: cannot be parsed")


def test_a_checkpoint_is_held_only_to_the_definitions_a_listing_teaches(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint.py"
    checkpoint.write_text(
        "def need(on_hand: int, target: int) -> int:\n"
        "    return max(0, target - on_hand)\n\n\n"
        "def main() -> None:\n    print(need(2, 8))\n",
        encoding="utf-8",
    )
    chapter = parse_chapter(tmp_path / "chapter.md", CHAPTER)
    drifts, error = find_drift(
        chapter, checkpoint, chapter_label="ch", file_label="cp.py", role="checkpoint"
    )
    assert error is None and drifts == []
    # The same file as a learner file: `main` is taught nowhere, so it drifts.
    drifts, _ = find_drift(chapter, checkpoint, chapter_label="ch", file_label="cp.py")
    assert [(drift.name, drift.line) for drift in drifts] == [("main", 5)]


def test_a_checkpoint_definition_that_differs_from_its_listing_drifts(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint.py"
    checkpoint.write_text("def need(on_hand, target):\n    return target - on_hand\n")
    chapter = parse_chapter(tmp_path / "chapter.md", CHAPTER)
    (drift,), _ = find_drift(
        chapter, checkpoint, chapter_label="ch.md", file_label="cp.py", role="checkpoint"
    )
    assert drift.name == "need"
    assert "+++ checkpoint (cp.py:1)" in drift.diff
