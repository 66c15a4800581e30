"""Support the book does not print: the approvals ledger, decisions that live in the store.

An approval is a row, not a yes said inside one process: it survives a
restart, another process can read and decide it, and the database holds its
rules for every writer. It is bound to one tool and the canonical JSON of one
call's validated arguments, so a call that differs in any argument needs an
approval of its own. Operators are rows too; a name that is not one cannot
decide, and no tool has a way to decide at all.

Money is counted from the rows, never kept in a second counter that could
drift: an approved, unexpired approval reserves its amount; a used one has
spent it, in the week it was used. Approving more than the week has left is
refused. Every change runs in one transaction, and a refused change writes
nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel

from sovereign_agent.store import transaction, whole_number

__all__ = [
    "DEFAULT_LIFETIME",
    "STATUSES",
    "Approval",
    "ApprovalRefused",
    "Budget",
    "Clock",
    "Decision",
    "add_operator",
    "approve",
    "budget",
    "canonical_arguments",
    "decide",
    "deny",
    "expire_due",
    "find_current",
    "list_approvals",
    "operators",
    "read_approval",
    "request_approval",
    "revoke",
    "seconds",
    "set_weekly_limit",
    "use_approval",
    "utc_now",
    "week_start",
]

Clock = Callable[[], datetime]
Decision = Literal["approve", "deny", "revoke"]
STATUSES = ("PENDING", "APPROVED", "DENIED", "EXPIRED", "REVOKED", "USED")
# Long enough for Lucy to see a morning's request before the evening; short
# enough that a forgotten yes does not buy anything next week.
DEFAULT_LIFETIME = timedelta(hours=24)
WEEK = 7 * 24 * 3600


def utc_now() -> datetime:
    return datetime.now(UTC)


def seconds(clock: Clock) -> int:
    """The clock's time as whole seconds since the epoch: what the store compares."""
    now = clock()
    if now.tzinfo is None:
        # A naive time means whatever the machine's zone is; an expiry must not.
        raise ValueError("the clock must return an aware datetime")
    return int(now.timestamp())


def week_start(now: int) -> int:
    """Monday 00:00 UTC of the week holding `now`: the budget's week."""
    day = datetime.fromtimestamp(now, UTC).date()
    monday = datetime(day.year, day.month, day.day, tzinfo=UTC) - timedelta(days=day.weekday())
    return int(monday.timestamp())


def canonical_arguments(arguments: BaseModel) -> str:
    """One text for one call: validated values, sorted keys, no spaces, ASCII only.

    Two calls bind the same approval exactly when these texts are equal, so
    the text must not depend on the order or spacing the model used.
    """
    return json.dumps(
        arguments.model_dump(mode="json"),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
    )


class ApprovalRefused(PermissionError):
    """An approval action the ledger will not do; `code` names why, in one word."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Approval:
    id: int
    tool: str
    arguments: str
    amount_pence: int
    run_id: str
    requested_at: int
    expires_at: int
    status: str
    decided_by: str | None
    decided_at: int | None
    used_at: int | None


@dataclass(frozen=True)
class Budget:
    """The week's money: the limit, what approvals hold, what orders spent, what is left."""

    limit_pence: int
    reserved_pence: int
    spent_pence: int

    @property
    def left_pence(self) -> int:
        return self.limit_pence - self.reserved_pence - self.spent_pence


def _approval(row: sqlite3.Row | tuple[Any, ...]) -> Approval:
    return Approval(*tuple(row))


_COLUMNS = (
    "id, tool, arguments, amount_pence, run_id, requested_at, expires_at, status,"
    " decided_by, decided_at, used_at"
)


def read_approval(connection: sqlite3.Connection, approval_id: int) -> Approval:
    row = connection.execute(
        f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (approval_id,)
    ).fetchone()
    if row is None:
        raise ApprovalRefused("unknown_approval", f"no approval {approval_id}")
    return _approval(row)


