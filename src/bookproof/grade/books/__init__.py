"""Per-book checks: one module `bookNN.py` per exercise book (NN two digits).

The interface a book module provides (read `book02.py` as the worked example):

    BOOK: int                       # the book number, e.g. 2
    TITLE: str                      # shown in the terminal table
    MODULE: str                     # the module the harness imports from the
                                    # submission folder, e.g. "shop_tools"
    REQUIRED_FILES: tuple[str, ...] # files a submission must hold, e.g. ("shop_tools.py",)
    CHECKS: tuple[Check, ...]       # every graded behaviour, in report order;
                                    # their ids are the gradebook's columns
    def trials(rng: random.Random) -> Mapping[str, Trial]:
        '''One Trial per check id: the steps to run and the judge that decides.'''

Rules every book module follows (the grader enforces the first two):

- `trials()` returns exactly one `Trial` per id in `CHECKS`; ids are unique,
  lowercase `[a-z0-9_]`, and stable across runs (instructors keep gradebooks).
- Each trial is self-contained: it builds every object it uses. If the child
  process dies in one trial, the grader restarts it for the next trials, so a
  hang in one function costs only the checks that needed it.
- Use `rng` for every value the exercise allows to vary (extra products,
  prices, quantities, call ids, probe names), alongside the book's fixed
  numbers, and compute the expected values in the judge's closure yourself:
  never by calling the submission, and never from a value it returned.
- Judges return None (passed) or a short reason written by you; they may
  quote numbers, never a string taken from the submission (a planted secret
  must not reach a report).
- Feedback: `Check.hint` says what to fix; `Check.section` names the chapter
  section to re-read, e.g. "Chapter 2, 'The dispatcher and its order of checks'".

The record types and step builders live in `bookproof.grade.checks`.
"""

from __future__ import annotations

import importlib
import re
from types import ModuleType

from bookproof.grade.checks import Check

__all__ = ["BookError", "load_book"]

_ID = re.compile(r"^[a-z0-9_]{1,60}$")


class BookError(LookupError):
    """No such exercise book, or a book module that breaks the interface above."""


def load_book(number: int) -> ModuleType:
    """Import `bookNN` and check what of its interface can be checked without running it."""
    name = f"bookproof.grade.books.book{number:02d}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise BookError(f"no exercise book {number}: {name} does not exist") from None
    checks = getattr(module, "CHECKS", None)
    if not isinstance(checks, tuple) or not all(isinstance(c, Check) for c in checks):
        raise BookError(f"{name}.CHECKS must be a tuple of Check")
    ids = [check.id for check in checks]
    if len(set(ids)) != len(ids) or not all(_ID.match(i) for i in ids):
        raise BookError(f"{name}.CHECKS ids must be unique and match {_ID.pattern}")
    for attribute in ("BOOK", "TITLE", "MODULE", "REQUIRED_FILES", "trials"):
        if not hasattr(module, attribute):
            raise BookError(f"{name} lacks {attribute}")
    return module
