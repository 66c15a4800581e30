"""Grade exercise-book submissions: `uv run python scripts/grade_exercises.py --book 2 DIR...`."""

from bookproof.grade.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
