"""The morning run as a DBOS workflow, killed part-way and recovered by DBOS in a new process.

`scripts/dbos_worker.py` runs a queued run as a DBOS workflow over a SQLite
system database, each model turn and each tool call one DBOS step. Here a
real process running it is killed (SIGKILL, by the run's own kill point from
`durable_morning`), and a second process launched on the same system
database recovers the workflow: steps DBOS had recorded are not run again.

The second test shows where DBOS's guarantee ends and chapter 11 begins: a
step killed after its order committed, but before DBOS recorded the step,
runs again on recovery. Only the shop's own rules (an approval is used once)
stop a second order, and the run ends asking Lucy for a new approval.

The last two stop the worker (SIGSTOP) the moment the supplier's desk
answers, with the book's supplier desk running, once through the tests'
morning and once through the chapter's own morning module: DBOS runs the
workflow on a thread of its own, and the stop must freeze that thread before
its next line, or it confirms the purchase that the chapter says is left in
doubt.
"""

from __future__ import annotations

import ast
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

from durable_morning import ANSWER, CALLS, morning_store, read_log
from supplier_desk import ledger_orders, running_desk

from bookproof.layout import REPO_ROOT
from sovereign_agent.runs import submit_run
from sovereign_agent.store import open_store

ROOT = REPO_ROOT
TESTS = ROOT / "tests"
SCRIPT = ROOT / "scripts/dbos_worker.py"
LEARNER = (
    ROOT
    / "book/textbook/learner"
    / "profrod_sovereign_agent_ch12_recovering_unfinished_work_learner.py"
)


def worker_command(folder: Path) -> list[str]:
    return [
        *(sys.executable, str(SCRIPT), "--store", str(folder / "lucy.db")),
        *("--system-db", str(folder / "dbos.sqlite")),
    ]


def worker_env(folder: Path, **points: str) -> dict[str, str]:
    """The worker's environment: the durable log in `folder`, and only the points given."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        "SOVEREIGN_TEST_LOG": str(folder / "log"),
    }
    for name in (
        "SOVEREIGN_TEST_KILL",
        "SOVEREIGN_TEST_STOP",
        "SOVEREIGN_TEST_SUPPLIER",
        "DBOS_SYSTEM_DATABASE_URL",
    ):
        env.pop(name, None)
    return {**env, **points}


def dbos_worker(folder: Path, **points: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        worker_command(folder),
        env=worker_env(folder, **points),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def until_stopped_or_ended(process: subprocess.Popen[str], timeout: float) -> int:
    """The wait status once the process has stopped (or ended): waitpid reports the stop itself."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid, status = os.waitpid(process.pid, os.WNOHANG | os.WUNTRACED)
        if pid == process.pid:
            return status
        time.sleep(0.05)  # a bound on how often we ask, not a guess at when it stops
    raise AssertionError(f"the worker neither stopped nor ended in {timeout} s")


