"""Book code in a sandbox: it cannot signal or stop the verifier, nor reach the network.

Each chapter here is verified by the real script in a subprocess, next to a
chapter where every rule holds. With `--isolation bwrap` a listing that sends
SIGSTOP and SIGKILL to its parent, to every process it can see and to -1
stops nothing but itself at most, and one that connects to a listener the
test opened on 127.0.0.1 is refused. The same listings without isolation
freeze the verifier and reach the listener: that is what the sandbox is for.
The report says in both modes which one ran.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from system_components import require_executable
from verifying import SCRIPT, verify

FIXTURES = Path(__file__).resolve().parent / "verify_fixtures"
PASSING = FIXTURES / "chapters" / "passing.md"
# A sandboxed verification of two small chapters takes seconds; a frozen one never ends.
BOUND_S = 120

_FIND_VERIFIER = f'''\
```python
import contextlib
import os
import shutil
import signal


def verifiers():
    """Every process this listing can see that runs the verifier's script."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                with open(f"/proc/{{name}}/cmdline", "rb") as command:
                    if b"{SCRIPT.name}" in command.read():
                        found.append(int(name))
    return found
```
'''

SIGNALS = (
    "# Signals\n\n"
    + _FIND_VERIFIER
    + """
```python
print(verifiers(), os.getppid())
```

```output
[] 1
```

```python
for number in (signal.SIGSTOP, signal.SIGKILL):
    for target in (os.getppid(), *verifiers(), -1):
        with contextlib.suppress(ProcessLookupError):
            os.kill(target, number)
print("the chapter goes on")
```

```output
the chapter goes on
```
"""
)

STOP_THE_PARENT = (
    "# Stop\n\n"
    + _FIND_VERIFIER
    + """
```python
print(os.getppid() in verifiers())
os.kill(os.getppid(), signal.SIGSTOP)
```

```output
True
```
"""
)

CONNECT = """\
# Network

```python
import os
import socket

try:
    socket.create_connection(("127.0.0.1", int(os.environ["LISTENER_PORT"])), timeout=5)
except ConnectionRefusedError:
    print("refused")
```

```output
refused
```

A listing's own server on 127.0.0.1 still works: loopback is up in the sandbox.

```python
with socket.create_server(("127.0.0.1", 0)) as server:
    with socket.create_connection(server.getsockname()[:2], timeout=5) as client:
        connection, _ = server.accept()
        client.sendall(b"hello")
        print(connection.recv(5))
        connection.close()
