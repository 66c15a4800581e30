"""Turn one unit plan (Markdown) into its notebook, deterministically.

The plan is the source of truth. Parsed with a CommonMark parser, it becomes:

- every run of prose, headings, tables and non-Python fences -> one markdown
  cell, its text sliced from the plan byte for byte;
- a fenced block whose info string is `python` -> a code cell (setup,
  demonstrations and checks that print what the learner's code does);
- a fenced block whose info string is `python exercise` -> an exercise cell:
  tagged `exercise` in its metadata, opening with the `# YOUR CODE HERE`
  marker (added if the plan left it out), never run by the tests;
- a fenced block whose info string is `python new-file=NAME` -> a code cell
  that writes the block's text to the file NAME beside the notebook the
  first time it runs, and leaves the file alone every time after: a learner
  who runs it again keeps their own work (the way to start over is to delete
  the file). The tests run it, twice.

Cell ids are a hash of the cell's position and content, and the JSON is
written with sorted keys, so regenerating an unchanged plan is byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import nbformat

__all__ = [
    "EXERCISE_MARKER",
    "EXERCISE_TAG",
    "NEW_FILE",
    "Cell",
    "new_file_cell",
    "notebook_json",
    "plan_cells",
]

EXERCISE_MARKER = "# YOUR CODE HERE"
EXERCISE_TAG = "exercise"
NEW_FILE = "new-file="
_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")


@dataclass(frozen=True)
class Cell:
    kind: str  # "markdown" | "code" | "exercise"
    source: str


def plan_cells(plan: str) -> list[Cell]:
    """Split a plan into cells, in order; empty prose between two code blocks makes no cell."""
    from markdown_it import MarkdownIt

    lines = plan.splitlines(keepends=True)
    tokens = MarkdownIt("commonmark").parse(plan)
    cells: list[Cell] = []
    prose_start = 0
    for token in tokens:
        if token.type != "fence" or token.map is None or token.level != 0:
            continue
        info = token.info.split()
        if not info or info[0] != "python":
            continue
        flags = info[1:]
        start, end = token.map
        new_file = len(flags) == 1 and flags[0].startswith(NEW_FILE)
        if flags not in ([], [EXERCISE_TAG]) and not new_file:
            raise ValueError(f"line {start + 1}: unknown python block flags {flags}")
        _add_prose(cells, "".join(lines[prose_start:start]))
        source = token.content.rstrip("\n")
        if new_file:
            name = flags[0].removeprefix(NEW_FILE)
            if not _FILE_NAME.match(name):
                raise ValueError(f"line {start + 1}: {name!r} is not a plain file name")
            cells.append(Cell("code", new_file_cell(name, token.content)))
        elif flags == [EXERCISE_TAG]:
            if EXERCISE_MARKER not in source:
                source = f"{EXERCISE_MARKER}\n{source}" if source else EXERCISE_MARKER
            cells.append(Cell("exercise", source))
        else:
            cells.append(Cell("code", source))
        prose_start = end
    _add_prose(cells, "".join(lines[prose_start:]))
    return cells


def new_file_cell(name: str, text: str) -> str:
    """The code of a cell that creates `name` holding `text` once, and never overwrites it."""
    # Mode "x" creates the file or fails if it exists, in one step; and the
    # cell imports nothing, so it never shadows a name the notebook's own
    # cells imported.
    return "\n".join(
        [
            f"# Creates {name} beside this notebook the first time it runs. After that",
            "# it leaves the file alone, so your own work in it is safe; delete the",
            "# file to start again from this template.",
            f"TEMPLATE = {_literal(text)}",
            "try:",
            f'    with open("{name}", "x", encoding="utf-8") as new_file:',
            "        new_file.write(TEMPLATE)",
            f'    print("wrote {name}: open it and go on there.")',
            "except FileExistsError:",
            f'    print("{name} exists already: this cell leaves it as it is.")',
        ]
    )


def _literal(text: str) -> str:
    # A triple-quoted literal a learner can read, whenever the text allows one.
    if "\\" not in text and '"""' not in text and not text.endswith('"'):
        return '"""\\\n' + text + '"""'
    return repr(text)


def _add_prose(cells: list[Cell], text: str) -> None:
    text = text.strip("\n")
    if text.strip():
        cells.append(Cell("markdown", text))


def _cell_id(index: int, cell: Cell) -> str:
    digest = hashlib.sha256(f"{index}\0{cell.kind}\0{cell.source}".encode()).hexdigest()
    return f"{cell.kind[:2]}-{digest[:16]}"


def _to_nbformat(index: int, cell: Cell) -> Any:
    cell_id = _cell_id(index, cell)
    if cell.kind == "markdown":
        return nbformat.v4.new_markdown_cell(cell.source, id=cell_id)
    metadata: dict[str, Any] = {}
    if cell.kind == "exercise":
        # Jupyter shows tags; the tests skip these cells by the same tag.
        metadata = {"tags": [EXERCISE_TAG]}
    return nbformat.v4.new_code_cell(cell.source, id=cell_id, metadata=metadata)


def notebook_json(plan: str, *, source_name: str) -> str:
    """The notebook for a plan, as the exact text written to disk."""
    notebook = nbformat.v4.new_notebook()
    notebook.nbformat_minor = 5
    notebook.cells = [_to_nbformat(i, cell) for i, cell in enumerate(plan_cells(plan))]
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "bookproof": {
            "source": source_name,
            "note": "Generated from the plan; edit the plan, then run scripts/sync_notebooks.py.",
        },
    }
    nbformat.validate(notebook)
    return json.dumps(notebook, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
