"""Reading the files an author names (chapters, the manifest), with a one-line reason
for every way that can fail: a NUL in the path, a link loop, a directory, a pipe
that would block the verifier forever, a missing or unreadable file."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["UnreadableFile", "read_regular_file", "regular_file_problem", "shown"]


class UnreadableFile(Exception):
    """The path names no regular file that can be read; the message says why, on one line."""


def shown(path: Path | str) -> str:
    """A path on one line: quoted when it holds a NUL, a line break or another control
    character, as the author typed it otherwise."""
    text = str(path)
    return text if text.isprintable() else repr(text)


def _reason(error: OSError) -> str:
    if error.errno == errno.ENOENT:
        return "no such file"
    if error.errno == errno.ELOOP:
        return "a loop of symbolic links"
    if error.errno == errno.ENOTDIR:
        return "a part of the path is not a folder"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return error.strerror or type(error).__name__


def regular_file_problem(path: Path) -> str | None:
    """Why `path` is not a regular file that can be read, or None when it is one."""
    try:
        status = os.stat(path)
    except ValueError:  # the only ValueError os.stat raises: an embedded NUL
        return "the path holds a NUL character"
    except OSError as error:
        return _reason(error)
    if stat.S_ISDIR(status.st_mode):
        return "a folder, not a file"
    if not stat.S_ISREG(status.st_mode):
        return "not a regular file (a pipe, socket or device)"
    return None


def read_regular_file(path: Path) -> bytes:
    """The bytes of `path`, or UnreadableFile with the reason.

    Opened without blocking, and checked to be a regular file once open, so that
    a pipe put in its place meanwhile cannot hold the verifier.
    """
    problem = regular_file_problem(path)
    if problem is not None:
        raise UnreadableFile(problem)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise UnreadableFile(_reason(error)) from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise UnreadableFile("not a regular file (a pipe, socket or device)")
        try:
            return handle.read()
        except OSError as error:
            raise UnreadableFile(_reason(error)) from None
