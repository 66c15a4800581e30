"""A worker killed anywhere in the morning run: another finishes it, and nothing happens twice.

Every test here runs real worker processes over a real store file, with the
offline morning of `durable_morning`, whose `place_order` purchases at the
book's supplier desk (chapter 11), a real HTTP server with its own ledger.
The workers run the command's own `main`, forked from this already-imported
interpreter (`forked_worker`); the uninterrupted morning and the worker told
to stop start `python -m sovereign_agent.worker` itself.

A worker is killed with SIGKILL at each boundary between steps and inside
each step (before the model answers, after it answered, inside each handler
before its commit, after the supplier answered, after its commit), or paused
with SIGSTOP past its lease; a second worker finishes the run. The store it
leaves must be the store an uninterrupted run leaves, the durable log must
show each order placed exactly once and each model step asked again only when
the kill fell inside that very step, and the supplier's ledger, read
directly, must hold exactly one order per purchase, under the key the store
recorded for it.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from durable_morning import CALLS, EVENTS, essence, morning_store, read_log
from forked_worker import ForkedWorker, stop_all
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shop_store import contents
from strength import examples
from supplier_desk import RunningDesk, ledger_orders, running_desk

TESTS = Path(__file__).resolve().parents[1]
# Short enough that a dead worker's run is taken over quickly, long enough
# that a live worker on a busy two-core machine renews in time (every third):
# for workers that run side by side.
LEASE = "0.8"
# A worker with no rival may let its lease lapse: a renewal checks the owner
# and the generation, not the clock, and only another worker's claim takes
# the run away. So where one worker runs at a time (the next one starts after
# the first was killed or paused), the first takes a short lease, and the
# next waits a quarter of a second, not most of one, for the dead one's run.
ALONE = "0.25"

# A forked worker, or the command started by its own interpreter.
Worker = ForkedWorker | subprocess.Popen[str]


def worker(
    store: Path,
    log: Path,
    desk: RunningDesk,
    *,
    kill: str | None = None,
    stop: str | None = None,
    wait: str | None = None,
    lease: str = ALONE,
    desk_pause: str | None = None,
    command: bool = False,
) -> Worker:
    """A worker process; forked from this one unless `command` asks for `python -m` itself.

    `desk_pause` caps its pauses between attempts at a desk that is down.
    """
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        "SOVEREIGN_TEST_LOG": str(log),
        "SOVEREIGN_TEST_SUPPLIER": desk.url,
    }
    for name in ("KILL", "STOP", "WAIT", "DESK_PAUSE"):
        env.pop(f"SOVEREIGN_TEST_{name}", None)
    env.pop("SOVEREIGN_TRACE", None)
    if wait is not None:
        env["SOVEREIGN_TEST_WAIT"] = wait
    if kill is not None:
        env["SOVEREIGN_TEST_KILL"] = kill
    if stop is not None:
        env["SOVEREIGN_TEST_STOP"] = stop
    if desk_pause is not None:
        env["SOVEREIGN_TEST_DESK_PAUSE"] = desk_pause
    arguments = [
        *("--store", str(store), "--once"),
        *("--lease-seconds", lease, "--poll-seconds", "0.2"),
    ]
    if not command:
        return ForkedWorker(arguments, env)
    return subprocess.Popen(
        [sys.executable, "-m", "sovereign_agent.worker", *arguments],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(child: Worker, timeout: float = 60) -> tuple[int, str, str]:
    out, err = child.communicate(timeout=timeout)
    assert child.returncode is not None
    return child.returncode, out, err


@pytest.fixture(autouse=True)
def no_worker_left() -> Iterator[None]:
    """A test that fails half-way leaves no forked worker running (or paused) behind."""
    yield
    stop_all()


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[RunningDesk]:
    """The supplier's desk with a ledger of its own, new for each test."""
    with running_desk(tmp_path / "supplier.db") as running:
        yield running


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The store and the log of one morning no one interrupted."""
    folder = tmp_path_factory.mktemp("reference")
    store = morning_store(folder / "lucy.db")
    with running_desk(folder / "supplier.db") as desk:
        code, out, err = finish(worker(store, folder / "log", desk, command=True))
        check_ledger(store, desk)
    assert code == 0, err
    assert out == (
        "run 1: finished, final_answer after 3 step(s);"
        " 0 reply(ies) and 0 outcome(s) from the journal\n"
    )
    return {"essence": essence(store), "log": read_log(folder / "log")}


def events(log: list[tuple[int, str]]) -> Counter[str]:
    return Counter(event for _, event in log)


def check_ledger(store: Path, desk: RunningDesk) -> None:
    """The supplier holds one order per purchase, under the key the store wrote, and no other."""
    with sqlite3.connect(store) as connection:
        keys = [
            row[0]
            for row in connection.execute("SELECT operation_id FROM purchases ORDER BY order_id")
        ]
    assert ledger_orders(desk.ledger) == [
        (keys[0], "SKU-VANILLA", 9, 250),
        (keys[1], "SKU-CHOCOLATE", 1, 300),
    ]


def test_the_uninterrupted_morning_orders_twice_and_asks_three_times(
    reference: dict[str, Any],
) -> None:
    found = reference["essence"]
    assert [(row[1], row[2], row[3]) for row in found["orders"]] == [
        ("SKU-VANILLA", 9, 250),
        ("SKU-CHOCOLATE", 1, 300),
    ]
    assert sum(row[2] * row[3] for row in found["orders"]) == 2550
    assert found["purchases"] == [
        (1, "CONFIRMED", "SUP-0001", None),
        (2, "CONFIRMED", "SUP-0002", None),
    ]
    assert found["runs"] == [
        (
            1,
            "Order what the shop needs.",
            "durable_morning:morning_setup",
            "FINISHED",
            "final_answer",
            "Ordered 9 vanilla and 1 chocolate: 2,550 pence.",
            None,
            None,
        )
    ]
    # Three replies and three outcomes, each DONE, in order.
    assert [(row[1], row[2], row[4], row[5]) for row in found["steps"]] == [
        (1, 0, None, "DONE"),
        (1, 1, "list_stock", "DONE"),
        (2, 0, None, "DONE"),
        (2, 1, "place_order", "DONE"),
        (2, 2, "place_order", "DONE"),
        (3, 0, None, "DONE"),
    ]
    handlers = [f"{kind} {name}" for name in CALLS for kind in ("enter", "done")]
    assert events(reference["log"]) == Counter(["ask 1", "ask 2", "ask 3", *handlers])


def expected_repeats(kill: str) -> Counter[str]:
    """What a second worker does again after a kill at `kill`: only the step it fell inside.

    A reply not yet journaled is asked for again; a read whose outcome was not
    journaled runs again (it changes nothing); an order is never placed again:
    one that committed is found in the store (its purchase, if the supplier
    answered, found at the supplier by its key), and only one whose handler
    had not yet written anything is entered a second time.
    """
    kind, _, name = kill.partition("-")
    if kind in ("ask", "reply"):
        return Counter([f"ask {name}"])
    if kind == "enter":
        return Counter([f"enter {name}"])
    if kind == "after" and name == "list_stock":
        return Counter(["enter list_stock", "done list_stock"])
    return Counter()


def check_recovered(
    store: Path, log: Path, desk: RunningDesk, reference: dict[str, Any], kill: str
) -> None:
    assert essence(store) == reference["essence"]
    check_ledger(store, desk)
    found = events(read_log(log))
    assert found.pop(f"killed-at {kill}") == 1
    kind, _, name = kill.partition("-")
    # Killed after the supplier answered, its handler never returned; nothing
    # entered it again either: the worker that resumed settled it by its key.
    unfinished = Counter([f"done {name}"]) if kind == "answered" else Counter()
    assert found == events(reference["log"]) + expected_repeats(kill) - unfinished
    # The thing that must never happen twice, counted where it happens: at
    # most one handler finished each order, and the supplier (check_ledger)
    # holds exactly one order for each.
    for order in ("place_order-SKU-VANILLA", "place_order-SKU-CHOCOLATE"):
        assert found[f"done {order}"] == (0 if name == order and kind == "answered" else 1)


@pytest.mark.parametrize("kill", EVENTS)
def test_a_worker_killed_anywhere_is_finished_by_another_with_nothing_done_twice(
    tmp_path: Path, desk: RunningDesk, reference: dict[str, Any], kill: str
) -> None:
    store = morning_store(tmp_path / "lucy.db")
    log = tmp_path / "log"
    code, _, err = finish(worker(store, log, desk, kill=kill))
    assert code == -signal.SIGKILL, err
    code, out, err = finish(worker(store, log, desk))
    assert code == 0, err
    assert out.startswith("run 1: finished, final_answer after 3 step(s);"), out
    check_recovered(store, log, desk, reference, kill)


def test_a_purchase_the_supplier_answered_is_found_there_by_its_key_not_sent_again(
    tmp_path: Path, desk: RunningDesk, reference: dict[str, Any]
) -> None:
    # Killed after the supplier committed the vanilla order and answered, before
    # the store confirmed it: the store says PREPARED, the supplier has it.
    store = morning_store(tmp_path / "lucy.db")
    log = tmp_path / "log"
    kill = "answered-place_order-SKU-VANILLA"
    assert finish(worker(store, log, desk, kill=kill))[0] == -signal.SIGKILL
    with sqlite3.connect(store) as connection:
        assert connection.execute("SELECT order_id, status FROM purchases").fetchall() == [
            (1, "PREPARED")
        ]
    assert len(ledger_orders(desk.ledger)) == 1
    code, _, err = finish(worker(store, log, desk))
    assert code == 0, err
    check_recovered(store, log, desk, reference, kill)


def test_a_purchase_in_doubt_while_the_supplier_is_down_stays_prepared_and_is_never_rebought(
    tmp_path: Path, reference: dict[str, Any]
) -> None:
    store = morning_store(tmp_path / "lucy.db")
    log = tmp_path / "log"
    kill = "answered-place_order-SKU-VANILLA"
    with running_desk(tmp_path / "supplier.db") as desk:
        assert finish(worker(store, log, desk, kill=kill))[0] == -signal.SIGKILL
        url = desk.url
    # The desk is gone: the next worker cannot ask it. The run goes on and the
    # model is told the purchase is still PREPARED; nothing is bought again.
    # Every attempt at the gone desk is made; the pauses between them are short.
    gone = RunningDesk(url, tmp_path / "supplier.db", desk.process)
    code, _, err = finish(worker(store, log, gone, desk_pause="0.05"))
    assert code == 0, err
    with sqlite3.connect(store) as connection:
        purchases = connection.execute(
            "SELECT order_id, status FROM purchases ORDER BY order_id"
        ).fetchall()
        vanilla = connection.execute(
            "SELECT record FROM steps WHERE call_id = 'order-SKU-VANILLA'"
        ).fetchone()[0]
    assert purchases == [(1, "PREPARED"), (2, "PREPARED")]
    assert '"purchase": "PREPARED"' in vanilla and '"failure": "unreachable"' in vanilla
    # Started again, the desk still has the one vanilla order; resolving
    # (chapter 11's command) asks it by key and confirms, never buying twice.
    with running_desk(tmp_path / "supplier.db") as desk:
        resolved = subprocess.run(
            [
                *(sys.executable, "-m", "sovereign_agent.purchasing"),
                *("--store", str(store), "--supplier", desk.url, "resolve"),
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert resolved.returncode == 0, resolved.stderr
        check_ledger(store, desk)
    assert essence(store)["purchases"] == reference["essence"]["purchases"]


def test_the_runs_command_shows_a_resumed_run_and_its_journal(
    tmp_path: Path, desk: RunningDesk, reference: dict[str, Any]
) -> None:
    store = morning_store(tmp_path / "lucy.db")
    log = tmp_path / "log"
    kill = "after-place_order-SKU-VANILLA"
    assert finish(worker(store, log, desk, kill=kill, lease=LEASE))[0] == -signal.SIGKILL
    listed = subprocess.run(
        [sys.executable, "-m", "sovereign_agent.runs", "--store", str(store), "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # The dead worker still holds the run, until its lease runs out.
    assert listed.startswith("1 RUNNING (")
    assert "steps 2 generation 1 task 'Order what the shop needs.'" in listed
    code, out, _ = finish(worker(store, log, desk))
    assert code == 0
    # Two replies and two outcomes from the journal; the order in doubt was
    # found in the store, not placed again.
    assert out == (
        "run 1: finished, final_answer after 3 step(s);"
        " 2 reply(ies) and 1 outcome(s) from the journal\n"
    )
    shown = subprocess.run(
        [sys.executable, "-m", "sovereign_agent.runs", "--store", str(store), "show", "1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert shown[0] == (
        "1 FINISHED final_answer steps 3 generation 2 task 'Order what the shop needs.'"
    )
    assert shown[2:] == [
        "answer: Ordered 9 vanilla and 1 chocolate: 2,550 pence.",
        "step 1 reply: list_stock(stock) [generation 1]",
        "step 1 call 1 list_stock(stock): ok, ran [generation 1]",
        "step 2 reply: place_order(order-SKU-VANILLA), place_order(order-SKU-CHOCOLATE)"
        " [generation 1]",
        "step 2 call 1 place_order(order-SKU-VANILLA): ok, ran [generation 2]",
        "step 2 call 2 place_order(order-SKU-CHOCOLATE): ok, ran [generation 2]",
        'step 3 reply: answer "Ordered 9 vanilla and 1 chocolate: 2,550 pence." [generation 2]',
    ]


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_a_worker_told_to_stop_hands_its_run_back_and_another_finishes_it(
    tmp_path: Path, desk: RunningDesk, reference: dict[str, Any], how: signal.Signals
) -> None:
    store = morning_store(tmp_path / "lucy.db")
    log = tmp_path / "log"
    first = worker(store, log, desk, wait="enter-place_order-SKU-CHOCOLATE", command=True)
    deadline = time.monotonic() + 60
    while not any(event.startswith("waiting-at") for _, event in read_log(log)):
        assert time.monotonic() < deadline and first.poll() is None, "the worker never got there"
        time.sleep(0.02)
    first.send_signal(how)
    code, _, err = finish(first)
    assert code == (143 if how == signal.SIGTERM else 130)
    assert err.endswith("the run it held, if any, is handed back\n"), err
    # Handed back: no owner, no lease to wait out; the journal kept.
    with sqlite3.connect(store) as connection:
        assert connection.execute("SELECT status, owner FROM runs").fetchall() == [
            ("RUNNING", None)
        ]
    code, out, err = finish(worker(store, log, desk))
    assert code == 0, err
    assert out == (
        "run 1: finished, final_answer after 3 step(s);"
        " 2 reply(ies) and 2 outcome(s) from the journal\n"
    )
    assert essence(store) == reference["essence"]
    check_ledger(store, desk)
    found = events(read_log(log))
    assert found["done place_order-SKU-CHOCOLATE"] == found["done place_order-SKU-VANILLA"] == 1


def stopped(child: Worker, timeout: float = 30) -> None:
    """Wait until the kernel reports the child stopped (state T)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "T":
            return
        time.sleep(0.01)
    raise AssertionError("the worker never stopped")


