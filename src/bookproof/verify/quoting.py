"""Quoting long text in a failure: enough to recognise it, never a flood.

A listing may print a megabyte on one line, or a million short lines; a
report quotes a bounded start of it and says how much it left out, so the
terminal, the JSON and the JUnit report stay readable and small.
"""

from __future__ import annotations

__all__ = ["MAX_QUOTED_CHARS", "MAX_QUOTED_LINES", "bounded", "quoted"]

MAX_QUOTED_LINES = 40
MAX_QUOTED_CHARS = 4_000
# One very long line is cut here, so that the lines after it still show.
_MAX_LINE_CHARS = 400


def _size(lines: int, chars: int) -> str:
    return f"{lines:,} more line(s), {chars:,} character(s), not shown"


def quoted(text: str, *, max_lines: int = MAX_QUOTED_LINES) -> str:
    """`text` as indented `  | ` lines, at most `max_lines` of them and about
    MAX_QUOTED_CHARS characters, then a line saying how much was left out."""
    lines = text.rstrip("\n").split("\n")
    shown: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        if index == max_lines or used >= MAX_QUOTED_CHARS:
            rest = lines[index:]
            shown.append(f"  ... ({_size(len(rest), sum(len(x) + 1 for x in rest))})")
            break
        if len(line) > _MAX_LINE_CHARS:
            cut = len(line) - _MAX_LINE_CHARS
            line = f"{line[:_MAX_LINE_CHARS]}... ({cut:,} more character(s) not shown)"
        shown.append(f"  | {line}")
        used += len(line)
    return "\n".join(shown)


def bounded(text: str, *, limit: int = MAX_QUOTED_CHARS) -> str:
    """`text` cut at about `limit` characters, ending with how much was left out."""
    if len(text) <= limit:
        return text
    rest = text[limit:]
    return f"{text[:limit]}\n... ({_size(rest.count(chr(10)) + 1, len(rest))})"
