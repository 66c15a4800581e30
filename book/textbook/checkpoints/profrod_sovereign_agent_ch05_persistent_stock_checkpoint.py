"""Chapter 5 checkpoint: Lucy's shop in a SQLite file, shared by two processes.

In a temporary folder: a store seeded from chapter 1's SHOP; the morning plan
run through chapter 3's loop against the store's tools, saving its drafts;
the vanilla draft asked for again (the saved one comes back); a second process
reading the drafts from the file; and a delivery of 7 tubs of vanilla that
retires the vanilla draft in the same transaction.

Offline by default. With SOVEREIGN_MODEL set (see chapter 1) the plan is made
by that provider; every line but the model, stop and step lines comes from the
store, so a provider that drafts the same prints the same.
"""

import json
import runpy
import subprocess
import sys
import tempfile
import textwrap
from contextlib import closing
from pathlib import Path

from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import ModelError, model_from_env
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import (
    build_store_tools,
    open_store,
    read_drafts,
    read_products,
    receive_delivery,
    seed_store,
)
from sovereign_agent.tools import ToolCall

# Located beside this file, so the checkpoint runs from any working directory.
CHECKPOINTS = Path(__file__).parent
CHAPTER_1 = CHECKPOINTS / "profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
CHAPTER_3 = CHECKPOINTS / "profrod_sovereign_agent_ch03_bounded_agent_loop_checkpoint.py"

TASK = "Plan this morning's re-order."
# What the second process runs: it opens the same file and reads the open drafts.
SECOND_PROCESS = """
    import sys
    from sovereign_agent.store import open_store, read_drafts

    drafts = [d for d in read_drafts(open_store(sys.argv[1])) if d["status"] == "DRAFT"]
    seen = ", ".join(
        f"{d['sku']} {d['quantity']} tubs ({d['total_pence']:,} pence)" for d in drafts
    )
    print(f"second process sees: {seen}: {sum(d['total_pence'] for d in drafts):,} pence in all")
"""


def main() -> int:
    chapter_3 = runpy.run_path(str(CHAPTER_3))
    try:
        model = model_from_env(offline_script=chapter_3["SHOP_SCRIPT"])
    except ModelError as error:
        # A provider named but not configured: say so, and run nothing.
        print(f"cannot start: {error}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="lucy-") as folder:
        path = Path(folder) / "lucy.db"
        with closing(open_store(path)) as store:
            seed_store(store, runpy.run_path(str(CHAPTER_1))["SHOP"], PRICES_PENCE)
            seeded = [
                f"{row['sku']} {row['on_hand']}/{row['reorder_point']}"
                for row in read_products(store)
            ]
            print("seeded from SHOP (on hand/target):", ", ".join(seeded))

            tools = build_store_tools(store)
            record = run_task(
                model, tools, TASK, max_steps=6, max_tool_calls=8, system=chapter_3["SYSTEM"]
            )
            print("model:", model.label)
            print(f"stop: {record.stop_reason} after {record.steps} step(s)")
            for draft in read_drafts(store):
                print(
                    f"saved draft {draft['id']}: {draft['sku']} {draft['quantity']} tubs,"
                    f" {draft['total_pence']:,} pence, {draft['status']}"
                )

            # The request the plan already made: the saved draft comes back.
            again = ToolCall(
                id="again-1", name="draft_order", arguments={"sku": "SKU-VANILLA", "quantity": 6}
            )
            print("asked again:", json.dumps(tools.invoke(again), sort_keys=True))
            print("drafts saved:", len(read_drafts(store)))

        second = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(SECOND_PROCESS), str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        print(second.stdout, end="")

        with closing(open_store(path)) as store:
            statements: list[str] = []
            store.set_trace_callback(lambda statement: statements.append(statement.split()[0]))
            vanilla = receive_delivery(store, "SKU-VANILLA", 7)
            store.set_trace_callback(None)
            print(
                f"delivery of 7 SKU-VANILLA: on_hand {vanilla['on_hand']}, need {vanilla['needed']}"
            )
            print("in one transaction:", ", ".join(statements))
            for draft in read_drafts(store):
                print(f"draft {draft['id']} {draft['sku']}: {draft['status']}")
            still_open = [d for d in read_drafts(store) if d["status"] == "DRAFT"]
            print(f"open drafts now: {sum(d['total_pence'] for d in still_open):,} pence")
    if record.error is not None:
        print("error:", record.error)
    return 0 if record.stop_reason is StopReason.FINAL_ANSWER else 1


if __name__ == "__main__":
    sys.exit(main())
