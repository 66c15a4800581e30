"""Build the Gradescope autograder for one exercise book (see exercises/GRADING.md).

uv run python scripts/build_gradescope_autograder.py --book 2 --out autograder.zip
"""

from bookproof.grade.gradescope import main

if __name__ == "__main__":
    raise SystemExit(main())
