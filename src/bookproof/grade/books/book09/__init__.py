"""Exercise Book 9: the checks for a submission's `remote_tools.py`.

The graded interface is "The grader's door" at the end of the starter
(`exercises/book09/remote_tools.py`), JSON in and JSON out: `join(advertised)`
matches a `tools/list` result's tools against the shop's declarations and
answers what the model is offered and what is refused; `watch(connection,
relists)` joins at connection and answers, for each later list, the joined
tools `changed_tools` finds changed.

No MCP server runs during grading. The sandbox refuses to create a process
(seccomp: no fork, no exec), and nothing graded needs one: which tools join
and which changed is decided by the lists a server advertises, so each check
plays the server and writes those lists itself, from this run's random data
(poisoned descriptions carrying a planted secret, undeclared tools, schemas
one constraint off). The schemas expected are written out by hand in
`common`, never computed from the book's code.
"""

from __future__ import annotations

import importlib

from bookproof.grade.books.book09.common import BOOK

# Each part declares its checks as it is imported: this order is the report's.
for _part in ("chapter", "declare", "watch", "keep"):
    importlib.import_module(f"{__name__}.{_part}")

__all__ = ["BOOK"]
