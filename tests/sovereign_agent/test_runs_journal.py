"""The journal, the leases and the fence in one process, over real store files; the commands' doors.

The processes that die and race are `test_worker_recovery.py`'s; here each
piece is held to what it promises on its own: a claim is exclusive until it
expires, a renewal by a worker that lost its lease is refused, the fence
refuses any write (a tool's own included) once the generation moved, and a
resumed run answers from its journal without asking the model.
"""

from __future__ import annotations

import ast
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from durable_morning import TASK, MorningModel, morning_setup, morning_store

from bookproof.layout import REPO_ROOT
from sovereign_agent.effects import Effect
from sovereign_agent.fencing import FENCE_REFUSAL, fence, fenced_writes, unfence
from sovereign_agent.journal import (
    Journal,
    JournaledModel,
    outcome_from_record,
    outcome_record,
)
from sovereign_agent.leases import LeaseLost, claim_next, release, renew
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message, ModelReply
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.runs import list_runs, read_run, read_steps, submit_run
from sovereign_agent.shop import NoArguments
from sovereign_agent.store import MIGRATIONS, RUNS_JOURNAL, open_store, reserve
from sovereign_agent.tools import (
    ArgumentProblem,
    Dispatcher,
    ExecutableTool,
    Narrowing,
    ToolCall,
    ToolFailure,
    ToolOutcome,
)
from sovereign_agent.worker import RunSetup, load_setup, work_on


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return morning_store(tmp_path / "lucy.db")


def test_the_journal_is_its_own_migration_and_the_last_one(store: Path) -> None:
    # Named, never numbered: an earlier chapter's migration may land before it.
    assert MIGRATIONS[-1] is RUNS_JOURNAL
    with closing(open_store(store)) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_a_claim_is_exclusive_until_it_expires_and_each_claim_is_a_new_generation(
    store: Path,
) -> None:
    clock = Clock()
    with closing(open_store(store)) as one, closing(open_store(store)) as two:
        first = claim_next(one, "one", lease_seconds=10, clock=clock)
        assert first is not None and first.generation == 1
        assert claim_next(two, "two", lease_seconds=10, clock=clock) is None
        clock.now += 9.9
        assert claim_next(two, "two", lease_seconds=10, clock=clock) is None
        clock.now += 0.1
        second = claim_next(two, "two", lease_seconds=10, clock=clock)
        assert second is not None and (second.run_id, second.generation) == (1, 2)
        # The first worker's renewal comes too late: refused, and nothing changed.
        with pytest.raises(LeaseLost):
            renew(one, first, lease_seconds=10, clock=clock)
        assert not release(one, first)
        assert read_run(one, 1).owner == "two"


def test_the_fence_refuses_every_write_once_another_worker_claimed_the_run(store: Path) -> None:
    clock = Clock()
    with closing(open_store(store)) as mine, closing(open_store(store)) as theirs:
        lease = claim_next(mine, "mine", lease_seconds=1, clock=clock)
        assert lease is not None
        fence(mine, lease)
        reserve(mine, "SKU-VANILLA", 1)  # still ours: the write goes through
        clock.now += 1
        assert claim_next(theirs, "theirs", lease_seconds=1, clock=clock) is not None
        before = mine.execute("SELECT reserved FROM products WHERE sku = 'SKU-VANILLA'").fetchone()
        # A shop write (a tool's kind), a journal write, a delete: all refused.
        with pytest.raises(sqlite3.IntegrityError, match="lease_lost"):
            reserve(mine, "SKU-VANILLA", 1)
        with pytest.raises(LeaseLost), fenced_writes():
            mine.execute("DELETE FROM prices WHERE sku = 'SKU-STRAWBERRY'")
        with pytest.raises(LeaseLost, match="lease generation"), fenced_writes():
            mine.execute("UPDATE runs SET status = 'FINISHED'")
        after = mine.execute("SELECT reserved FROM products WHERE sku = 'SKU-VANILLA'").fetchone()
        assert tuple(before) == tuple(after)
        # Other connections are not fenced: the triggers are this connection's alone.
        reserve(theirs, "SKU-VANILLA", 1)
        unfence(mine)
        reserve(mine, "SKU-VANILLA", 1)
        assert FENCE_REFUSAL.startswith("lease_lost")


