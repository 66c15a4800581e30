"""Approvals across processes: real children on one store file.

Two processes racing for one approval (one order, never two); a process
killed half-way through using an approval (nothing used, nothing spent); and
the operator's command deciding from a process of its own. What the command
decides and prints on a refusal or a usage error is its `main`'s, called in
this process: one process start each would test Python's, not the command's.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from approvals_fixture import Clock, friday_store, morning_run, order_call
from shop_store import contents, python_child, start_together

from sovereign_agent.approvals import (
    approve,
    budget,
    build_approved_store_tools,
    list_approvals,
    run_with_approvals,
)
from sovereign_agent.approvals.__main__ import main as approvals_main
from sovereign_agent.approvals.ledger import seconds
from sovereign_agent.models import AssistantMessage
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.store import open_store


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return friday_store(tmp_path / "lucy.db")


@pytest.fixture
def clock() -> Clock:
    # The operator's command reads the real clock: these approvals are made now.
    return Clock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def pending(path: Path, clock: Clock) -> Iterator[sqlite3.Connection]:
    """Friday's two pending approvals: 1 is vanilla 9 (2,250 pence), 2 chocolate 1 (300)."""
    with closing(open_store(path)) as connection:
        assert morning_run(connection, clock, "friday-morning").stop_reason == "awaiting_approval"
        yield connection


ORDER_VANILLA_WHEN_TOLD = """
    import sys
    from datetime import datetime
    from sovereign_agent.approvals import build_approved_store_tools
    from sovereign_agent.store import open_store
    from sovereign_agent.tools import ToolCall

    now = datetime.fromisoformat(sys.argv[2])
    connection = open_store(sys.argv[1], timeout=30)
    dispatcher, _ = build_approved_store_tools(connection, clock=lambda: now)
    print("ready", flush=True)
    sys.stdin.readline()
    call = ToolCall(id="c", name="place_order", arguments={"sku": "SKU-VANILLA", "quantity": 9})
    outcome = dispatcher.attempt(call)
    print(outcome.observation["ok"], outcome.failure and outcome.failure.message)
"""


def test_two_processes_using_one_approval_at_once_order_once(
    path: Path, pending: sqlite3.Connection, clock: Clock
) -> None:
    approve(pending, 1, "lucy", clock=clock)
    children = [
        python_child(ORDER_VANILLA_WHEN_TOLD, str(path), clock.now.isoformat()) for _ in range(2)
    ]
    start_together(children)
    results = [child.communicate(timeout=120) for child in children]
    assert all(child.returncode == 0 for child in children), results
    outputs = sorted(out.split(" ", 1)[0] for out, _ in results)
    assert outputs == ["False", "True"], results
    rows = pending.execute("SELECT sku, quantity, approval_id, status FROM orders").fetchall()
    assert [tuple(row) for row in rows] == [("SKU-VANILLA", 9, 1, "ORDERED")]
    assert list_approvals(pending)[0].status == "USED"


USE_AND_HANG_BEFORE_THE_ORDER = """
    import sys, time
    from datetime import datetime
    from sovereign_agent.approvals import build_approved_store_tools
    from sovereign_agent.store import open_store
    from sovereign_agent.tools import ToolCall

    now = datetime.fromisoformat(sys.argv[2])
    connection = open_store(sys.argv[1])
    dispatcher, _ = build_approved_store_tools(connection, clock=lambda: now)

    def hang_at_the_order(statement):
        # The approval is marked USED in this transaction; the order is next.
        if statement.startswith("INSERT INTO orders"):
            print("inside", flush=True)
            time.sleep(600)

    connection.set_trace_callback(hang_at_the_order)
    call = ToolCall(id="c", name="place_order", arguments={"sku": "SKU-VANILLA", "quantity": 9})
    dispatcher.attempt(call)
"""


def test_a_process_killed_while_using_an_approval_uses_and_spends_nothing(
    path: Path, pending: sqlite3.Connection, clock: Clock
) -> None:
    approve(pending, 1, "lucy", clock=clock)
    before = contents(path)
    child = python_child(USE_AND_HANG_BEFORE_THE_ORDER, str(path), clock.now.isoformat())
    assert child.stdout is not None
    assert child.stdout.readline() == "inside\n"
    os.kill(child.pid, signal.SIGKILL)
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    with closing(open_store(path)) as connection:
        assert list_approvals(connection)[0].status == "APPROVED"
        week = budget(connection, seconds(clock))
        assert (week.reserved_pence, week.spent_pence, week.left_pence) == (2250, 0, 2750)
    assert contents(path) == before


