"""Settings shared by every test: Hypothesis's strength (see strength.py)."""

from __future__ import annotations

from hypothesis import settings
from strength import FULL, examples

# Tests that name no example count get Hypothesis's default at full strength.
settings.register_profile("quick", max_examples=examples(100))
settings.load_profile("default" if FULL else "quick")
