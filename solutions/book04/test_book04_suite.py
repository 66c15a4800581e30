"""Unit B: an expectation that catches the planted regression, and the spread of a pass rate.

Run inside this folder: `uv run pytest test_book04_suite.py`.
"""

from pathlib import Path

import evidence
import pytest

HERE = Path(__file__).resolve().parent
SUITE = HERE / "suite.toml"


def test_the_suite_passes_the_chapters_tools_and_fails_the_regression() -> None:
    rates = evidence.suite_pass_rates(str(SUITE), repeat=2, seed=0)
    assert rates == {"chapter tools": 1.0, "draft moves stock": 0.0}


def test_the_new_expectation_is_the_one_that_catches_it() -> None:
    from sovereign_agent.evaluate import load_suite, run_suite

    _, regressed = run_suite(load_suite(SUITE), repeat=1, seed=0)
    assert {name for run in regressed.runs for name in run.failed} == {"on_hand"}


def test_a_suite_without_slips_has_no_spread() -> None:
    spread = evidence.pass_rate_spread(str(SUITE), "chapter tools", [0, 1, 2], 2)
    assert spread == {"rates": [1.0, 1.0, 1.0], "lowest": 1.0, "highest": 1.0}


def test_a_sloppy_suite_spreads_and_each_rate_is_a_share_of_runs(tmp_path: Path) -> None:
    sloppy = tmp_path / "sloppy.toml"
    text = SUITE.read_text().replace("quantity_as_text = 0.0", "quantity_as_text = 0.5")
    sloppy.write_text(
        text.replace('factory = "regressed.py:', 'factory = "' + str(HERE) + "/regressed.py:")
    )
    spread = evidence.pass_rate_spread(str(sloppy), "chapter tools", list(range(6)), 5)
    assert len(spread["rates"]) == 6
    # Two tasks, five repeats: every rate is a whole number of tenths.
    assert all(abs(rate * 10 - round(rate * 10)) < 1e-9 for rate in spread["rates"])
    assert spread["lowest"] == min(spread["rates"]) < spread["highest"] == max(spread["rates"])


def test_each_rate_is_its_own_seeds_and_they_come_in_the_seeds_order(tmp_path: Path) -> None:
    from sovereign_agent.evaluate import load_suite, run_suite

    sloppy = tmp_path / "sloppy.toml"
    text = SUITE.read_text().replace("quantity_as_text = 0.0", "quantity_as_text = 0.5")
    sloppy.write_text(text.replace('factory = "regressed.py:', f'factory = "{HERE}/regressed.py:'))
    seeds = [5, 0, 3, 1]
    # Worked out with the runtime's own runner, one seed at a time, not with the
    # function under test.
    suite = load_suite(sloppy)
    alone = suite.model_copy(update={"variants": suite.variants[:1]})
    expected = [run_suite(alone, repeat=4, seed=seed)[0].pass_rate for seed in seeds]
    assert expected != sorted(expected)  # else the order would go unchecked
    spread = evidence.pass_rate_spread(str(sloppy), "chapter tools", seeds, 4)
    assert spread["rates"] == expected


def test_an_unknown_variant_is_refused() -> None:
    with pytest.raises(KeyError):
        evidence.pass_rate_spread(str(SUITE), "no such variant", [0], 1)
