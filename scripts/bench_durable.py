"""What durability costs: the morning run journaled by a worker, against the same run unjournaled,
and the same workflow on DBOS.

The morning run is chapter 10's: read the stock, place the two approved
orders (VANILLA 9, CHOCOLATE 1) in one turn, answer. Three loop steps, three
tool calls. Each run gets a fresh store (an approval is used once), made
before the clock starts; what is timed is the run alone, in this process:

- unjournaled: chapter 10's gated loop over the store's tools;
- journaled: what `python -m sovereign_agent.worker` does for one run: claim
  the lease, fence the connection, start the renewer thread, journal each
  reply and outcome (and each order STARTED before it runs), write FINISHED;
- DBOS: `scripts/dbos_worker.py`'s workflow, each turn and call a DBOS step
  recorded in a SQLite system database (DBOS launched once, before timing).

Every store write commits with `synchronous = FULL`, so the journal's cost is
mostly the disk's: the ratio and the cost per step depend on the machine.

    uv run python scripts/bench_durable.py [--runs N] [--repeat R] [--no-dbos] [--dir PATH]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from sovereign_agent.approvals import (
    OrderArguments,
    add_operator,
    approve,
    build_approved_store_tools,
    canonical_arguments,
    run_with_approvals,
    set_weekly_limit,
)
from sovereign_agent.approvals.ledger import request_approval, seconds, utc_now
from sovereign_agent.leases import claim_next
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.runs import Run, submit_run
from sovereign_agent.store import expect_delivery, open_store, reserve, seed_store, transaction
from sovereign_agent.worker import RunSetup, work_on

SHOP: dict[str, Any] = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
PRICES = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}
TASK = "Order what the shop needs."
STEPS = 3
# Per run: three replies, three outcomes, two orders journaled STARTED first.
JOURNAL_WRITES = 8


def order(call_id: str, sku: str, quantity: int) -> AssistantToolCall:
    arguments = json.dumps({"sku": sku, "quantity": quantity})
    return AssistantToolCall(id=call_id, name="place_order", arguments_json=arguments)


def order_what_is_needed(messages: Sequence[Message]) -> AssistantMessage:
    report = json.loads(str(messages[-1].content))["value"]
    needed = sorted((row for row in report if row["needed"] > 0), key=lambda r: -r["needed"])
    return AssistantMessage(
        tool_calls=tuple(order(f"o-{r['sku']}", r["sku"], r["needed"]) for r in needed)
    )


def morning_model() -> ScriptedModel:
    return ScriptedModel(
        [
            AssistantMessage(
                tool_calls=(AssistantToolCall(id="s", name="list_stock", arguments_json="{}"),)
            ),
            order_what_is_needed,
            AssistantMessage(content="Ordered what was needed."),
        ]
    )


def bench_setup(connection: sqlite3.Connection, run: Run) -> RunSetup:
    """The setup a worker builds for a benchmark run (named as `bench_durable:bench_setup`)."""
    dispatcher, authority = build_approved_store_tools(connection, run_id=f"run-{run.id}")
    return RunSetup(model=morning_model(), dispatcher=dispatcher, authority=authority, max_steps=5)


def morning_store(path: Path) -> Path:
    """Chapter 6's Friday with both orders approved, and one run queued."""
    with closing(open_store(path)) as connection:
        seed_store(connection, SHOP, PRICES)
        reserve(connection, "SKU-VANILLA", 3)
        reserve(connection, "SKU-CHOCOLATE", 2)
        expect_delivery(connection, "SKU-STRAWBERRY", 4)
        add_operator(connection, "lucy")
        set_weekly_limit(connection, 5000)
        for sku, quantity, pence in (("SKU-VANILLA", 9, 2250), ("SKU-CHOCOLATE", 1, 300)):
            arguments = canonical_arguments(OrderArguments(sku=sku, quantity=quantity))
            with transaction(connection):
                asked = request_approval(
                    connection, "place_order", arguments, pence, "bench", now=seconds(utc_now)
                )
            approve(connection, asked.id, "lucy")
        submit_run(connection, TASK, setup="bench_durable:bench_setup")
    return path


def unjournaled(path: Path) -> None:
    with closing(open_store(path)) as connection:
        dispatcher, authority = build_approved_store_tools(connection, run_id="bench")
        gated = run_with_approvals(
            morning_model(), dispatcher, authority, TASK, max_steps=5, max_tool_calls=10
        )
    assert gated.stop_reason == "final_answer", gated.stop_reason


