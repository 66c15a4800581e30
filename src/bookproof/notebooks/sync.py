"""Regenerate (or check) every exercise book's notebooks from their unit plans.

Convention, the same for every book: in `exercises/bookNN/`, each
`unit_*.md` plan is the source of `unit_*.ipynb` beside it. A notebook with
no plan is reported too: it could only have been edited by hand.

`sync_notebooks.py` writes what changed; `--check` writes nothing and exits 1
naming each stale, missing or orphaned notebook (for CI and for a pre-commit
habit).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bookproof.layout import REPO_ROOT, BookLayout
from bookproof.notebooks.build import notebook_json

__all__ = ["Pending", "main", "pending", "plans"]


@dataclass(frozen=True)
class Pending:
    """A notebook whose text on disk differs from what its plan generates."""

    notebook: Path
    reason: str  # "stale" | "missing" | "orphaned"
    text: str | None  # what to write; None for an orphan (nothing generates it)


def plans(root: Path) -> list[Path]:
    """Every unit plan of every exercise book, in a stable order (the layout says where)."""
    return BookLayout(root).unit_plans()


def pending(root: Path) -> list[Pending]:
    found: list[Pending] = []
    expected: set[Path] = set()
    for plan in plans(root):
        notebook = plan.with_suffix(".ipynb")
        expected.add(notebook)
        text = notebook_json(plan.read_text(encoding="utf-8"), source_name=plan.name)
        if not notebook.exists():
            found.append(Pending(notebook, "missing", text))
        elif notebook.read_text(encoding="utf-8") != text:
            found.append(Pending(notebook, "stale", text))
    for notebook in BookLayout(root).notebooks():
        if notebook not in expected:
            found.append(Pending(notebook, "orphaned", None))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sync_notebooks", description="Regenerate exercise notebooks from their unit plans."
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    parser.add_argument(
        "--root",
        type=Path,
        default=REPO_ROOT,
        help="repository root (default: this checkout, wherever it is run from)",
    )
    args = parser.parse_args(argv)
    root: Path = args.root
    if not BookLayout(root).exercises.is_dir():
        print(f"sync_notebooks: no exercises/ folder under {root}", file=sys.stderr)
        return 2
    todo = pending(root)
    for item in todo:
        shown = item.notebook.relative_to(root)
        if args.check or item.text is None:
            hint = "its plan is gone" if item.text is None else "run scripts/sync_notebooks.py"
            print(f"{item.reason}: {shown} ({hint})")
        else:
            item.notebook.write_text(item.text, encoding="utf-8")
            print(f"wrote {shown}")
    if args.check:
        return 1 if todo else 0
    return 1 if any(item.text is None for item in todo) else 0


if __name__ == "__main__":
    raise SystemExit(main())
