"""Serving the built site on 127.0.0.1, for a reader and for the browser tests.

The server binds the loopback address only: the site is for the person at
this machine, never for the network it is on.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["HOST", "make_server", "serving"]

HOST = "127.0.0.1"


class _QuietHandler(SimpleHTTPRequestHandler):
    """Logs failures only: a reader wants to see a 404, not every stylesheet."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if str(code).startswith(("4", "5")):
            super().log_request(code, size)

    def log_message(self, format: str, *args: Any) -> None:
        if getattr(self.server, "quiet", False):
            return
        super().log_message(format, *args)


def make_server(root: Path, port: int = 0, *, quiet: bool = False) -> ThreadingHTTPServer:
    """A server for the files under `root` on 127.0.0.1:`port` (0: any free port)."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = ThreadingHTTPServer((HOST, port), handler)
    server.daemon_threads = True
    server.quiet = quiet  # type: ignore[attr-defined]
    return server


@contextlib.contextmanager
def serving(root: Path, port: int = 0) -> Iterator[str]:
    """Serve `root` in a background thread for the duration of the block; yields its URL."""
    server = make_server(root, port, quiet=True)
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
