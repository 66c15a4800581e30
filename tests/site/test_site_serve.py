"""scripts/serve_site.py: the built site on 127.0.0.1, and a clear word when there is none."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from site_building import REPO

SERVE_SCRIPT = REPO / "scripts" / "serve_site.py"


def test_the_serve_command_serves_the_site_on_loopback_until_interrupted(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<h1>The book</h1>", encoding="utf-8")
    server = subprocess.Popen(
        [sys.executable, str(SERVE_SCRIPT), "--port", "0", "--dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith(f"serving {tmp_path} at http://127.0.0.1:"), line
        url = line.split(" at ")[1].split()[0]
        with urllib.request.urlopen(url + "index.html", timeout=10) as response:
            assert response.status == 200
            assert response.read() == b"<h1>The book</h1>"
    finally:
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=10)
    assert server.returncode == 0
    assert "stopped" in out


def test_serving_before_building_says_how_to_build(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, str(SERVE_SCRIPT), "--dir", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2
    assert "no built site in" in completed.stderr
    assert "uv run python scripts/build_site.py" in completed.stderr


def test_a_busy_port_is_reported_with_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("x", encoding="utf-8")
    first = subprocess.Popen(
        [sys.executable, str(SERVE_SCRIPT), "--port", "0", "--dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout is not None
        port = first.stdout.readline().split("127.0.0.1:")[1].split("/")[0]
        second = subprocess.run(
            [sys.executable, str(SERVE_SCRIPT), "--port", port, "--dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=10)
    assert second.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in second.stderr
    assert "choose another port with --port" in second.stderr
