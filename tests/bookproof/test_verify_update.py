"""--update rewrites failing expected-output blocks and leaves every other byte alone."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from verifying import REPO, SCRIPT, verify

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


def big_outputs_chapter(folder: Path) -> Path:
    """Three listings whose new outputs would make the chapter about 18 KiB."""
    blocks = [
        f'```python\nprint("{letter}" * 6000)\n```\n\n```output\nold\n```\n' for letter in "abc"
    ]
    chapter = folder / "big.md"
    chapter.write_text("# Big outputs\n\n" + "\n".join(blocks), encoding="utf-8")
    return chapter


def verify_under_file_size_limit(kib: int, *arguments: str | Path) -> str:
    """The verifier's output, run by a shell whose `ulimit -f` caps every file it writes."""
    command = " ".join(shlex.quote(str(part)) for part in (sys.executable, SCRIPT, *arguments))
    completed = subprocess.run(
        ["bash", "-c", f"ulimit -f {kib}; exec {command}"],
        cwd=REPO,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    return completed.stdout


def test_a_full_disk_leaves_the_chapter_byte_for_byte_unchanged(tmp_path: Path) -> None:
    chapter = big_outputs_chapter(tmp_path)
    before = chapter.read_bytes()
    printed = verify_under_file_size_limit(16, "--update", chapter)
    assert "--update refused: cannot write the chapter (File too large); it was left as it was" in (
        printed
    )
    assert chapter.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["big.md"]  # no temporary file


def test_without_the_limit_the_same_update_is_written(tmp_path: Path) -> None:
    # The control for the test above: the limit, not the chapter, stopped that update.
    chapter = big_outputs_chapter(tmp_path)
    assert verify("--update", chapter).returncode == 0
    assert len(chapter.read_bytes()) > 16 * 1024
    assert verify(chapter).returncode == 0


def test_an_output_holding_a_wildcard_is_never_written(tmp_path: Path) -> None:
    chapter = tmp_path / "dots.md"
    chapter.write_text(
        '# Dots\n\n```python\nprint("loading...")\nprint("...")\n```\n\n```output\nold\n```\n',
        encoding="utf-8",
    )
    before = chapter.read_bytes()
    completed = verify("--update", chapter)
    assert completed.returncode == 1
    assert (
        "--update refused: line 8: the new output holds '...', which the `output` block "
        "would read as a wildcard; update it by hand"
    ) in completed.stdout
    assert chapter.read_bytes() == before


def test_a_checkpoint_output_holding_dots_is_written_as_it_is_compared_exactly(
    tmp_path: Path,
) -> None:
    book = tmp_path / "book_faults"
    shutil.copytree(FIXTURES / "book_faults", book)
    checkpoint = book / "book" / "textbook" / "checkpoints" / "fixture_ch01_checkpoint.py"
    checkpoint.write_text(
        checkpoint.read_text(encoding="utf-8").replace('"vanilla needs"', '"vanilla needs..."'),
        encoding="utf-8",
    )
    manifest = book / "book" / "textbook" / "book.toml"
    # Chapter 1 alone: the other chapters' faults (and their runs) are not this test's.
    first, _later = manifest.read_text(encoding="utf-8").split("\n[[chapters]]\nnumber = 2\n")
    manifest.write_text(first, encoding="utf-8")
    chapter = book / "book" / "textbook" / "ch01_checkpoint_drifts.md"
    completed = verify("--textbook", "--manifest", manifest, "--update")
    assert completed.returncode == 0, completed.stdout
    assert "vanilla needs... 7" in chapter.read_text(encoding="utf-8")


def test_a_chapter_deleted_while_it_was_verified_is_an_error_not_a_traceback(
    tmp_path: Path,
) -> None:
    chapter = tmp_path / "vanishing.md"
    chapter.write_text(
        "# Vanishing\n\n```python\nimport os, sys\n\nos.remove(sys.argv[0])\n"
        'print("new")\n```\n\n```output\nold\n```\n',
        encoding="utf-8",
    )
    completed = verify("--update", chapter)
    assert completed.returncode == 1
    assert "Traceback" not in completed.stderr
    assert "--update refused: the chapter was deleted while it was being verified" in (
        completed.stdout
    )
    assert not chapter.exists()


def test_a_chapter_behind_a_symbolic_link_is_updated_through_it(tmp_path: Path) -> None:
    target = copy("mismatch.md", tmp_path)
    link = tmp_path / "link.md"
    link.symlink_to(target)
    assert verify("--update", link).returncode == 0
    assert link.is_symlink()
    assert "chocolate: 7" in target.read_text(encoding="utf-8")