class CountingModel(MorningModel):
    def __init__(self) -> None:
        self.asked: list[int] = []

    def complete(self, messages: list[Message], **kwargs: object) -> ModelReply:  # type: ignore[override]
        self.asked.append(len(messages))
        return super().complete(messages)


def test_a_resumed_run_is_answered_from_its_journal_and_asks_only_for_what_is_missing(
    store: Path,
) -> None:
    clock = Clock()
    with closing(open_store(store)) as connection:
        lease = claim_next(connection, "first", lease_seconds=5, clock=clock)
        assert lease is not None
        fence(connection, lease)
        journal = Journal(connection, lease)
        model = JournaledModel(CountingModel(), journal)
        reply = model.complete([])  # step 1, asked and journaled
        assert reply.message.tool_calls[0].name == "list_stock"
        unfence(connection)
        # The first worker dies here. The next one claims the run after the lease.
        clock.now += 5
        done = work_on(str(store), connection, claim(connection, clock), clock=clock)
    assert (done.status, done.stop_reason, done.steps) == ("FINISHED", "final_answer", 3)
    assert (done.replayed_replies, done.replayed_outcomes) == (1, 0)
    with closing(open_store(store)) as connection:
        steps = read_steps(connection, 1)
        assert [(row.step, row.position, row.generation) for row in steps] == [
            (1, 0, 1),
            (1, 1, 2),
            (2, 0, 2),
            (2, 1, 2),
            (2, 2, 2),
            (3, 0, 2),
        ]
        assert list_runs(connection)[0].status == "FINISHED"


def claim(connection: sqlite3.Connection, clock: Clock):  # type: ignore[no-untyped-def]
    lease = claim_next(connection, "second", lease_seconds=5, clock=clock)
    assert lease is not None and lease.generation == 2
    return lease


def test_an_outcome_comes_back_from_the_journal_whole() -> None:
    outcome = ToolOutcome(
        {"ok": False, "error": "tool_failed"},
        handler_ran=True,
        failure=ToolFailure(stage="handler", error_type="ValueError", message="no"),
        argument_problems=(ArgumentProblem(location=("sku", 0), kind="string_type"),),
        narrowing=Narrowing("c1", "skill", "why", ("a",), ("b", "c"), ()),
    )
    assert outcome_from_record(outcome_record(outcome)) == outcome


def test_a_setup_that_cannot_build_the_run_fails_it_with_one_line(store: Path) -> None:
    with closing(open_store(store)) as connection:
        submit_run(connection, TASK, setup="durable_morning:no_such_setup")
        connection.execute("UPDATE runs SET status = 'FINISHED', finished_ms = 1 WHERE id = 1")
        lease = claim_next(connection, "w")
        assert lease is not None and lease.run_id == 2
        done = work_on(str(store), connection, lease)
        assert done.status == "FAILED"
        run = read_run(connection, 2)
        assert (run.status, run.owner) == ("FAILED", None)
        assert run.error == "SetupError: setup 'durable_morning:no_such_setup':" + (
            " durable_morning has no function 'no_such_setup'"
        )


@pytest.mark.parametrize(
    ("task", "setup", "message"),
    [
        ("   ", "a:b", "a run needs a task"),
        (TASK, "not a setup", "setup must be module:function"),
        (TASK, "os:system; rm", "setup must be module:function"),
    ],
)
def test_a_run_is_refused_a_blank_task_or_a_setup_that_is_not_module_and_function(
    store: Path, task: str, setup: str, message: str
) -> None:
    with closing(open_store(store)) as connection, pytest.raises(ValueError, match=message):
        submit_run(connection, task, setup=setup)


