"""A learner's property-based tests are judged by their first failing example, not its shrinking.

Hypothesis spends most of a failing run shrinking the example it found, and
in a graded run every step of that is a call to the other sandbox. Book 6's
state machine caught a faulty version in one second and then shrank for
eight; on a loaded machine that ran past the run's time, and a catch became
a timeout. The grader only reads the exit status, so it runs Hypothesis
without the shrink phase unless the tests choose their own phases.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from grading import grade_batch

from bookproof.layout import REPO_ROOT

pytestmark = pytest.mark.slow

SOLUTION = (REPO_ROOT / "solutions" / "book02" / "shop_tools.py").read_text(encoding="utf-8")

# Honest tests of one behaviour (no price in a tool's description) whose
# every example is slow, as a real store's might be, and whose examples are
# large: found at once, a failure would take minutes to shrink.
SLOW_TO_SHRINK = """
import time

from hypothesis import given, settings
from hypothesis import strategies as st
from shop_tools import PRICES_PENCE, SHOP, build_tools


@settings(max_examples=2, deadline=None, derandomize=True)
@given(st.lists(st.text(min_size=20), min_size=40, max_size=60))
def test_no_description_names_a_price(noise):
    time.sleep(0.5)
    tools = build_tools(SHOP, PRICES_PENCE)
    said = " ".join(schema["function"]["description"] for schema in tools.schemas())
    assert "Prices:" not in said
"""

# The same tests asking for the shrink phase themselves: their choice holds.
SHRINKS_BY_CHOICE = SLOW_TO_SHRINK.replace(
    "from hypothesis import given, settings", "from hypothesis import Phase, given, settings"
).replace("derandomize=True)", "derandomize=True, phases=tuple(Phase))")


def test_a_catch_is_judged_by_its_first_failing_example(tmp_path: Path) -> None:
    assert SHRINKS_BY_CHOICE != SLOW_TO_SHRINK
    graded = grade_batch(
        2,
        {
            "slow_to_shrink": {"shop_tools.py": SOLUTION, "test_book02_mango.py": SLOW_TO_SHRINK},
            "shrinks_by_choice": {
                "shop_tools.py": SOLUTION,
                "test_book02_mango.py": SHRINKS_BY_CHOICE,
            },
        },
        base=tmp_path,
    )
    caught = "ex1_tests_catch_price_in_schema"
    assert graded["slow_to_shrink"].outcomes[caught] == "passed"
    # Proof that the shrinking is what runs out of time: asked for, it still does.
    assert graded["shrinks_by_choice"].outcomes[caught] == "timeout"
