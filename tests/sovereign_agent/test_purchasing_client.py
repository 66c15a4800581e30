"""The purchasing client against a desk that answers badly: nothing confirmed that is not an order.

A small hostile server in a thread of the test answers every request the
same chosen way over real HTTP on 127.0.0.1. Whatever it says, the purchase
is confirmed only by a valid order for what was sent; anything else leaves it
PREPARED (to be resolved) or REJECTED with the reason on one bounded line.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from supplier_desk import ordered_store

from sovereign_agent.purchasing import (
    DeskSettings,
    PurchaseFailed,
    PurchaseRejected,
    SupplierDesk,
    SupplierUnreachable,
    list_purchases,
    purchase,
)
from sovereign_agent.store import open_store

QUICK = DeskSettings(
    total_deadline_s=1.0, attempt_timeout_s=0.3, max_attempts=3, first_pause_s=0.01
)


@contextmanager
def answering(status: int, body: bytes) -> Iterator[str]:
    class Hostile(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"order_id": "SUP-1"}',
        b'{"order_id": "", "sku": "SKU-VANILLA", "quantity": 9, "unit_price_pence": 250,'
        b' "total_pence": 2250}',
        b"[" * 100_000,
    ],
    ids=["not-json", "partial", "empty-id", "huge"],
)
def test_a_201_that_is_not_an_order_confirms_nothing(tmp_path: Path, body: bytes) -> None:
    (order,) = ordered_store(tmp_path / "shop.db", [("SKU-VANILLA", 9)])
    with answering(201, body) as url, closing(open_store(tmp_path / "shop.db")) as store:
        with pytest.raises(PurchaseFailed) as failed:
            purchase(store, order, SupplierDesk(url, settings=QUICK))
        assert failed.value.code == "malformed"
        assert [p.status for p in list_purchases(store)] == ["PREPARED"]


def test_an_order_for_something_else_under_our_key_is_never_confirmed(tmp_path: Path) -> None:
    (order,) = ordered_store(tmp_path / "shop.db", [("SKU-VANILLA", 9)])
    other = (
        b'{"order_id": "SUP-9", "sku": "SKU-VANILLA", "quantity": 90,'
        b' "unit_price_pence": 250, "total_pence": 22500}'
    )
    with answering(201, other) as url, closing(open_store(tmp_path / "shop.db")) as store:
        with pytest.raises(PurchaseFailed) as failed:
            purchase(store, order, SupplierDesk(url, settings=QUICK))
        assert failed.value.code == "mismatch"
        assert [p.status for p in list_purchases(store)] == ["PREPARED"]


def test_a_refusal_is_recorded_on_one_bounded_line(tmp_path: Path) -> None:
    (order,) = ordered_store(tmp_path / "shop.db", [("SKU-VANILLA", 9)])
    message = "no\n" * 500
    body = f'{{"error": "unknown_sku", "message": "{message.encode("unicode_escape").decode()}"}}'
    with answering(422, body.encode()) as url, closing(open_store(tmp_path / "shop.db")) as store:
        with pytest.raises(PurchaseRejected):
            purchase(store, order, SupplierDesk(url, settings=QUICK))
        (recorded,) = list_purchases(store)
    assert recorded.status == "REJECTED"
    assert recorded.failure is not None and "\n" not in recorded.failure
    assert recorded.failure.startswith("unknown_sku: the supplier answered 422: no no")
    assert len(recorded.failure) <= 300


def test_a_desk_that_only_fails_ends_unreachable_by_the_deadline(tmp_path: Path) -> None:
    (order,) = ordered_store(tmp_path / "shop.db", [("SKU-VANILLA", 9)])
    with answering(503, b"{}") as url, closing(open_store(tmp_path / "shop.db")) as store:
        with pytest.raises(SupplierUnreachable):
            purchase(store, order, SupplierDesk(url, settings=QUICK))
        assert [p.status for p in list_purchases(store)] == ["PREPARED"]
