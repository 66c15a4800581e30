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
"""

from __future__ import annotations

import builtins
import os
import socket
from collections.abc import Mapping
from typing import Any

from .encoding import FrameError, decode_json, make_encoder

__all__ = ["Remote", "connect", "install"]

_encode = make_encoder()
_channel: list[socket.socket] = []


def connect(fd: int) -> None:
    """Called by the test-run boot before pytest starts: the socket to the implementation."""
    _channel.append(socket.socket(fileno=fd))


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
