"""The zygote's runs share nothing: each attack here is a learner's test run against it.

A learner's test file runs several times per submission (the reference,
then each faulty version, in shuffled order). Where the runs fork from one
warm zygote (`gradechild.zygote`), each must still start in a world of its
own, or a suite could record the first run's behaviour and flag any
difference. Each attack below is a test file that looks for what an earlier
run left, leaves its own traces, and fails (pytest status 1) if it found
any; the grader's runs against the reference must all pass. Where an attack
can be shown to work without the sandbox (two plain pytest runs in one
world), a control test shows it does: the attack is real, the isolation is
what stops it.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from system_components import require_executable

from bookproof.grade import learner_tests
from bookproof.grade.book import LearnerTests
from bookproof.grade.books import load_book
from bookproof.grade.learner_tests import _Run, _Zygote, _ZygoteRuns, close_oracles
from bookproof.grade.runner import grade_submission
from bookproof.grade.sandbox import Isolation, Launch, Limits, nested_runs_problem, stop
from bookproof.layout import REPO_ROOT

SOLUTION = (REPO_ROOT / "solutions" / "book02" / "shop_tools.py").read_text(encoding="utf-8")
(GROUP,) = load_book(2).groups()
RUNS = 3
SYSV_KEY = 0x5EC7A11
ABSTRACT = "bookproof-zygote-daemon"

# Looks in every writable place a run might share with the next one, and in
# a SysV shared-memory segment, then leaves a mark in each.
LEFTOVERS = f"""
import ctypes, os, sys, sysconfig, tempfile

PLACES = [
    # Where the interpreter's packages are: shown again below a run's fresh
    # /tmp when the environment lives there (a project checked out in /tmp).
    os.path.join(sysconfig.get_paths()["purelib"], "mark"),
    "/tmp/mark",
    os.path.join(tempfile.gettempdir(), "mark"),
    os.path.expanduser("~/mark"),
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "mark"),
    os.path.join(os.getcwd(), "mark"),
    "/dev/shm/mark",
]
IPC_CREAT = 0o1000

def test_nothing_an_earlier_run_left_is_here():
    libc = ctypes.CDLL(None, use_errno=True)
    found = [place for place in PLACES if os.path.exists(place)]
    if libc.shmget({SYSV_KEY}, 0, 0) >= 0:
        found.append("sysv segment")
    for place in PLACES:
        try:
            with open(place, "w") as handle:
                handle.write("here")
        except OSError:
            pass
    libc.shmget({SYSV_KEY}, 4096, IPC_CREAT | 0o666)
    print("found:", found, file=sys.stderr)
    assert not found
"""

# Leaves something running that listens on an abstract unix socket, and
# looks for what an earlier run left: that socket, and any process it can
# signal besides its own namespace's init.
DAEMON = f"""
import os, socket, sys, threading, time

def _listen():
    server = socket.socket(socket.AF_UNIX)
    server.bind("\\0{ABSTRACT}")
    server.listen(1)
    return server

def _serve(server):
    # Ends by itself a little later: nothing has to be killed by name.
    server.settimeout(20)
    while True:
        try:
            server.accept()[0].close()
        except OSError:
            os._exit(0)

def test_no_daemon_of_an_earlier_run_answers():
    found = []
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.connect("\\0{ABSTRACT}")
        found.append("abstract socket")
    except OSError:
        pass
    visible = []
    for other in range(1, 4096):
        if other == os.getpid():
            continue
        try:
            os.kill(other, 0)
            visible.append(other)
        except ProcessLookupError:
            pass
        except PermissionError:
            visible.append(other)
    server = _listen()
    try:
        pid = os.fork()
    except OSError:
        pid = None  # no new process here: a thread is what can be left
    if pid == 0:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        _serve(server)
    if pid is None:
        threading.Thread(target=_serve, args=(server,), daemon=True).start()
    print("visible:", visible, "found:", found, file=sys.stderr)
    # Only its own namespace's init (the grader's code), never another run's.
    assert not found and visible in ([1], [])
"""

# Tries to reach the zygote or its own init by every pid it can name: ptrace,
# and /proc/<pid>/mem for reading and writing. Every attempt must fail.
TRACER = """
import ctypes, errno, os, sys

