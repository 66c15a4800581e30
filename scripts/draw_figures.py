"""Redraw the book's figures: `uv run python scripts/draw_figures.py [NAME ...]`.

A thin door into `bookproof.figures`; `--help` lists every option. With no
names, every figure in book/textbook/figures/ is drawn; `--check` writes
nothing and exits 1 when a committed figure differs from its drawing.
"""

import sys
from pathlib import Path

# This checkout's own tooling, even when run by an interpreter that has not
# installed the project.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bookproof.figures.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
