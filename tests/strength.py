"""How hard the property-based tests try: full strength in CI, a quarter on a laptop.

A developer runs the suite after every change and wants it back quickly; CI
runs it once per submission and can afford every example. The same tests run
in both, with the same assertions: only the number of generated examples
differs. `CI=true` (set by CI services and by `.ci/run`'s callers) or
`HYPOTHESIS_STRENGTH=full` gives full strength anywhere.
"""

from __future__ import annotations

import os

__all__ = ["FULL", "examples"]

FULL = (
    os.environ.get("CI", "").lower() in {"1", "true", "yes"}
    or os.environ.get("HYPOTHESIS_STRENGTH") == "full"
)


def examples(count: int) -> int:
    """`count` examples at full strength; a quarter of them (at least 10) otherwise."""
    return count if FULL else max(10, count // 4)
