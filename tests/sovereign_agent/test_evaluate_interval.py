"""Wilson's score interval: the published values, the bounds it must keep, and how it is shown."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sovereign_agent.evaluate.interval import Rate, wilson_interval

# Newcombe (1998), "Two-sided confidence intervals for the single proportion:
# comparison of seven methods", Statistics in Medicine 17, Table II, method 3
# (Wilson's score interval without continuity correction), to four places.
PUBLISHED = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
]


@pytest.mark.parametrize(("successes", "trials", "low", "high"), PUBLISHED)
def test_the_interval_matches_the_published_values(
    successes: int, trials: int, low: float, high: float
) -> None:
    found = wilson_interval(successes, trials)
    assert found == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))


def test_the_interval_matches_the_formula_worked_by_hand() -> None:
    # 5 of 10, z = 1.96: centre (0.5 + 0.19208) / 1.38416 = 0.5; half-width
    # 1.96 / 1.38416 * sqrt(0.025 + 0.0096040) = 0.26340; so 0.2366 to 0.7634.
    low, high = wilson_interval(5, 10, z=1.96)
    assert low == pytest.approx(0.2366, abs=5e-5)
    assert high == pytest.approx(0.7634, abs=5e-5)


def test_all_or_nothing_is_never_certainty() -> None:
    # The interval the textbook formula gives at 20 of 20 is [1, 1]: Wilson's is not.
    low, high = wilson_interval(20, 20)
    assert high == 1.0 and low == pytest.approx(0.8389, abs=5e-5)
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and 0.16 < high < 0.17


def test_more_runs_narrow_the_interval() -> None:
    widths = [math.fsum((-a, b)) for a, b in (wilson_interval(n // 2, n) for n in (10, 100, 1000))]
    assert widths[0] > widths[1] > widths[2]


@given(data=st.data(), trials=st.integers(min_value=1, max_value=100_000))
def test_the_interval_holds_the_rate_and_stays_within_0_and_1(
    data: st.DataObject, trials: int
) -> None:
    successes = data.draw(st.integers(min_value=0, max_value=trials))
    low, high = wilson_interval(successes, trials)
    assert 0.0 <= low <= successes / trials <= high <= 1.0
    assert low < high  # never a point: a finite count is never certainty


@pytest.mark.parametrize(("successes", "trials"), [(0, 0), (-1, 5), (6, 5), (1, -1)])
def test_impossible_counts_are_refused(successes: int, trials: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(successes, trials)


def test_a_rate_is_shown_with_its_interval_in_percent() -> None:
    assert Rate(38, 40).shown() == "95.0% (83.5-98.6)"
    assert Rate(40, 40).shown() == "100.0% (91.2-100.0)"
    assert Rate(0, 0).shown() == "-"
    assert Rate(0, 0).value is None and Rate(0, 0).interval is None
