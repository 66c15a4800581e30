"""Support the book does not print: how sure a rate is, as Wilson's score interval at 95%.

Forty runs that pass 38 times say "95%", and so would 19 of 20, or 950 of a
thousand; only the last is a number to lean on. An interval says how far the
rate could be from the one a thousand more runs would settle on.

Wilson's score interval (Wilson, 1927) is the one to use for a proportion
from a handful of trials. The textbook interval, p plus or minus 1.96 times
its standard error, fails exactly where an evaluation lives: at 0 of 20 or 20
of 20 it has width zero (certainty from twenty runs), and near the ends it
runs past 0% or 100%. Wilson's stays inside [0, 1], is never empty, and covers
the true rate about as often as it claims even for small counts.

The interval assumes independent trials with one common chance of success.
Runs of a suite are independent (each has its own shop, model and dice), but
the tasks differ, so a pass rate's interval is for "a run of this suite". The
calls of one run are not independent of each other; an interval over calls
(invalid choices, recoveries) is narrower than it should be, a lower bound on
the uncertainty rather than the whole of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

__all__ = ["CONFIDENCE", "Rate"]

CONFIDENCE = 0.95
# The normal quantile for a two-sided 95% interval: 1.959963984540054.
_Z = NormalDist().inv_cdf(1 - (1 - CONFIDENCE) / 2)


def wilson_interval(successes: int, trials: int, *, z: float = _Z) -> tuple[float, float]:
    """Wilson's score interval for `successes` of `trials`: (low, high), within [0, 1].

    The centre is pulled from the observed rate towards one half by z**2 / n,
    which is what keeps the interval inside [0, 1] and non-empty at 0 or n.
    """
    if trials < 1:
        raise ValueError(f"an interval needs at least one trial, got {trials}")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be 0 to {trials}, got {successes}")
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    # Rounding can put an end a hair past p (at 0 of n, n of n) or past [0, 1]:
    # the true interval always holds p and lies within [0, 1].
    low = max(0.0, min(centre - half, p))
    high = min(1.0, max(centre + half, p))
    return low, high


@dataclass(frozen=True)
class Rate:
    """A rate as counted: how many of how many, its value and its interval."""

    successes: int
    trials: int

    @property
    def value(self) -> float | None:
        """The rate, or None where there was nothing to count."""
        return None if self.trials == 0 else self.successes / self.trials

    @property
    def interval(self) -> tuple[float, float] | None:
        """Wilson's 95% interval, or None where there was nothing to count."""
        return None if self.trials == 0 else wilson_interval(self.successes, self.trials)

    def shown(self) -> str:
        """As the table prints it: `95.0% (83.5-98.6)`, in percent; "-" for nothing counted."""
        interval = self.interval
        if self.value is None or interval is None:
            return "-"
        low, high = interval
        return f"{100 * self.value:.1f}% ({100 * low:.1f}-{100 * high:.1f})"
