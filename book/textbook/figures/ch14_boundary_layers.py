"""Figure 14.1: the layers of `run_python`'s boundary, each with what it refused.

Drawn by running hostile programs through the runtime's `run_python` over
the shop's sales file: each layer's label is the outcome and the error line
a real run gave, so a layer that stopped refusing would change the figure
(and fail the chapter). The nesting is layout only; what each layer refused
is the data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bookproof.figures.diagrams import ACCENT, MUTED, WARN, Canvas
from bookproof.layout import default_layout
from sovereign_agent.generated_code import CodeLimits, run_python

DATA = default_layout().textbook / "data"

# Outermost first: (layer, what enforces it, the hostile programs it is shown refusing).
LAYERS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    (
        "4. the parent's clock and counts",
        "the tool's own process",
        (("endless loop", "while True:\n    pass"), ("flood", "while True:\n    print('x')")),
    ),
    (
        "1. namespaces",
        "bubblewrap and the kernel",
        (("socket", "import socket\nsocket.create_connection(('192.0.2.1', 80))"),),
    ),
    (
        "2. mounts",
        "bubblewrap: read-only binds, a scratch /tmp",
        (
            ("read outside", "open('/etc/passwd')"),
            ("write the data", "open('/data/sales.csv', 'w')"),
        ),
    ),
    (
        "3. rlimits and the seccomp filter",
        "the process itself, before the code runs",
        (("fork", "import os\nos.fork()"), ("memory bomb", "x = bytearray(2 ** 30)")),
    ),
)


def _refusal(program: str) -> str:
    """What one run of `program` came to, in a few words: its outcome, or its error's words."""
    result = run_python(program, Path(DATA), CodeLimits(seconds=1.0))
    if result.outcome.value != "raised":
        return result.outcome.value
    # "OSError: [Errno 30] Read-only file system: '/data/sales.csv'" -> "Read-only file system"
    words = result.error.split("] ", 1)[-1].split(":", 1)[0]
    return words


WIDTH, HEIGHT = 7.0, 4.6
# Each layer's band: room for its name and its refusals above the next layer's box.
SIDE, BAND, MARGIN = 0.3, 0.52, 0.1


def draw() -> Any:
    canvas = Canvas(WIDTH, HEIGHT)
    for depth, (name, enforcer, programs) in enumerate(LAYERS):
        x, y = MARGIN + depth * SIDE, MARGIN + depth * BAND / 3
        width, height = WIDTH - 2 * x, HEIGHT - MARGIN - depth * BAND - y
        canvas.box(x, y, width, height, fill="#dbe7f0" if depth % 2 else "white")
        top = y + height - 0.15
        canvas.text(x + 0.12, top, name, ha="left", fontweight="bold", fontsize=8.5)
        canvas.text(x + width - 0.12, top, enforcer, ha="right", fontsize=7, color=MUTED)
        refused = "; ".join(f"{label}: {_refusal(code)}" for label, code in programs)
        canvas.text(x + 0.12, top - 0.2, "refused " + refused, ha="left", fontsize=7, color=WARN)
    inner_y = MARGIN + (len(LAYERS) - 1) * BAND / 3
    inner_top = HEIGHT - MARGIN - (len(LAYERS) - 1) * BAND - 0.45
    canvas.text(
        WIDTH / 2, (inner_y + inner_top) / 2, "the model's code", fontweight="bold", color=ACCENT
    )
    return canvas.figure
