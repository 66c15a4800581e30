"""Support the book does not print: the setups a queued run can name, starting with the shop's.

A setup is called by whichever worker claims the run, with that worker's
fenced connection and the run; it builds the model, the tools and the
bounds. Building it twice gives the same run, which is what lets a second
worker resume the first one's.
"""

from __future__ import annotations

import os
import sqlite3

from sovereign_agent.approvals import build_approved_store_tools
from sovereign_agent.models.config import model_from_env
from sovereign_agent.purchasing import SupplierDesk, build_purchasing_tools
from sovereign_agent.runs import Run
from sovereign_agent.worker import RunSetup, SetupError

__all__ = ["SUPPLIER_VARIABLE", "shop_with_approvals", "shop_with_purchases"]

# The supplier desk's address, for runs whose place_order purchases (chapter 11).
SUPPLIER_VARIABLE = "SOVEREIGN_SUPPLIER"


def shop_with_approvals(connection: sqlite3.Connection, run: Run) -> RunSetup:
    """Chapter 10's store tools and `place_order` behind approvals; SOVEREIGN_MODEL's model."""
    # The approvals a run asks for name it, so `approvals list` points back to `runs show`.
    dispatcher, authority = build_approved_store_tools(connection, run_id=f"run-{run.id}")
    return RunSetup(model=model_from_env(), dispatcher=dispatcher, authority=authority, max_steps=8)


def shop_with_purchases(connection: sqlite3.Connection, run: Run) -> RunSetup:
    """Chapter 11's tools: `place_order` also purchases at the desk SOVEREIGN_SUPPLIER names.

    The desk is also the run's `supplier`, so an order a dead worker left in
    doubt is settled there under its purchase's own key.
    """
    url = os.environ.get(SUPPLIER_VARIABLE, "").strip()
    if not url:
        # Guessing an address would send the shop's orders somewhere nobody chose.
        raise SetupError(
            f"{SUPPLIER_VARIABLE} is not set: the supplier desk's address (http://...)"
        )
    try:
        supplier = SupplierDesk(url)
    except ValueError as error:
        raise SetupError(f"{SUPPLIER_VARIABLE}: {error}") from None
    dispatcher, authority = build_purchasing_tools(connection, supplier, run_id=f"run-{run.id}")
    return RunSetup(
        model=model_from_env(),
        dispatcher=dispatcher,
        authority=authority,
        max_steps=8,
        supplier=supplier,
    )
