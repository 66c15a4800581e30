"""Folders made from a description: the grader's own, for a check, and a learner's tests', copied.

Some chapters teach code that reads folders (skills, documents), and the
skill being graded is what that code refuses: links that lead out, FIFOs,
hidden or oversized files, names that are not text. Such a folder must be
made by the grader, never by the submission's code: code that builds the
folder from its description knows the answer without reading the disk.

So a check describes its folder as a `Tree` and yields `questions.folder(tree)`
before its first question. The runner makes every check's folder on the
grader's side, from data the check chose, before the submission's sandbox
starts, and shows the folders there read-only; the check receives only the
path, which is all it passes on. The description never enters the sandbox.

A tree maps each name to what it holds: a `str` (a file of that text, UTF-8)
or `bytes` (a file of those bytes), a mapping (a folder), a `Link`, a `Fifo`,
or a `Sparse` file (a size limit's test that takes no room on disk). A name
that is not UTF-8 is written as Python reads one from the disk, each such
byte as a `surrogateescape` character: `"\udcff.md"` is the byte 0xff, then
`.md`::

    {
        "skills": {"price-check": {"SKILL.md": text, "notes": Link("../../secret.txt")}},
        "secret.txt": "secret-token-...",
        "inbox": Fifo(),
    }

The same description travels as JSON (`describe`), which is also how a
learner's tests, running in one sandbox, have their temporary folder copied
into the sandbox of the code they test (`bookproof.grade.learner_tests`).
`materialise` makes a folder from that JSON and trusts none of it: every
name is one plain path component, nothing is ever followed, and the sizes
are bounded.

The JSON form: an entry is an object with exactly one key: `{"folder":
{name: entry, ...}}`, `{"file": "<base64>"}`, `{"sparse": size}`, `{"link":
target}` or `{"fifo": true}`. Names are text, a byte that is not UTF-8 kept
as Python's `surrogateescape` writes it.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

__all__ = [
    "MAX_BYTES",
    "MAX_ENTRIES",
    "Entry",
    "Fifo",
    "FilesError",
    "Link",
    "Sparse",
    "Tree",
    "describe",
    "materialise",
]

# Bounds on one folder: a grader's folder is far smaller, and a learner's
# tests' folder has crossed a socket already bounded at a few megabytes.
MAX_ENTRIES = 5_000
MAX_DEPTH = 32
MAX_BYTES = 16 * 1024 * 1024
MAX_SPARSE = 1 << 31
MAX_NAME_BYTES = 255
MAX_LINK = 4_096


@dataclass(frozen=True)
class Link:
    """A symbolic link holding `target`, exactly as written (it need not lead anywhere).

    With `absolute=True`, `target` is a path inside the check's folder, and the
    link holds it as an absolute path, as the submission's sandbox sees it.
    """

    target: str
    absolute: bool = False


@dataclass(frozen=True)
class Fifo:
    """A named pipe: code that opens it to read waits for a writer that never comes."""


@dataclass(frozen=True)
class Sparse:
    """A regular file of `size` zero bytes, taking no room on disk: the test of a size limit."""

    size: int


Entry: TypeAlias = "str | bytes | Link | Fifo | Sparse | Mapping[str, Entry]"
Tree: TypeAlias = Mapping[str, Entry]


class FilesError(ValueError):
    """A description that is not a folder this module will make: which entry, and why."""


# --- the description as JSON ---------------------------------------------------------


def describe(tree: Tree, *, seen_at: str) -> dict[str, Any]:
    """`tree` as the JSON form `materialise` reads; `seen_at`: where the folder will be seen."""
    return {"folder": _describe_folder(tree, seen_at)}


def _describe_folder(tree: Tree, seen_at: str) -> dict[str, Any]:
    return {name: _describe_entry(entry, seen_at) for name, entry in tree.items()}


def _describe_entry(entry: Entry, seen_at: str) -> dict[str, Any]:
    if isinstance(entry, str):
        return {"file": base64.b64encode(entry.encode("utf-8")).decode("ascii")}
    if isinstance(entry, bytes):
        return {"file": base64.b64encode(entry).decode("ascii")}
    if isinstance(entry, Link):
        target = f"{seen_at}/{entry.target}" if entry.absolute else entry.target
        return {"link": target}
    if isinstance(entry, Fifo):
        return {"fifo": True}
    if isinstance(entry, Sparse):
        return {"sparse": entry.size}
    if isinstance(entry, Mapping):
        return {"folder": _describe_folder(entry, seen_at)}
    raise FilesError(f"not an entry of a folder: {type(entry).__name__}")


# --- making the folder -----------------------------------------------------------------


class _Budget:
    def __init__(self) -> None:
        self.entries = 0
        self.bytes = 0

    def spend(self, entries: int, size: int = 0) -> None:
        self.entries += entries
        self.bytes += size
        if self.entries > MAX_ENTRIES:
            raise FilesError(f"more than {MAX_ENTRIES} entries")
        if self.bytes > MAX_BYTES:
            raise FilesError(f"more than {MAX_BYTES} bytes of files")


def materialise(description: Any, at: Path) -> None:
    """Make the folder `at` (which must not exist) as `description` says, or raise FilesError.

    Every entry is created in a folder this function has just made and holds
    open, by name relative to it, refusing to replace anything: nothing in
    the description can lead a write elsewhere. Files are 0644, folders 0755.
    """
    entries = _folder_of(description, "the folder")
    budget = _Budget()
    os.mkdir(at, 0o755)
    descriptor = os.open(at, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(descriptor, 0o755)
        _fill(descriptor, entries, 1, budget)
    finally:
        os.close(descriptor)


def _folder_of(entry: Any, where: str) -> Mapping[str, Any]:
    if not (isinstance(entry, dict) and entry.keys() == {"folder"}):
        raise FilesError(f"{where} is not described as a folder")
    entries = entry["folder"]
    if not isinstance(entries, dict):
        raise FilesError(f"{where} holds no mapping of names")
    return entries


def _name(name: Any) -> bytes:
    if not isinstance(name, str):
        raise FilesError("a name is not text")
    try:
        raw = os.fsencode(name)
    except UnicodeError:
        raise FilesError("a name cannot be written as bytes") from None
    if raw in (b"", b".", b"..") or b"/" in raw or b"\0" in raw or len(raw) > MAX_NAME_BYTES:
        raise FilesError(f"{name!r} is not one plain name")
    return raw


def _fill(folder: int, entries: Mapping[str, Any], depth: int, budget: _Budget) -> None:
    if depth > MAX_DEPTH:
        raise FilesError(f"folders nested deeper than {MAX_DEPTH}")
    budget.spend(len(entries))
    for name, entry in entries.items():
        raw = _name(name)
        if not (isinstance(entry, dict) and len(entry) == 1):
            raise FilesError(f"{name!r} is not described by exactly one kind")
        ((kind, value),) = entry.items()
        if kind == "folder":
            inner = _folder_of(entry, repr(name))
            os.mkdir(raw, 0o755, dir_fd=folder)
            descriptor = os.open(
                raw, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder
            )
            try:
                os.fchmod(descriptor, 0o755)
                _fill(descriptor, inner, depth + 1, budget)
            finally:
                os.close(descriptor)
        elif kind == "file" and isinstance(value, str):
            try:
                data = base64.b64decode(value.encode("ascii"), validate=True)
            except (UnicodeError, binascii.Error):
                raise FilesError(f"{name!r} holds no base64 text") from None
            budget.spend(0, len(data))
            _write(folder, raw, data, 0)
        elif kind == "sparse" and type(value) is int and 0 <= value <= MAX_SPARSE:
            _write(folder, raw, b"", value)
        elif kind == "link" and isinstance(value, str) and 0 < len(value) <= MAX_LINK:
            if "\0" in value:
                raise FilesError(f"{name!r} links to a name holding NUL")
            try:
                target = os.fsencode(value)
            except UnicodeError:
                raise FilesError(f"{name!r} links to a name that is not bytes") from None
            os.symlink(target, raw, dir_fd=folder)
        elif kind == "fifo" and value is True:
            os.mkfifo(raw, 0o644, dir_fd=folder)
            os.chmod(raw, 0o644, dir_fd=folder)
        else:
            raise FilesError(f"{name!r} is not a folder, file, sparse file, link or FIFO")


def _write(folder: int, name: bytes, data: bytes, size: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(name, flags, 0o644, dir_fd=folder)
    try:
        os.fchmod(descriptor, 0o644)
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]
        if size:
            os.ftruncate(descriptor, size)
    finally:
        os.close(descriptor)
