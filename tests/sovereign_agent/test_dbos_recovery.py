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
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

from durable_morning import ANSWER, CALLS, morning_store, read_log

from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
TESTS = ROOT / "tests"
SCRIPT = ROOT / "scripts/dbos_worker.py"


def dbos_worker(folder: Path, *, kill: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        "SOVEREIGN_TEST_LOG": str(folder / "log"),
    }
    for name in ("SOVEREIGN_TEST_KILL", "SOVEREIGN_TEST_STOP", "DBOS_SYSTEM_DATABASE_URL"):
        env.pop(name, None)
    if kill is not None:
        env["SOVEREIGN_TEST_KILL"] = kill
    return subprocess.run(
        [
            *(sys.executable, str(SCRIPT), "--store", str(folder / "lucy.db")),
            *("--system-db", str(folder / "dbos.sqlite")),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


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
    killed = dbos_worker(tmp_path, kill="outcome-place_order-SKU-VANILLA")
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
    killed = dbos_worker(tmp_path, kill="after-place_order-SKU-VANILLA")
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
