"""`scripts/draw_figures.py`: redraw the book's figures in place, or check them."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from bookproof.figures.render import render_svg

__all__ = ["FIGURES", "main", "write_atomically"]

FIGURES = Path(__file__).resolve().parents[3] / "book" / "textbook" / "figures"


def write_atomically(path: Path, data: bytes) -> None:
    """Write beside `path`, then rename over it: an interruption leaves the old figure whole."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        # mkstemp makes the file private; a figure is as readable as any file the user makes.
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _scripts(names: list[str], folder: Path) -> list[Path]:
    everything = sorted(folder.glob("*.py"))
    if not names:
        return everything
    chosen = []
    for name in names:
        stem = Path(name).stem
        script = folder / f"{stem}.py"
        if script not in everything:
            raise SystemExit(f"draw_figures: no figure script {script}")
        chosen.append(script)
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="draw_figures.py",
        description="Redraw the book's figures (book/textbook/figures/NAME.svg from NAME.py).",
    )
    parser.add_argument("names", nargs="*", help="figures to draw (default: all)")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a figure is stale"
    )
    parser.add_argument("--folder", type=Path, default=FIGURES, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    stale = 0
    for script in _scripts(options.names, options.folder):
        figure = script.with_suffix(".svg")
        drawn = render_svg(script)
        current = figure.read_bytes() if figure.is_file() else None
        if current == drawn:
            print(f"{figure.name}: up to date")
            continue
        stale += 1
        if options.check:
            print(f"{figure.name}: differs from what {script.name} draws", file=sys.stderr)
        else:
            write_atomically(figure, drawn)
            print(f"{figure.name}: {'redrawn' if current is not None else 'drawn'}")
    return 1 if options.check and stale else 0
