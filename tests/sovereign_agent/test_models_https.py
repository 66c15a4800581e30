"""The clients over HTTPS: certificates are verified, and the deadline holds through TLS."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from provider_stub import OPENAI_ROUTE, ProviderStub, StubResponse, openai_text
from system_components import require_executable

from sovereign_agent.models import (
    HTTPSettings,
    ModelUnavailableError,
    OpenAICompatibleClient,
    UserMessage,
)

HI = [UserMessage(content="hi")]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made by the openssl command."""
    openssl = require_executable("openssl", install="sudo apt-get install openssl")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    command = [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    command += ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
    command += ["-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(
        command,
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def tls_stub(certificate: tuple[Path, Path]) -> Iterator[ProviderStub]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    with ProviderStub(tls=context) as stub:
        yield stub


def test_a_certificate_nobody_trusts_is_refused_in_one_line(tls_stub: ProviderStub) -> None:
    tls_stub.enqueue(OPENAI_ROUTE, openai_text("never read"))
    client = OpenAICompatibleClient("m", base_url=tls_stub.openai_base_url)
    with pytest.raises(ModelUnavailableError) as caught:
        client.complete(HI)
    assert str(caught.value).startswith(f"cannot reach {tls_stub.openai_base_url}/chat/completions")
    assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_trusted_server_answers_over_https(
    tls_stub: ProviderStub, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    tls_stub.enqueue(OPENAI_ROUTE, openai_text("over TLS"))
    client = OpenAICompatibleClient("m", base_url=tls_stub.openai_base_url)
    assert client.complete(HI).message.content == "over TLS"


def test_a_reply_trickling_through_tls_ends_at_the_deadline(
    tls_stub: ProviderStub, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    body = openai_text("x" * 500).body
    tls_stub.enqueue(OPENAI_ROUTE, StubResponse(200, body, drip_s=0.02))
    options = HTTPSettings(timeout_s=0.5, max_retries=0)
    client = OpenAICompatibleClient("m", base_url=tls_stub.openai_base_url, settings=options)
    started = time.monotonic()
    with pytest.raises(ModelUnavailableError, match=r"within 0\.5 s$"):
        client.complete(HI)
    assert time.monotonic() - started < 0.5 + 2.0  # the deadline, and a busy machine's margin


def test_a_tls_handshake_that_trickles_in_ends_at_the_deadline() -> None:
    # A TLS record header announcing 16 KiB, then one byte at a time, each
    # well within any per-read timeout: the handshake as a whole must still
    # end by the attempt's deadline.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        stop = threading.Event()

        def trickle() -> None:
            connection, _ = server.accept()
            with connection:
                try:
                    connection.sendall(b"\x16\x03\x03\x40\x00")
                    while not stop.wait(0.05):
                        connection.sendall(b"\x00")
                except OSError:
                    pass  # the client hung up: what the test expects

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()
        options = HTTPSettings(timeout_s=0.5, max_retries=0)
        client = OpenAICompatibleClient(
            "m", base_url=f"https://127.0.0.1:{port}/v1", settings=options
        )
        started = time.monotonic()
        try:
            with pytest.raises(ModelUnavailableError, match=r"within 0\.5 s$"):
                client.complete(HI)
            assert time.monotonic() - started < 0.5 + 2.0
        finally:
            stop.set()
            thread.join(timeout=5)