def command(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, check=False
    )


def test_the_commands_refuse_a_missing_store_without_creating_it(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.db"
    for module, args in (
        ("sovereign_agent.worker", ["--once"]),
        ("sovereign_agent.runs", ["list"]),
    ):
        result = command(module, "--store", str(missing), *args)
        assert (result.returncode, result.stderr) == (2, f"error: no store at {missing}\n")
    assert not missing.exists()


def test_the_runs_command_adds_lists_and_refuses_an_unknown_run(store: Path) -> None:
    added = command("sovereign_agent.runs", "--store", str(store), "add", "Count the tubs.")
    assert added.returncode == 0, added.stderr
    assert added.stdout == "2 QUEUED steps 0 generation 0 task 'Count the tubs.'\n"
    listed = command("sovereign_agent.runs", "--store", str(store), "list")
    assert listed.stdout.splitlines() == [
        "1 QUEUED steps 0 generation 0 task 'Order what the shop needs.'",
        "2 QUEUED steps 0 generation 0 task 'Count the tubs.'",
    ]
    unknown = command("sovereign_agent.runs", "--store", str(store), "show", "9")
    assert (unknown.returncode, unknown.stderr) == (1, f"error: no run 9 in {store}\n")
    bad = command("sovereign_agent.runs", "--store", str(store), "show", "one")
    assert bad.returncode == 2 and "invalid int value" in bad.stderr


def test_the_worker_refuses_a_lease_it_could_never_renew(store: Path) -> None:
    result = command("sovereign_agent.worker", "--store", str(store), "--lease-seconds", "0")
    assert result.returncode == 2
    assert "must be a number of seconds from 0.05 to 3600" in result.stderr


def test_the_morning_setup_builds_the_same_run_in_any_worker(store: Path) -> None:
    with closing(open_store(store)) as connection:
        run = read_run(connection, 1)
        one, two = morning_setup(connection, run), morning_setup(connection, run)
        assert one.dispatcher.schemas() == two.dispatcher.schemas()
        assert (one.max_steps, one.max_tool_calls) == (5, 5)


def test_the_runtime_never_imports_dbos() -> None:
    # DBOS is an extra for chapter 12's last section: the runtime's journal,
    # leases and fence are the shop's own, and work without it.
    runtime = REPO_ROOT / "src/sovereign_agent"
    importers = []
    for path in sorted(runtime.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            importers += [path.name for name in names if name.split(".")[0] == "dbos"]
    assert importers == []
    assert (
        "dbos"
        not in subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, sovereign_agent.worker.setups; print(*sys.modules)",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    )


def ring_setup(connection: sqlite3.Connection, run: object) -> RunSetup:
    """A run with one consequential tool that nothing can witness: a bell, rung or not."""
    bell = ExecutableTool(
        name="ring_bell",
        description="Ring the shop's bell.",
        arguments=NoArguments,
        handler=lambda _: "rung",
        consequential=True,
    )
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(AssistantToolCall(id="b", name="ring_bell", arguments_json="{}"),)
            ),
            AssistantMessage(content="Rang."),
        ]
    )
    dispatcher = Dispatcher([bell], allowed=["ring_bell"], before_write=lambda call: None)
    return RunSetup(model=model, dispatcher=dispatcher)


