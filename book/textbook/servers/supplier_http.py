"""The supplier's order desk: a real HTTP server on 127.0.0.1 with a ledger of its own (chapter 11).

It stands for the supplier's system, which the shop does not run. Each order
it accepts is a row in its own SQLite ledger, under the `Idempotency-Key` the
shop sent with it:

- `POST /orders` with JSON `{"sku", "quantity"}` and an `Idempotency-Key`
  header: a new key creates an order (`SUP-0001`, `SUP-0002`, ...) and answers
  201; the same key with the same body answers the same order again, with
  `Idempotent-Replayed: true`; the same key with another body answers 422; a
  key whose first request is still being processed answers 409; no key, or a
  body that is not an order, answers 400; a sku it does not sell, 422.
- `GET /orders?idempotency_key=K` answers that order (200), or 404.

Fault switches, for tests and the book: a schedule of faults, one taken by
each `POST /orders` in turn (`ok`, `drop`: commit then close the connection
without answering; `503`: answer 503 and do nothing; `late`: hold the key for
`--late` seconds before committing and answering). Set it with `--faults
drop,503` or, while serving, `PUT /faults` with `{"schedule": [...]}`.

Run it as `python book/textbook/servers/supplier_http.py --port 0 --ledger
FILE`: its first line is the address it listens on, and it serves until
interrupted (Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import socket
import sqlite3
import sys
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Iterator
from contextlib import closing, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

# What the supplier sells, at its prices in pence.
CATALOGUE = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}
# No order is bigger than a van; a body bigger than this is not an order.
MAX_QUANTITY = 1000
MAX_BODY_BYTES = 4096
# A key is an opaque token the client chose: printable ASCII, bounded.
KEY = re.compile(r"[\x21-\x7e]{1,200}")
FAULTS = ("ok", "drop", "503", "late")

LEDGER = """CREATE TABLE IF NOT EXISTS orders (
    number INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    request TEXT NOT NULL,
    sku TEXT NOT NULL,
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_pence INTEGER NOT NULL CHECK (unit_price_pence > 0)
) STRICT"""


class BadRequest(Exception):
    """A request the desk answers with an error status, never with an order."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@contextmanager
def ledger(path: Path) -> Iterator[sqlite3.Connection]:
    """One connection to the ledger for one request: each commit is on disk before the answer."""
    with closing(sqlite3.connect(path, timeout=10.0, isolation_level=None)) as connection:
        connection.execute("PRAGMA synchronous = FULL")
        yield connection


def create_ledger(path: Path) -> None:
    with ledger(path) as connection:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute(LEDGER)


def as_order(row: tuple[Any, ...]) -> dict[str, Any]:
    number, sku, quantity, unit = row
    return {
        "order_id": f"SUP-{number:04d}",
        "sku": sku,
        "quantity": quantity,
        "unit_price_pence": unit,
        "total_pence": quantity * unit,
    }


def find(connection: sqlite3.Connection, key: str) -> tuple[str, dict[str, Any]] | None:
    """The request first sent under `key` (canonical JSON) and its order, or None."""
    row = connection.execute(
        "SELECT request, number, sku, quantity, unit_price_pence FROM orders"
        " WHERE idempotency_key = ?",
        (key,),
    ).fetchone()
    return None if row is None else (row[0], as_order(row[1:]))


def read_order_request(raw: bytes) -> tuple[str, str, int]:
    """(canonical JSON, sku, quantity) of a body that is an order; BadRequest otherwise."""
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadRequest(400, "malformed", "the body is not JSON") from None
    if not isinstance(body, dict) or set(body) != {"sku", "quantity"}:
        raise BadRequest(400, "malformed", 'an order is {"sku": ..., "quantity": ...}')
    sku, quantity = body["sku"], body["quantity"]
    if not isinstance(sku, str) or type(quantity) is not int:
        raise BadRequest(400, "malformed", "sku must be a string and quantity an integer")
    if not 1 <= quantity <= MAX_QUANTITY:
        raise BadRequest(400, "malformed", f"quantity must be from 1 to {MAX_QUANTITY}")
    return json.dumps({"quantity": quantity, "sku": sku}, sort_keys=True), sku, quantity


