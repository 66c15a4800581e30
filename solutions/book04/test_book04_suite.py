"""Unit B: an expectation that catches the planted regression, and the spread of a pass rate.

Run inside this folder: `uv run pytest test_book04_suite.py`. The suite is
data, so its tests run it here with the runtime's own `run_suite`, on the
files of this folder. Exercise 4 is reached through the grader's door, with
a suite passed as its text, the way the grader runs these tests.
"""

from pathlib import Path

import pytest
from evidence import spread

from sovereign_agent.evaluate import load_suite, run_suite

HERE = Path(__file__).resolve().parent
SUITE = HERE / "suite.toml"


def sloppy(quantity_as_text):
    """This folder's suite, its stand-in model now sending quantities as text that often."""
    text = SUITE.read_text(encoding="utf-8")
    assert "quantity_as_text = 0.0" in text
    return text.replace("quantity_as_text = 0.0", f"quantity_as_text = {quantity_as_text}")


def test_the_suite_passes_the_chapters_tools_and_fails_the_regression():
    results = run_suite(load_suite(SUITE), repeat=2, seed=0)
    rates = {result.variant.name: result.pass_rate for result in results}
    assert rates == {"chapter tools": 1.0, "draft moves stock": 0.0}


def test_the_new_expectation_is_the_one_that_catches_it():
    _, regressed = run_suite(load_suite(SUITE), repeat=1, seed=0)
    assert {name for run in regressed.runs for name in run.failed} == {"on_hand"}


def test_a_suite_without_slips_has_no_spread():
    found = spread(SUITE.read_text(encoding="utf-8"), "chapter tools", [0, 1, 2], 2)
    assert found == {"rates": [1.0, 1.0, 1.0], "lowest": 1.0, "highest": 1.0}


def test_a_sloppy_suite_spreads_and_each_rate_is_a_share_of_runs():
    found = spread(sloppy(0.5), "chapter tools", list(range(6)), 5)
    assert len(found["rates"]) == 6
    # Two tasks, five repeats: every rate is a whole number of tenths.
    assert all(abs(rate * 10 - round(rate * 10)) < 1e-9 for rate in found["rates"])
    assert found["lowest"] == min(found["rates"]) < found["highest"] == max(found["rates"])


def test_each_rate_is_its_own_seeds_and_they_come_in_the_seeds_order(tmp_path):
    text = sloppy(0.5)
    copy = tmp_path / "sloppy.toml"
    copy.write_text(text, encoding="utf-8")
    # Worked out with the runtime's own runner, one seed at a time, not with the
    # function under test.
    suite = load_suite(copy)
    alone = suite.model_copy(update={"variants": suite.variants[:1]})
    seeds = [5, 0, 3, 1]
    rate = {seed: run_suite(alone, repeat=4, seed=seed)[0].pass_rate for seed in seeds}
    expected = [rate[seed] for seed in seeds]
    assert expected != [rate[seed] for seed in sorted(seeds)]  # else the order went unchecked
    assert spread(text, "chapter tools", seeds, 4)["rates"] == expected


def test_an_unknown_variant_is_refused():
    with pytest.raises(KeyError):
        spread(SUITE.read_text(encoding="utf-8"), "no such variant", [0], 1)
