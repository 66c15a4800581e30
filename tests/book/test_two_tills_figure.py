"""Figure 5.2 draws a kept recording of a real race; this holds it to what the lock promises.

The verifier holds the drawing to the recording byte for byte. That proves the
drawing is the file's, not that the file is a race: so a fresh race runs here,
two real processes on a real store, and both it and the kept file must show
what BEGIN IMMEDIATE guarantees. Each delivery asks, then holds, then commits;
a till's deliveries follow one another; and no two transactions ever hold
the write lock at the same moment.
"""

from __future__ import annotations

import itertools
import json
import runpy
from typing import Any

import pytest

from bookproof.verify.environment import DEFAULT_MANIFEST

FIGURES = DEFAULT_MANIFEST.parent / "figures"
SCRIPT = FIGURES / "ch05_two_tills.py"


def check_race(lanes: Any, deliveries: int) -> None:
    assert len(lanes) == 2
    for lane in lanes:
        assert len(lane) == deliveries
        for asked, locked, committed in lane:
            assert 0 <= asked <= locked <= committed
        for earlier, later in itertools.pairwise(lane):
            assert earlier[2] <= later[0], "a till's next delivery began before its last returned"
    held = sorted((locked, committed) for lane in lanes for _, locked, committed in lane)
    for (_, first_end), (second_start, _) in itertools.pairwise(held):
        assert first_end <= second_start, "two transactions held the write lock at once"


def test_the_kept_recording_is_a_race_the_lock_allows() -> None:
    script = runpy.run_path(str(SCRIPT))
    lanes = json.loads((FIGURES / "ch05_two_tills.json").read_text(encoding="utf-8"))
    check_race(lanes, script["DELIVERIES"])
    # One of the tills waited: the figure shows a wait, as its caption says.
    assert any(locked - asked > 1.0 for lane in lanes for asked, locked, _ in lane)


def test_a_fresh_race_of_two_real_processes_never_shares_the_lock() -> None:
    script = runpy.run_path(str(SCRIPT))
    lanes = script["race"](6)
    check_race(lanes, 6)


def test_the_script_refuses_to_run_without_record(monkeypatch: pytest.MonkeyPatch) -> None:
    # Run as a program with no argument, it must not overwrite the kept recording.
    monkeypatch.setattr("sys.argv", [str(SCRIPT)])
    before = (FIGURES / "ch05_two_tills.json").read_bytes()
    with pytest.raises(SystemExit, match="usage"):
        runpy.run_path(str(SCRIPT), run_name="__main__")
    assert (FIGURES / "ch05_two_tills.json").read_bytes() == before
