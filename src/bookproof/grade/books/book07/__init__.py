"""Exercise Book 7: its checks, declared by this package's modules in the report's order.

`baseline_and_unit_a` declares the book (`BOOK`), the chapter baseline and
unit A's checks; the modules imported after it add theirs.
"""

from __future__ import annotations

from bookproof.grade.books.book07 import unit_a_tests, unit_b, unit_c  # noqa: F401 - each declares its checks
from bookproof.grade.books.book07.baseline_and_unit_a import BOOK

__all__ = ["BOOK"]
