"""One approved purchase, one order at the supplier, whatever process dies and wherever.

Every test here uses real processes: the book's supplier desk as a server
with its own ledger, and a purchasing child process that is killed with
SIGKILL at a chosen point. Afterwards `resolve_purchases`, in another
process, must leave the ledger with exactly one order per approved purchase
and the store agreeing with it (the supplier's order id in a CONFIRMED row).
"""

from __future__ import annotations

import signal
import subprocess
import time
from contextlib import closing
from pathlib import Path

import pytest
from shop_store import python_child, run_python, start_together
from supplier_desk import ledger_orders, ordered_store, running_desk, start_desk

from sovereign_agent.purchasing import (
    DeskSettings,
    PurchaseRejected,
    SupplierDesk,
    SupplierUnreachable,
    list_purchases,
    operation_id,
    purchase,
    resolve_purchases,
)
from sovereign_agent.store import open_store

FAST = DeskSettings(
    total_deadline_s=10.0, attempt_timeout_s=3.0, first_pause_s=0.02, max_pause_s=0.2
)

# A purchasing process that reports each step on its standard output and,
# at the step it is told, stops there until it is killed.
PURCHASER = """
    import sys, time
    from sovereign_agent.purchasing import DeskSettings, SupplierDesk, purchase
    from sovereign_agent.store import open_store

    store_path, url, order_id, stop_at = sys.argv[1:5]
    settings = DeskSettings(total_deadline_s=10.0)

    def step(name, order):
        print(name, flush=True)
        if name == stop_at:
            time.sleep(600)

    if stop_at == "ready":
        print("ready", flush=True)
        sys.stdin.readline()
    print("ordered", flush=True)
    if stop_at == "ordered":
        time.sleep(600)
    desk = SupplierDesk(url, settings=settings)
    bought = purchase(open_store(store_path), int(order_id), desk, step=step)
    print("done", bought.supplier_order_id, flush=True)
"""


def kill_at(child: subprocess.Popen[str], step: str) -> None:
    """Wait until the child reports `step`, then SIGKILL it."""
    assert child.stdout is not None
    seen = []
    while step not in seen:
        line = child.stdout.readline()
        assert line, (
            f"the child ended before {step}: {seen}, {child.stderr and child.stderr.read()}"
        )
        seen.append(line.strip())
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)


def settled_exactly_once(store_path: Path, ledger: Path, url: str, orders: int) -> None:
    """Resolve in a fresh process, then check the ledger and the store against each other."""
    resolved = run_python(
        """
        import sys
        from sovereign_agent.purchasing.__main__ import main
        sys.exit(main(["--store", sys.argv[1], "--supplier", sys.argv[2], "resolve"]))
        """,
        str(store_path),
        url,
    )
    assert resolved.returncode == 0, resolved.stderr
    held = ledger_orders(ledger)
    with closing(open_store(store_path)) as store:
        purchases = list_purchases(store)
    assert len(held) == orders
    assert [p.status for p in purchases] == ["CONFIRMED"] * orders
    # Order N of the ledger is SUP-000N; each purchase names the order made under its key.
    by_key = {key: f"SUP-{number:04d}" for number, (key, *_) in enumerate(held, start=1)}
    assert {p.operation_id: p.supplier_order_id for p in purchases} == by_key
    assert [(sku, quantity) for _, sku, quantity, _ in held] == [
        (p.sku, p.quantity) for p in purchases
    ]


@pytest.mark.parametrize("step", ["ordered", "prepared", "answered", "confirmed"])
def test_a_purchaser_killed_at_any_step_leaves_one_order_after_resolving(
    tmp_path: Path, step: str
) -> None:
    store_path = tmp_path / "shop.db"
    (order,) = ordered_store(store_path, [("SKU-VANILLA", 9)])
    with running_desk(tmp_path / "ledger.db") as desk:
        kill_at(python_child(PURCHASER, str(store_path), desk.url, str(order), step), step)
        settled_exactly_once(store_path, desk.ledger, desk.url, 1)


def test_a_purchaser_killed_while_the_supplier_commits_leaves_one_order(tmp_path: Path) -> None:
    store_path = tmp_path / "shop.db"
    (order,) = ordered_store(store_path, [("SKU-VANILLA", 9)])
    with running_desk(tmp_path / "ledger.db", "--faults", "late", "--late", "1.0") as desk:
        child = python_child(PURCHASER, str(store_path), desk.url, str(order), "never")
        assert child.stdout is not None
        while child.stdout.readline().strip() != "prepared":
            pass
        # The request is at the desk, which holds its key for a second before committing.
        time.sleep(0.3)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
        # The desk commits the dead client's order a moment later, or (on a
        # machine too slow to have sent it yet) never sees it: either way,
        # resolving must end with exactly one.
        settled_exactly_once(store_path, desk.ledger, desk.url, 1)


