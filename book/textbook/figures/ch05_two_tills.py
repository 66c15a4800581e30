"""Figure 5.2: two tills' transactions on one store over time, and their waits for the write lock.

Measured, not drawn from a table: two real processes open one store in a
temporary folder and each receives a few one-tub deliveries through the
runtime's `receive_delivery`, starting together, as section 5.11's tills do.
Each till notes, on the machine's wall clock, when it asked for the write lock
(the `BEGIN IMMEDIATE`), when SQLite gave it (the next statement starts), and
when the delivery returned after its `COMMIT`.

A real race never happens the same way twice, so the drawing is not made from
a fresh race each time: `python ch05_two_tills.py --record` runs one and keeps
its timestamps in `ch05_two_tills.json` beside this script, and `draw()` draws
that file. The verifier holds the drawing to the file byte for byte, and the
tests run a fresh race and hold it, and the kept file, to what the lock
promises: never two transactions holding it at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from contextlib import closing
from pathlib import Path
from typing import Any

from bookproof.figures.diagrams import ACCENT, MUTED, Canvas
from sovereign_agent.shop import PRICES_PENCE
from sovereign_agent.store import open_store, seed_store

RECORDING = Path(__file__).with_suffix(".json")
DELIVERIES = 4  # each till's; enough to see the turns alternate, few enough to read
SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}

# One till: after "go", each delivery is (asked, locked, committed) in nanoseconds.
# The trace callback sees each statement as it starts: the first one after
# BEGIN IMMEDIATE starts only once SQLite has handed this connection the lock.
TILL = """
    import json, sys, time
    from sovereign_agent.store import open_store, receive_delivery

    connection = open_store(sys.argv[1], timeout=30)
    began = False
    locked = []

    def traced(statement):
        global began
        if began:
            locked.append(time.time_ns())
            began = False
        began = statement.strip().upper() == "BEGIN IMMEDIATE"

    connection.set_trace_callback(traced)
    print("ready", flush=True)
    sys.stdin.readline()
    spans = []
    for _ in range(int(sys.argv[2])):
        asked = time.time_ns()
        receive_delivery(connection, "SKU-CHOCOLATE", 1)
        spans.append((asked, locked[-1], time.time_ns()))
    print(json.dumps(spans), flush=True)
"""


def race(deliveries: int = DELIVERIES) -> list[list[list[float]]]:
    """One real race: each till's (asked, locked, committed), in ms from the first ask."""
    with tempfile.TemporaryDirectory(prefix="figure-") as folder:
        path = Path(folder) / "lucy.db"
        with closing(open_store(path)) as setup:
            seed_store(setup, SHOP, PRICES_PENCE)
        command = [sys.executable, "-c", textwrap.dedent(TILL), str(path), str(deliveries)]
        tills = [
            subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        for till in tills:
            assert till.stdout is not None
            assert till.stdout.readline() == "ready\n"
        for till in tills:  # both start together
            assert till.stdin is not None
            till.stdin.write("go\n")
            till.stdin.flush()
        answers = [till.communicate()[0] for till in tills]
        if any(till.returncode for till in tills):
            raise RuntimeError(f"a till failed: exit statuses {[t.returncode for t in tills]}")
    spans = [json.loads(answer) for answer in answers]
    zero = min(span[0] for lane in spans for span in lane)
    return [[[(t - zero) / 1e6 for t in span] for span in lane] for lane in spans]


def load() -> list[list[list[float]]]:
    lanes: list[list[list[float]]] = json.loads(RECORDING.read_text(encoding="utf-8"))
    return lanes


LEFT, WIDTH = 0.9, 6.1  # inches: where 0 ms sits, and the width of the time axis
HAIR = 0.03  # inches: the narrowest bar drawn


def draw() -> Any:
    lanes = load()
    end = max(span[2] for lane in lanes for span in lane)
    scale = WIDTH / end
    x = lambda ms: LEFT + ms * scale  # noqa: E731 - one conversion, used throughout
    canvas = Canvas(7.4, 2.5)
    rows = (1.75, 0.95)
    for row, name in zip(rows, ("till 1", "till 2"), strict=True):
        canvas.text(0.12, row, name, ha="left", fontweight="bold", fontsize=8.5)
        canvas.line([x(0), x(end)], [row, row], color=MUTED)
    for row, lane in zip(rows, lanes, strict=True):
        for asked, locked, committed in lane:
            # Waiting for the write lock: a dashed outline. A wait too short to
            # draw as a box (under a hair) is left out rather than drawn as a smudge.
            if (locked - asked) * scale >= HAIR:
                canvas.box(x(asked), row - 0.1, (locked - asked) * scale, 0.2, dashed=True)
            # holding it, from BEGIN IMMEDIATE's answer to COMMIT: a filled bar,
            # at least a hair wide so the shortest still shows
            canvas.box(
                x(locked), row - 0.14, max((committed - locked) * scale, HAIR), 0.28, fill=ACCENT
            )
    canvas.box(LEFT, 0.22, 0.3, 0.14, fill=ACCENT)
    canvas.text(
        LEFT + 0.38, 0.29, "holds the write lock: BEGIN IMMEDIATE .. COMMIT", ha="left", fontsize=7
    )
    canvas.box(LEFT + 3.5, 0.22, 0.3, 0.14, dashed=True)
    canvas.text(LEFT + 3.88, 0.29, "waits for the lock (busy timeout)", ha="left", fontsize=7)
    for tick in _ticks(end):
        canvas.text(x(tick), 2.3, f"{tick:g} ms", fontsize=7, color=MUTED)
        canvas.line([x(tick), x(tick)], [0.6, 2.15], color="#e4e7eb", linewidth=0.6, zorder=0)
    return canvas.figure


def _ticks(end: float) -> list[float]:
    """Round steps along the axis, at most six of them: 1, 2 or 5 times a power of ten."""
    steps = [base * 10.0**power for power in range(-2, 6) for base in (1, 2, 5)]
    step = next(step for step in steps if end / step <= 6)
    return [step * n for n in range(int(end // step) + 1)]


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        raise SystemExit("usage: python ch05_two_tills.py --record  (runs a race, keeps its times)")
    RECORDING.write_text(json.dumps(race(), indent=1) + "\n", encoding="utf-8")
    print(f"{RECORDING.name}: recorded")