PTRACE_ATTACH, PTRACE_SEIZE = 16, 0x4206

def test_no_process_can_be_traced_or_its_memory_opened():
    libc = ctypes.CDLL(None, use_errno=True)
    reached = []
    try:
        listed = os.listdir("/proc")
    except OSError:
        listed = []
    for pid in range(1, 256):
        if pid == os.getpid():
            continue
        for request in (PTRACE_ATTACH, PTRACE_SEIZE):
            if libc.ptrace(request, pid, None, None) == 0:
                reached.append(("ptrace", pid))
        for mode in ("rb", "r+b"):
            try:
                with open(f"/proc/{pid}/mem", mode):
                    reached.append(("mem", pid, mode))
            except OSError:
                pass
    print("proc:", listed, "reached:", reached, file=sys.stderr)
    assert reached == [] and listed == []
"""

# Says everything a run could read about its world and its process that
# might change from one run to the next (in its failure, which pytest
# prints); the harness compares the runs. (`sys.getallocatedblocks()` and
# the peak resident size are left out: they differ by a few blocks or pages
# between runs, with no trend, as they would between interpreters.)
FINGERPRINT = """
import gc, os, resource, socket, stat, sys

def _fds():
    kinds = []
    for fd in range(256):
        try:
            kinds.append((fd, stat.S_IFMT(os.fstat(fd).st_mode)))
        except OSError:
            pass
    return kinds

LIMITS = (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_NOFILE, resource.RLIMIT_FSIZE)

def test_say_the_fingerprint():
    assert False, "fingerprint: " + repr({
        "pids": (os.getpid(), os.getppid(), os.getpgrp(), os.getsid(0)),
        "fds": _fds(),
        "tmp": sorted(os.listdir("/tmp")),
        "host": socket.gethostname(),
        "uid": (os.getuid(), os.getgid(), os.getgroups()),
        "modules": len(sys.modules),
        "proc": sorted(os.listdir("/proc")) if os.path.isdir("/proc/self") else "no /proc",
        "cwd": os.getcwd(),
        "environ": sorted(os.environ),
        "limits": [resource.getrlimit(kind) for kind in LIMITS],
        "cpu": resource.getrusage(resource.RUSAGE_SELF).ru_utime < 5,
        "gc": gc.get_count(),
        "object": id(object()),
    })