def test_a_supplier_killed_before_it_commits_loses_nothing_that_resolving_cannot_redo(
    tmp_path: Path,
) -> None:
    store_path = tmp_path / "shop.db"
    ledger = tmp_path / "ledger.db"
    (order,) = ordered_store(store_path, [("SKU-VANILLA", 9)])
    desk = start_desk(ledger, "--faults", "late", "--late", "5")
    child = python_child(PURCHASER, str(store_path), desk.url, str(order), "never")
    assert child.stdout is not None
    while child.stdout.readline().strip() != "prepared":
        pass
    time.sleep(0.3)
    desk.kill()
    desk.process.stdout and desk.process.stdout.close()
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert ledger_orders(ledger) == []
    with running_desk(ledger) as again:
        settled_exactly_once(store_path, ledger, again.url, 1)


def test_two_processes_racing_for_one_purchase_make_one_order(tmp_path: Path) -> None:
    store_path = tmp_path / "shop.db"
    (order,) = ordered_store(store_path, [("SKU-CHOCOLATE", 1)])
    # The first request holds its key a while, so the second meets it at the desk (409).
    with running_desk(tmp_path / "ledger.db", "--faults", "late", "--late", "0.5") as desk:
        racers = [
            python_child(PURCHASER, str(store_path), desk.url, str(order), "ready")
            for _ in range(2)
        ]
        start_together(racers)
        finished = [racer.communicate(timeout=60) for racer in racers]
        assert [racer.returncode for racer in racers] == [0, 0], finished
        assert [out.splitlines()[-1] for out, _ in finished] == ["done SUP-0001"] * 2
        settled_exactly_once(store_path, desk.ledger, desk.url, 1)


def test_a_lost_answer_is_retried_under_the_same_key_and_replayed(tmp_path: Path) -> None:
    store_path = tmp_path / "shop.db"
    (order,) = ordered_store(store_path, [("SKU-VANILLA", 9)])
    seen = []
    with running_desk(tmp_path / "ledger.db", "--faults", "drop,503") as desk:
        client = SupplierDesk(desk.url, settings=FAST, observe=seen.append)
        with closing(open_store(store_path)) as store:
            bought = purchase(store, order, client)
    assert bought.status == "CONFIRMED" and bought.supplier_order_id == "SUP-0001"
    assert seen[0].outcome.startswith("the connection was lost")
    assert seen[1].outcome == "the supplier answered 503"
    assert (seen[2].status, seen[2].replayed) == (201, True)
    assert {a.key for a in seen} == {bought.operation_id}
    assert len(ledger_orders(tmp_path / "ledger.db")) == 1


def test_a_refused_purchase_is_recorded_and_never_sent_under_another_key(tmp_path: Path) -> None:
    store_path = tmp_path / "shop.db"
    (order,) = ordered_store(store_path, [("SKU-VANILLA", 9)])
    with running_desk(tmp_path / "ledger.db") as desk, closing(open_store(store_path)) as store:
        client = SupplierDesk(desk.url, settings=FAST)
        assert list_purchases(store) == []
        # Somebody else's request took our key first, with another body.
        client.send(operation_id(store, order), "SKU-VANILLA", 90)
        with pytest.raises(PurchaseRejected) as refused:
            purchase(store, order, client)
        (recorded,) = list_purchases(store)
        assert refused.value.code == "key_reused"
        assert (recorded.status, recorded.failure) == (
            "REJECTED",
            "key_reused: the supplier answered 422: this key was used for another order",
        )
        assert resolve_purchases(store, client) == []
        assert purchase(store, order, client).status == "REJECTED"
    assert [quantity for _, _, quantity, _ in ledger_orders(tmp_path / "ledger.db")] == [90]


def test_no_supplier_leaves_the_purchase_prepared_until_it_is_resolved(tmp_path: Path) -> None:
    store_path = tmp_path / "shop.db"
    ledger = tmp_path / "ledger.db"
    (order,) = ordered_store(store_path, [("SKU-VANILLA", 9)])
    with running_desk(ledger) as desk:
        url = desk.url
    # The desk is gone: nothing listens on its port now.
    quick = DeskSettings(total_deadline_s=0.5, attempt_timeout_s=0.2, first_pause_s=0.02)
    with closing(open_store(store_path)) as store:
        with pytest.raises(SupplierUnreachable):
            purchase(store, order, SupplierDesk(url, settings=quick))
        assert [p.status for p in list_purchases(store)] == ["PREPARED"]
    with running_desk(ledger) as desk:
        settled_exactly_once(store_path, ledger, desk.url, 1)
