"""A chapter whose printed output drifts from its text must fail the verifier, as CI runs it."""

from __future__ import annotations

from pathlib import Path

from verifying import verify

from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
CHAPTER = ROOT / "book/textbook/ch02_reliable_shop_tools.md"


def test_chapter_2_verifies_as_written(tmp_path: Path) -> None:
    copy = tmp_path / "ch02.md"
    copy.write_text(CHAPTER.read_text(encoding="utf-8"), encoding="utf-8")
    result = verify(copy)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_changed_price_in_the_text_fails_with_a_diff_naming_the_line(tmp_path: Path) -> None:
    text = CHAPTER.read_text(encoding="utf-8")
    printed = '"total_pence": 1500, "unit_cost_pence": 250}}'
    # Lie about the draft's total in the first place the chapter prints it.
    drifted = text.replace(printed, '"total_pence": 1600, "unit_cost_pence": 250}}', 1)
    lie = drifted.index('"total_pence": 1600')
    output_fence = drifted.rindex("```output", 0, lie)
    output_line = drifted[:output_fence].count("\n") + 1
    listing_line = drifted.rindex("```python", 0, output_fence)
    listing_line = drifted[:listing_line].count("\n") + 1
    copy = tmp_path / "ch02.md"
    copy.write_text(drifted, encoding="utf-8")

    result = verify(copy)

    assert result.returncode == 1
    report = result.stdout
    assert (
        f"{copy}:{listing_line}: printed output differs from the `output` block "
        f"at line {output_line}"
    ) in report
    diff_lines = report.splitlines()
    assert any(line.strip().startswith("-") and "1600" in line for line in diff_lines)
    assert any(line.strip().startswith("+") and "1500" in line for line in diff_lines)
