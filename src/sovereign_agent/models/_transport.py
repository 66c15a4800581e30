"""Support the book does not print: one HTTP attempt that ends by a deadline, however slow a server.

A socket timeout bounds each wait for bytes, not the whole reply: a server
that sends one byte just before every timeout would hold a call for as long as
it likes. Here every read (status line, headers, body) and every write is given
only the time left until the attempt's deadline, and none starts after it.

Built on `urllib`'s opener so that proxies from the environment keep working,
with only the handlers a model call needs: no redirects (the key would travel
with them), no `file:` or `ftp:` URLs.
"""

from __future__ import annotations

import functools
import http.client
import io
import socket
import time
import urllib.request
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer, WriteableBuffer


def _time_left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed")
    return left


class _DeadlineReader(io.RawIOBase):
    """The socket's reading side, each read limited to the time left."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        # Through the socket's own file object, so that closing the socket
        # waits for this reader to be closed too, as `http.client` expects.
        self._raw = sock.makefile("rb", buffering=0)
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int | None:
        self._sock.settimeout(_time_left(self._deadline))
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """Stands in for the connection's socket: the three calls `http.client` makes on it."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def sendall(self, data: ReadableBuffer) -> None:
        self._sock.settimeout(_time_left(self._deadline))
        self._sock.sendall(data)

    def makefile(self, mode: str = "rb") -> io.BufferedReader:
        if mode != "rb":
            raise ValueError(f"only a binary reader is offered, not mode {mode!r}")
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))

    def close(self) -> None:
        self._sock.close()


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(
        self,
        host: str,
        /,
        *,
        deadline: float,
        port: int | None = None,
        timeout: float = 60.0,
        source_address: tuple[str, int] | None = None,
        blocksize: int = 8192,
    ) -> None:
        # Keywords only: `HTTPSConnection` takes other positional parameters.
        super().__init__(
            host, port, timeout=timeout, source_address=source_address, blocksize=blocksize
        )
        self._deadline = deadline

    def connect(self) -> None:
        # For HTTPS the TLS handshake happens in here: the `ssl` module bounds
        # the whole handshake by the socket's timeout, the time left.
        super().connect()
        self.sock = _DeadlineSocket(self.sock, self._deadline)


class _HTTPSConnection(_HTTPConnection, http.client.HTTPSConnection):
    """The same deadline, over TLS with the default (verifying) context."""


class _DeadlineHandler(urllib.request.AbstractHTTPHandler):
    """Opens http: and https: URLs with connections bound to one deadline."""

    def __init__(self, deadline: float) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_HTTPConnection, deadline=self._deadline), req)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_HTTPSConnection, deadline=self._deadline), req)

    http_request = urllib.request.AbstractHTTPHandler.do_request_
    https_request = urllib.request.AbstractHTTPHandler.do_request_


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse every redirect: `urllib` would resend our headers, key included, to the new host."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: object,
        code: int,
        msg: str,
        headers: object,
        newurl: str,
    ) -> None:
        return None


def open_before(request: urllib.request.Request, deadline: float) -> http.client.HTTPResponse:
    """Send `request`; the response's body, too, must arrive before `deadline` (monotonic).

    Raises what `urllib` raises (`HTTPError` for an error status, `URLError`
    when the server cannot be reached), `TimeoutError` once the deadline has
    passed, and `http.client.HTTPException` for a reply that is not HTTP.
    """
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        _DeadlineHandler(deadline),
        urllib.request.HTTPDefaultErrorHandler(),
        _NoRedirect(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    response = opener.open(request, timeout=_time_left(deadline))
    if not isinstance(response, http.client.HTTPResponse):
        raise TypeError(f"the opener answered with {type(response).__name__}")
    return response