def rows(store: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(store) as connection:
        return connection.execute(sql).fetchall()


def by_process(folder: Path) -> list[Counter[str]]:
    """The durable log's events, one Counter per process, in the order the processes ran."""
    counters: dict[int, Counter[str]] = {}
    for pid, event in read_log(folder / "log"):
        counters.setdefault(pid, Counter())[event] += 1
    return list(counters.values())


def test_dbos_recovers_the_morning_killed_after_its_first_purchase(tmp_path: Path) -> None:
    store = morning_store(tmp_path / "lucy.db")
    killed = dbos_worker(tmp_path, SOVEREIGN_TEST_KILL="outcome-place_order-SKU-VANILLA")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    recovered = dbos_worker(tmp_path)
    assert recovered.returncode == 0, recovered.stderr
    assert recovered.stdout == "run 1: finished, final_answer (DBOS workflow run-1)\n"
    first, second = by_process(tmp_path)
    # The second process did only what the first had not: the chocolate
    # order and the last turn. DBOS answered the rest from its records.
    assert second == Counter(
        ["enter place_order-SKU-CHOCOLATE", "done place_order-SKU-CHOCOLATE", "ask 3"]
    )
    handlers = [f"{kind} {name}" for name in CALLS for kind in ("enter", "done")]
    assert first + second == Counter(
        ["ask 1", "ask 2", "ask 3", *handlers, "killed-at outcome-place_order-SKU-VANILLA"]
    )
    # Two orders at the supplier's price, 2,550 pence, none twice.
    orders = rows(store, "SELECT sku, quantity, unit_cost_pence FROM orders ORDER BY id")
    assert orders == [("SKU-VANILLA", 9, 250), ("SKU-CHOCOLATE", 1, 300)]
    assert sum(quantity * pence for _, quantity, pence in orders) == 2550  # type: ignore[operator]
    assert rows(store, "SELECT status, stop_reason, answer FROM runs") == [
        ("FINISHED", "final_answer", ANSWER)
    ]
    assert rows(store, "SELECT status FROM approvals ORDER BY id") == [("USED",), ("USED",)]


def test_a_step_killed_after_its_effect_runs_again_under_dbos(tmp_path: Path) -> None:
    store = morning_store(tmp_path / "lucy.db")
    killed = dbos_worker(tmp_path, SOVEREIGN_TEST_KILL="after-place_order-SKU-VANILLA")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    recovered = dbos_worker(tmp_path)
    assert recovered.returncode == 0, recovered.stderr
    assert recovered.stdout == "run 1: finished, awaiting_approval (DBOS workflow run-1)\n"
    _, second = by_process(tmp_path)
    # DBOS had not recorded the vanilla step: it ran the step again. The
    # approval was used by the first order, so chapter 10's write authority
    # refused the call before its handler (no second order) ...
    assert second["enter place_order-SKU-VANILLA"] == 0
    assert second["done place_order-SKU-CHOCOLATE"] == 1
    assert rows(store, "SELECT sku, quantity FROM orders ORDER BY id") == [
        ("SKU-VANILLA", 9),
        ("SKU-CHOCOLATE", 1),
    ]
    # ... but the run now waits for Lucy to approve a second vanilla order,
    # which the journal's in-doubt resolution never asks for.
    assert rows(store, "SELECT arguments, amount_pence, status FROM approvals ORDER BY id") == [
        ('{"quantity":9,"sku":"SKU-VANILLA"}', 2250, "USED"),
        ('{"quantity":1,"sku":"SKU-CHOCOLATE"}', 300, "USED"),
        ('{"quantity":9,"sku":"SKU-VANILLA"}', 2250, "PENDING"),
    ]


def test_a_dbos_worker_stopped_as_the_desk_answers_goes_no_further(tmp_path: Path) -> None:
    store = morning_store(tmp_path / "lucy.db")
    with running_desk(tmp_path / "supplier.db") as desk:
        stopped = subprocess.Popen(
            worker_command(tmp_path),
            env=worker_env(
                tmp_path,
                SOVEREIGN_TEST_SUPPLIER=desk.url,
                SOVEREIGN_TEST_STOP="answered-place_order-SKU-VANILLA",
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            status = until_stopped_or_ended(stopped, timeout=120)
            assert os.WIFSTOPPED(status), f"the worker ended instead: wait status {status}"
            # Stopped, by the kernel's word. The workflow's thread heard the
            # desk's answer and went no further: no handler returned, and the
            # purchase is still in doubt, though the supplier has the order.
            # A stop sent to the whole process (os.kill) left that thread
            # running until the main thread took the signal: in chapter 12.6's
            # listing, on a busy machine, far enough to write CONFIRMED in more
            # than a third of runs.
            events = [event for _, event in read_log(tmp_path / "log")]
            assert events[-2:] == [
                "enter place_order-SKU-VANILLA",
                "stopped-at answered-place_order-SKU-VANILLA",
            ]
            assert rows(store, "SELECT order_id, status FROM purchases") == [(1, "PREPARED")]
            assert [sku for _, sku, _, _ in ledger_orders(desk.ledger)] == ["SKU-VANILLA"]
        finally:
            stopped.kill()
            stopped.wait(timeout=30)
        assert stopped.returncode == -signal.SIGKILL
        recovered = dbos_worker(tmp_path, SOVEREIGN_TEST_SUPPLIER=desk.url)
        assert recovered.returncode == 0, recovered.stderr
        assert recovered.stdout == "run 1: finished, awaiting_approval (DBOS workflow run-1)\n"
        # DBOS ran the vanilla step again (it had no record of it); the used
        # approval stopped a second order, and the purchase stays in doubt for
        # chapter 11's resolving, exactly as chapter 12.6 prints it.
        assert [sku for _, sku, _, _ in ledger_orders(desk.ledger)] == [
            "SKU-VANILLA",
            "SKU-CHOCOLATE",
        ]
    assert rows(store, "SELECT order_id, status FROM purchases ORDER BY order_id") == [
        (1, "PREPARED"),
        (2, "CONFIRMED"),
    ]
    assert rows(store, "SELECT arguments, status FROM approvals ORDER BY id") == [
        ('{"quantity":9,"sku":"SKU-VANILLA"}', "USED"),
        ('{"quantity":1,"sku":"SKU-CHOCOLATE"}', "USED"),
        ('{"quantity":9,"sku":"SKU-VANILLA"}', "PENDING"),
    ]


def learner_constant(name: str) -> str:
    """A string the chapter's learner file (the same text as the chapter's listing) assigns."""
    for node in ast.parse(LEARNER.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == [name]
            and isinstance(node.value, ast.Constant)
        ):
            return str(node.value.value)
    raise KeyError(name)


def test_the_chapters_morning_stops_its_dbos_worker_before_the_purchase_is_confirmed(
    tmp_path: Path,
) -> None:
    # Chapter 12.6 as the listing runs it: the chapter's own morning module,
    # the book's desk, the DBOS worker told to stop after SUP-0001, its
    # "bought" line read from its stdout the moment it is printed.
    (tmp_path / "morning.py").write_text(learner_constant("MORNING"), encoding="utf-8")
    store = morning_store(tmp_path / "lucy.db", runs=0)
    with closing(open_store(store)) as connection:
        submit_run(connection, learner_constant("TASK"), setup=learner_constant("SETUP"))
    with running_desk(tmp_path / "supplier.db") as desk:
        env = {
            **worker_env(tmp_path),
            "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
            "SOVEREIGN_SUPPLIER": desk.url,
            "MORNING_LOG": str(tmp_path / "asked.log"),
            "MORNING_STOP_AFTER": "SUP-0001",
        }
        stopped = subprocess.Popen(
            worker_command(tmp_path), env=env, stdout=subprocess.PIPE, text=True
        )
        try:
            assert stopped.stdout is not None
            assert stopped.stdout.readline() == "bought SUP-0001\n"
            status = until_stopped_or_ended(stopped, timeout=120)
            assert os.WIFSTOPPED(status), f"the worker ended instead: wait status {status}"
            # Stopped, by the kernel's word, with the purchase still in doubt:
            # the workflow's thread wrote nothing after the desk answered.
            assert rows(store, "SELECT order_id, status FROM purchases") == [(1, "PREPARED")]
        finally:
            stopped.kill()
            stopped.wait(timeout=30)
            if stopped.stdout is not None:
                stopped.stdout.close()
        assert [sku for _, sku, _, _ in ledger_orders(desk.ledger)] == ["SKU-VANILLA"]
