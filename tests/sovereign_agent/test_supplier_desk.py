"""The supplier's order desk, the book's server, over real HTTP on 127.0.0.1.

Each answer the chapter relies on is asked for here with the standard
library's client: a new key makes an order, the same key replays it, another
body under it is refused, a key in flight is busy, and the fault switches do
what they say. The ledger is read with plain sqlite3.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strength import examples
from supplier_desk import DESK, RunningDesk, ledger_orders, running_desk

VANILLA_9 = {"sku": "SKU-VANILLA", "quantity": 9}


def post(url: str, body: object, key: str | None) -> tuple[int, dict[str, Any], str | None]:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    request = urllib.request.Request(
        f"{url}/orders", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer), answer.headers.get("Idempotent-Replayed")
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.load(error), error.headers.get("Idempotent-Replayed")


def get(url: str, key: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{url}/orders?idempotency_key={key}", timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.load(error)


def test_a_new_key_makes_an_order_and_the_same_key_replays_it(tmp_path: Path) -> None:
    with running_desk(tmp_path / "ledger.db") as desk:
        first = post(desk.url, VANILLA_9, "k-1")
        again = post(desk.url, {"quantity": 9, "sku": "SKU-VANILLA"}, "k-1")
        second = post(desk.url, {"sku": "SKU-CHOCOLATE", "quantity": 1}, "k-2")
        found = get(desk.url, "k-1")
        missing = get(desk.url, "k-3")
    expected = {
        "order_id": "SUP-0001",
        "sku": "SKU-VANILLA",
        "quantity": 9,
        "unit_price_pence": 250,
        "total_pence": 2250,
    }
    assert first == (201, expected, None)
    assert again == (201, expected, "true")
    assert second[0] == 201 and second[1]["order_id"] == "SUP-0002"
    assert found == (200, expected)
    assert missing[0] == 404
    assert [row[:3] for row in ledger_orders(tmp_path / "ledger.db")] == [
        ("k-1", "SKU-VANILLA", 9),
        ("k-2", "SKU-CHOCOLATE", 1),
    ]


def test_the_same_key_with_another_body_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    with running_desk(tmp_path / "ledger.db") as desk:
        post(desk.url, VANILLA_9, "k-1")
        status, body, _ = post(desk.url, {"sku": "SKU-VANILLA", "quantity": 90}, "k-1")
    assert (status, body["error"]) == (422, "key_reused")
    assert len(ledger_orders(tmp_path / "ledger.db")) == 1


@pytest.mark.parametrize(
    ("body", "key", "status", "error"),
    [
        (VANILLA_9, None, 400, "no_key"),
        (VANILLA_9, "", 400, "no_key"),
        ({"sku": "SKU-VANILLA"}, "k", 400, "malformed"),
        ({"sku": "SKU-VANILLA", "quantity": "9"}, "k", 400, "malformed"),
        ({"sku": "SKU-VANILLA", "quantity": True}, "k", 400, "malformed"),
        ({"sku": "SKU-VANILLA", "quantity": 0}, "k", 400, "malformed"),
        ({"sku": "SKU-VANILLA", "quantity": 9, "price": 1}, "k", 400, "malformed"),
        ({"sku": "SKU-PISTACHIO", "quantity": 9}, "k", 422, "unknown_sku"),
    ],
)
def test_a_request_that_is_not_an_order_makes_none(
    tmp_path: Path, body: object, key: str | None, status: int, error: str
) -> None:
    with running_desk(tmp_path / "ledger.db") as desk:
        answered = post(desk.url, body, key)
    assert (answered[0], answered[1]["error"]) == (status, error)
    assert ledger_orders(tmp_path / "ledger.db") == []


def test_a_key_still_being_processed_answers_409_and_one_order_is_made(tmp_path: Path) -> None:
    with running_desk(tmp_path / "ledger.db", "--faults", "late", "--late", "1.5") as desk:
        answers: list[int] = []
        slow = threading.Thread(target=lambda: answers.append(post(desk.url, VANILLA_9, "k")[0]))
        slow.start()
        # The first request takes the late fault and holds the key for 1.5 s; ask meanwhile.
        time.sleep(0.4)
        status = post(desk.url, VANILLA_9, "k")[0]
        slow.join()
        after = post(desk.url, VANILLA_9, "k")
    assert status == 409
    assert answers == [201]
    assert after[0] == 201 and after[2] == "true"
    assert len(ledger_orders(tmp_path / "ledger.db")) == 1


def test_a_503_makes_nothing_and_a_drop_commits_without_answering(tmp_path: Path) -> None:
    with running_desk(tmp_path / "ledger.db", "--faults", "503,drop") as desk:
        unavailable = post(desk.url, VANILLA_9, "k")
        assert unavailable[0] == 503
        assert ledger_orders(tmp_path / "ledger.db") == []
        host, port = desk.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        connection.request("POST", "/orders", json.dumps(VANILLA_9), {"Idempotency-Key": "k"})
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            connection.getresponse()
        connection.close()
        assert len(ledger_orders(tmp_path / "ledger.db")) == 1
        replay = post(desk.url, VANILLA_9, "k")
    assert replay[0] == 201 and replay[2] == "true"


def test_the_fault_switch_can_be_set_while_serving_and_refuses_unknown_faults(
    tmp_path: Path,
) -> None:
    with running_desk(tmp_path / "ledger.db") as desk:
        desk.set_faults(["503"])
        assert post(desk.url, VANILLA_9, "k")[0] == 503
        assert post(desk.url, VANILLA_9, "k")[0] == 201
        request = urllib.request.Request(
            f"{desk.url}/faults", data=b'{"schedule": ["explode"]}', method="PUT"
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        refused.value.close()
    assert refused.value.code == 400


def test_the_ledger_outlives_the_desk(tmp_path: Path) -> None:
    with running_desk(tmp_path / "ledger.db") as desk:
        post(desk.url, VANILLA_9, "k")
    with running_desk(tmp_path / "ledger.db") as desk:
        assert get(desk.url, "k")[1]["order_id"] == "SUP-0001"
        assert post(desk.url, {"sku": "SKU-CHOCOLATE", "quantity": 1}, "k2")[1]["order_id"] == (
            "SUP-0002"
        )


def test_the_command_line_refuses_an_unknown_fault_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(DESK), "--ledger", str(tmp_path / "l.db"), "--faults", "boom"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown fault 'boom'" in done.stderr


def raw_post(url: str, body: bytes, key: str | None) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        headers = {} if key is None else {"Idempotency-Key": key}
        connection.request("POST", "/orders", body, headers)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


BODIES = st.one_of(
    st.binary(max_size=64),
    st.builds(
        lambda value: json.dumps(value).encode(),
        st.dictionaries(
            st.sampled_from(["sku", "quantity", "price"]),
            st.one_of(
                st.integers(-5, 2000),
                st.sampled_from(["SKU-VANILLA", "SKU-PISTACHIO", ""]),
                st.booleans(),
                st.none(),
            ),
            max_size=3,
        ),
    ),
)


@pytest.fixture(scope="module")
def shared_desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDesk]:
    with running_desk(tmp_path_factory.mktemp("desk") / "ledger.db") as desk:
        yield desk


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(body=BODIES, key=st.one_of(st.none(), st.text(max_size=12)))
@example(body=b'{"sku": "SKU-VANILLA", "quantity": 3}', key="-k")
def test_any_request_is_an_order_or_a_refusal_and_never_a_crash(
    shared_desk: RunningDesk, body: bytes, key: str | None
) -> None:
    # A fresh key per example, so an earlier example's order is never replayed.
    sent_key = None if key is None else f"{uuid.uuid4().hex}{key}"
    if sent_key is not None and not sent_key.isascii():
        sent_key = None  # http.client only sends latin-1 header values
    before = len(ledger_orders(shared_desk.ledger))
    status, answer = raw_post(shared_desk.url, body, sent_key)
    after = ledger_orders(shared_desk.ledger)
    assert status in (201, 400, 422), answer
    assert json.loads(answer)  # every answer, refusals too, is JSON
    if status == 201:
        sent = json.loads(body)
        assert after[-1] == (sent_key, sent["sku"], sent["quantity"], 250)
        assert len(after) == before + 1
    else:
        assert len(after) == before


def test_the_next_request_after_any_answer_never_finds_the_key_busy(tmp_path: Path) -> None:
    # Each answer leaves only once its key is released: a client that asks
    # again the moment an answer arrives meets the ledger's verdict (a replay,
    # a 422), never a 409 left over from the request it has just been answered.
    with running_desk(tmp_path / "ledger.db") as desk:
        for round_ in range(150):
            key = f"k-{round_}"
            answers = [
                post(desk.url, VANILLA_9, key)[0],
                post(desk.url, VANILLA_9, key)[0],
                post(desk.url, {"sku": "SKU-VANILLA", "quantity": 8}, key)[0],
                post(desk.url, VANILLA_9, key)[0],
            ]
            assert answers == [201, 201, 422, 201], (round_, answers)
