"""Support the book does not print: outside input read safely (regular files, bounded depth).

A trace may be mailed from anywhere and a suite may be downloaded, so the
commands that read them hold three lines:

- `read_regular_text` opens without waiting and reads only a regular file: a
  FIFO named as a trace would otherwise block the command until someone
  writes to it, and a device could be anything.
- `check_depth` refuses data nested deeper than `MAX_DEPTH`. Python's JSON
  and TOML readers recurse once per level and fail with a RecursionError
  long before memory runs out; whatever walks a deep value next (a
  comparison, a JSON dump) would fail the same way. No file these commands
  read needs more than a few levels.
- `printable` writes every character a terminal could act on (ESC and the
  other C0 and C1 controls, bidirectional and other invisible format
  characters, line separators) as an escape, so text from a trace cannot
  clear a screen, recolour it, or reorder a line an operator reads.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "InputError",
    "check_depth",
    "depth_problem",
    "printable",
    "read_regular_text",
]

# The deepest a trace event or a suite goes is a tool's JSON schema inside an
# event (about ten levels). 64 leaves room for any honest file, and keeps every
# recursive reader and walker far from Python's recursion limit of 1000.
MAX_DEPTH = 64


class InputError(Exception):
    """A file that cannot be read as input: names the file, the line when there is one, and why."""

    def __init__(self, source: str, line: int, reason: str) -> None:
        super().__init__(f"{source}, line {line}: {reason}" if line else f"{source}: {reason}")
        self.source = source
        self.line = line
        self.reason = reason


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def read_regular_text(path: Path) -> str:
    """The UTF-8 text of the regular file at `path`, or an InputError saying why not.

    The file is opened non-blocking and checked on the open descriptor, so a
    FIFO is refused at once, and a name swapped for a FIFO between a check and
    the open is refused just the same. Nothing is escaped here: whoever prints
    the message passes it through `printable`.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise InputError(str(path), 0, "no such file") from None
    except OSError as error:
        raise InputError(str(path), 0, f"cannot read it: {error.strerror}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(str(path), 0, f"{_kind(mode)}, not a regular file")
        # Non-blocking matters only for opening; a regular file reads whole.
        os.set_blocking(descriptor, True)
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = file.read()
    except OSError as error:
        raise InputError(str(path), 0, f"cannot read it: {error.strerror}") from None
    finally:
        os.close(descriptor)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InputError(str(path), line, "not UTF-8 text") from None


def depth_problem(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """Why `value` (parsed JSON or TOML) is too deep to use, or None.

    Walks with its own stack, not by recursion, so that the check itself
    cannot fail on the input it checks.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return f"nested deeper than {limit} levels"
        stack.extend((child, depth + 1) for child in children)
    return None


def check_depth(value: Any, source: str, line: int = 0, limit: int = MAX_DEPTH) -> None:
    """Raise InputError naming `source` (and `line`) when `value` is nested deeper than `limit`."""
    problem = depth_problem(value, limit)
    if problem is not None:
        raise InputError(source, line, problem)


def printable(text: str) -> str:
    """`text` with every character a terminal could act on written as an escape.

    Printable characters, the space included, stay as they are, backslashes
    too: this is for a human's eyes, and a reader must still recognise JSON.
    """
    if text.isprintable():
        return text
    out: list[str] = []
    for character in text:
        code = ord(character)
        if character.isprintable():
            out.append(character)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)