def test_a_consequential_call_left_in_doubt_with_no_witness_fails_the_run_for_an_operator(
    store: Path,
) -> None:
    clock = Clock()
    with closing(open_store(store)) as connection:
        run_id = submit_run(connection, "Ring the bell.", setup="test_runs_journal:ring_setup")
        connection.execute("UPDATE runs SET status = 'FINISHED', finished_ms = 1 WHERE id = 1")
        first = claim_next(connection, "first", lease_seconds=1, clock=clock)
        assert first is not None and first.run_id == run_id
        fence(connection, first)
        journal = Journal(connection, first)
        JournaledModel(ring_setup(connection, None).model, journal).complete([])
        journal.record_started(ToolCall(id="b", name="ring_bell", arguments={}), {})
        unfence(connection)  # the first worker dies here, the bell rung or not
        clock.now += 1
        second = claim_next(connection, "second", lease_seconds=1, clock=clock)
        assert second is not None
        done = work_on(str(store), connection, second, clock=clock)
        assert done.status == "FAILED"
        assert done.detail == (
            "in doubt: call b of ring_bell may have run, and nothing can say whether"
        )
        run = read_run(connection, run_id)
        assert (run.status, run.error) == ("FAILED", done.detail)
        # The STARTED row stays for the operator to see; the bell was not rung again.
        assert [(row.call_id, row.state) for row in read_steps(connection, run_id)] == [
            (None, "DONE"),
            ("b", "STARTED"),
        ]


def test_a_worker_that_knows_its_lease_is_lost_does_not_ask_the_model(store: Path) -> None:
    with closing(open_store(store)) as connection:
        lease = claim_next(connection, "w")
        assert lease is not None
        model = CountingModel()
        journal = Journal(connection, lease, lease_lost=lambda: True)
        with pytest.raises(LeaseLost, match="the lease was lost before step 1"):
            JournaledModel(model, journal).complete([])
        assert model.asked == []
        assert read_steps(connection, lease.run_id) == []


PURCHASES_SETUP = "sovereign_agent.worker.setups:shop_with_purchases"


@pytest.mark.parametrize(
    ("address", "error"),
    [
        (
            None,
            "SetupError: SOVEREIGN_SUPPLIER is not set: the supplier desk's address (http://...)",
        ),
        (
            "  ",
            "SetupError: SOVEREIGN_SUPPLIER is not set: the supplier desk's address (http://...)",
        ),
        (
            "ftp://supplier",
            "SetupError: SOVEREIGN_SUPPLIER: the supplier's address must be an http(s) URL,"
            " not 'ftp://supplier'",
        ),
    ],
)
def test_a_purchasing_run_without_a_supplier_address_fails_with_one_line_and_buys_nothing(
    store: Path, monkeypatch: pytest.MonkeyPatch, address: str | None, error: str
) -> None:
    monkeypatch.delenv("SOVEREIGN_SUPPLIER", raising=False)
    if address is not None:
        monkeypatch.setenv("SOVEREIGN_SUPPLIER", address)
    with closing(open_store(store)) as connection:
        run_id = submit_run(connection, TASK, setup=PURCHASES_SETUP)
        # The fixture's own run is out of the way: this one is claimed next.
        connection.execute(
            "UPDATE runs SET status = 'FINISHED', finished_ms = 1 WHERE id < ?", (run_id,)
        )
        lease = claim_next(connection, "w")
        assert lease is not None and lease.run_id == run_id
        done = work_on(str(store), connection, lease)
        assert (done.status, done.detail) == ("FAILED", error)
        assert read_run(connection, run_id).error == error
        assert connection.execute("SELECT count(*) FROM orders").fetchone()[0] == 0


def test_a_purchasing_run_is_built_with_chapter_11s_place_order_and_its_desk_as_supplier(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOVEREIGN_SUPPLIER", "http://127.0.0.1:9/")
    with closing(open_store(store)) as connection:
        run = read_run(connection, submit_run(connection, TASK, setup=PURCHASES_SETUP))
        setup = load_setup(PURCHASES_SETUP)(connection, run)
    assert setup.supplier is not None and setup.supplier.base_url == "http://127.0.0.1:9"
    assert setup.authority is not None
    order = setup.dispatcher.tools["place_order"]
    assert order.effects == {Effect.WRITE, Effect.MONEY, Effect.EGRESS}
    assert order.consequential