class Desk:
    """The desk's state beyond its ledger: the keys in flight and the fault schedule."""

    def __init__(self, path: Path, faults: list[str], late_seconds: float) -> None:
        self.path = path
        self.late_seconds = late_seconds
        self._lock = threading.Lock()
        self._in_flight: set[str] = set()
        self._faults: deque[str] = deque(faults)

    def next_fault(self) -> str:
        with self._lock:
            return self._faults.popleft() if self._faults else "ok"

    def set_faults(self, faults: list[str]) -> None:
        with self._lock:
            self._faults = deque(faults)

    @contextmanager
    def holding(self, key: str) -> Iterator[None]:
        """The key is ours until the request ends; a second request for it meanwhile is a 409."""
        with self._lock:
            if key in self._in_flight:
                raise BadRequest(409, "in_progress", "a request with this key is being processed")
            self._in_flight.add(key)
        try:
            yield
        finally:
            with self._lock:
                self._in_flight.discard(key)


def faults_from(text: str) -> list[str]:
    schedule = [fault.strip() for fault in text.split(",") if fault.strip()]
    unknown = sorted(set(schedule) - set(FAULTS))
    if unknown:
        # An ArgumentTypeError: argparse shows its message as it is, on one line.
        raise argparse.ArgumentTypeError(
            f"unknown fault {unknown[0]!r}; the faults are {', '.join(FAULTS)}"
        )
    return schedule


