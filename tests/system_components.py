"""System components some tests need (bubblewrap, Chromium), and what happens without them.

On a reader's laptop a missing component skips the tests that need it, with
the command that installs it in the skip reason, so `uv run pytest` passes on
a fresh machine. CI sets `REQUIRE_SYSTEM_COMPONENTS=1` (see `.ci/run`), which
turns every such skip into a failure: CI proves each of these tests, it never
quietly skips one.
"""

from __future__ import annotations

import os
import shutil

import pytest

__all__ = ["REQUIRE_VARIABLE", "require_executable"]

REQUIRE_VARIABLE = "REQUIRE_SYSTEM_COMPONENTS"


def require_executable(name: str, *, install: str) -> str:
    """The path of executable `name`; skip the calling test, or fail it under CI, when missing."""
    path = shutil.which(name)
    if path is not None:
        return path
    reason = f"{name} is not installed; install it with: {install}"
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(f"{reason} ({REQUIRE_VARIABLE}=1 forbids skipping)", pytrace=False)
    pytest.skip(reason)
