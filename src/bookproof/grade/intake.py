"""Taking in a submission folder: plain files only, copied before anything of it runs.

A folder is read without following a single link and without opening
anything that is not a regular file: a FIFO would block the grader, a device
could be anything, a link could lead to `solutions/` or a classmate. Any of
those, a hard-linked file, or a name that is not valid UTF-8 refuses the
whole folder with one clear sentence (a zero line in the report); the rest
of the class is graded as usual.

`printable` is how any name the grader did not write reaches a terminal or a
report: control characters, invisible format characters and undecodable
bytes become escapes, so a folder called "\\x1b[2J" cannot clear an
instructor's screen or hide a line.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

__all__ = ["FILE_LIMIT", "SIZE_LIMIT", "copy_submission", "printable"]

FILE_LIMIT = 2_000
SIZE_LIMIT = 20 * 1024 * 1024
# Tool caches a learner's folder often holds; never read, never copied.
_SKIPPED = frozenset({"__pycache__", ".git", ".ipynb_checkpoints", ".pytest_cache", ".venv"})


def printable(name: str) -> str:
    """`name` with every character a terminal could act on written as an escape."""
    out: list[str] = []
    for character in name:
        code = ord(character)
        if 0xDC80 <= code <= 0xDCFF:
            # A byte that was not UTF-8, kept by the surrogateescape decoding.
            out.append(f"\\x{code - 0xDC00:02x}")
        elif character == "\\":
            out.append("\\\\")
        elif character.isprintable():
            out.append(character)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def copy_submission(folder: Path, target: Path, required: Sequence[str]) -> str | None:
    """Copy `folder`'s plain files into the new folder `target`; or say, for the learner, why not.

    Returns None when the copy holds every `required` file; otherwise one
    sentence naming the problem (and nothing of the folder's content).
    """
    try:
        info = os.lstat(folder)
    except OSError:
        return "The folder could not be read."
    if stat.S_ISLNK(info.st_mode):
        return "The folder is a link, not a folder: hand in a folder of plain files."
    if not stat.S_ISDIR(info.st_mode):
        return f"This is {_kind(info.st_mode)}, not a folder: hand in a folder of plain files."
    counted = {"files": 0, "bytes": 0}
    problem = _copy_tree(folder, target, counted)
    if problem is not None:
        return problem
    for name in required:
        if not (target / name).is_file():
            return f"No {name} in this folder: hand in a file named exactly {name}."
    return None


def _copy_tree(source: Path, target: Path, counted: dict[str, int]) -> str | None:
    target.mkdir(mode=0o755)
    try:
        entries = sorted(os.scandir(source), key=lambda entry: entry.name)
    except OSError:
        return "A folder inside could not be read."
    for entry in entries:
        name = entry.name
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            return "A file name is not valid UTF-8: rename it with plain characters."
        if name in _SKIPPED:
            continue
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            problem = _copy_tree(Path(entry.path), target / name, counted)
            if problem is not None:
                return problem
            continue
        if not stat.S_ISREG(mode):
            return f"{printable(name)} is {_kind(mode)}: hand in plain files only."
        problem = _copy_file(Path(entry.path), target / name, counted)
        if problem is not None:
            return problem
    return None


def _copy_file(source: Path, target: Path, counted: dict[str, int]) -> str | None:
    # Opened without following a link and without blocking: if the file was
    # swapped for something else since it was listed, fstat says so.
    try:
        descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return f"{printable(source.name)} could not be read as a plain file."
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            return f"{printable(source.name)} is {_kind(info.st_mode)}: hand in plain files only."
        if info.st_nlink > 1:
            return f"{printable(source.name)} is a hard link: hand in a plain copy of the file."
        counted["files"] += 1
        counted["bytes"] += info.st_size
        if counted["files"] > FILE_LIMIT or counted["bytes"] > SIZE_LIMIT:
            return (
                f"The folder is too large to grade (over {FILE_LIMIT:,} files "
                f"or {SIZE_LIMIT // (1024 * 1024)} MB)."
            )
        data = handle.read(SIZE_LIMIT + 1)
    if len(data) > SIZE_LIMIT:
        return "The folder is too large to grade."
    with open(target, "xb") as out:
        out.write(data)
    os.chmod(target, 0o644)
    return None
