"""A hostile class graded in ONE bubblewrap batch, beside the reference and an honest classmate.

Every attack of the grader's threat model (exercises/GRADING.md) is a folder
here. Thieves start from the untouched starter and switch to the reference
solution only if their attack finds it (or finds the planted secret, or the
grader's inner state): each must end with no more exercise points than the
starter. Vandals start from the reference solution and try to hurt the
grader, a classmate, the repository or the reports: the reference and the
honest classmate keep full marks, the batch finishes, and nothing outside the
sandboxes changes. Broken folders get one clear zero line each.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from committed import EXERCISES
from system_components import require_executable

from bookproof.grade.books import load_book
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
SOLUTIONS = ROOT / "solutions" / "book02"
SOLUTION = (SOLUTIONS / "shop_tools.py").read_text(encoding="utf-8")
STARTER = (EXERCISES / "book02" / "shop_tools.py").read_text(encoding="utf-8")
MANGO_TESTS = (SOLUTIONS / "test_book02_mango.py").read_text(encoding="utf-8")
SECRET = "secret-token-7f3c9a11e2"
TIMEOUT = "4"
BOOK = load_book(2)
BASELINE = sum(check.points for check in BOOK.checks if check.kind == "chapter baseline")
TESTS_CHECKS = {check.id for check in BOOK.checks if check.tests is not None}
# A line only the reference solution has: what a thief looks for in what it reads.
MARKER = "def _unique_rows("
assert MARKER in SOLUTION and MARKER not in STARTER

# --- thieves: the starter, plus an attack that switches to the reference if it works ----

STEAL = textwrap.dedent(
    """
    def _become(text):
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        # Built here, so that this file's own text never looks like the loot.
        if {marker_head!r} + {marker_tail!r} in text:
            exec(compile(text, "stolen", "exec"), globals())
            return True
        return False

    def _read(path):
        import os, stat
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                return b""
            with open(path, "rb") as handle:
                return handle.read(2_000_000)
        except (OSError, ValueError):
            return b""
    """
)

THIEVES: dict[str, str] = {
    # The repository's solutions/ folder, by its absolute path and by walking up.
    "steals_solutions": """
        import os
        _paths = [{solutions!r} + "/shop_tools.py"]
        _here = os.getcwd()
        while _here != "/":
            _paths.append(os.path.join(_here, "solutions", "book02", "shop_tools.py"))
            _here = os.path.dirname(_here)
        for _path in _paths:
            if _become(_read(_path)):
                break
    """,
    # The classmate's folder, whose path is on the grader's command line.
    "steals_classmate": """
        _become(_read({classmate!r} + "/shop_tools.py"))
    """,
    # /proc: every process's command line, working folder, root, open files and memory.
    "steals_via_proc": """
        import os
        for _pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["self", "1"]:
            _found = False
            for _part in ("cmdline", "environ"):
                for _word in _read(f"/proc/{{_pid}}/{{_part}}").split(b"\\0"):
                    if _word.startswith(b"/") and _become(_read(_word.decode(errors="replace")
                                                                + "/shop_tools.py")):
                        _found = True
            for _link in ("cwd", "root"):
                if _become(_read(f"/proc/{{_pid}}/{{_link}}/solutions/book02/shop_tools.py")):
                    _found = True
            try:
                _fds = os.listdir(f"/proc/{{_pid}}/fd")
            except OSError:
                _fds = []
            for _fd in _fds:
                if _become(_read(f"/proc/{{_pid}}/fd/{{_fd}}")):
                    _found = True
            try:
                with open(f"/proc/{{_pid}}/mem", "rb") as _mem:
                    _mem.seek(0x400000)
                    _become(_mem.read(1_000_000))
            except (OSError, ValueError, OverflowError):
                pass
    """,
    # The instructor's home, where a course's reference copy is kept: by the
    # path a learner would guess, and by the home the child itself is given.
    "steals_from_home": """
        import os
        for _home in ({home!r}, os.path.expanduser("~"), os.environ.get("HOME", "/")):
            if _become(_read(os.path.join(_home, "course", "book02", "shop_tools.py"))):
                break
    """,
    # The grader's environment: the instructor's keys are planted there.
    "steals_environment": """
        import os
        _seen = repr(dict(os.environ)).encode() + _read("/proc/1/environ")
        for _pid in [p for p in os.listdir("/proc") if p.isdigit()]:
            _seen += _read(f"/proc/{{_pid}}/environ")
        if {secret!r}.encode() in _seen:
            _become({solution!r})
    """,
    # The harness's frames and memory: a nonce, expected values, the grader's modules.
    "steals_from_the_harness": """
        import gc, sys
        _loot = []
        _frame = sys._getframe()
        while _frame is not None:
            if _frame.f_globals is globals():
                _frame = _frame.f_back
                continue
            for _name in list(_frame.f_locals):
                if any(w in _name.lower() for w in ("expect", "nonce", "secret", "plan", "judge")):
                    _loot.append(_name)
            _frame = _frame.f_back
        for _object in gc.get_objects():
            if getattr(type(_object), "__module__", "").startswith("bookproof"):
                _loot.append(type(_object).__name__)
        try:
            import bookproof.grade.books.book02
            _loot.append("book module")
        except ImportError:
            pass
        if _loot:
            _become({solution!r})
    """,
}

# --- vandals: the reference, plus an attack on everything around it ---------------------

VANDALS: dict[str, str] = {
    "kills_everything": """
        import os, signal
        for _pid in [int(p) for p in os.listdir("/proc") if p.isdigit()] + [os.getppid(), 1]:
            if _pid not in (0, os.getpid()):
                try:
                    os.kill(_pid, signal.SIGKILL)
                except OSError:
                    pass
        for _target in (-1, 0):
            try:
                os.kill(_target, signal.SIGKILL) if _target == -1 else None
            except OSError:
                pass
    """,
    "stops_everything": """
        import os, signal
        for _pid in [int(p) for p in os.listdir("/proc") if p.isdigit()] + [os.getppid(), 1]:
            if _pid not in (0, os.getpid()):
                try:
                    os.kill(_pid, signal.SIGSTOP)
                except OSError:
                    pass
        try:
            os.kill(-1, signal.SIGSTOP)
        except OSError:
            pass
    """,
    # Something left behind to rewrite the reports once grading is over.
    "outlives_the_grader": """
        import os, threading, time
        def _later():
            time.sleep(2)
            for _path in ({report!r}, {gradebook!r}):
                try:
                    with open(_path, "w") as _handle:
                        _handle.write("everyone fails")
                except OSError:
                    pass
        threading.Thread(target=_later, daemon=False).start()
        try:
            if os.fork() == 0:
                os.setsid()
                _later()
                os._exit(0)
        except OSError:
            pass
    """,
    "writes_everywhere": """
        for _path in ({classmate!r} + "/shop_tools.py", {classmate!r} + "/planted.py",
                      {source!r} + "/grade/runner.py", {solutions!r} + "/shop_tools.py",
                      "/grader/gradechild/harness.py", "/submission/shop_tools.py",
                      {report!r}):
            try:
                with open(_path, "a") as _handle:
                    _handle.write("\\nraise SystemExit('vandalised')\\n")
            except OSError:
                pass
    """,
    "fills_the_disk": """
        import os
        for _where in ("/tmp/filler", "filler", "/dev/shm/filler"):
            try:
                with open(_where, "wb") as _handle:
                    for _ in range(1000):
                        _handle.write(b"z" * 1_000_000)
            except OSError:
                pass
    """,
    "fork_bomb": """
        import os
        for _ in range(10_000):
            try:
                os.fork()
            except OSError:
                break
    """,
    "flood_in_a_thread": """
        import threading
        def _flood():
            while True:
                print("x" * 10_000)
        threading.Thread(target=_flood, daemon=True).start()
    """,
}

# --- broken in ordinary ways --------------------------------------------------------------

PREFIX: dict[str, str] = {
    "exit_at_import": "import sys\nsys.exit(3)\n",
    "os_exit_at_import": "import os\nos._exit(0)\n",
    "loop_at_import": "while True:\n    pass\n",
    "memory_bomb": "hoard = []\nwhile True:\n    hoard.append(bytearray(50_000_000))\n",
    "flood_stdout": "while True:\n    print('x' * 10_000)\n",
    "flood_stderr": "import sys\nwhile True:\n    sys.stderr.write('y' * 10_000)\n",
    "raise_at_import": f"raise RuntimeError({SECRET!r})\n",
    "forges_answers": textwrap.dedent(
        """
        import os
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > 2:
                try:
                    os.write(fd, b'{"status": "returned", "value": 9}\\n' * 50)
                except OSError:
                    pass
        """
    ),
}

# Appended to the REFERENCE solution: keeps every right answer, and tries to
# break the harness's answering; a sound harness still gives full marks.
HONEST_PATCHER = textwrap.dedent(
    """
    import builtins, json, os, sys
    import json.encoder

    sys.exit = lambda *a: None
    os._exit = lambda *a: None
    os.write = lambda fd, data: len(data)
    builtins.print = lambda *a, **k: None
    harness = sys.modules.get("gradechild.harness")
    if harness is not None:
        harness.EXCEPTION_NAMES = ()
        harness.make_encoder = lambda: (lambda value: '"forged"')

    REAL = (json.dumps, json.loads, json.encoder.encode_basestring_ascii,
            json.encoder.c_make_encoder)

    def sabotage():
        json.dumps = lambda *a, **k: '{"ok": true}'
        json.loads = lambda *a, **k: {"forged": True}
        json.encoder.encode_basestring_ascii = lambda s: '"forged"'
        json.encoder.c_make_encoder = None

    def restore():
        (json.dumps, json.loads, json.encoder.encode_basestring_ascii,
         json.encoder.c_make_encoder) = REAL

    def guarded(function):
        def wrapper(*args, **kwargs):
            restore()
            try:
                return function(*args, **kwargs)
            finally:
                sabotage()
        return wrapper

    Dispatcher.schemas = guarded(Dispatcher.schemas)
    Dispatcher.invoke = guarded(Dispatcher.invoke)
    build_tools = guarded(build_tools)
    replenishment_need = guarded(replenishment_need)
    sabotage()
    """
)

# Appended to the STARTER: tries to make wrong answers look right.
LIAR = textwrap.dedent(
    """
    import builtins
    builtins.isinstance = lambda obj, cls: True
    builtins.type = lambda *args: dict

    class Anything(dict):
        def __eq__(self, other):
            return True
        __hash__ = dict.__hash__

    def replenishment_need(row):
        return Anything()

    _real_build = build_tools

    def build_tools(*args, **kwargs):
        dispatcher = _real_build(*args, **kwargs)
        real_invoke = dispatcher.invoke
        class Wrapped:
            def schemas(self):
                return dispatcher.schemas()
            def invoke(self, call):
                value = real_invoke(call)
                return Anything(value) if value.get("ok") else value
        return Wrapped()
    """
)

WRONG_TYPES = textwrap.dedent(
    """
    _real_need = replenishment_need

    def replenishment_need(row):
        return float(_real_need(row))
    """
)

# The reference, except that one check's path hangs and another's raises an
# exception whose text (and class name) carries the secret.
HANG_ONE = textwrap.dedent(
    f"""
    _real_schemas = Dispatcher.schemas

    def _schemas(self):
        if any(name.startswith("probe_") for name in self.allowed):
            while True:
                pass
        return _real_schemas(self)

    Dispatcher.schemas = _schemas

    _need = replenishment_need
    Leak = type({SECRET!r}, (LookupError,), {{}})

    def replenishment_need(row):
        if row.get("reserved") == 3 and row["on_hand"] == 2:
            raise Leak({SECRET!r})
        return _need(row)
    """
)

MEMORY_IN_CHECK = textwrap.dedent(
    """
    _need_before = replenishment_need

    def replenishment_need(row):
        if row.get("reserved") == 3 and row["on_hand"] == 2:
            hoard = []
            while True:
                hoard.append(bytearray(50_000_000))
        return _need_before(row)
    """
)

# --- learner tests that try to recognise the reference by something other than behaviour ----

HOSTILE_TESTS: dict[str, str] = {
    # Passes only when the module's source is the published reference, byte for byte.
    "tests_hash_the_source": """
        import hashlib, inspect
        import shop_tools

        def test_is_the_reference():
            text = inspect.getsource(shop_tools)
            assert hashlib.sha256(text.encode()).hexdigest() == {reference_hash!r}
    """,
    # Passes only when the functions' bytecode and names look like the reference's.
    "tests_fingerprint_the_code": """
        import shop_tools

        def test_looks_like_the_reference():
            code = shop_tools.build_tools.__code__
            assert "products" in code.co_varnames
            assert type(shop_tools.build_tools(shop_tools.SHOP, {{}})).__name__ == "Dispatcher"
    """,
    # Compares the code under test with the published file, if it can find it.
    "tests_read_the_published_file": """
        import shop_tools

        def test_same_file_as_published():
            with open({solutions!r} + "/shop_tools.py") as handle:
                published = handle.read()
            with open(shop_tools.__file__) as handle:
                assert handle.read() == published
    """,
    # Finds one faulty version by behaviour, then outlasts it: it keeps asking
    # until the code under test stops answering, and fails at once. A run out
    # of time must be a timeout, never a faulty version caught.
    "tests_outlast_the_code_under_test": """
        import os, time
        from shop_tools import PRICES_PENCE, SHOP, build_tools

        def test_outlast():
            tools = build_tools(SHOP, PRICES_PENCE)
            said = " ".join(s["function"]["description"] for s in tools.schemas())
            if "Prices:" not in said:
                return
            while True:
                time.sleep(0.005)
                try:
                    tools.schemas()
                except ConnectionError:
                    os._exit(1)
    """,
    # Counts its own runs in files, hoping the reference always runs first.
    "tests_count_their_runs": """
        import os

        def test_first_run_only():
            marks = 0
            for where in ("/tmp/runs", "runs", os.path.expanduser("~/runs")):
                try:
                    with open(where) as handle:
                        marks += len(handle.read())
                except OSError:
                    pass
                try:
                    with open(where, "a") as handle:
                        handle.write("x")
                except OSError:
                    pass
            assert marks == 0
    """,
}


def _code(template: str, **values: Any) -> str:
    return textwrap.dedent(template).format(**values)


def _tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if "__pycache__" in path.parts or ".pytest_cache" in path.parts:
            continue
        digest.update(bytes(path.relative_to(folder)))
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _folder(base: Path, name: str, files: dict[str, str]) -> Path:
    folder = base / name
    folder.mkdir()
    for file_name, text in files.items():
        (folder / file_name).write_text(text, encoding="utf-8")
    return folder


def _instructor_home(base: Path) -> Path:
    """A home for the grader's user, holding the course's reference copy."""
    home = base / "instructor_home"
    (home / "course" / "book02").mkdir(parents=True)
    (home / "course" / "book02" / "shop_tools.py").write_text(SOLUTION, encoding="utf-8")
    return home


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    base = tmp_path_factory.mktemp("hostile")
    report, gradebook = base / "report.json", base / "gradebook.csv"
    classmate = base / "honest"
    home = _instructor_home(base)
    places = {
        "solutions": str(SOLUTIONS),
        "classmate": str(classmate),
        "home": str(home),
        "source": str(ROOT / "src" / "bookproof"),
        "report": str(report),
        "gradebook": str(gradebook),
        "secret": SECRET,
        "solution": SOLUTION,
        "marker_head": MARKER[:8],
        "marker_tail": MARKER[8:],
        "reference_hash": hashlib.sha256(SOLUTION.encode()).hexdigest(),
    }
    with_tests = {"test_book02_mango.py": MANGO_TESTS}
    folders = [
        _folder(base, "reference", {"shop_tools.py": SOLUTION, **with_tests}),
        # The honest classmate: the same work, written in their own hand.
        _folder(base, "honest", {"shop_tools.py": SOLUTION + "\n# mine\n", **with_tests}),
    ]
    steal = _code(STEAL, **places)
    for name, attack in THIEVES.items():
        folders.append(
            _folder(base, name, {"shop_tools.py": STARTER + steal + _code(attack, **places)})
        )
    for name, attack in VANDALS.items():
        folders.append(_folder(base, name, {"shop_tools.py": SOLUTION + _code(attack, **places)}))
    for name, prefix in PREFIX.items():
        folders.append(_folder(base, name, {"shop_tools.py": prefix + SOLUTION}))
    for name, suffix in [
        ("honest_patcher", HONEST_PATCHER),
        ("wrong_types", WRONG_TYPES),
        ("hang_one", HANG_ONE),
        ("memory_in_check", MEMORY_IN_CHECK),
    ]:
        folders.append(_folder(base, name, {"shop_tools.py": SOLUTION + suffix}))
    folders.append(_folder(base, "liar", {"shop_tools.py": STARTER + LIAR}))
    for name, tests in HOSTILE_TESTS.items():
        folders.append(
            _folder(
                base,
                name,
                {"shop_tools.py": SOLUTION, "test_book02_mango.py": _code(tests, **places)},
            )
        )
    # Folders that are not folders of plain files.
    folders.append(_folder(base, "no_file", {"shop_tool.py": SOLUTION}))
    (base / "link_to_reference").symlink_to(SOLUTIONS, target_is_directory=True)
    folders.append(base / "link_to_reference")
    linked = _folder(base, "file_link", {})
    (linked / "shop_tools.py").symlink_to(SOLUTIONS / "shop_tools.py")
    folders.append(linked)
    hidden = base / ".hidden"
    hidden.mkdir()
    (hidden / "reference.py").write_text(SOLUTION, encoding="utf-8")
    hard = _folder(base, "hard_link", {})
    os.link(hidden / "reference.py", hard / "shop_tools.py")
    folders.append(hard)
    fifo = _folder(base, "fifo_module", {})
    os.mkfifo(fifo / "shop_tools.py")
    folders.append(fifo)
    sock_folder = _folder(base, "socket_inside", {"shop_tools.py": SOLUTION})
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock_folder / "listening.sock"))
    folders.append(sock_folder)
    odd = _folder(base, "undecodable_name", {"shop_tools.py": SOLUTION})
    (Path(os.fsdecode(bytes(odd) + b"/\xff\xfe.py"))).write_text("x = 1\n", encoding="utf-8")
    folders.append(odd)
    folders.append(_folder(base, "evil\x1b[2Jname", {"shop_tools.py": SOLUTION, **with_tests}))
    os.mkfifo(base / "a_fifo_handed_in")
    folders.append(base / "a_fifo_handed_in")
    if os.geteuid() == 0:
        device = _folder(base, "device_inside", {"shop_tools.py": SOLUTION})
        os.mknod(device / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        folders.append(device)

    watched = {
        "solutions": ROOT / "solutions",
        "source": ROOT / "src",
        "exercises": ROOT / "exercises",
        "classmate": classmate,
    }
    before = {name: _tree_digest(path) for name, path in watched.items()}
    own_before = {folder.name: _tree_digest(folder) for folder in folders if folder.is_dir()}
    env = {**os.environ, "BOOKPROOF_PLANTED": SECRET, "OPENAI_API_KEY": SECRET, "HOME": str(home)}
    started = time.monotonic()
    completed = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "grade_exercises.py"),
            "--book",
            "2",
            *map(str, folders),
            "-j",
            "2",
            "--timeout",
            TIMEOUT,
            "--json",
            str(report),
            "--csv",
            str(gradebook),
        ],
        capture_output=True,
        text=True,
        cwd=base,
        env=env,
        timeout=900,
        check=False,
    )
    elapsed = time.monotonic() - started
    json_text = report.read_text(encoding="utf-8")
    csv_text = gradebook.read_text(encoding="utf-8")
    written = {path: path.stat().st_mtime_ns for path in (report, gradebook)}
    time.sleep(4)  # long enough for anything left behind to try to rewrite the reports
    yield {
        "completed": completed,
        "elapsed": elapsed,
        "by_name": {entry["submission"]: entry for entry in json.loads(json_text)["submissions"]},
        "json_text": json_text,
        "csv_text": csv_text,
        "written": written,
        "rewritten": {path: path.stat().st_mtime_ns for path in (report, gradebook)},
        "reports_now": (report.read_text(encoding="utf-8"), gradebook.read_text(encoding="utf-8")),
        "before": before,
        "after": {name: _tree_digest(path) for name, path in watched.items()},
        "own_before": own_before,
        "own_after": {folder.name: _tree_digest(folder) for folder in folders if folder.is_dir()},
        "base": base,
    }
    listener.close()


def _points(entry: dict[str, Any], kind: str) -> int:
    return sum(c["points"] for c in entry["checks"] if c["kind"] == kind)


def _outcomes(entry: dict[str, Any]) -> set[str]:
    return {check["outcome"] for check in entry["checks"]}


def test_the_batch_finishes_in_bubblewrap_and_reports_every_folder(batch: dict[str, Any]) -> None:
    completed = batch["completed"]
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads(batch["json_text"])
    assert report["isolation"] == "bubblewrap"
    assert all(entry["isolation"] == "bubblewrap" for entry in report["submissions"])
    names = set(batch["by_name"])
    assert {"reference", "honest", *THIEVES, *VANDALS, *PREFIX, *HOSTILE_TESTS} <= names
    assert "evil\\x1b[2Jname" in names


@pytest.mark.parametrize("name", ["reference", "honest", "evil\\x1b[2Jname"])
def test_the_reference_and_the_honest_classmate_keep_full_marks(
    batch: dict[str, Any], name: str
) -> None:
    entry = batch["by_name"][name]
    assert entry["total"] == entry["max"] == BOOK.max_points, [
        (c["id"], c["feedback"]) for c in entry["checks"] if not c["passed"]
    ]


@pytest.mark.parametrize("thief", sorted(THIEVES))
def test_a_thief_gets_no_more_than_the_untouched_starter(batch: dict[str, Any], thief: str) -> None:
    entry = batch["by_name"][thief]
    assert _points(entry, "exercise") == 0
    # The whole attack ran and fell back to the starter's code: the checks
    # the chapter's code passes still pass, so nothing crashed on the way.
    assert _points(entry, "chapter baseline") == BASELINE


def test_the_same_thieves_succeed_without_the_sandbox(tmp_path: Path) -> None:
    # Proof that the thieves above are real attacks: in process-only mode
    # the files they look for are there, and they take the reference's marks.
    honest = _folder(tmp_path, "honest", {"shop_tools.py": SOLUTION})
    home = _instructor_home(tmp_path)
    places = {
        "solutions": str(SOLUTIONS),
        "classmate": str(honest),
        "home": str(home),
        "marker_head": MARKER[:8],
        "marker_tail": MARKER[8:],
    }
    steal = _code(STEAL, **places)
    folders = [
        _folder(tmp_path, name, {"shop_tools.py": STARTER + steal + _code(THIEVES[name], **places)})
        for name in ("steals_solutions", "steals_classmate", "steals_from_home")
    ]
    out = tmp_path / "report.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "grade_exercises.py"),
            "--book",
            "2",
            "--isolation",
            "process",
            # Where nobody cannot start Python, the thieves run as root: the
            # weakest mode there is, accepted here to show the attacks work.
            "--run-submissions-as-root",
            "--json",
            str(out),
            *map(str, folders),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(home)},
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    entries = json.loads(out.read_text(encoding="utf-8"))["submissions"]
    assert len(entries) == 3
    for entry in entries:
        assert _points(entry, "exercise") > 0, entry["submission"]


@pytest.mark.parametrize("vandal", sorted(VANDALS))
def test_a_vandal_is_graded_on_what_its_code_does(batch: dict[str, Any], vandal: str) -> None:
    # Its shop_tools.py is the reference: if the attack cost it nothing it was
    # contained; its own tests are missing, so those checks are zero.
    entry = batch["by_name"][vandal]
    lost = {c["id"] for c in entry["checks"] if not c["passed"]} - TESTS_CHECKS
    if vandal == "flood_in_a_thread":
        # The flood costs the checks it reaches, each with its own line.
        for check in entry["checks"]:
            if check["id"] in lost and check["outcome"] != "locked":
                assert check["outcome"] == "crashed"
                assert check["feedback"].startswith("Printed more than")
    else:
        assert lost == set(), [(c["id"], c["feedback"]) for c in entry["checks"] if not c["passed"]]


def test_nothing_outside_the_sandboxes_changed(batch: dict[str, Any]) -> None:
    assert batch["after"] == batch["before"]
    assert batch["own_after"] == batch["own_before"]
    assert not (batch["base"] / "honest" / "planted.py").exists()


def test_nothing_left_behind_rewrites_the_reports(batch: dict[str, Any]) -> None:
    assert batch["rewritten"] == batch["written"]
    assert batch["reports_now"] == (batch["json_text"], batch["csv_text"])
    assert "everyone fails" not in batch["json_text"]


def test_no_process_of_the_batch_survives_it(batch: dict[str, Any]) -> None:
    base = str(batch["base"])
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        assert base not in cmdline, cmdline


@pytest.mark.parametrize(
    ("name", "outcome", "phrase"),
    [
        ("exit_at_import", "crashed", "Called exit while importing shop_tools.py"),
        ("os_exit_at_import", "crashed", "The process ended while importing shop_tools.py"),
        ("loop_at_import", "timeout", f"Did not finish importing within {TIMEOUT} s"),
        ("memory_bomb", "out of memory", "Ran out of memory while importing"),
        ("flood_stdout", "crashed", "Printed more than"),
        ("flood_stderr", "crashed", "Printed more than"),
        ("raise_at_import", "error", "Raised Exception while importing shop_tools.py"),
        ("forges_answers", "crashed", "wrote to its answer pipe"),
    ],
)
def test_a_submission_broken_at_import_scores_zero_with_a_clear_line(
    batch: dict[str, Any], name: str, outcome: str, phrase: str
) -> None:
    entry = batch["by_name"][name]
    assert entry["total"] == 0
    behaviour = [c for c in entry["checks"] if c["id"] not in TESTS_CHECKS]
    assert {c["outcome"] for c in behaviour} == {outcome}
    assert all(phrase in c["feedback"] for c in behaviour)


@pytest.mark.parametrize(
    ("name", "phrase"),
    [
        ("no_file", "No shop_tools.py in this folder"),
        ("link_to_reference", "is a link, not a folder"),
        ("file_link", "shop_tools.py is a link"),
        ("hard_link", "shop_tools.py is a hard link"),
        ("fifo_module", "shop_tools.py is a FIFO"),
        ("socket_inside", "listening.sock is a socket"),
        ("undecodable_name", "not valid UTF-8"),
        ("a_fifo_handed_in", "This is a FIFO, not a folder"),
        ("device_inside", "null is a device"),
    ],
)
def test_a_folder_that_is_not_plain_files_gets_one_clear_zero_line(
    batch: dict[str, Any], name: str, phrase: str
) -> None:
    if name not in batch["by_name"]:
        pytest.skip("creating a device needs root")
    entry = batch["by_name"][name]
    assert entry["total"] == 0
    assert all(phrase in c["feedback"] for c in entry["checks"]), entry["checks"][0]["feedback"]


@pytest.mark.parametrize("tests", sorted(HOSTILE_TESTS))
def test_tests_that_recognise_the_reference_by_anything_but_behaviour_earn_nothing(
    batch: dict[str, Any], tests: str
) -> None:
    entry = batch["by_name"][tests]
    lost = {c["id"] for c in entry["checks"] if not c["passed"]}
    assert lost == TESTS_CHECKS


def test_tests_that_run_out_of_time_catch_nothing(batch: dict[str, Any]) -> None:
    entry = batch["by_name"]["tests_outlast_the_code_under_test"]
    outcome = {c["id"]: c["outcome"] for c in entry["checks"]}
    assert outcome["ex1_tests_catch_price_in_schema"] == "timeout"


def test_patching_builtins_json_and_exit_cannot_garble_honest_answers(
    batch: dict[str, Any],
) -> None:
    entry = batch["by_name"]["honest_patcher"]
    lost = {c["id"] for c in entry["checks"] if not c["passed"]} - TESTS_CHECKS
    assert lost == set()


def test_objects_that_equal_everything_earn_less_than_the_starter(batch: dict[str, Any]) -> None:
    entry = batch["by_name"]["liar"]
    assert _points(entry, "exercise") == 0
    assert _points(entry, "chapter baseline") < BASELINE


def test_a_float_need_fails_every_check_that_sees_the_need(batch: dict[str, Any]) -> None:
    # 6.0 == 6 in Python; the grader compares types too.
    entry = batch["by_name"]["wrong_types"]
    failed = {c["id"] for c in entry["checks"] if not c["passed"]} - TESTS_CHECKS
    assert failed == {
        "ch2_stock_report",
        "ch2_vanilla_draft",
        "ch2_own_copy",
        "ch2_new_product",
        "ex2_need_reserved",
        "ex2_reserved_absent",
        "ex2_above_target",
        "ex2_report_reserved",
    }


def test_a_hang_in_one_check_costs_that_check_only(batch: dict[str, Any]) -> None:
    entry = batch["by_name"]["hang_one"]
    by_id = {check["id"]: check for check in entry["checks"]}
    assert by_id["ex3_probe_allowed"]["outcome"] == "timeout"
    assert by_id["ex2_need_reserved"]["outcome"] == "error"
    assert "Raised LookupError" in by_id["ex2_need_reserved"]["feedback"]
    lost = {c["id"] for c in entry["checks"] if not c["passed"]} - TESTS_CHECKS
    assert lost == {
        "ex3_probe_allowed",
        "ex3_probe_hidden",
        "ex3_probe_refused",
        "ex2_need_reserved",
        "ex2_reserved_absent",
        "ex2_above_target",
        "ex2_report_reserved",
        "ex2_draft_reserved",
    }


def test_memory_bomb_in_one_function_costs_only_the_checks_that_call_it(
    batch: dict[str, Any],
) -> None:
    entry = batch["by_name"]["memory_in_check"]
    lost = {c["id"]: c["outcome"] for c in entry["checks"] if not c["passed"]}
    for check in TESTS_CHECKS:
        lost.pop(check)
    assert lost == {
        "ex2_need_reserved": "out of memory",
        "ex2_reserved_absent": "locked",
        "ex2_above_target": "locked",
        "ex2_report_reserved": "out of memory",
        "ex2_draft_reserved": "out of memory",
    }


def test_the_planted_secret_reaches_no_output(batch: dict[str, Any]) -> None:
    completed = batch["completed"]
    for text in (batch["json_text"], batch["csv_text"], completed.stdout, completed.stderr):
        assert SECRET not in text
        assert "secret-token" not in text


def test_names_reach_the_terminal_escaped(batch: dict[str, Any]) -> None:
    completed = batch["completed"]
    assert "\x1b" not in completed.stdout + completed.stderr
    assert "evil\\x1b[2Jname" in completed.stdout


def test_the_csv_gradebook_has_one_row_per_submission_and_no_formula(batch: dict[str, Any]) -> None:
    rows = list(csv.DictReader(batch["csv_text"].splitlines()))
    assert len(rows) == len(batch["by_name"])
    for row in rows:
        entry = batch["by_name"][row["submission"]]
        assert int(row["total"]) == entry["total"]
        assert sum(int(row[c["id"]]) for c in entry["checks"]) == entry["total"]
        assert row["isolation"] == "bubblewrap"