class OrderDesk(BaseHTTPRequestHandler):
    server: DeskServer
    server_version = "SupplierDesk/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        # Quiet: the first line of standard output is the address, and tests read it.
        return

    def answer(self, status: int, body: dict[str, Any], replayed: bool = False) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if replayed:
            self.send_header("Idempotent-Replayed", "true")
        self.end_headers()
        # The client may have given up waiting; what was committed stays committed.
        with contextlib.suppress(OSError):
            self.wfile.write(data)

    def read_body(self) -> bytes:
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            raise BadRequest(400, "malformed", "a body needs a Content-Length") from None
        if not 0 <= length <= MAX_BODY_BYTES:
            raise BadRequest(400, "malformed", f"a body is at most {MAX_BODY_BYTES} bytes")
        return self.rfile.read(length)

    def refuse(self, refused: BadRequest) -> None:
        self.answer(refused.status, {"error": refused.code, "message": str(refused)})

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        keys = query.get("idempotency_key", [])
        if url.path != "/orders":
            return self.answer(404, {"error": "not_found", "message": "no such page"})
        if len(keys) != 1 or not KEY.fullmatch(keys[0]):
            return self.answer(400, {"error": "malformed", "message": "give one idempotency_key"})
        with ledger(self.server.desk.path) as connection:
            found = find(connection, keys[0])
        if found is None:
            return self.answer(404, {"error": "not_found", "message": "no order has this key"})
        self.answer(200, found[1])

    def do_PUT(self) -> None:
        if self.path != "/faults":
            return self.answer(404, {"error": "not_found", "message": "no such page"})
        try:
            body = json.loads(self.read_body())
            schedule = body["schedule"]
            if not isinstance(schedule, list) or not all(isinstance(f, str) for f in schedule):
                raise ValueError("schedule must be a list of fault names")
            self.server.desk.set_faults(faults_from(",".join(schedule)))
            if "late_seconds" in body:
                self.server.desk.late_seconds = float(body["late_seconds"])
        except BadRequest as refused:
            return self.refuse(refused)
        except (ValueError, KeyError, TypeError, argparse.ArgumentTypeError) as error:
            return self.answer(400, {"error": "malformed", "message": str(error)})
        self.answer(200, {"schedule": schedule})

    def do_POST(self) -> None:
        if self.path != "/orders":
            return self.answer(404, {"error": "not_found", "message": "no such page"})
        try:
            self.place()
        except BadRequest as refused:
            self.refuse(refused)

    def place(self) -> None:
        desk = self.server.desk
        raw = self.read_body()
        key = self.headers.get("Idempotency-Key")
        if key is None or not KEY.fullmatch(key):
            raise BadRequest(400, "no_key", "an order needs an Idempotency-Key header")
        request, sku, quantity = read_order_request(raw)
        fault = desk.next_fault()
        if fault == "503":
            raise BadRequest(503, "unavailable", "the desk is busy; try again")
        replay: dict[str, Any] | None = None
        order: dict[str, Any] | None = None
        with desk.holding(key), ledger(desk.path) as connection:
            found = find(connection, key)
            if found is not None:
                # Checked before the catalogue: a replay answers what was
                # agreed, even for a sku the supplier has since stopped selling.
                if found[0] != request:
                    raise BadRequest(422, "key_reused", "this key was used for another order")
                replay = found[1]
            else:
                order = self.record(connection, key, request, sku, quantity, fault)
        # Every answer leaves once the key is released: a client that sends its
        # next request the moment an answer arrives must never meet a 409.
        if replay is not None:
            return self.answer(201, replay, replayed=True)
        assert order is not None
        if fault == "drop":
            # Committed, and the answer never leaves: the client cannot tell
            # this from a request that never arrived.
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.answer(201, order)

    def record(
        self,
        connection: sqlite3.Connection,
        key: str,
        request: str,
        sku: str,
        quantity: int,
        fault: str,
    ) -> dict[str, Any]:
        """A new order under `key`, committed to the ledger before anything is answered."""
        if sku not in CATALOGUE:
            raise BadRequest(422, "unknown_sku", f"the supplier does not sell {sku}")
        if fault == "late":
            time.sleep(self.server.desk.late_seconds)
        try:
            # The UNIQUE key is the last word: a second desk process on the
            # same ledger loses here, and is told to ask again. One statement
            # in autocommit mode: its own transaction, on disk when it returns.
            cursor = connection.execute(
                "INSERT INTO orders"
                " (idempotency_key, request, sku, quantity, unit_price_pence)"
                " VALUES (?, ?, ?, ?, ?)",
                (key, request, sku, quantity, CATALOGUE[sku]),
            )
        except sqlite3.IntegrityError:
            raise BadRequest(409, "in_progress", "another request took this key") from None
        return as_order((cursor.lastrowid, sku, quantity, CATALOGUE[sku]))


class DeskServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], desk: Desk) -> None:
        super().__init__(address, OrderDesk)
        self.desk = desk


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="supplier_http",
        description="The supplier's order desk on 127.0.0.1, with its own SQLite ledger.",
    )
    parser.add_argument("--port", type=int, default=0, help="the port (0: a free one)")
    parser.add_argument("--ledger", type=Path, required=True, help="the ledger's SQLite file")
    parser.add_argument(
        "--faults",
        type=faults_from,
        default=[],
        help="faults for successive orders, comma-separated: ok, drop, 503, late",
    )
    parser.add_argument(
        "--late", type=float, default=2.0, help="seconds a late answer waits (default 2)"
    )
    arguments = parser.parse_args(argv)
    if not 0 <= arguments.port <= 65535:
        parser.error(f"--port {arguments.port} is not a port")
    try:
        create_ledger(arguments.ledger)
        server = DeskServer(
            ("127.0.0.1", arguments.port), Desk(arguments.ledger, arguments.faults, arguments.late)
        )
    except (OSError, sqlite3.Error) as error:
        print(f"error: cannot start the desk: {error}", file=sys.stderr)
        return 1

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    host, port = server.server_address[:2]
    print(f"http://{host!s}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