def write_lock_free(store: Path) -> bool:
    with sqlite3.connect(store, timeout=0, isolation_level=None) as connection:
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            return False
        connection.execute("ROLLBACK")
        return True


def pause_holding_no_lock(child: Worker, store: Path) -> None:
    """The worker is stopped at its point, and (it has two threads) not inside a transaction.

    Its lease renewer runs on; were it stopped while committing a renewal,
    it would hold the store's write lock, and every other worker would wait.
    """
    stopped(child)
    while not write_lock_free(store):
        child.send_signal(signal.SIGCONT)
        time.sleep(0.005)
        child.send_signal(signal.SIGSTOP)
        stopped(child)


@pytest.mark.parametrize(
    "pause",
    [
        "reply-2",
        "enter-place_order-SKU-VANILLA",
        "answered-place_order-SKU-VANILLA",
        "after-place_order-SKU-VANILLA",
    ],
)
def test_a_worker_paused_past_its_lease_writes_nothing_when_it_wakes(
    tmp_path: Path, desk: RunningDesk, reference: dict[str, Any], pause: str
) -> None:
    store = morning_store(tmp_path / "lucy.db")
    log = tmp_path / "log"
    first = worker(store, log, desk, stop=pause)
    try:
        pause_holding_no_lock(first, store)
        # The second worker waits out the lease, claims the run (generation 2) and finishes it.
        code, out, err = finish(worker(store, log, desk))
        assert code == 0, err
        assert out.startswith("run 1: finished, final_answer after 3 step(s);")
        after_takeover = contents(store)
    finally:
        first.send_signal(signal.SIGCONT)
    code, out, err = finish(first)
    assert code == 0, err
    # It found out at its first write, and wrote nothing: not its reply, not
    # an order, not its outcome, not even a lease renewal.
    assert out == (
        "run 1: lost the lease: lease generation 1 was taken over; nothing more was written\n"
    )
    assert contents(store) == after_takeover
    assert essence(store) == reference["essence"]
    check_ledger(store, desk)
    found = events(read_log(log))
    # Each handler returned once. Paused after the supplier answered, the first
    # worker's handler returns when it wakes: the second settled the purchase by
    # its key meanwhile, so the first finds it CONFIRMED with the very order it
    # was told of, writes nothing, and is refused at its outcome.
    assert found["done place_order-SKU-VANILLA"] == found["done place_order-SKU-CHOCOLATE"] == 1


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(kill=st.sampled_from(EVENTS), others=st.integers(min_value=1, max_value=3))
def test_any_number_of_workers_racing_a_killed_one_finish_the_morning_once(
    tmp_path_factory: pytest.TempPathFactory, reference: dict[str, Any], kill: str, others: int
) -> None:
    folder = tmp_path_factory.mktemp("race")
    store = morning_store(folder / "lucy.db")
    log = folder / "log"
    with running_desk(folder / "supplier.db") as desk:
        # All start together; the one with the kill point may not even get the run.
        children = [worker(store, log, desk, kill=kill, lease=LEASE)]
        children += [worker(store, log, desk, lease=LEASE) for _ in range(others)]
        results = [finish(child) for child in children]
        check_ledger(store, desk)
    assert results[0][0] in (0, -signal.SIGKILL), results[0][2]
    for code, _, err in results[1:]:
        assert code == 0, err
    assert essence(store) == reference["essence"]
    found = events(read_log(log))
    for order in ("place_order-SKU-VANILLA", "place_order-SKU-CHOCOLATE"):
        # A handler killed after the supplier answered never returns; no other finishes it.
        settled_by_key = found[f"killed-at answered-{order}"] == 1
        assert found[f"done {order}"] == (0 if settled_by_key else 1)
    # Exactly one worker finished the run; a worker that lost its lease said so.
    outputs = "".join(out for _, out, _ in results)
    assert outputs.count("run 1: finished, final_answer after 3 step(s);") == 1