def list_approvals(connection: sqlite3.Connection) -> list[Approval]:
    return [
        _approval(row)
        for row in connection.execute(f"SELECT {_COLUMNS} FROM approvals ORDER BY id")
    ]


def operators(connection: sqlite3.Connection) -> list[str]:
    return [row[0] for row in connection.execute("SELECT name FROM operators ORDER BY name")]


def add_operator(connection: sqlite3.Connection, name: str) -> None:
    """Someone who may decide approvals. Only the shop's owner adds one, outside any run."""
    with transaction(connection):
        connection.execute("INSERT INTO operators (name) VALUES (?)", (name,))


def expire_due(connection: sqlite3.Connection, now: int) -> int:
    """Mark every open approval past its expiry EXPIRED; run inside the caller's transaction.

    Expired approvals reserve nothing whether or not this ran (the budget
    compares times); the status makes the list honest.
    """
    cursor = connection.execute(
        "UPDATE approvals SET status = 'EXPIRED'"
        " WHERE status IN ('PENDING', 'APPROVED') AND expires_at <= ?",
        (now,),
    )
    return cursor.rowcount


def budget(connection: sqlite3.Connection, now: int) -> Budget:
    """The week's limit, reserved and spent money at `now`, counted from the rows."""
    row = connection.execute("SELECT weekly_limit_pence FROM budget WHERE id = 1").fetchone()
    # No limit set means nothing may be spent: the safe default for money.
    limit = 0 if row is None else int(row[0])
    reserved, spent = connection.execute(
        "SELECT"
        " coalesce(sum(amount_pence) FILTER (WHERE status = 'APPROVED' AND expires_at > :now), 0),"
        " coalesce(sum(amount_pence) FILTER (WHERE status = 'USED' AND used_at >= :week), 0)"
        " FROM approvals",
        {"now": now, "week": week_start(now)},
    ).fetchone()
    return Budget(limit_pence=limit, reserved_pence=int(reserved), spent_pence=int(spent))


def set_weekly_limit(
    connection: sqlite3.Connection, pence: int, *, clock: Clock = utc_now
) -> Budget:
    """Change the weekly limit; a limit below what is already reserved and spent is refused."""
    whole_number("weekly_limit_pence", pence)
    now = seconds(clock)
    with transaction(connection):
        current = budget(connection, now)
        committed = current.reserved_pence + current.spent_pence
        if pence < committed:
            raise ApprovalRefused(
                "over_budget",
                f"a limit of {pence:,} pence is below the {committed:,} pence reserved or spent",
            )
        connection.execute(
            "INSERT INTO budget (id, weekly_limit_pence) VALUES (1, ?)"
            " ON CONFLICT (id) DO UPDATE SET weekly_limit_pence = excluded.weekly_limit_pence",
            (pence,),
        )
        return budget(connection, now)


def find_current(
    connection: sqlite3.Connection, tool: str, arguments: str, now: int
) -> Approval | None:
    """The newest unexpired approval for this exact call that still decides it, if any.

    Pending, approved and denied ones decide a call; expired, revoked and used
    ones no longer do, so a call after them asks again.
    """
    row = connection.execute(
        f"SELECT {_COLUMNS} FROM approvals WHERE tool = ? AND arguments = ?"
        " AND status IN ('PENDING', 'APPROVED', 'DENIED') AND expires_at > ?"
        " ORDER BY id DESC LIMIT 1",
        (tool, arguments, now),
    ).fetchone()
    return None if row is None else _approval(row)


def request_approval(
    connection: sqlite3.Connection,
    tool: str,
    arguments: str,
    amount_pence: int,
    run_id: str,
    *,
    now: int,
    lifetime: timedelta = DEFAULT_LIFETIME,
) -> Approval:
    """A new PENDING approval for one call; run inside the caller's transaction."""
    whole_number("amount_pence", amount_pence)
    expires = now + int(lifetime.total_seconds())
    cursor = connection.execute(
        "INSERT INTO approvals (tool, arguments, amount_pence, run_id, requested_at,"
        " expires_at, status) VALUES (?, ?, ?, ?, ?, ?, 'PENDING')",
        (tool, arguments, amount_pence, run_id, now, expires),
    )
    assert cursor.lastrowid is not None
    return read_approval(connection, cursor.lastrowid)


