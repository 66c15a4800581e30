"""One module per exercise book, `bookNN.py` or a package `bookNN/` (NN two digits), with `BOOK`.

How to write one is the package docstring of `bookproof.grade`; `book02`
is the fullest example (behaviour checks of all three kinds, a stub, probes,
and learner tests graded by the faulty versions they catch).
"""

from __future__ import annotations

import importlib

from bookproof.grade.book import Book, BookError, book_of

__all__ = ["BookError", "load_book"]


def load_book(number: int) -> Book:
    """Import `bookNN` and return its `BOOK`, checked for what can be checked without running it."""
    name = f"bookproof.grade.books.book{number:02d}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise BookError(f"no exercise book {number}: {name} does not exist") from None
    return book_of(module)