"""


@pytest.fixture(scope="module", autouse=True)
def _nested_namespaces() -> Iterator[None]:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    problem = nested_runs_problem()
    if problem is not None:
        pytest.skip(f"the zygote is not used here: {problem}")
    yield
    close_oracles()


def _submission(base: Path, tests: str) -> Path:
    folder = base / "submission"
    folder.mkdir()
    (folder / "shop_tools.py").write_text(SOLUTION, encoding="utf-8")
    (folder / GROUP.file).write_text(textwrap.dedent(tests), encoding="utf-8")
    return folder


def _runs(folder: Path, count: int = RUNS, limits: Limits | None = None) -> list[_Run]:
    runs = _ZygoteRuns(GROUP, folder, Isolation.BUBBLEWRAP, limits or Limits())
    try:
        return [runs.run(None, f"seed-{index}") for index in range(count)]
    finally:
        runs.close()


def _said(run: _Run) -> str:
    return run.said.decode("utf-8", "replace")


def _plain_pytest(folder: Path, world: Path) -> int:
    """One pytest run of the folder without any sandbox, HOME and TMPDIR in `world`."""
    env = {**os.environ, "HOME": str(world), "TMPDIR": str(world)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", GROUP.file],
        cwd=folder,
        env=env,
        capture_output=True,
        check=False,
        timeout=120,
    ).returncode


@pytest.mark.parametrize(
    "attack", [LEFTOVERS, DAEMON, TRACER], ids=["leftovers", "daemon", "trace"]
)
def test_every_run_finds_a_world_no_earlier_run_touched(tmp_path: Path, attack: str) -> None:
    runs = _runs(_submission(tmp_path, attack))
    assert [run.status for run in runs] == [0] * RUNS, [_said(run)[-2500:] for run in runs]


def _remove_sysv_segment() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(SYSV_KEY, 0, 0)
    if segment >= 0:
        libc.shmctl(segment, 0, None)  # IPC_RMID


def test_without_the_sandbox_the_leftovers_are_found(tmp_path: Path) -> None:
    # Its own places instead of the machine's /tmp and the environment's packages.
    attack = LEFTOVERS.replace('"/tmp/mark"', repr(str(tmp_path / "t"))).replace(
        'sysconfig.get_paths()["purelib"]', repr(str(tmp_path))
    )
    folder = _submission(tmp_path, attack)
    world = tmp_path / "world"
    world.mkdir()
    _remove_sysv_segment()
    try:
        assert _plain_pytest(folder, world) == 0
        assert _plain_pytest(folder, world) == 1
    finally:
        _remove_sysv_segment()
        Path("/dev/shm/mark").unlink(missing_ok=True)


def test_without_the_sandbox_the_daemon_answers(tmp_path: Path) -> None:
    folder = _submission(tmp_path, DAEMON.replace(ABSTRACT, f"{ABSTRACT}-{os.getpid()}"))
    world = tmp_path / "world"
    world.mkdir()
    # The first run leaves its daemon behind (it ends itself 20 s later).
    assert _plain_pytest(folder, world) in (0, 1)
    assert _plain_pytest(folder, world) == 1


def test_no_run_can_tell_which_run_it_is(tmp_path: Path) -> None:
    runs = _runs(_submission(tmp_path, FINGERPRINT), count=4)
    prints = [
        line[line.index("fingerprint:") :]
        for run in runs
        for line in _said(run).splitlines()
        if line.startswith("E ") and "fingerprint:" in line
    ]
    assert len(prints) == 4, [_said(run)[-2500:] for run in runs]
    assert len(set(prints)) == 1, prints
    # The run is PID 2 under its namespace's init, and sees no /proc.
    assert "'pids': (2, 1, " in prints[0] and "'proc': 'no /proc'" in prints[0]


@dataclasses.dataclass(frozen=True)
class _QuickLimits(Limits):
    """The grader's limits with a 4-second clock for a run of the tests."""

    @property
    def tests_timeout(self) -> float:
        return 4.0


def test_a_run_out_of_time_ends_with_its_sandbox_and_the_next_run_starts_fresh(
    tmp_path: Path,
) -> None:
    # The book's own tests, with a hook that hangs once a test has failed:
    # against a faulty version the run outlasts its clock, against the
    # reference it passes.
    folder = _submission(
        tmp_path, (REPO_ROOT / "solutions" / "book02" / GROUP.file).read_text(encoding="utf-8")
    )
    (folder / "conftest.py").write_text(
        "import time\n\n"
        "def pytest_runtest_logreport(report):\n"
        "    if report.failed:\n"
        "        time.sleep(60)\n",
        encoding="utf-8",
    )
    zygote = _ZygoteRuns(GROUP, folder, Isolation.BUBBLEWRAP, _QuickLimits())
    try:
        runs = [zygote.run(GROUP.versions()[0], "seed"), zygote.run(None, "seed")]
    finally:
        zygote.close()
    assert [(run.status, run.fate) for run in runs] == [(None, "timeout"), (0, "")]


def test_each_run_has_its_own_memory_limit_and_output_bound(tmp_path: Path) -> None:
    folder = _submission(
        tmp_path,
        """
        import sys

        def test_memory():
            try:
                block = bytearray(2 * 1024 * 1024 * 1024)
            except MemoryError:
                print("refused", file=sys.stderr)
                return
            assert False, "2 GB under a 1 GB limit"

        def test_flood():
            # pytest shows a failed test's output: 4 MB on the run's stdout.
            sys.stdout.write("x" * 4_000_000)
            assert False
        """,
    )
    limits = Limits(output_bytes=1024 * 1024)
    runs = _runs(folder, count=2, limits=limits)
    # Each run floods and is ended; the second starts in a new sandbox all the same.
    assert [run.fate for run in runs] == ["flood", "flood"]
    quiet = tmp_path / "quiet"
    shutil.copytree(folder, quiet)
    text = (quiet / GROUP.file).read_text(encoding="utf-8")
    quiet_text = text.replace('"x" * 4_000_000', '"x"').replace("assert False\n", "")
    (quiet / GROUP.file).write_text(quiet_text, encoding="utf-8")
    assert [run.status for run in _runs(quiet, count=2)] == [0, 0]


