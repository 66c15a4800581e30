"""What a submission's process can see and do, asked of a real sandbox by a module that looks.

Each test starts a real harness child over a small "spy" module, in the
isolation mode under test, and asks the spy's functions questions, exactly
as a check would. Bubblewrap tests skip on a laptop without bubblewrap and
fail in CI (`require_executable`).
"""

from __future__ import annotations

import os
import socket
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from system_components import require_executable

import bookproof
from bookproof.grade.intake import copy_submission
from bookproof.grade.questions import call
from bookproof.grade.sandbox import (
    Isolation,
    IsolationFailed,
    Limits,
    root_children_accepted,
    unprivileged_problem,
)
from bookproof.grade.session import Session
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
SECRET = "secret-token-isolation-3b9e"

SPY = textwrap.dedent(
    """
    import errno
    import os
    import resource
    import socket

    def env():
        return dict(os.environ)

    def open_fds():
        return sorted(int(name) for name in os.listdir("/proc/self/fd"))

    def where():
        return os.getcwd()

    def exists(path):
        return os.path.exists(path)

    def listing(path):
        return sorted(os.listdir(path))

    def read(path):
        with open(path, "rb") as handle:
            return handle.read(10_000).decode("utf-8", "replace")

    def can_write(path):
        try:
            with open(path, "w") as handle:
                handle.write("x")
            return True
        except OSError:
            return False

    def limits():
        return {
            "memory": resource.getrlimit(resource.RLIMIT_AS)[0],
            "file": resource.getrlimit(resource.RLIMIT_FSIZE)[0],
            "files": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        }

    def fork():
        try:
            pid = os.fork()
        except OSError as error:
            return errno.errorcode[error.errno]
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        return "forked"

    def thread():
        import threading
        box = []
        worker = threading.Thread(target=lambda: box.append(1))
        worker.start()
        worker.join()
        return box == [1]

    def connect(host, port):
        try:
            socket.create_connection((host, port), timeout=2).close()
            return "connected"
        except OSError as error:
            return type(error).__name__

    def processes():
        return sorted(int(name) for name in os.listdir("/proc") if name.isdigit())

    def parent():
        return os.getppid()

    def fill_tmp():
        written = 0
        try:
            with open("/tmp/filler", "wb") as handle:
                while written < 500_000_000:
                    handle.write(b"z" * 1_000_000)
                    written += 1_000_000
        except OSError as error:
            return ["stopped", written]
        return ["filled", written]
    """
)


@pytest.fixture
def spy_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "spy"
    folder.mkdir()
    (folder / "spy.py").write_text(SPY, encoding="utf-8")
    copy = tmp_path / "copy"
    assert copy_submission(folder, copy, ["spy.py"]) is None
    return copy


def _ask(copy: Path, isolation: Isolation, *questions: tuple[str, tuple[Any, ...]]) -> list[Any]:
    session = Session(copy, "spy", isolation, Limits(timeout=30, memory_bytes=512 << 20), 10)
    try:
        session.imported()
        answers = []
        for name, args in questions:
            answer = session.ask(dict(call(name, *args).op))
            assert answer.status == "returned", (name, answer)
            answers.append(answer.value)
        return answers
    finally:
        session.close()


@pytest.fixture
def bubblewrap() -> Isolation:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    return Isolation.BUBBLEWRAP


@pytest.fixture
def planted_secret() -> Any:
    os.environ["BOOKPROOF_PLANTED"] = SECRET
    yield SECRET
    del os.environ["BOOKPROOF_PLANTED"]


def test_the_environment_is_the_fixed_minimal_one_without_the_graders(
    spy_copy: Path, bubblewrap: Isolation, planted_secret: str
) -> None:
    (env, init) = _ask(spy_copy, bubblewrap, ("env", ()), ("read", ("/proc/1/environ",)))
    assert set(env) == {
        "PATH",
        "LANG",
        "LC_ALL",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
        "HOME",
        "TMPDIR",
        "PWD",  # bubblewrap's own, after --chdir
    }
    assert planted_secret not in repr(env)
    assert planted_secret not in init


def test_only_the_interpreter_the_runtime_and_its_own_copy_are_visible(
    spy_copy: Path, bubblewrap: Isolation
) -> None:
    source = Path(bookproof.__file__).resolve().parent
    home = Path.home()
    answers = _ask(
        spy_copy,
        bubblewrap,
        ("where", ()),
        ("listing", ("/submission",)),
        ("listing", ("/grader",)),
        ("exists", (str(ROOT / "solutions"),)),
        ("exists", (str(source),)),
        ("exists", (str(ROOT / "exercises"),)),
        ("exists", (str(home / ".bashrc"),)),
        ("exists", ("/etc/passwd",)),
        ("exists", (str(spy_copy),)),
        ("exists", ("/sys",)),
    )
    assert answers[:3] == ["/submission", ["spy.py"], ["gradechild"]]
    assert answers[3:] == [False] * 7


