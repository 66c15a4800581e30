"""Exercise Book 14: the checks for a submission's `code_answers.py`.

The graded interface is "the grader's door" at the end of the starter
(`exercises/book14/code_answers.py`): functions that take and answer plain
JSON. Two kinds of answer come back through it:

- programs (the chapter's Saturday program, exercise 1's `weekday_program`):
  text only. The submission never runs them: its own sandbox forbids new
  processes, and the grader would not lend it a sandbox of its choosing. The
  grader runs each program itself, outside the submission's sandbox, with
  the runtime's `run_python` on the grader's own limits (`common.LIMITS`),
  over a sales file it invented for that check;
- readings of a run's result (the chapter's answer step, exercise 2's
  `read_answer`), judged on results the grader made up, planted secret
  included.

Unit C's open design task, `next_step` (exercise 3), hands over no program:
it is a plan, and the grader judges it by behaviour only, asking it step by
step about questions it simulates (a program needing some seconds, then
ending some named way) and checking each step against Lucy's budget.

What each check expects is worked out in `common`, from the invented file,
never from the book's code.
"""

from __future__ import annotations

import importlib

from bookproof.grade.books.book14.common import BOOK

# Each part declares its checks as it is imported: this order is the report's.
for _part in ("chapter", "programs", "answers", "plans"):
    importlib.import_module(f"{__name__}.{_part}")

__all__ = ["BOOK"]