def test_the_zygote_path_is_the_one_graded_with_in_bubblewrap() -> None:
    assert learner_tests.runs_share_a_sandbox(Isolation.BUBBLEWRAP)
    assert not learner_tests.runs_share_a_sandbox(Isolation.PROCESS)


# --- one zygote for the batch: what it serves to one run is out of another's reach ---

# Looks everywhere a run can reach, outside the system's own folders, for a
# file named like the one planted in another submission's folder, and tries
# to lift the mount that covers the folder of every served folder.
SNOOPER = """
import ctypes, os, sys, sysconfig

MNT_DETACH = 2
SYSTEM = {"/proc", "/sys", "/dev", "/usr", "/etc", sys.prefix, sys.base_prefix,
          *sysconfig.get_paths().values()}

def test_no_other_submission_is_in_reach():
    libc = ctypes.CDLL(None, use_errno=True)
    found = []
    for folder, folders, files in os.walk("/"):
        folders[:] = [f for f in folders if os.path.join(folder, f) not in SYSTEM]
        found += [os.path.join(folder, n) for n in folders + files if n.startswith("secret-token-")]
    lifted = libc.umount2(b"/submission", MNT_DETACH) == 0
    here = sorted(os.listdir("/submission"))
    print("found:", found, "lifted:", lifted, "here:", here, file=sys.stderr)
    assert not found and not lifted
    assert here == ["shop_tools.py", "test_book02_mango.py"]
"""


def _folder(base: Path, name: str, tests: str) -> Path:
    (base / name).mkdir()
    return _submission(base / name, tests)


def _one_run(group: LearnerTests, folder: Path) -> tuple[_Run, _Zygote]:
    """One run against the reference, from the batch's zygotes: the run, and its zygote."""
    runs = _ZygoteRuns(group, folder, Isolation.BUBBLEWRAP, Limits())
    try:
        return runs.run(None, "seed"), runs._zygote
    finally:
        runs.close()


def test_one_zygote_serves_every_submission_and_no_run_finds_another_ones_marks(
    tmp_path: Path,
) -> None:
    first = _folder(tmp_path, "first", LEFTOVERS)
    second = _folder(tmp_path, "second", DAEMON.replace(ABSTRACT, f"{ABSTRACT}-{os.getpid()}"))
    third = _folder(tmp_path, "third", LEFTOVERS)
    served = [_one_run(GROUP, first)]
    zygote = served[0][1]
    starts = zygote.starts
    served += [_one_run(GROUP, folder) for folder in (second, third, first, second)]
    assert [run.status for run, _ in served] == [0] * 5, [_said(run)[-2500:] for run, _ in served]
    # The sharing is real: one zygote ran all five, in one sandbox.
    assert all(other is zygote for _, other in served)
    assert zygote.starts == starts


def test_a_mark_left_by_one_exercise_is_invisible_to_another_exercise(tmp_path: Path) -> None:
    note, machine = load_book(6).groups()
    folders = {}
    for group in (note, machine):
        (tmp_path / group.file).mkdir()
        folder = tmp_path / group.file / "submission"
        folder.mkdir()
        (folder / group.file).write_text(LEFTOVERS, encoding="utf-8")
        folders[group.file] = folder
    served = [_one_run(g, folders[g.file]) for g in (note, machine, note, machine)]
    assert [run.status for run, _ in served] == [0] * 4, [_said(run)[-2500:] for run, _ in served]
    assert all(other is served[0][1] for _, other in served)


def test_no_run_can_reach_another_submissions_folder(tmp_path: Path) -> None:
    victim = _folder(tmp_path, "victim", "def test_nothing():\n    pass\n")
    (victim / f"secret-token-{os.urandom(8).hex()}").write_text("secret-token-inside\n")
    snooper = _folder(tmp_path, "snooper", SNOOPER)
    held = _ZygoteRuns(GROUP, victim, Isolation.BUBBLEWRAP, Limits())
    try:
        assert held.run(None, "seed").status == 0
        # The victim's copy stays below the folder the zygote's sandbox shows
        # while the snooper runs in the same sandbox...
        runs = _ZygoteRuns(GROUP, snooper, Isolation.BUBBLEWRAP, Limits())
        try:
            assert list(runs._zygote.root.glob("*/secret-token-*"))
            run = runs.run(None, "seed")
        finally:
            runs.close()
    finally:
        held.close()
    # ... and the snooper's run found nothing of it, and could lift no mount.
    assert run.status == 0, _said(run)[-2500:]


