"""Support the book does not print: the operator's command for purchases, from any process.

    uv run python -m sovereign_agent.purchasing --store FILE list
    uv run python -m sovereign_agent.purchasing --store FILE --supplier URL resolve

`list` prints each order's purchase (or that it has none yet); `resolve`
settles every order a crash or a lost answer left unfinished, asking the
supplier for each operation id and sending again under the same id if it has
none. It exits 0 when every purchase is settled CONFIRMED, 1 when any is
still PREPARED or REJECTED (each named on stderr), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

from sovereign_agent.purchasing.desk import PurchaseFailed, SupplierDesk
from sovereign_agent.purchasing.records import Purchase, list_purchases, resolve_purchases
from sovereign_agent.store import StoreError, open_store

__all__ = ["describe", "main"]


def describe(purchase: Purchase) -> str:
    """One purchase on one line: the order, what it buys, where it stands, and its key."""
    where = purchase.supplier_order_id or purchase.failure or "sent or about to be"
    return (
        f"order {purchase.order_id} {purchase.sku} {purchase.quantity}"
        f" {purchase.status} {where} key {purchase.operation_id}"
    )


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(
        prog="python -m sovereign_agent.purchasing",
        description="List the purchases a shop store holds, or resolve the unfinished ones.",
    )
    command.add_argument("--store", required=True, type=Path, help="the store's database file")
    command.add_argument("--supplier", metavar="URL", help="the supplier desk's address")
    actions = command.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="every purchase and where it stands")
    actions.add_parser("resolve", help="settle every order left unfinished (needs --supplier)")
    return command


def main(argv: Sequence[str] | None = None) -> int:
    command = parser()
    arguments = command.parse_args(argv)
    if not arguments.store.is_file():
        # Opening would create an empty store: a mistyped path must not.
        print(f"error: no store at {arguments.store}", file=sys.stderr)
        return 2
    if arguments.action == "resolve" and not arguments.supplier:
        command.error("resolve needs --supplier URL")
    try:
        with closing(open_store(arguments.store)) as connection:
            if arguments.action == "list":
                for purchase in list_purchases(connection):
                    print(describe(purchase))
                return 0
            settled = resolve_purchases(connection, SupplierDesk(arguments.supplier))
            for purchase in settled:
                print(describe(purchase))
            unsettled = [p for p in settled if p.status != "CONFIRMED"]
            for purchase in unsettled:
                print(f"error: order {purchase.order_id} is {purchase.status}", file=sys.stderr)
            return 1 if unsettled else 0
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (PurchaseFailed, StoreError, sqlite3.Error) as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
