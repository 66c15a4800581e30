"""The unit plans tell learners how they are graded; that table must match the grader's checks."""

from __future__ import annotations

import re
from pathlib import Path

from bookproof.grade.books import load_book

ROOT = Path(__file__).resolve().parents[2]
BOOK02 = ROOT / "exercises" / "book02"
ROW = re.compile(r"^\| `([a-z0-9_]+)` \| (\d+) \|", re.MULTILINE)


def test_every_exercise_check_is_in_one_plan_with_its_points() -> None:
    listed: dict[str, int] = {}
    for plan in ("unit_a.md", "unit_b.md"):
        for check_id, points in ROW.findall((BOOK02 / plan).read_text(encoding="utf-8")):
            assert check_id not in listed, f"{check_id} is listed twice"
            listed[check_id] = int(points)
    checks = load_book(2).CHECKS
    exercise_checks = {c.id: c.points for c in checks if c.exercise.startswith("exercise")}
    assert listed == exercise_checks


def test_plans_state_the_chapter_2_points_the_grader_keeps_checking() -> None:
    baseline = sum(c.points for c in load_book(2).CHECKS if c.exercise == "chapter 2")
    assert f"(`ch2_...`, {baseline} points)" in (BOOK02 / "unit_a.md").read_text(encoding="utf-8")


def test_every_feedback_pointer_names_a_real_chapter_2_heading() -> None:
    chapter = (ROOT / "book" / "textbook" / "ch02_reliable_shop_tools.md").read_text(
        encoding="utf-8"
    )
    headings = set(re.findall(r"^#{2,3} (.+)$", chapter, re.MULTILINE))
    for check in load_book(2).CHECKS:
        quoted = re.search(r"'([^']+)'", check.section)
        assert quoted is not None, check.id
        assert quoted.group(1) in headings, f"{check.id}: no heading {quoted.group(1)!r}"
