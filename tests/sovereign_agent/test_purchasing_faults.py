"""Lost answers, 503s and late answers in any order: still one order per approved purchase.

Hypothesis draws the purchases and the desk's fault schedule; the desk is the
book's server, a real process, and the purchases run through the real client
into a real store. However the faults fall, after the purchases and one
resolve the ledger holds exactly one order under each purchase's key, and
the store names that order in a CONFIRMED row.
"""

from __future__ import annotations

import contextlib
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scratch import memory_folder
from strength import examples
from supplier_desk import RunningDesk, ordered_store, running_desk

from sovereign_agent.purchasing import (
    DeskSettings,
    SupplierDesk,
    SupplierUnreachable,
    list_purchases,
    purchase,
    resolve_purchases,
)
from sovereign_agent.store import open_store

# A late answer (0.4 s) outlasts one attempt (0.25 s): the client gives up on
# it, and its retry meets the key still held (409) or the order made (replay).
LATE_S = 0.4
CLIENT = DeskSettings(
    total_deadline_s=3.0, attempt_timeout_s=0.25, first_pause_s=0.02, max_pause_s=0.1
)
SKUS = ("SKU-VANILLA", "SKU-CHOCOLATE", "SKU-STRAWBERRY")


@pytest.fixture(scope="module")
def desk() -> Iterator[RunningDesk]:
    with (
        tempfile.TemporaryDirectory(dir=memory_folder()) as folder,
        running_desk(Path(folder) / "ledger.db", "--late", str(LATE_S)) as running,
    ):
        yield running


def ledger_by_key(ledger: Path, keys: list[str]) -> dict[str, list[tuple[str, str, int]]]:
    with closing(sqlite3.connect(ledger)) as connection:
        found: dict[str, list[tuple[str, str, int]]] = {key: [] for key in keys}
        for number, key, sku, quantity in connection.execute(
            "SELECT number, idempotency_key, sku, quantity FROM orders ORDER BY number"
        ):
            if key in found:
                found[key].append((f"SUP-{number:04d}", sku, quantity))
        return found


@settings(
    max_examples=examples(24),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    purchases=st.lists(
        st.tuples(st.sampled_from(SKUS), st.integers(min_value=1, max_value=20)),
        min_size=1,
        max_size=3,
    ),
    faults=st.lists(st.sampled_from(["ok", "drop", "503", "late"]), max_size=8),
)
def test_any_schedule_of_faults_ends_with_one_order_per_purchase(
    desk: RunningDesk, purchases: list[tuple[str, int]], faults: list[str]
) -> None:
    with tempfile.TemporaryDirectory(dir=memory_folder()) as folder:
        store_path = Path(folder) / "shop.db"
        order_ids = ordered_store(store_path, purchases)
        client = SupplierDesk(desk.url, settings=CLIENT)
        desk.set_faults(faults)
        with closing(open_store(store_path)) as store:
            for order in order_ids:
                # Unreachable leaves it PREPARED: the resolve below must settle it.
                with contextlib.suppress(SupplierUnreachable):
                    purchase(store, order, client)
            desk.set_faults([])
            resolve_purchases(store, client)
            recorded = list_purchases(store)
    assert [p.status for p in recorded] == ["CONFIRMED"] * len(purchases)
    held = ledger_by_key(desk.ledger, [p.operation_id for p in recorded])
    for p in recorded:
        assert held[p.operation_id] == [(p.supplier_order_id, p.sku, p.quantity)]
