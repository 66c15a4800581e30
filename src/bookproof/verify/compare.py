"""Comparing printed output with the expected text of a block.

Exact after two normalisations (trailing spaces on each line, trailing blank
lines). In `output` blocks a line holding only `...` matches any run of lines
and `...` inside a line matches any text on that line. Nothing else is loosened.
"""

from __future__ import annotations

import re

__all__ = ["WILDCARD", "has_wildcards", "matches", "normalise", "unified_diff"]

WILDCARD = "..."
# A diff longer than this is cut: its start locates the difference.
_DIFF_LINES = 300
# A diff line longer than this is cut: one printed megabyte is not a diff.
_DIFF_LINE_CHARS = 400
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def normalise(text: str) -> list[str]:
    """Lines with trailing spaces and tabs removed, and trailing blank lines dropped."""
    lines = [line.rstrip(" \t") for line in _LINE_BREAK.split(text)]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def has_wildcards(expected: str) -> bool:
    return any(WILDCARD in line for line in normalise(expected))


def _line_matches(pattern: str, line: str) -> bool:
    """Glob match where `...` is the only wildcard; leftmost placement of each middle
    piece is optimal, so this is linear-ish and cannot backtrack catastrophically."""
    if WILDCARD not in pattern:
        return pattern == line
    pieces = pattern.split(WILDCARD)
    first, last = pieces[0], pieces[-1]
    if len(first) + len(last) > len(line):
        return False
    if not line.startswith(first) or not line.endswith(last):
        return False
    position = len(first)
    limit = len(line) - len(last)
    for piece in pieces[1:-1]:
        found = line.find(piece, position, limit)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def matches(expected: str, actual: str, *, wildcards: bool = True) -> bool:
    """Whether `actual` output satisfies the `expected` block text."""
    pattern = normalise(expected)
    lines = normalise(actual)
    if not wildcards or not any(WILDCARD in line for line in pattern):
        return pattern == lines
    # The actual output's trailing blank lines were dropped by normalising; a
    # pattern line that matches a blank line (before a final `...`) may still
    # stand for one of them, so they are put back for the match to use.
    end = len(lines)
    lines = lines + [""] * sum(
        1 for piece in pattern if piece != WILDCARD and _line_matches(piece, "")
    )
    # reachable[j]: the pattern lines consumed so far can match exactly lines[:j].
    reachable = [False] * (len(lines) + 1)
    reachable[0] = True
    for piece in pattern:
        if piece == WILDCARD:
            # A run of any length, zero included: every position at or after the
            # first reachable one becomes reachable.
            seen = False
            for j in range(len(lines) + 1):
                seen = seen or reachable[j]
                reachable[j] = seen
        else:
            following = [False] * (len(lines) + 1)
            for j in range(len(lines)):
                if reachable[j] and _line_matches(piece, lines[j]):
                    following[j + 1] = True
            reachable = following
        if not any(reachable):
            return False
    return any(reachable[end:])


def unified_diff(expected: str, actual: str, *, label: str) -> str:
    """A unified diff of the normalised texts, expected first, for a failure message."""
    import difflib  # only a failing run pays for it

    diff = difflib.unified_diff(
        normalise(expected),
        normalise(actual),
        fromfile=f"expected ({label})",
        tofile="actual",
        lineterm="",
    )
    lines = [
        line
        if len(line) <= _DIFF_LINE_CHARS
        else f"{line[:_DIFF_LINE_CHARS]}... "
        f"({len(line) - _DIFF_LINE_CHARS:,} more character(s) not shown)"
        for line in diff
    ]
    if len(lines) > _DIFF_LINES:
        lines = [*lines[:_DIFF_LINES], f"... ({len(lines) - _DIFF_LINES:,} more diff lines)"]
    return "\n".join(lines)