def test_nothing_but_tmp_is_writable_and_tmp_is_bounded(
    spy_copy: Path, bubblewrap: Isolation
) -> None:
    answers = _ask(
        spy_copy,
        bubblewrap,
        ("can_write", ("/submission/spy.py",)),
        ("can_write", ("/submission/new.py",)),
        ("can_write", ("/grader/gradechild/harness.py",)),
        ("can_write", ("/dev/shm/x",)),
        ("can_write", ("/x",)),
        ("can_write", ("/tmp/x",)),
        ("fill_tmp", ()),
    )
    assert answers[:5] == [False] * 5
    assert answers[5] is True
    assert answers[6][0] == "stopped"
    assert answers[6][1] <= Limits().tmp_bytes


def test_it_cannot_see_or_name_any_process_outside_its_sandbox(
    spy_copy: Path, bubblewrap: Isolation
) -> None:
    pids, parent = _ask(spy_copy, bubblewrap, ("processes", ()), ("parent", ()))
    assert os.getpid() not in pids or os.getpid() <= 2
    assert len(pids) <= 2  # bubblewrap's init and the harness itself
    assert parent in (0, 1)


def test_it_cannot_start_a_process_but_can_start_a_thread(
    spy_copy: Path, bubblewrap: Isolation
) -> None:
    assert _ask(spy_copy, bubblewrap, ("fork", ()), ("thread", ())) == ["EPERM", True]


@pytest.fixture
def listening_port() -> Iterator[int]:
    """A real TCP server on 127.0.0.1, accepting, for as long as the test runs."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def test_it_reaches_no_network(spy_copy: Path, bubblewrap: Isolation, listening_port: int) -> None:
    # The same probe connects from an unsandboxed process: a refusal below is
    # the sandbox's doing, not a port nobody listens on.
    with root_children_accepted():
        connected = _ask(spy_copy, Isolation.PROCESS, ("connect", ("127.0.0.1", listening_port)))
    assert connected == ["connected"]
    answers = _ask(
        spy_copy,
        bubblewrap,
        ("connect", ("127.0.0.1", listening_port)),
        ("connect", ("1.1.1.1", 53)),
    )
    assert "connected" not in answers


def test_limits_are_set_before_the_submission_runs(spy_copy: Path, bubblewrap: Isolation) -> None:
    (limits,) = _ask(spy_copy, bubblewrap, ("limits", ()))
    assert limits == {"memory": 512 << 20, "file": Limits().file_bytes, "files": 256}


def test_it_inherits_only_the_standard_streams_and_the_two_pipes(
    spy_copy: Path, bubblewrap: Isolation
) -> None:
    (fds,) = _ask(spy_copy, bubblewrap, ("open_fds", ()))
    # 0-2, the question and answer pipes, and the descriptor listing /proc/self/fd.
    assert len(fds) <= 6


def test_process_mode_still_fixes_the_environment_and_forbids_new_processes(
    spy_copy: Path, planted_secret: str
) -> None:
    with root_children_accepted():
        env, forked = _ask(spy_copy, Isolation.PROCESS, ("env", ()), ("fork", ()))
    assert planted_secret not in repr(env)
    if sys.platform == "linux":
        assert forked == "EPERM"


def test_process_mode_as_root_starts_no_submission_as_root_unless_accepted(
    spy_copy: Path,
) -> None:
    # The grader's own refusal, below the command: a caller that asks for
    # process mode as root, where nobody cannot start Python, gets no child.
    if os.geteuid() != 0 or unprivileged_problem() is None:
        pytest.skip("needs root where the user nobody cannot start this interpreter")
    with pytest.raises(IsolationFailed, match="running a submission as root was not accepted"):
        _ask(spy_copy, Isolation.PROCESS, ("where", ()))
    with root_children_accepted():
        assert _ask(spy_copy, Isolation.PROCESS, ("where", ()))


def test_grading_never_imports_a_submission_into_the_grader(
    spy_copy: Path, bubblewrap: Isolation
) -> None:
    _ask(spy_copy, bubblewrap, ("where", ()))
    assert "spy" not in sys.modules
