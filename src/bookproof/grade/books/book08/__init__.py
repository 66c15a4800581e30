"""Exercise Book 8: the checks for a submission's `document_tools.py`.

The graded interface is the "grader's door" at the end of the starter
(`exercises/book08/document_tools.py`), JSON in and JSON out:
`run_calls(root, allowed, calls)` runs a scripted model that makes `calls`
([name, arguments] each, ids g1, g2, ...) one per step, over Lucy's shop
tools, `read_document`, `list_documents`, `open_document` and `show_lucy`,
and returns `offered`, `observations`, `narrowings`, `executed`, `refused`,
`for_lucy` and `refunds`. Its fourth argument, a skills folder, adds
`read_vendor_skill` (Unit C); its fifth, the shop's sales, `refund_customer`
(Unit D).

The documents folders are the grader's (`questions.folder`): made on the
grader's side before the submission's sandbox starts, shown to it
read-only, with files outside them for links to lead to. The submission
learns a folder's path and nothing else; what the folder holds, it must
read from the disk, which is the skill graded.

Every expected value is computed here from data this module chose: note
names, texts, sizes and planted secrets change on every run. The chapter's
label and delimiters are written out again here, never read from the book.
"""

from __future__ import annotations

import importlib

from bookproof.grade.books.book08.common import BOOK

# Each part declares its checks as it is imported: this order is the report's.
for _part in ("chapter", "listing", "handles", "vendor", "refunds"):
    importlib.import_module(f"{__name__}.{_part}")

__all__ = ["BOOK"]