def test_a_zygote_that_died_between_runs_is_replaced_and_verdicts_hold(tmp_path: Path) -> None:
    first = _folder(tmp_path, "first", LEFTOVERS)
    book_tests = (REPO_ROOT / "solutions" / "book02" / GROUP.file).read_text(encoding="utf-8")
    second = _folder(tmp_path, "second", book_tests)
    run, zygote = _one_run(GROUP, first)
    assert run.status == 0
    starts = zygote.starts
    process = zygote._process
    assert process is not None
    stop(process)  # as if the machine had killed it while idle
    runs = _ZygoteRuns(GROUP, second, Isolation.BUBBLEWRAP, Limits())
    try:
        assert runs._zygote is zygote
        verdicts = [runs.run(None, "seed"), runs.run(GROUP.versions()[0], "seed")]
    finally:
        runs.close()
    assert [v.status for v in verdicts] == [0, 1], [_said(v)[-2500:] for v in verdicts]
    assert zygote.starts == starts + 1


@pytest.mark.parametrize("fate", ["timeout", "flood"])
def test_a_run_that_ends_its_zygote_takes_no_other_submissions_verdict(
    tmp_path: Path, fate: str
) -> None:
    book_tests = (REPO_ROOT / "solutions" / "book02" / GROUP.file).read_text(encoding="utf-8")
    hostile = _folder(tmp_path, "hostile", book_tests)
    # Against a faulty version a test fails; then the run hangs, or floods
    # the terminal pytest writes its summary to.
    act = "time.sleep(60)" if fate == "timeout" else "terminalreporter.write('x' * 4_000_000)"
    (hostile / "conftest.py").write_text(
        "import time\n\n"
        "def pytest_terminal_summary(terminalreporter):\n"
        "    if terminalreporter.stats.get('failed'):\n"
        f"        {act}\n",
        encoding="utf-8",
    )
    honest = _folder(tmp_path, "honest", book_tests)
    limits = _QuickLimits()
    bad = _ZygoteRuns(GROUP, hostile, Isolation.BUBBLEWRAP, limits)
    good = _ZygoteRuns(GROUP, honest, Isolation.BUBBLEWRAP, limits)
    try:
        # Two workers' files in flight at once: each has a zygote of its own.
        assert bad._zygote is not good._zygote
        first = good.run(GROUP.versions()[0], "seed")
        ended = bad.run(GROUP.versions()[0], "seed")
        after = [good.run(None, "seed"), bad.run(None, "seed"), good.run(GROUP.versions()[1], "s")]
    finally:
        bad.close()
        good.close()
    assert (ended.status, ended.fate) == (None, fate)
    assert [run.status for run in [first, *after]] == [1, 0, 0, 1]
    # The same file, given back and taken again, is served by a zygote that
    # lives on (the honest one) or started afresh (the one the hostile run ended).
    again = _ZygoteRuns(GROUP, honest, Isolation.BUBBLEWRAP, limits)
    try:
        assert again.run(None, "seed").status == 0
    finally:
        again.close()


def test_a_submission_after_the_first_starts_no_sandbox_for_its_tests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    grade = functools.partial(
        grade_submission,
        REPO_ROOT / "solutions" / "book02",
        load_book(2),
        isolation=Isolation.BUBBLEWRAP,
        limits=Limits(),
        seed=1,
    )
    first = grade(name="first")
    started: list[Launch] = []
    real_start = learner_tests.start

    def counting_start(
        isolation: Isolation, launch: Launch, scratch: Path
    ) -> subprocess.Popen[bytes]:
        started.append(launch)
        return real_start(isolation, launch, scratch)

    monkeypatch.setattr(learner_tests, "start", counting_start)
    second = grade(name="second")
    assert first.total == first.max and second.total == second.max
    # Its nine runs forked from the zygote the first submission started, and
    # the oracle was the batch's already.
    assert started == []
