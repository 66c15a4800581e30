"""Real processes against one real file: a kill mid-transaction loses the whole change and only it;
two writers at once lose nothing; a reader sees what was committed and nothing else.
"""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from shop_store import contents, python_child, seeded_store, start_together

from sovereign_agent.store import (
    open_store,
    read_product,
    receive_delivery,
    save_draft,
    set_price,
)

# The child runs one real operator action and is stopped, by SQLite's own
# statement trace, just before the statement that contains `marker`: by then
# every earlier statement of the transaction has run. It reports, then waits
# to be killed.
KILLED_MID_ACTION = """
    import sys, time
    from sovereign_agent.store import (
        open_store, receive_delivery, save_draft, seed_store, set_price
    )

    connection = open_store(sys.argv[1])
    marker = sys.argv[2]
    ran = []

    def pause_before(statement):
        if marker in statement:
            print(connection.in_transaction, "|".join(ran), flush=True)
            time.sleep(600)
        ran.append(statement.split()[0])

    connection.set_trace_callback(pause_before)
    {action}
"""

# point -> (the action as the child runs it, the same action for this process,
#           the statement it is stopped before, the statements already run)
KILL_POINTS: dict[str, tuple[str, Callable[[sqlite3.Connection], object], str, str]] = {
    "delivery, before the draft is superseded": (
        'receive_delivery(connection, "SKU-VANILLA", 7)',
        lambda connection: receive_delivery(connection, "SKU-VANILLA", 7),
        "SET status = 'SUPERSEDED'",
        "BEGIN|INSERT|UPDATE|SELECT",
    ),
    "delivery, at its commit": (
        'receive_delivery(connection, "SKU-VANILLA", 7)',
        lambda connection: receive_delivery(connection, "SKU-VANILLA", 7),
        "COMMIT",
        "BEGIN|INSERT|UPDATE|SELECT|UPDATE|SELECT",
    ),
    "price change, before the draft is superseded": (
        'set_price(connection, "SKU-VANILLA", 260)',
        lambda connection: set_price(connection, "SKU-VANILLA", 260),
        "SET status = 'SUPERSEDED'",
        "BEGIN|INSERT|SELECT",
    ),
    "a second draft, at its commit": (
        'save_draft(connection, "SKU-STRAWBERRY", 4)',
        lambda connection: save_draft(connection, "SKU-STRAWBERRY", 4),
        "COMMIT",
        "BEGIN|SELECT|SELECT|SELECT|UPDATE|INSERT|SELECT",
    ),
}


@pytest.mark.parametrize("point", sorted(KILL_POINTS))
def test_sigkill_in_the_middle_of_a_transaction_leaves_the_file_as_before(
    tmp_path: Path, point: str
) -> None:
    action, same_action, marker, ran = KILL_POINTS[point]
    path = seeded_store(tmp_path / "lucy.db")
    with closing(open_store(path)) as connection:
        save_draft(connection, "SKU-VANILLA", 6)
    before = contents(path)

    child = python_child(KILLED_MID_ACTION.replace("{action}", action), str(path), marker)
    assert child.stdout is not None
    report = child.stdout.readline()
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=60)

    assert report == f"True {ran}\n"  # inside the transaction, half-way through
    assert child.returncode == -signal.SIGKILL
    assert contents(path) == before
    # The file is whole, unlocked, and the same change now goes through.
    with closing(open_store(path, timeout=1)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        same_action(connection)
    assert contents(path) != before


def test_sigkill_while_seeding_leaves_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "lucy.db"
    open_store(path).close()
    before = contents(path)
    action = "seed_store(connection, {'products': rows}, prices)"
    setup = (
        "rows = [{'sku': f'SKU-{n:03}', 'name': str(n), 'on_hand': n, 'reorder_point': 9}"
        " for n in range(100)]; prices = {row['sku']: 100 + n for n, row in enumerate(rows)}; "
    )
    child = python_child(
        KILLED_MID_ACTION.replace("{action}", setup + action), str(path), "INSERT INTO prices"
    )
    assert child.stdout is not None
    report = child.stdout.readline()
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=60)
    # Killed as the first price went in: a hundred products were already inserted.
    assert report.startswith("True BEGIN|SELECT|INSERT|INSERT|")
    assert report.count("INSERT") == 100
    assert contents(path) == before


RECEIVE_ONE_TUB_AT_A_TIME = """
    import sys, time
    from sovereign_agent.store import open_store, receive_delivery

    connection = open_store(sys.argv[1], timeout=60)
    print("ready", flush=True)
    sys.stdin.readline()  # every writer starts together
    started = time.monotonic()
    for _ in range(int(sys.argv[2])):
        receive_delivery(connection, "SKU-CHOCOLATE", 1)
    print(started, time.monotonic())
"""


def test_two_processes_receiving_200_deliveries_each_leave_exactly_400_more_tubs(
    tmp_path: Path,
) -> None:
    path = seeded_store(tmp_path / "lucy.db")
    writers = [python_child(RECEIVE_ONE_TUB_AT_A_TIME, str(path), "200") for _ in range(2)]
    start_together(writers)
    results = [writer.communicate(timeout=300) for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0], results
    (start_a, end_a), (start_b, end_b) = (map(float, out.split()) for out, _ in results)
    assert start_a < end_b and start_b < end_a, "the two writers never ran at the same time"
    with closing(open_store(path)) as connection:
        assert read_product(connection, "SKU-CHOCOLATE")["on_hand"] == 7 + 400
        count = connection.execute("SELECT count(*), sum(tubs) FROM deliveries").fetchone()
        assert tuple(count) == (400, 400)


def test_a_second_process_sees_both_saved_drafts_2600_pence_in_all(tmp_path: Path) -> None:
    path = seeded_store(tmp_path / "lucy.db")
    with closing(open_store(path)) as connection:
        save_draft(connection, "SKU-VANILLA", 6)
        save_draft(connection, "SKU-STRAWBERRY", 4)
    reader = python_child(
        """
        import sys
        from sovereign_agent.store import open_store, read_drafts

        drafts = read_drafts(open_store(sys.argv[1]))
        print([(d["sku"], d["total_pence"], d["status"]) for d in drafts])
        print(sum(d["total_pence"] for d in drafts if d["status"] == "DRAFT"))
        """,
        str(path),
    )
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    assert out == ("[('SKU-VANILLA', 1500, 'DRAFT'), ('SKU-STRAWBERRY', 1100, 'DRAFT')]\n2600\n")


def test_a_reader_never_sees_a_change_before_it_is_committed(tmp_path: Path) -> None:
    path = seeded_store(tmp_path / "lucy.db")
    writer = python_child(
        """
        import sys
        from sovereign_agent.store import open_store, save_draft, transaction

        connection = open_store(sys.argv[1])
        with transaction(connection):
            connection.execute("UPDATE products SET on_hand = 9 WHERE sku = 'SKU-VANILLA'")
            print("written, not committed", flush=True)
            sys.stdin.readline()
        """,
        str(path),
    )
    assert writer.stdout is not None
    assert writer.stdout.readline() == "written, not committed\n"
    with closing(open_store(path)) as connection:
        assert read_product(connection, "SKU-VANILLA")["on_hand"] == 2
        writer.communicate("commit\n", timeout=60)
        assert writer.returncode == 0
        assert read_product(connection, "SKU-VANILLA")["on_hand"] == 9
