"""Figure 5.1: the store's four tables, their keys, and the partial index.

Drawn from the schema SQLite itself reports after running migration 1 as the
store runs it (`sovereign_agent.store.MIGRATIONS[0]`): the columns, their
types, the primary keys, the foreign keys and the one partial unique index,
read back with PRAGMA statements, never typed in by hand.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from bookproof.figures.diagrams import ACCENT, INK, MUTED, WARN, Canvas
from sovereign_agent.store import MIGRATIONS


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    not_null: bool
    primary_key: bool
    references: str | None  # "table.column"


@dataclass(frozen=True)
class PartialIndex:
    name: str
    table: str
    columns: tuple[str, ...]
    where: str


def read_schema() -> tuple[dict[str, list[Column]], list[PartialIndex]]:
    """Run migration 1 in a fresh database and ask SQLite what it made."""
    connection = sqlite3.connect(":memory:")
    for statement in MIGRATIONS[0]:
        connection.execute(statement)
    tables: dict[str, list[Column]] = {}
    names = [
        row[0]
        for row in connection.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY rowid"
        )
    ]
    for table in names:
        keys = {
            row[3]: f"{row[2]}.{row[4]}"
            for row in connection.execute(f"PRAGMA foreign_key_list({table})")
        }
        tables[table] = [
            Column(row[1], row[2], bool(row[3]), bool(row[5]), keys.get(row[1]))
            for row in connection.execute(f"PRAGMA table_info({table})")
        ]
    indexes = []
    for table in names:
        for row in connection.execute(f"PRAGMA index_list({table})"):
            if not row[4]:  # not partial
                continue
            name = row[1]
            columns = tuple(info[2] for info in connection.execute(f"PRAGMA index_info({name})"))
            sql = connection.execute(
                "SELECT sql FROM sqlite_schema WHERE name = ?", (name,)
            ).fetchone()[0]
            indexes.append(PartialIndex(name, table, columns, sql.split(" WHERE ", 1)[1]))
    connection.close()
    return tables, indexes


def _table(
    canvas: Canvas, left: float, top: float, table: str, columns: list[Column]
) -> dict[str, float]:
    """One table as a box; the y of each column's row, by name."""
    row, width = ROW, WIDTH
    box_height = row * (len(columns) + 1)
    canvas.box(left, top - box_height, width, box_height)
    canvas.box(left, top - row, width, row, fill="#dbe7f0")
    canvas.text(left + width / 2, top - row / 2, table, fontweight="bold")
    rows: dict[str, float] = {}
    for index, column in enumerate(columns):
        y = top - row * (index + 1.5)
        marks = ("PK " if column.primary_key else "") + ("FK " if column.references else "")
        canvas.text(
            left + 0.08,
            y,
            f"{marks}{column.name}",
            ha="left",
            color=ACCENT if column.primary_key else INK,
            fontweight="bold" if column.primary_key else "normal",
        )
        kind = column.type + ("" if column.not_null or column.primary_key else " NULL")
        canvas.text(left + width - 0.08, y, kind, ha="right", color=MUTED, fontsize=7.5)
        rows[column.name] = y
    return rows


ROW = 0.22
WIDTH = 2.1


def draw() -> Any:
    """The referenced table on the left, the tables that refer to it stacked on the right."""
    tables, indexes = read_schema()
    referenced = {
        column.references.split(".")[0]
        for columns in tables.values()
        for column in columns
        if column.references
    }
    left_tables = [name for name in tables if name in referenced]
    right_tables = [name for name in tables if name not in referenced]
    gap = 0.28
    right_rows = sum(len(tables[name]) + 1 for name in right_tables)
    height = 0.3 + ROW * right_rows + gap * (len(right_tables) - 1) + 0.3 + 0.3 * len(indexes)
    canvas = Canvas(0.3 + WIDTH + 1.6 + WIDTH + 2.3, height)
    top = height - 0.3
    where: dict[str, tuple[float, float]] = {}
    x_left, x_right = 0.3, 0.3 + WIDTH + 1.6
    y = top
    for name in left_tables:
        for column, row_y in _table(canvas, x_left, y, name, tables[name]).items():
            where[f"{name}.{column}"] = (x_left, row_y)
        y -= ROW * (len(tables[name]) + 1) + gap
    y = top
    for name in right_tables:
        for column, row_y in _table(canvas, x_right, y, name, tables[name]).items():
            where[f"{name}.{column}"] = (x_right, row_y)
        y -= ROW * (len(tables[name]) + 1) + gap
    for table, columns in tables.items():
        for column in columns:
            if column.references is None:
                continue
            start = where[f"{table}.{column.name}"]
            target = where[column.references]
            canvas.arrow(start, (target[0] + WIDTH, target[1]), color=MUTED)
    note_y = 0.3
    for index in indexes:
        x, row_y = where[f"{index.table}.{index.columns[0]}"]
        canvas.line([x + WIDTH, x + WIDTH + 0.25], [row_y, row_y], color=WARN, linestyle="--")
        canvas.text(
            x + WIDTH + 0.3,
            row_y,
            "partial unique index\n"
            f"{index.name}\n({', '.join(index.columns)}) WHERE\n{index.where}",
            ha="left",
            color=WARN,
            fontsize=7.5,
        )
    canvas.text(
        0.3,
        note_y,
        "PK primary key    FK foreign key, its arrow points at the key it names",
        ha="left",
        color=MUTED,
        fontsize=7.5,
    )
    return canvas.figure