def journaled(path: Path) -> None:
    with closing(open_store(path)) as connection:
        lease = claim_next(connection, "bench")
        assert lease is not None
        done = work_on(str(path), connection, lease)
    assert (done.status, done.stop_reason) == ("FINISHED", "final_answer"), done


def time_runs(kind: Callable[[Path], None], folder: Path, runs: int) -> float:
    """Seconds per run, over `runs` runs each on its own fresh store."""
    stores = [morning_store(folder / f"{kind.__name__}-{index}.db") for index in range(runs)]
    start = time.perf_counter()
    for store in stores:
        kind(store)
    return (time.perf_counter() - start) / runs


def dbos_runner(folder: Path) -> Callable[[Path], None]:
    """One DBOS workflow per run, DBOS launched once here (its import and launch take seconds)."""
    import dbos_worker  # scripts/ is this script's folder, first on sys.path
    from dbos import DBOS, SetWorkflowID

    DBOS(
        config={
            "name": "lucy-shop-bench",
            "system_database_url": f"sqlite:///{(folder / 'dbos.sqlite').absolute()}",
            "application_version": dbos_worker.APPLICATION_VERSION,
            "log_level": "WARNING",
            # As the worker polls: what is timed is the worker's DBOS.
            "notification_listener_polling_interval_sec": dbos_worker.POLL_S,
        }
    )
    DBOS.launch()

    def dbos_workflow(path: Path) -> None:
        # A workflow id is an idempotency key: a second workflow under one id
        # would return the first one's recorded result without running.
        with SetWorkflowID(f"bench-{path.parent.name}-{path.stem}"):
            result = dbos_worker.run_workflow(str(path), 1)
        assert result["stop_reason"] == "final_answer", result

    return dbos_workflow


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per timing (default 20)")
    parser.add_argument("--repeat", type=int, default=3, help="timings, best kept (default 3)")
    parser.add_argument("--no-dbos", action="store_true", help="leave the DBOS workflow out")
    parser.add_argument("--dir", type=Path, default=None, help="where the stores go (a temp dir)")
    arguments = parser.parse_args(argv)
    if arguments.runs < 1 or arguments.repeat < 1:
        parser.error("--runs and --repeat must be at least 1")
    # The worker imports a run's setup by name: this module, as the benchmark's.
    sys.modules.setdefault("bench_durable", sys.modules[__name__])
    with tempfile.TemporaryDirectory(dir=arguments.dir) as scratch:
        folder = Path(scratch)
        kinds: list[Callable[[Path], None]] = [unjournaled, journaled]
        if not arguments.no_dbos:
            kinds.append(dbos_runner(folder))
        best: dict[str, float] = {}
        for round_number in range(arguments.repeat):
            # Back to back in every round, so a busy moment of the machine hits all alike.
            for kind in kinds:
                round_folder = folder / f"round-{round_number}"
                round_folder.mkdir(exist_ok=True)
                seconds_per_run = time_runs(kind, round_folder, arguments.runs)
                best[kind.__name__] = min(best.get(kind.__name__, seconds_per_run), seconds_per_run)
        if not arguments.no_dbos:
            from dbos import DBOS

            DBOS.destroy()
    base = best["unjournaled"]
    print(
        f"morning run ({STEPS} steps, 3 tool calls), best of {arguments.repeat} timings"
        f" of {arguments.runs} runs, each on a fresh store:"
    )
    print(f"unjournaled (chapter 10's gated loop): {base * 1000:8.2f} ms a run")
    extra = best["journaled"] - base
    print(
        f"journaled (claim, fence, journal, finish): {best['journaled'] * 1000:8.2f} ms a run,"
        f" {best['journaled'] / base:.2f} x unjournaled"
    )
    # The extra holds fixed costs too (the claim, the renewer's own connection
    # and thread, the fence, FINISHED): spread over the steps, not per write.
    print(
        f"cost of durability: {extra * 1000:.2f} ms a run ({JOURNAL_WRITES} journal writes"
        f" and the fixed costs), {extra / STEPS * 1000:.2f} ms per loop step of this run"
    )
    if "dbos_workflow" in best:
        print(
            f"DBOS workflow (SQLite system database): {best['dbos_workflow'] * 1000:8.2f} ms a run,"
            f" {best['dbos_workflow'] / base:.2f} x unjournaled"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
