"""Support the book does not print: the setups a queued run can name, starting with the shop's.

A setup is called by whichever worker claims the run, with that worker's
fenced connection and the run; it builds the model, the tools and the
bounds. Building it twice gives the same run, which is what lets a second
worker resume the first one's.
"""

from __future__ import annotations

import sqlite3

from sovereign_agent.approvals import build_approved_store_tools
from sovereign_agent.models.config import model_from_env
from sovereign_agent.runs import Run
from sovereign_agent.worker import RunSetup

__all__ = ["shop_with_approvals"]


def shop_with_approvals(connection: sqlite3.Connection, run: Run) -> RunSetup:
    """Chapter 10's store tools and `place_order` behind approvals; SOVEREIGN_MODEL's model."""
    # The approvals a run asks for name it, so `approvals list` points back to `runs show`.
    dispatcher, authority = build_approved_store_tools(connection, run_id=f"run-{run.id}")
    return RunSetup(model=model_from_env(), dispatcher=dispatcher, authority=authority, max_steps=8)
