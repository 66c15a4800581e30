"""Fixture learner file: importing it leaves a sleeping process behind."""

import os
import subprocess

with open(os.environ["HOSTILE_PIDS"], "a") as pids:
    pids.write(f"{subprocess.Popen(['sleep', '1000']).pid}\n")


def replenishment_need(on_hand: int, reorder_point: int) -> int:
    """Never negative: a full freezer needs nothing."""
    return max(0, reorder_point - on_hand)
