"""Figure 10.1: an approval's states, and what moves it from one to another.

Drawn by trying every action on an approval in every state, in a real store:
for each status in the ledger's own `STATUSES`, a fresh store (all migrations,
one operator, a weekly limit) holds one approval brought to that status by the
ledger's functions; then one action is tried (approve, deny, revoke, use, or
its expiry passing) and the status read back. An arrow is an action that
changed the status; every other attempt was refused, or changed nothing.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bookproof.figures.diagrams import ACCENT, MUTED, WARN, Canvas
from sovereign_agent.approvals import ledger
from sovereign_agent.store import open_store, transaction

NOW = int(datetime(2026, 6, 5, 9, 0, tzinfo=UTC).timestamp())  # a fixed Friday morning
LATER = NOW + int(ledger.DEFAULT_LIFETIME.total_seconds())  # the moment it expires
TOOL, ARGUMENTS = "place_order", '{"quantity":6,"sku":"SKU-VANILLA"}'
OPERATOR = "lucy"

Action = Callable[[Any, int], object]


def _at(moment: int) -> ledger.Clock:
    return lambda: datetime.fromtimestamp(moment, UTC)


def _use(connection: Any, approval_id: int) -> None:
    with transaction(connection):
        ledger.use_approval(connection, TOOL, ARGUMENTS, NOW)


def _expire(connection: Any, approval_id: int) -> None:
    with transaction(connection):
        ledger.expire_due(connection, LATER)


ACTIONS: dict[str, Action] = {
    "approve": lambda c, i: ledger.approve(c, i, OPERATOR, clock=_at(NOW)),
    "deny": lambda c, i: ledger.deny(c, i, OPERATOR, clock=_at(NOW)),
    "revoke": lambda c, i: ledger.revoke(c, i, OPERATOR, clock=_at(NOW)),
    "use": _use,
    "expiry passes": _expire,
}


def _reach(status: str) -> list[str]:
    """The shortest list of actions that brings a new approval to `status`."""
    paths = {"PENDING": [], "APPROVED": ["approve"], "USED": ["approve", "use"]}
    single = {"DENIED": "deny", "REVOKED": "revoke", "EXPIRED": "expiry passes"}
    return paths[status] if status in paths else [single[status]]


def transitions() -> tuple[list[tuple[str, str, str]], dict[str, set[str]]]:
    """(from, action, to) for each action that changed a status; the refusal codes met."""
    moves: list[tuple[str, str, str]] = []
    refusals: dict[str, set[str]] = {}
    for status in ledger.STATUSES:
        for action, act in ACTIONS.items():
            with (
                tempfile.TemporaryDirectory(prefix="figure-") as folder,
                closing(open_store(Path(folder) / "lucy.db")) as connection,
            ):
                ledger.add_operator(connection, OPERATOR)
                ledger.set_weekly_limit(connection, 10_000, clock=_at(NOW))
                with transaction(connection):
                    approval = ledger.request_approval(
                        connection, TOOL, ARGUMENTS, 1500, "run-1", now=NOW
                    )
                for step in _reach(status):
                    ACTIONS[step](connection, approval.id)
                reached = ledger.read_approval(connection, approval.id).status
                assert reached == status, f"meant to reach {status}, reached {reached}"
                try:
                    act(connection, approval.id)
                except ledger.ApprovalRefused as refusal:
                    refusals.setdefault(status, set()).add(refusal.code)
                    continue
                after = ledger.read_approval(connection, approval.id).status
                if after != status:
                    moves.append((status, action, after))
    return moves, refusals


BOX_W, BOX_H = 1.25, 0.42
# Where each state sits: layout only; which arrows join them is the data above.
PLACES = {
    "PENDING": (0.3, 1.75),
    "APPROVED": (2.75, 2.85),
    "DENIED": (2.75, 0.45),
    "REVOKED": (5.6, 1.75),
    "EXPIRED": (5.6, 0.45),
    "USED": (5.6, 2.85),
}


def _centre(status: str) -> tuple[float, float]:
    x, y = PLACES[status]
    return x + BOX_W / 2, y + BOX_H / 2


def _edge_point(status: str, towards: tuple[float, float]) -> tuple[float, float]:
    """Where the line from the box's centre towards a point leaves the box."""
    cx, cy = _centre(status)
    dx, dy = towards[0] - cx, towards[1] - cy
    scale = min(
        (BOX_W / 2) / abs(dx) if dx else float("inf"),
        (BOX_H / 2) / abs(dy) if dy else float("inf"),
    )
    return cx + dx * scale, cy + dy * scale


def draw() -> Any:
    moves, refusals = transitions()
    final = [status for status in ledger.STATUSES if not any(m[0] == status for m in moves)]
    canvas = Canvas(7.2, 3.85)
    for status, (x, y) in PLACES.items():
        is_final = status in final
        canvas.box(x, y, BOX_W, BOX_H, fill="white" if is_final else "#dbe7f0")
        canvas.text(x + BOX_W / 2, y + BOX_H / 2, status, fontweight="bold", fontsize=8.5)
        if status in refusals:
            canvas.text(
                x + BOX_W / 2,
                # Under the box, or over it on the top row, clear of the arrows that leave it.
                y + BOX_H + 0.12 if y > 2.5 else y - 0.12,
                "refused: " + ", ".join(sorted(refusals[status])),
                fontsize=6.5,
                color=MUTED,
            )
    for source, action, target in moves:
        start = _edge_point(source, _centre(target))
        end = _edge_point(target, _centre(source))
        timed = action == "expiry passes"
        colour = MUTED if timed else (WARN if target in ("DENIED", "REVOKED") else ACCENT)
        canvas.arrow(start, end, color=colour, dashed=timed)
        # The label sits a third of the way along, nearer the source, clear of other labels.
        lx, ly = start[0] + (end[0] - start[0]) * 0.4, start[1] + (end[1] - start[1]) * 0.4
        canvas.text(lx, ly + 0.1, action, fontsize=7.5, color=colour)
    canvas.text(
        0.3,
        0.3,
        "blue box: still open\nwhite box: final\ndashed: time alone (expiry)",
        ha="left",
        va="bottom",
        fontsize=7,
        color=MUTED,
    )
    return canvas.figure
