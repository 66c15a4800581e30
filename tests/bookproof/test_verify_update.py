"""--update rewrites failing expected-output blocks and leaves every other byte alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from verifying import verify

FIXTURES = Path(__file__).resolve().parent / "verify_fixtures"
CHAPTERS = FIXTURES / "chapters"


def copy(name: str, folder: Path) -> Path:
    target = folder / name
    shutil.copyfile(CHAPTERS / name, target)
    return target


def test_a_chapter_whose_outputs_match_is_byte_for_byte_unchanged(tmp_path: Path) -> None:
    chapter = copy("passing.md", tmp_path)
    before = chapter.read_bytes()
    completed = verify("--update", chapter)
    assert completed.returncode == 0
    assert chapter.read_bytes() == before


def test_a_mismatched_output_block_is_rewritten_and_then_verifies(tmp_path: Path) -> None:
    chapter = copy("mismatch.md", tmp_path)
    before = chapter.read_text(encoding="utf-8")
    completed = verify("--update", chapter)
    assert completed.returncode == 0, completed.stdout
    assert f"updated: {chapter}:8" in completed.stdout
    assert chapter.read_text(encoding="utf-8") == before.replace("chocolate: 8", "chocolate: 7")
    assert verify(chapter).returncode == 0


def test_without_update_nothing_is_rewritten(tmp_path: Path) -> None:
    chapter = copy("mismatch.md", tmp_path)
    before = chapter.read_bytes()
    assert verify(chapter).returncode == 1
    assert chapter.read_bytes() == before


def test_wildcard_blocks_that_fail_are_rewritten_from_the_actual_output(tmp_path: Path) -> None:
    chapter = copy("wildcard_mismatch.md", tmp_path)
    before = chapter.read_text(encoding="utf-8")
    assert verify("--update", chapter).returncode == 0
    after = before.replace("first\n...\nfinal\n", "first\nmiddle\nlast\n").replace(
        "id: ... fin", "id: 42 end"
    )
    assert chapter.read_text(encoding="utf-8") == after


def test_failures_that_are_not_output_differences_are_left_failing(tmp_path: Path) -> None:
    chapter = copy("exceptions.md", tmp_path)
    before = chapter.read_bytes()
    assert verify("--update", chapter).returncode == 1
    assert chapter.read_bytes() == before


def test_line_endings_quotes_and_list_items_survive_an_update(tmp_path: Path) -> None:
    chapter = tmp_path / "crlf.md"
    original = (
        "# Windows line endings\r\n\r\n"
        '> ```python\r\n> print("a  ")\r\n> print("b")\r\n> ```\r\n>\r\n'
        "> ```output\r\n> old\r\n> ```\r\n\r\n"
        '- ```python\r\n  print("x")\r\n  ```\r\n  ```output\r\n  ```\r\ntail\r\n'
    )
    chapter.write_bytes(original.encode("utf-8"))
    completed = verify("--update", chapter)
    assert completed.returncode == 0, completed.stdout
    expected = original.replace("> old\r\n", "> a\r\n> b\r\n").replace(
        "  ```output\r\n  ```\r\n", "  ```output\r\n  x\r\n  ```\r\n"
    )
    assert chapter.read_bytes() == expected.encode("utf-8")
    assert verify(chapter).returncode == 0


def test_an_update_of_a_matching_crlf_file_changes_no_byte(tmp_path: Path) -> None:
    chapter = tmp_path / "crlf.md"
    original = '```python\r\nprint("a")   \r\n```\r\n\r\n```output\r\na\r\n\r\n```\r\n'
    chapter.write_bytes(original.encode("utf-8"))
    assert verify("--update", chapter).returncode == 0
    assert chapter.read_bytes() == original.encode("utf-8")


def test_a_drifted_checkpoint_output_block_is_rewritten(tmp_path: Path) -> None:
    book = tmp_path / "book_faults"
    shutil.copytree(FIXTURES / "book_faults", book)
    manifest = book / "book" / "textbook" / "book.toml"
    chapter = book / "book" / "textbook" / "ch01_checkpoint_drifts.md"
    before = chapter.read_text(encoding="utf-8")
    report = tmp_path / "report.json"
    completed = verify("--textbook", "--manifest", manifest, "--update", "--json", report)
    # The other chapters' faults (learner, drift, exercises) are not output blocks.
    assert completed.returncode == 1
    assert chapter.read_text(encoding="utf-8") == before.replace(
        "```checkpoint-output\nvanilla needs 6", "```checkpoint-output\nvanilla needs 7"
    )
    first = json.loads(report.read_text(encoding="utf-8"))["chapters"][0]
    assert (first["ok"], first["checkpoint"], first["failures"]) == (True, "ok", [])
    for other in ("ch02_learner_prints.md", "ch03_learner_drifts.md"):
        path = book / "book" / "textbook" / other
        assert (
            path.read_bytes()
            == (FIXTURES / "book_faults" / "book" / "textbook" / other).read_bytes()
        )