def approvals_command(path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sovereign_agent.approvals", "--store", str(path), *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def approvals_in_process(
    capsys: pytest.CaptureFixture[str], path: Path, *arguments: str
) -> subprocess.CompletedProcess[str]:
    """What `python -m sovereign_agent.approvals` exits with and prints, by its `main` here.

    `__main__` exits with `main`'s return; argparse's usage errors exit from within it.
    """
    capsys.readouterr()  # only what this command prints
    argv = ["--store", str(path), *arguments]
    try:
        status = approvals_main(argv)
    except SystemExit as exit:
        status = exit.code
    printed = capsys.readouterr()
    return subprocess.CompletedProcess(argv, status, printed.out, printed.err)


def test_lucy_approves_from_another_process_and_the_run_orders(
    path: Path, pending: sqlite3.Connection, clock: Clock
) -> None:
    listed = approvals_command(path, "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith(
        '1 PENDING place_order {"quantity":9,"sku":"SKU-VANILLA"} 2,250 pence'
    )
    assert lines[1].startswith(
        '2 PENDING place_order {"quantity":1,"sku":"SKU-CHOCOLATE"} 300 pence'
    )
    assert "run friday-morning" in lines[0]
    assert lines[2] == (
        "budget: 5,000 pence a week, 0 pence reserved, 0 pence spent, 5,000 pence left"
    )
    for number in ("1", "2"):
        decided = approvals_command(path, "approve", number, "--as", "lucy")
        assert decided.returncode == 0, decided.stderr
        assert decided.stdout.startswith(f"{number} APPROVED by lucy place_order")
    listed = approvals_command(path, "list")
    assert listed.stdout.splitlines()[-1] == (
        "budget: 5,000 pence a week, 2,550 pence reserved, 0 pence spent, 2,450 pence left"
    )
    run = morning_run(pending, clock, "friday-late-morning")
    assert run.stop_reason == "final_answer"
    orders = pending.execute("SELECT sku, quantity, status FROM orders ORDER BY id").fetchall()
    assert [tuple(row) for row in orders] == [
        ("SKU-VANILLA", 9, "ORDERED"),
        ("SKU-CHOCOLATE", 1, "ORDERED"),
    ]


def refused(capsys: pytest.CaptureFixture[str], path: Path, *arguments: str) -> str:
    """The one line a refused command prints; the command must exit 1 and change nothing."""
    before = contents(path)
    result = approvals_in_process(capsys, path, *arguments)
    assert result.returncode == 1, result
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert contents(path) == before
    return result.stderr.rstrip("\n")


def test_the_command_refuses_in_one_line_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], path: Path, pending: sqlite3.Connection, clock: Clock
) -> None:
    assert refused(capsys, path, "approve", "99", "--as", "lucy") == (
        "error: unknown_approval: no approval 99"
    )
    assert refused(capsys, path, "approve", "1", "--as", "mallory") == (
        "error: unknown_operator: 'mallory' is not an operator"
    )
    approve(pending, 1, "lucy", clock=clock)
    approve(pending, 2, "lucy", clock=clock)
    assert refused(capsys, path, "deny", "1", "--as", "sam") == (
        "error: already_decided: cannot deny approval 1: it is APPROVED"
    )
    # Strawberry 12 is 3,300 pence; 2,450 are left this week.
    dispatcher, authority = build_approved_store_tools(pending, run_id="cafe", clock=clock)
    model = ScriptedModel([AssistantMessage(tool_calls=(order_call("s", "SKU-STRAWBERRY", 12),))])
    run_with_approvals(model, dispatcher, authority, "Strawberry.", max_steps=2, max_tool_calls=2)
    assert refused(capsys, path, "approve", "3", "--as", "lucy") == (
        "error: over_budget: approval 3 is for 3,300 pence; only 2,450 pence are left this week"
    )
    morning_run(pending, clock, "friday-noon")
    assert refused(capsys, path, "revoke", "1", "--as", "lucy") == (
        "error: used: approval 1 has already been used"
    )
    # An approval asked for 25 hours ago has expired.
    yesterday = Clock(clock.now - timedelta(hours=25))
    dispatcher, authority = build_approved_store_tools(pending, clock=yesterday)
    model = ScriptedModel([AssistantMessage(tool_calls=(order_call("v", "SKU-VANILLA", 2),))])
    run_with_approvals(model, dispatcher, authority, "Vanilla.", max_steps=2, max_tool_calls=2)
    assert refused(capsys, path, "approve", "4", "--as", "lucy") == (
        "error: expired: approval 4 has expired"
    )


@pytest.mark.parametrize(
    "arguments",
    [
        [],
        ["approve", "1"],
        ["approve", "one", "--as", "lucy"],
        ["list", "extra"],
        ["approve", "1", "--as"],
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], path: Path, arguments: list[str]
) -> None:
    result = approvals_in_process(capsys, path, *arguments)
    assert result.returncode == 2, result
    assert "usage:" in result.stderr


def test_a_missing_store_is_not_created(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    result = approvals_in_process(capsys, missing, "list")
    assert (result.returncode, result.stderr) == (2, f"error: no store at {missing}\n")
    assert not missing.exists()