def _refuse_status(approval: Approval, action: str) -> ApprovalRefused:
    if approval.status == "EXPIRED":
        return ApprovalRefused("expired", f"approval {approval.id} has expired")
    if approval.status == "USED":
        return ApprovalRefused("used", f"approval {approval.id} has already been used")
    return ApprovalRefused(
        "already_decided",
        f"cannot {action} approval {approval.id}: it is {approval.status}",
    )


def decide(
    connection: sqlite3.Connection,
    approval_id: int,
    operator: str,
    decision: Decision,
    *,
    clock: Clock = utc_now,
) -> Approval:
    """An operator approves, denies or revokes one approval, or is refused and nothing changes.

    Checked in this order, all under the write lock: the operator, the
    approval, its status (after expiring what is due), then for an approval
    the money left this week.
    """
    now = seconds(clock)
    with transaction(connection):
        if (
            connection.execute("SELECT 1 FROM operators WHERE name = ?", (operator,)).fetchone()
            is None
        ):
            raise ApprovalRefused("unknown_operator", f"{operator!r} is not an operator")
        # A refusal below rolls this back too: a refused action changes nothing.
        expire_due(connection, now)
        approval = read_approval(connection, approval_id)
        allowed = ("PENDING", "APPROVED") if decision == "revoke" else ("PENDING",)
        if approval.status not in allowed:
            raise _refuse_status(approval, decision)
        if decision == "approve":
            left = budget(connection, now).left_pence
            if approval.amount_pence > left:
                raise ApprovalRefused(
                    "over_budget",
                    f"approval {approval_id} is for {approval.amount_pence:,} pence;"
                    f" only {left:,} pence are left this week",
                )
        status = {"approve": "APPROVED", "deny": "DENIED", "revoke": "REVOKED"}[decision]
        connection.execute(
            "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ? WHERE id = ?",
            (status, operator, now, approval_id),
        )
        return read_approval(connection, approval_id)


def approve(
    connection: sqlite3.Connection, approval_id: int, operator: str, *, clock: Clock = utc_now
) -> Approval:
    return decide(connection, approval_id, operator, "approve", clock=clock)


def deny(
    connection: sqlite3.Connection, approval_id: int, operator: str, *, clock: Clock = utc_now
) -> Approval:
    return decide(connection, approval_id, operator, "deny", clock=clock)


def revoke(
    connection: sqlite3.Connection, approval_id: int, operator: str, *, clock: Clock = utc_now
) -> Approval:
    return decide(connection, approval_id, operator, "revoke", clock=clock)


def use_approval(connection: sqlite3.Connection, tool: str, arguments: str, now: int) -> Approval:
    """Mark the call's approved, unexpired approval USED; run inside the handler's transaction.

    The update names the status it expects, so of two processes racing for one
    approval exactly one changes a row; the other is refused. Rolled back with
    the handler's writes, the approval is unused again and its money unspent.
    """
    row = connection.execute(
        f"SELECT {_COLUMNS} FROM approvals WHERE tool = ? AND arguments = ?"
        " AND status = 'APPROVED' AND expires_at > ? ORDER BY id LIMIT 1",
        (tool, arguments, now),
    ).fetchone()
    if row is None:
        raise ApprovalRefused(
            "no_approval", f"no approved, unexpired approval for this {tool} call"
        )
    approval = _approval(row)
    cursor = connection.execute(
        "UPDATE approvals SET status = 'USED', used_at = ? WHERE id = ? AND status = 'APPROVED'",
        (now, approval.id),
    )
    if cursor.rowcount != 1:
        raise ApprovalRefused("used", f"approval {approval.id} has already been used")
    return read_approval(connection, approval.id)
