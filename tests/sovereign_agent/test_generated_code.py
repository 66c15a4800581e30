"""`run_python`: model-written code behind the boundary, each hostile program with its named result.

Every test runs real code in a real bubblewrap sandbox, and checks afterwards
that the host is as it was: the files beside the data folder, a planted
secret nobody may read, no process left behind. Without bubblewrap these
tests skip with the install command (CI forbids the skip), except the ones
that prove the tool then refuses to run anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strength import examples
from system_components import require_executable

from sovereign_agent import generated_code
from sovereign_agent.generated_code import (
    CodeLimits,
    CodeResult,
    Outcome,
    build_code_tool,
    run_python,
)
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.sandbox import Isolation, View, start, stop
from sovereign_agent.tools import Dispatcher, ToolCall
from sovereign_agent.trace import Recorder

SECRET = "secret-token-run-python-must-never-see"
# The code's own clock (it starts once the sandbox is up): short, so the endless loop costs
# two seconds, and long enough for a quick program on a busy machine.
QUICK = CodeLimits(seconds=2.0)


def _children() -> set[int]:
    """The pids of this process's live children, from every one of its threads."""
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        children = task / "children"
        if children.exists():
            found |= {int(pid) for pid in children.read_text().split()}
    return found


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


class Host:
    """A data folder the code may read, a secret beside it the code may not, and a way to run."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.data.mkdir()
        (self.data / "sales.csv").write_text("date,weekday,sku,tubs\n2026-11-07,Saturday,SKU-X,3\n")
        self.secret = root / "secret.txt"
        self.secret.write_text(SECRET)
        self.before = _snapshot(root)

    def run(self, code: str, limits: CodeLimits = QUICK) -> CodeResult:
        return run_python(code, self.data, limits)

    def unchanged(self) -> None:
        assert _snapshot(self.root) == self.before
        assert _children() == set()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    made = Host(tmp_path)
    yield made
    made.unchanged()


def _no_secret(result: CodeResult) -> None:
    assert SECRET not in result.output and SECRET not in result.error


# --- the answer a program is for --------------------------------------------------


def test_a_program_reads_the_data_folder_and_its_print_is_the_result(host: Host) -> None:
    result = host.run(
        "import csv\n"
        "rows = list(csv.DictReader(open('/data/sales.csv')))\n"
        "print(rows[0]['weekday'], sum(int(r['tubs']) for r in rows))\n"
    )
    assert result == CodeResult(Outcome.PRINTED, "Saturday 3\n", "")


def test_a_program_that_raises_is_named_raised_with_the_exceptions_last_line(host: Host) -> None:
    result = host.run("print('before')\nraise ValueError('no Saturday in the file')")
    assert result.outcome is Outcome.RAISED
    assert result.output == "before\n"
    assert result.error == "ValueError: no Saturday in the file"


# --- the seven hostile programs -------------------------------------------------------


def test_reading_a_file_outside_finds_nothing_there(host: Host) -> None:
    result = host.run(f"print(open({str(host.secret)!r}).read())")
    assert result.outcome is Outcome.RAISED
    assert result.error.startswith("FileNotFoundError")
    _no_secret(result)


def test_opening_a_socket_finds_no_network(host: Host) -> None:
    # A listener on the host's loopback: the sandbox's loopback is another one.
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        server.settimeout(0.2)
        result = host.run(
            "import socket\n"
            f"socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            "print('connected')\n"
        )
        with pytest.raises(TimeoutError):
            server.accept()
    assert result.outcome is Outcome.RAISED
    assert result.error.startswith(("ConnectionRefusedError", "OSError"))
    outside = host.run("import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=1)")
    assert outside.error == "OSError: [Errno 101] Network is unreachable"


def test_starting_a_process_is_refused_by_the_filter(host: Host) -> None:
    result = host.run("import subprocess\nsubprocess.run(['/bin/true'])")
    assert result.outcome is Outcome.RAISED
    assert result.error == "PermissionError: [Errno 1] Operation not permitted"
    forked = host.run("import os\nos.fork()")
    assert forked.error == "PermissionError: [Errno 1] Operation not permitted"
    execed = host.run("import os, sys\nos.execv(sys.executable, ['python', '-c', 'print(1)'])")
    assert execed.error == "PermissionError: [Errno 1] Operation not permitted"


def test_the_time_limit_is_the_codes_own_not_the_sandboxes_start_up(host: Host) -> None:
    # Starting bubblewrap and the interpreter takes longer than this limit; the clock
    # starts only when the prelude's limits hold, so a quick program still finishes.
    result = host.run("print('quick')", CodeLimits(seconds=0.05))
    assert result == CodeResult(Outcome.PRINTED, "quick\n", "")


def test_an_endless_loop_is_stopped_by_the_clock(host: Host) -> None:
    # One second: the loop runs until the clock, so the test costs what the limit is.
    result = host.run(
        "print('started', flush=True)\nwhile True:\n    pass\n", CodeLimits(seconds=1.0)
    )
    assert result.outcome is Outcome.TIME_LIMIT
    assert result.output == "started\n"


def test_a_memory_bomb_meets_the_memory_limit(host: Host) -> None:
    for bomb in ("x = bytearray(2 ** 34)", "x = []\nwhile True:\n    x.append(' ' * 10 ** 6)\n"):
        result = host.run(bomb)
        assert result.outcome is Outcome.MEMORY_LIMIT, result


def test_a_flood_of_output_is_cut_at_the_bound_and_stopped(host: Host) -> None:
    result = host.run("while True:\n    print('x' * 1000)\n")
    assert result.outcome is Outcome.OUTPUT_LIMIT
    assert len(result.output) == QUICK.output_bytes
    errors = host.run("import sys\nwhile True:\n    sys.stderr.write('y' * 1000)\n")
    assert errors.outcome is Outcome.OUTPUT_LIMIT


def test_writing_outside_scratch_is_refused_and_scratch_is_bounded(host: Host) -> None:
    for target in ("/data/sales.csv", "/data/new.txt", "/planted.txt", str(host.root / "x.txt")):
        result = host.run(f"open({target!r}, 'w').write('planted')")
        assert result.outcome is Outcome.RAISED, target
        assert result.error.startswith(("OSError: [Errno 30]", "FileNotFoundError")), result
    big = host.run("open('/tmp/big', 'wb').write(b'x' * 2 * 1024 * 1024)")
    assert big.outcome is Outcome.FILE_LIMIT
    scratch = host.run("open('/tmp/note.txt', 'w').write('ok')\nprint(open('note.txt').read())")
    assert scratch == CodeResult(Outcome.PRINTED, "ok\n", "")
    # Scratch is thrown away: the next run finds nothing of the last one's.
    # (Only the last run's files are looked for: where the runtime itself lives
    # under /tmp, its read-only mount shows there too.)
    again = host.run("import os\nprint(sorted({'note.txt', 'big'} & set(os.listdir('/tmp'))))")
    assert again.output == "[]\n"


# --- and more -------------------------------------------------------------------------


def test_there_is_no_proc_to_read_the_hosts_processes_from(host: Host) -> None:
    result = host.run(
        "import os\n"
        "print(os.path.exists('/proc'), os.getpid())\n"
        f"open('/proc/{os.getpid()}/environ').read()\n"
    )
    # The code is process 2 of its own PID namespace, and has no /proc at all.
    assert result.output == "False 2\n"
    assert result.outcome is Outcome.RAISED
    assert result.error.startswith("FileNotFoundError")


@pytest.mark.usefixtures("host")
def test_a_sandbox_with_a_proc_shows_only_its_own_processes(tmp_path: Path) -> None:
    # The runtime's sandbox with /proc mounted, as the grader's children have
    # it: the host's processes are not in it either.
    view = View({"/data": tmp_path}, "/data", proc=True)
    code = "import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    process = start(Isolation.BUBBLEWRAP, view, [sys.executable, "-I", "-c", code], tmp_path)
    try:
        out, _ = process.communicate(timeout=60)
    finally:
        stop(process)
    assert json.loads(out) == [1, 2]


def test_the_environment_holds_nothing_of_the_callers(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_API_TOKEN", SECRET)
    result = host.run("import json, os\nprint(json.dumps(dict(os.environ)))")
    _no_secret(result)
    assert set(json.loads(result.output)) == {*generated_code.ENVIRONMENT, "HOME", "TMPDIR", "PWD"}


def test_a_unix_socket_of_the_host_cannot_be_reached(host: Host) -> None:
    # A path socket beside the data, and an abstract one: namespaces hide both.
    path = host.root / "shop.sock"
    abstract = f"\0sovereign-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as by_path, socket.socket(socket.AF_UNIX) as by_name:
        by_path.bind(str(path))
        by_path.listen()
        by_name.bind(abstract)
        by_name.listen()
        for address in (str(path), abstract):
            result = host.run(
                f"import socket\nsocket.socket(socket.AF_UNIX).connect({address!r})\nprint('in')"
            )
            assert result.outcome is Outcome.RAISED, address
            assert result.error.startswith(("FileNotFoundError", "ConnectionRefusedError"))
    path.unlink()


_SYSCALL = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="syscall numbers of x86_64")
def test_io_uring_is_refused_by_the_filter(host: Host) -> None:
    result = host.run(
        _SYSCALL + "params = ctypes.create_string_buffer(120)\n"
        "print(libc.syscall(425, 8, params), os.strerror(ctypes.get_errno()))\n"
    )
    assert result == CodeResult(Outcome.PRINTED, "-1 Operation not permitted\n", "")


def test_a_nested_user_namespace_is_refused(host: Host) -> None:
    result = host.run(
        _SYSCALL + "print(libc.unshare(0x10000000), os.strerror(ctypes.get_errno()))\n"
        "print(libc.unshare(0x40000000), os.strerror(ctypes.get_errno()))\n"
    )
    assert result.output == "-1 Operation not permitted\n" * 2


def test_signals_reach_no_process_outside(host: Host) -> None:
    result = host.run(
        "import os, signal\n"
        "print('parent', os.getppid())\n"
        "os.kill(os.getppid(), signal.SIGKILL)\n"
        f"os.kill({os.getpid()}, signal.SIGKILL)\n"
    )
    # The parent it sees is the sandbox's own first process, which ignores the
    # signal; the caller's pid does not exist in its namespace.
    assert result.output == "parent 1\n"
    assert result.outcome is Outcome.RAISED
    assert result.error == "ProcessLookupError: [Errno 3] No such process"
    os.kill(os.getpid(), 0)


def test_a_symlink_out_of_scratch_leads_nowhere(host: Host) -> None:
    result = host.run(
        "import os\n"
        f"os.symlink({str(host.secret)!r}, '/tmp/link')\n"
        "os.symlink('/proc/1/root/etc/hostname', '/tmp/root')\n"
        "for name in ('/tmp/link', '/tmp/root'):\n"
        "    try:\n"
        "        print(open(name).read())\n"
        "    except OSError as error:\n"
        "        print(type(error).__name__)\n"
    )
    _no_secret(result)
    assert result.output.splitlines()[0] == "FileNotFoundError"


# --- no sandbox, no run -------------------------------------------------------------


def test_without_bubblewrap_the_tool_refuses_and_runs_nothing(tmp_path: Path) -> None:
    planted = tmp_path / "planted.txt"
    program = (
        "import json, pathlib\n"
        "from sovereign_agent.generated_code import run_python\n"
        f"result = run_python(\"open({str(planted)!r}, 'w').write('ran')\", "
        f"pathlib.Path({str(tmp_path)!r}))\n"
        "print(json.dumps(result.observation()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        env={**os.environ, "PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "outcome": "no_sandbox",
        "output": "",
        "error": "bubblewrap is not installed (Debian and Ubuntu: sudo apt-get install bubblewrap)",
    }
    assert not planted.exists()


def test_a_sandbox_that_cannot_start_is_no_sandbox_never_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    # A data folder that does not exist: bubblewrap refuses to mount it.
    result = run_python("print('ran')", tmp_path / "missing", QUICK)
    assert result.outcome is Outcome.NO_SANDBOX
    assert result.output == ""
    assert "bwrap" in result.error


# --- as a tool in a run ---------------------------------------------------------------


def _code_call(code: str) -> AssistantMessage:
    call = AssistantToolCall(id="c1", name="run_python", arguments_json=json.dumps({"code": code}))
    return AssistantMessage(tool_calls=(call,))


def test_run_python_is_code_and_refused_without_a_write_authority(host: Host) -> None:
    tool = build_code_tool(host.data, QUICK)
    # Declared, not left to chapter 2's boolean: exactly code, which needs an authority.
    assert set(tool.effects) == {"code"}
    assert tool.consequential is True
    unauthorised = Dispatcher([tool], allowed={"run_python"})
    call = ToolCall(id="c", name="run_python", arguments={"code": "print(1)"})
    outcome = unauthorised.attempt(call)
    assert outcome.observation == {"ok": False, "error": "write_authority_required"}
    assert outcome.handler_ran is False


def test_an_authority_that_refuses_keeps_run_python_from_running(host: Host) -> None:
    def nobody(call: ToolCall) -> None:
        raise PermissionError("no code today")

    refused = Dispatcher(
        [build_code_tool(host.data, QUICK)], allowed={"run_python"}, before_write=nobody
    )
    outcome = refused.attempt(ToolCall(id="c", name="run_python", arguments={"code": "print(1)"}))
    assert outcome.handler_ran is False
    assert outcome.observation == {"ok": False, "error": "tool_failed"}


def test_a_run_that_used_run_python_has_the_code_and_its_result_in_the_trace(host: Host) -> None:
    code = "print(sum(range(5)))"
    dispatcher = Dispatcher(
        [build_code_tool(host.data, QUICK)],
        allowed={"run_python"},
        before_write=generated_code.sandboxed_code_only,
    )
    events: list[dict[str, Any]] = []
    record = run_task(
        ScriptedModel([_code_call(code), AssistantMessage(content="10")]),
        dispatcher,
        "Add up.",
        max_steps=3,
        max_tool_calls=1,
        recorder=Recorder(events.append),
    )
    assert record.executed == ("run_python",)
    call = next(e for e in events if e["event"] == "tool_call")
    outcome = next(e for e in events if e["event"] == "tool_outcome")
    assert json.loads(call["gen_ai.tool.call.arguments"]) == {"code": code}
    assert outcome["gen_ai.tool.call.result"] == {
        "ok": True,
        "value": {"outcome": "printed", "output": "10\n", "error": ""},
    }


def test_the_code_authority_lets_only_run_python_through() -> None:
    generated_code.sandboxed_code_only(ToolCall(id="c", name="run_python", arguments={}))
    with pytest.raises(PermissionError):
        generated_code.sandboxed_code_only(ToolCall(id="c", name="place_order", arguments={}))


# --- any program at all ---------------------------------------------------------------

_STATEMENTS = st.one_of(
    st.text(max_size=300).map(lambda text: f"print({text!r})"),
    st.integers(0, 20_000).map(lambda n: f"print('z' * {n})"),
    st.integers(0, 20_000).map(lambda n: f"import sys; sys.stderr.write('e' * {n})"),
    st.binary(max_size=200).map(lambda raw: f"import sys; sys.stdout.buffer.write({raw!r})"),
    st.integers(-3, 300).map(lambda n: f"import sys; sys.exit({n})"),
    st.integers(0, 255).map(lambda n: f"import os; os._exit({n})"),
    st.integers(0, 40).map(lambda n: f"x = bytearray(2 ** {n})"),
    st.sampled_from(
        [
            "raise RuntimeError('no')",
            "open('/data/sales.csv').read()",
            "open('/etc/passwd').read()",
            "open('/tmp/f', 'wb').write(b'x' * 3_000_000)",
            "import os; os.kill(os.getpid(), 11)",
            "import os; os.fork()",
            "def f(): f()\nf()",
            "1 +",
            "for _ in range(10 ** 5): pass",
            "import time; time.sleep(0.05)",
        ]
    ),
)


@settings(
    max_examples=examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(statements=st.lists(_STATEMENTS, min_size=1, max_size=4))
def test_any_program_ends_in_a_named_outcome_with_a_bounded_result(
    host: Host, statements: list[str]
) -> None:
    limits = CodeLimits(seconds=2.0, output_bytes=2048)
    result = host.run("\n".join(statements), limits)
    assert result.outcome in set(Outcome) - {Outcome.NO_SANDBOX}
    assert len(result.output) <= limits.output_bytes
    assert len(result.error) <= 300 and "\n" not in result.error
    assert _children() == set()


def test_the_outcomes_are_the_ones_the_chapter_names() -> None:
    assert [outcome.value for outcome in Outcome] == [
        "printed",
        "raised",
        "time_limit",
        "memory_limit",
        "file_limit",
        "output_limit",
        "killed",
        "no_sandbox",
    ]


def test_a_signal_the_code_brings_on_itself_is_killed(host: Host) -> None:
    result = host.run(f"import os\nos.kill(os.getpid(), {int(signal.SIGSEGV)})")
    assert result == CodeResult(Outcome.KILLED, "", "the code was ended by SIGSEGV")
