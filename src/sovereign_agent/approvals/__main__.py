"""Support the book does not print: the operator's command for approvals, from any process.

    uv run python -m sovereign_agent.approvals --store FILE list
    uv run python -m sovereign_agent.approvals --store FILE approve ID --as NAME
    uv run python -m sovereign_agent.approvals --store FILE deny ID --as NAME
    uv run python -m sovereign_agent.approvals --store FILE revoke ID --as NAME

A decision is a transaction on the store file, so it holds for every run that
reads the file afterwards, in whichever process. A refusal is one line on
stderr and exit status 1, and changes nothing; a usage error exits 2.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Sequence
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

from sovereign_agent.approvals.ledger import (
    Approval,
    ApprovalRefused,
    Decision,
    budget,
    decide,
    list_approvals,
    seconds,
    utc_now,
)
from sovereign_agent.store import StoreError, open_store

__all__ = ["describe", "main"]

DECISIONS: tuple[Decision, ...] = ("approve", "deny", "revoke")


def when(moment: int) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d %H:%M UTC")


def describe(approval: Approval, now: int) -> str:
    """One approval on one line: id, status, the call it binds, the money, who asked and decided."""
    status = approval.status
    if status in ("PENDING", "APPROVED") and approval.expires_at <= now:
        status = "EXPIRED"  # what it is, though no transaction has marked it yet
    decided = f" by {approval.decided_by}" if approval.decided_by else ""
    return (
        f"{approval.id} {status}{decided} {approval.tool} {approval.arguments}"
        f" {approval.amount_pence:,} pence run {approval.run_id}"
        f" expires {when(approval.expires_at)}"
    )


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(
        prog="python -m sovereign_agent.approvals",
        description="List and decide the approvals a shop store holds.",
    )
    command.add_argument("--store", required=True, type=Path, help="the store's database file")
    actions = command.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="every approval, then the week's budget")
    for decision in DECISIONS:
        action = actions.add_parser(decision, help=f"{decision} one approval as an operator")
        action.add_argument("id", type=int, metavar="ID", help="the approval's number")
        action.add_argument(
            "--as",
            dest="operator",
            required=True,
            metavar="NAME",
            help="the operator deciding (a row in the store)",
        )
    return command


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    if not arguments.store.is_file():
        # Opening would create an empty store: a mistyped path must not.
        print(f"error: no store at {arguments.store}", file=sys.stderr)
        return 2
    try:
        with closing(open_store(arguments.store)) as connection:
            if arguments.action == "list":
                now = seconds(utc_now)
                for approval in list_approvals(connection):
                    print(describe(approval, now))
                money = budget(connection, now)
                print(
                    f"budget: {money.limit_pence:,} pence a week, {money.reserved_pence:,} pence"
                    f" reserved, {money.spent_pence:,} pence spent, {money.left_pence:,} pence left"
                )
                return 0
            decided = decide(connection, arguments.id, arguments.operator, arguments.action)
            print(describe(decided, seconds(utc_now)))
            return 0
    except ApprovalRefused as refused:
        print(f"error: {refused.code}: {refused}", file=sys.stderr)
        return 1
    except (StoreError, sqlite3.Error) as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