```

```output
b'hello'
```
"""


def needs_bubblewrap() -> None:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")


def verify_bounded(
    tmp_path: Path, *arguments: str | Path, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """The run, bounded in time (a frozen verifier fails the test, never hangs it), and its
    JSON report."""
    report = tmp_path / "report.json"
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, arguments), "--json", str(report)],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        env=env,
        check=False,
    )
    return completed, json.loads(report.read_text(encoding="utf-8"))


def chapter_file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_signals_sent_from_a_sandbox_reach_neither_the_verifier_nor_other_chapters(
    tmp_path: Path,
) -> None:
    needs_bubblewrap()
    chapter = chapter_file(tmp_path, "signals.md", SIGNALS)
    completed, report = verify_bounded(
        tmp_path, chapter, PASSING, "-j", "2", "--isolation", "bwrap"
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    attacked, good = report["chapters"]
    # The verifier is not among the processes the listing sees; its parent is
    # the sandbox's first process, which ignores both signals.
    assert attacked["ok"] and attacked["listings"] == {"passed": 3, "total": 3}
    assert good["ok"] and good["listings"] == {"passed": 9, "total": 9}
    assert report["isolation"]["mode"] == "bwrap"
    assert [c["isolation"] for c in report["chapters"]] == ["bwrap", "bwrap"]
    assert "Isolation: every chapter ran offline, isolated" in completed.stdout


def test_without_isolation_a_listing_stops_the_verifier(tmp_path: Path) -> None:
    """The attack the sandbox defeats, shown to work without it: the test can fail."""
    chapter = chapter_file(tmp_path, "stop.md", STOP_THE_PARENT)
    verifier = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(chapter), "--isolation", "none"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + BOUND_S
        state = b""
        while time.monotonic() < deadline and verifier.poll() is None:
            state = Path(f"/proc/{verifier.pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
            if state == b"T":
                break
            time.sleep(0.05)
        assert state == b"T", "the verifier was expected to be stopped by the listing"
    finally:
        os.killpg(verifier.pid, signal.SIGKILL)
        verifier.wait()


@pytest.fixture
def listener() -> Any:
    """A TCP listener on 127.0.0.1, outside any sandbox."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.5)
        yield server


def _accepted(server: socket.socket) -> bool:
    try:
        connection, _ = server.accept()
    except TimeoutError:
        return False
    connection.close()
    return True


def test_a_sandboxed_listing_cannot_reach_a_listener_on_the_machine(
    tmp_path: Path, listener: socket.socket
) -> None:
    needs_bubblewrap()
    chapter = chapter_file(tmp_path, "network.md", CONNECT)
    env = {**os.environ, "LISTENER_PORT": str(listener.getsockname()[1])}
    completed, report = verify_bounded(tmp_path, chapter, "--isolation", "bwrap", env=env)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert report["chapters"][0]["listings"] == {"passed": 2, "total": 2}
    assert not _accepted(listener)


def test_an_unisolated_listing_reaches_the_listener_and_the_report_says_so(
    tmp_path: Path, listener: socket.socket
) -> None:
    chapter = chapter_file(tmp_path, "network.md", CONNECT)
    env = {**os.environ, "LISTENER_PORT": str(listener.getsockname()[1])}
    completed, report = verify_bounded(tmp_path, chapter, "--isolation", "none", env=env)
    assert completed.returncode == 1
    (chapter_record,) = report["chapters"]
    assert [(f["line"], f["kind"]) for f in chapter_record["failures"]] == [(3, "output-mismatch")]
    assert _accepted(listener)
    assert report["isolation"] == {
        "mode": "none",
        "reason": "--isolation none",
        "statement": report["isolation"]["statement"],
    }
    assert chapter_record["isolation"] == "none"
    assert "Isolation: NOT isolated (--isolation none)" in completed.stdout


def test_without_bubblewrap_auto_runs_unisolated_and_says_why(tmp_path: Path) -> None:
    """A laptop without bubblewrap still verifies the book, and the report says it was
    not isolated; asking for bwrap there is a usage error."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}  # no bwrap to be found
    completed, report = verify_bounded(tmp_path, PASSING, env=env)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert report["isolation"]["mode"] == "none"
    assert "bubblewrap is not installed" in report["isolation"]["reason"]
    assert "Isolation: NOT isolated (bubblewrap is not installed" in completed.stdout
    asked = verify(PASSING, "--isolation", "bwrap", env=env)
    assert asked.returncode == 2
    assert "--isolation bwrap: bubblewrap is not installed" in asked.stderr


def test_auto_isolates_where_bubblewrap_works(tmp_path: Path) -> None:
    needs_bubblewrap()
    completed, report = verify_bounded(tmp_path, PASSING)
    assert completed.returncode == 0
    assert report["isolation"]["mode"] == "bwrap"
    assert "isolation bwrap" in completed.stdout.splitlines()[0]


def test_help_documents_the_isolation_option() -> None:
    completed = verify("--help")
    assert "--isolation {auto,bwrap,none}" in completed.stdout


_REPORT_VIEW = """
import os as _os

with open(_os.environ["SANDBOX_VIEW"], "a") as _view:
    _view.write(f"{__name__} {_os.getppid()}\\n")
"""


@pytest.mark.parametrize("isolation", ["none", "bwrap"])
def test_the_checkpoint_and_the_learner_import_run_in_the_same_isolation(
    tmp_path: Path, isolation: str
) -> None:
    """Each writes down its parent's pid as it sees it: 1, the sandbox's first process,
    only when isolated; the report says the same."""
    if isolation == "bwrap":
        needs_bubblewrap()
    book = tmp_path / "book_good"
    shutil.copytree(FIXTURES / "book_good", book)
    textbook = book / "book" / "textbook"
    for name in (
        "checkpoints/fixture_ch01_counting_tubs_checkpoint.py",
        "learner/fixture_ch01_counting_tubs_learner.py",
    ):
        with (textbook / name).open("a", encoding="utf-8") as code:
            code.write(_REPORT_VIEW)
    view = tmp_path / "view"
    env = {**os.environ, "SANDBOX_VIEW": str(view)}
    completed, report = verify_bounded(
        tmp_path,
        "--textbook",
        "--manifest",
        textbook / "book.toml",
        "--isolation",
        isolation,
        env=env,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    seen = sorted(line.split() for line in view.read_text(encoding="utf-8").splitlines())
    assert [name for name, _ in seen] == ["__main__", "learner_under_test"]
    parents = {int(parent) for _, parent in seen}
    if isolation == "bwrap":
        assert parents == {1}
    else:
        assert 1 not in parents
    assert [c["isolation"] for c in report["chapters"]] == [isolation]
