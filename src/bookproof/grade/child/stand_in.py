"""The module a learner's tests import while the grader runs them: names that only pass values.

When the grader runs a learner's test file, the module it tests (say
`shop_tools`) is replaced by a two-line file that calls `install`. Each name
the book lets tests use becomes a function here that sends its arguments, as
plain JSON, over a socket to the implementation under test, which runs in
another process (the reference solution, or a faulty version of it), and
returns the plain JSON it answers. An object that is not plain data (a
dispatcher) stays over there; the test holds a `Remote`, whose declared
methods and fields are reached the same way.

So a test can observe behaviour and nothing else: not the source, not the
bytecode, not a type's name or a function's attributes. Exceptions come back
as the builtin class they belong to, with a fixed message.

When the tests make folders for the code under test to read, that code,
in its own sandbox, cannot see them: before each request the stand-in
describes the tests' temporary folder (`scratch`), plain files, folders,
links and FIFOs, never following a link or opening a FIFO, and sends the
description whenever it changed; the other side makes it again at the same
path (`bookproof.grade.files` reads the description).
"""

from __future__ import annotations

import base64
import builtins
import errno
import os
import socket
import stat
from collections.abc import Mapping
from typing import Any

from .encoding import FrameError, decode_json, make_encoder

__all__ = ["Remote", "connect", "install", "pack"]

_encode = make_encoder()
_channel: list[socket.socket] = []
# The tests' temporary folder, and its description as last sent.
_scratch: list[str] = []
_sent: list[Any] = [None]

# What a copy of the tests' folders may hold: far more than a test needs,
# well inside what one request may carry.
PACK_ENTRIES = 2_000
PACK_BYTES = 2 * 1024 * 1024


def connect(fd: int, scratch: str | None = None) -> None:
    """Called by the test-run boot before pytest starts: the socket to the implementation.

    `scratch`: the tests' temporary folder, copied to the code under test.
    """
    _channel.append(socket.socket(fileno=fd))
    if scratch is not None:
        _scratch.append(scratch)


def pack(root: str) -> dict[str, Any]:
    """The folder `root` as `files.materialise` reads it; OSError when it cannot be copied."""
    budget = {"entries": 0, "bytes": 0}

    def folder(path: str) -> dict[str, Any]:
        entries: dict[str, Any] = {}
        with os.scandir(path) as listing:
            for entry in listing:
                budget["entries"] += 1
                if budget["entries"] > PACK_ENTRIES:
                    raise OSError(errno.EFBIG, f"more than {PACK_ENTRIES} files and folders")
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    entries[entry.name] = {"folder": folder(entry.path)}
                elif stat.S_ISLNK(mode):
                    entries[entry.name] = {"link": os.readlink(entry.path)}
                elif stat.S_ISFIFO(mode):
                    entries[entry.name] = {"fifo": True}
                elif stat.S_ISREG(mode):
                    entries[entry.name] = {"file": read(entry.path)}
                # A socket is no file to read: the code under test never sees one.
        return entries

    def read(path: str) -> str:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        descriptor = os.open(path, flags)
        try:
            data = b""
            while chunk := os.read(descriptor, PACK_BYTES + 1 - len(data)):
                data += chunk
                if len(data) > PACK_BYTES:
                    break
        finally:
            os.close(descriptor)
        budget["bytes"] += len(data)
        if budget["bytes"] > PACK_BYTES:
            raise OSError(errno.EFBIG, f"more than {PACK_BYTES} bytes in the tests' folders")
        return base64.b64encode(data).decode("ascii")

    return {"folder": folder(root)}


class Remote:
    """An object living with the code under test; only its declared parts can be reached."""

    __slots__ = ("_fields", "_handle", "_kind", "_methods")

    def __init__(self, handle: int, kind: str, methods: Mapping[str, str], fields: list[str]):
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_methods", methods)
        object.__setattr__(self, "_fields", fields)

    def __getattr__(self, name: str) -> Any:
        if name in self._methods:

            def remote_method(*args: Any, **kwargs: Any) -> Any:
                return _request({"on": self._handle, "method": name}, args, kwargs)

            remote_method.__name__ = name
            return remote_method
        if name in self._fields:
            return _request({"on": self._handle, "field": name}, (), {})
        raise AttributeError(f"{self._kind} offers no {name!r} to tests here")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self._kind} cannot be changed from a test")

    def __repr__(self) -> str:
        return f"<{self._kind} from the code under test>"


_surface: dict[str, Any] = {}


def _plain(value: Any) -> Any:
    if isinstance(value, Remote):
        return {"$handle": value._handle}
    if isinstance(value, os.PathLike):
        # A path crosses as its text (pytest's tmp_path / "lucy.db", say).
        return os.fspath(value)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("the code under test takes dicts with str keys only")
        return {key: _plain(item) for key, item in value.items()}
    return value


def _receive(sock: socket.socket) -> bytes:
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the code under test stopped answering")
        data += chunk
    return bytes(data)


def _request(head: dict[str, Any], args: Any, kwargs: Mapping[str, Any]) -> Any:
    request = {**head, "args": _plain(list(args)), "kwargs": _plain(dict(kwargs))}
    if _scratch and "constants" not in head:
        files = pack(_scratch[0])
        if files != _sent[0]:
            request["files"] = files
            _sent[0] = files
    text = _encode(request)
    if text is None:
        raise TypeError("the code under test takes plain values only (dict, list, str, int ...)")
    (sock,) = _channel
    sock.sendall((text + "\n").encode("ascii"))
    try:
        reply = decode_json(_receive(sock))
    except FrameError:
        raise ConnectionError("the code under test sent an unreadable answer") from None
    status = reply.get("status")
    if status == "returned":
        return reply["value"]
    if status == "object":
        kind = reply["kind"]
        spec = _surface["objects"][kind]
        return Remote(reply["handle"], kind, spec["methods"], spec["fields"])
    if status == "raised":
        raise _exception(reply["raised"])
    raise TypeError("the code under test returned something that is not plain data")


def _exception(names: list[str]) -> BaseException:
    # The most specific builtin class, with a fixed message: never the text.
    for name in names:
        cls = getattr(builtins, name, None)
        if isinstance(cls, type) and issubclass(cls, Exception):
            return cls("raised by the code under test")
    return Exception("raised by the code under test")


def _remote_function(name: str) -> Any:
    def remote_function(*args: Any, **kwargs: Any) -> Any:
        return _request({"call": name}, args, kwargs)

    remote_function.__name__ = name
    return remote_function


def install(namespace: dict[str, Any], surface: dict[str, Any]) -> None:
    """Fill the stand-in module's namespace: the surface's functions, then its constants."""
    _surface.update(surface)
    for name in surface["functions"]:
        namespace[name] = _remote_function(name)
    constants = _request({"constants": True}, (), {})
    for name in surface["constants"]:
        namespace[name] = constants[name]
