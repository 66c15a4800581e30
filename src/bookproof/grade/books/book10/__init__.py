"""Exercise Book 10: the checks for a submission's `approval_rules.py`.

The graded interface is "the grader's door" at the end of the starter
(`exercises/book10/approval_rules.py`): functions that take plain JSON, open
the store file at the path they are given, do one thing, and close it again.
Each check keeps its store in a folder of its own in the submission's
sandbox (`questions.scratch_path`).

- `friday_file`, `ask_file`, `decide_file`, `approvals_file`, `budget_file`
  and `orders_file`: chapter 10's store, runs under approvals and operators'
  decisions, as the starter already has them;
- `decide_file`'s `caps` (exercise 1: each operator's spending cap),
  `release_file` (exercise 2: a finished run gives back what it reserved),
  and `hold_file` and `classes_file` (exercise 3: a tool that holds tubs,
  declared by what it can do);
- `away_file` (exercise 4, Unit C's open design task: who may approve
  while the owner is away), graded by the decisions the ledger takes.

Every check chooses its operators, weekly limit, caps and orders at random
for this run; the prices and amounts it expects are written out in `common`,
never computed from the book's code. Units A's and B's tests are graded by
what they catch, against faulty versions of the reference.
"""

from __future__ import annotations

import importlib

from bookproof.grade.books.book10.common import BOOK

# Each part declares its checks as it is imported: this order is the report's.
for _part in ("chapter", "caps", "release", "holds", "away"):
    importlib.import_module(f"{__name__}.{_part}")

__all__ = ["BOOK"]
