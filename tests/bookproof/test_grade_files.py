"""The grader's own folders for a check: made from a description, outside the submission's reach.

A check yields `folder(tree)` before its first question; the grader makes the
folder on its side and the submission's sandbox shows it read-only. Tested
here: the description becomes exactly that folder (and a hostile description
becomes nothing outside its place); a submission sees the real thing (FIFOs,
links out to a real secret, sparse files, undecodable names) and only its
path, never the description, however it searches its process and sandbox;
it can change nothing of it; and a learner's tests' folder crosses to the
code under test the same way.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import socket
import stat
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from grading import LEAK_HUNT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strength import examples
from system_components import require_executable

from bookproof.grade.book import JSON, Book, LearnerTests, Surface, Trial
from bookproof.grade.child.stand_in import pack
from bookproof.grade.files import Fifo, FilesError, Link, Sparse, Tree, describe, materialise
from bookproof.grade.oracle import serve
from bookproof.grade.questions import Answer, call, expect, folder
from bookproof.grade.runner import _HandIn, _run_trial, grade_submission, prepare
from bookproof.grade.sandbox import Isolation, Limits, root_children_accepted

# These checks read no handed-in data file.
NOTHING_HANDED_IN = _HandIn(Path("/nonexistent"), ())

SECRET = "secret-token-files-5c1e"


# --- the description and the folder ---------------------------------------------------


def _read_back(path: Path) -> dict[str, Any]:
    """What a folder holds, judged by lstat alone: nothing is followed, no FIFO opened."""
    found: dict[str, Any] = {}
    with os.scandir(path) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                found[entry.name] = _read_back(Path(entry.path))
            elif stat.S_ISLNK(info.st_mode):
                found[entry.name] = Link(os.readlink(entry.path))
            elif stat.S_ISFIFO(info.st_mode):
                found[entry.name] = Fifo()
            elif info.st_blocks * 512 < info.st_size:
                found[entry.name] = Sparse(info.st_size)
            else:
                found[entry.name] = Path(entry.path).read_bytes()
    return found


def _expected(tree: Tree) -> dict[str, Any]:
    """`tree` as `_read_back` sees it once made: text as bytes, relative links as written."""
    out: dict[str, Any] = {}
    for name, entry in tree.items():
        if isinstance(entry, str):
            out[name] = entry.encode("utf-8")
        elif isinstance(entry, dict):
            out[name] = _expected(entry)
        else:
            out[name] = entry
    return out


names = st.text(
    alphabet=st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=20,
).filter(lambda name: name not in (".", "..") and len(os.fsencode(name)) <= 255)
# A byte that is not UTF-8, as Python reads it back from the disk.
undecodable = st.sampled_from(["\udcff", "\udce9.md", "a\udc80b"])
entries = st.recursive(
    st.text(max_size=50)
    | st.binary(max_size=50)
    | st.builds(Link, st.sampled_from(["../secret.txt", "a", "..", "/etc/passwd", "x/y/z"]))
    | st.just(Fifo())
    | st.builds(Sparse, st.integers(10_000, 10_000_000)),
    lambda children: st.dictionaries(names | undecodable, children, max_size=4),
    max_leaves=15,
)
trees = st.dictionaries(names | undecodable, entries, max_size=5)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=examples(60))
@given(tree=trees)
def test_a_description_becomes_exactly_that_folder(tmp_path_factory: Any, tree: Tree) -> None:
    at = tmp_path_factory.mktemp("made") / "f0"
    materialise(json.loads(json.dumps(describe(tree, seen_at=str(at)))), at)
    assert _read_back(at) == _expected(tree)


def test_an_absolute_link_leads_where_the_sandbox_sees_the_folder(tmp_path: Path) -> None:
    tree = {"notes": {"out.md": Link("secret.txt", absolute=True)}, "secret.txt": SECRET}
    materialise(describe(tree, seen_at="/files/f3"), tmp_path / "f3")
    assert os.readlink(tmp_path / "f3" / "notes" / "out.md") == "/files/f3/secret.txt"


hostile_names = (
    st.sampled_from(["..", ".", "", "a/b", "../escape", "/etc", "x\0y", "\ud800", "n" * 300])
    | names
)
hostile = st.recursive(
    st.dictionaries(
        st.sampled_from(["file", "link", "fifo", "sparse", "folder", "device"]),
        st.none() | st.booleans() | st.integers(-5, 1 << 40) | st.text(max_size=10),
        min_size=1,
        max_size=2,
    ),
    lambda children: st.builds(
        lambda inner: {"folder": inner}, st.dictionaries(hostile_names, children, max_size=4)
    ),
    max_leaves=12,
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=examples(150))
@given(description=hostile)
def test_a_hostile_description_makes_nothing_outside_its_folder(
    tmp_path_factory: Any, description: Any
) -> None:
    parent = tmp_path_factory.mktemp("hostile")
    (parent / "beside.txt").write_text("beside\n", encoding="utf-8")
    with contextlib.suppress(FilesError, OSError):
        materialise(description, parent / "made")
    assert sorted(os.listdir(parent)) in (["beside.txt"], ["beside.txt", "made"])
    assert (parent / "beside.txt").read_text(encoding="utf-8") == "beside\n"


def test_a_learners_folder_crosses_whole_links_fifos_and_odd_names_included(
    tmp_path: Path,
) -> None:
    source = tmp_path / "learner"
    (source / "skills" / "a-b").mkdir(parents=True)
    (source / "skills" / "a-b" / "SKILL.md").write_text("---\nname: a-b\n", encoding="utf-8")
    (source / "secret.txt").write_text(SECRET, encoding="utf-8")
    (source / "skills" / "out").symlink_to(source / "secret.txt")
    os.mkfifo(source / "skills" / "inbox")
    (source / os.fsdecode(b"\xff.md")).write_bytes(b"\x00\x01")
    copy = tmp_path / "copy"
    materialise(json.loads(json.dumps(pack(str(source)))), copy)
    assert _read_back(copy) == _read_back(source)


def test_a_learners_folder_too_large_to_cross_is_refused_with_a_clear_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "big.bin").write_bytes(b"x" * (3 * 1024 * 1024))
    with pytest.raises(OSError) as caught:
        pack(str(tmp_path))
    assert caught.value.errno == errno.EFBIG


# --- the learner's tests' folder, served ---------------------------------------------------


def test_the_code_under_test_sees_the_tests_folder_at_the_same_path(tmp_path: Path) -> None:
    source = tmp_path / "tests-tmp"
    (source / "notes").mkdir(parents=True)
    (source / "notes" / "a.md").write_text("A\n", encoding="utf-8")
    (source / "notes" / "link").symlink_to("a.md")
    scratch = tmp_path / "served"
    group = LearnerTests(
        Book(99, "t", module="m", chapter="Chapter 99"),
        1,
        "test_x.py",
        "s",
        Surface(functions={"look": JSON}, files=True),
    )

    def look(path: str) -> Any:
        return sorted(os.listdir(path)), os.readlink(f"{path}/link")

    ours, theirs = socket.socketpair()
    server = threading.Thread(
        target=serve, args=(theirs, group, {"look": look}, {}), kwargs={"scratch": scratch}
    )
    server.start()
    try:
        request = {
            "call": "look",
            "args": [str(scratch / "notes")],
            "kwargs": {},
            "files": pack(str(source)),
        }
        ours.sendall((json.dumps(request) + "\n").encode())
        reply = json.loads(ours.makefile().readline())
        assert reply == {"status": "returned", "value": [["a.md", "link"], "a.md"]}
        # A description that would lead a write elsewhere is the request's failure.
        request["files"] = {"folder": {"../escape": {"file": ""}}}
        ours.sendall((json.dumps(request) + "\n").encode())
        assert json.loads(ours.makefile().readline())["status"] == "raised"
        assert not (tmp_path / "escape").exists()
    finally:
        ours.close()
        server.join(timeout=10)


# --- in the sandbox ----------------------------------------------------------------------

SPY = (
    textwrap.dedent(
        """
        import os
        import re

        def kinds(path):
            found = {}
            for where, folders, files in os.walk(path):
                for name in folders + files:
                    full = os.path.join(where, name)
                    info = os.lstat(full)
                    key = os.path.relpath(full, path).encode("utf-8", "surrogateescape").hex()
                    if os.path.islink(full):
                        found[key] = ["link", os.readlink(full), os.path.exists(full)]
                    elif os.path.isdir(full):
                        found[key] = ["folder"]
                    elif (info.st_mode & 0o170000) == 0o010000:
                        found[key] = ["fifo"]
                    else:
                        found[key] = ["file", info.st_size]
            return found

        def read(path):
            with open(path, encoding="utf-8") as handle:
                return handle.read()

        def tamper(path):
            attempts = {
                "append": lambda: open(os.path.join(path, "note.md"), "a").write("x"),
                "remove": lambda: os.remove(os.path.join(path, "note.md")),
                "create": lambda: open(os.path.join(path, "new.md"), "x").close(),
                "mkdir": lambda: os.mkdir(os.path.join(path, "new")),
                "rename": lambda: os.rename(os.path.join(path, "note.md"), path + "/moved"),
                "chmod": lambda: os.chmod(os.path.join(path, "note.md"), 0o777),
                "relink": lambda: os.symlink("/", os.path.join(path, "root")),
                "truncate": lambda: os.truncate(os.path.join(path, "note.md"), 0),
            }
            done = []
            for name, attempt in attempts.items():
                try:
                    attempt()
                    done.append(name)
                except OSError:
                    pass
            return done

        def hunt(path, *carried):
            pattern = re.compile("se" + "cret-token-[a-z0-9]{12}")
            texts = everything_but_the_files(path)
            return sorted({match for text in texts for match in pattern.findall(text)})
        """
    )
    + LEAK_HUNT
)


def _marker(rng: random.Random) -> str:
    return "secret-token-" + "".join(rng.choice("abcdefghij0123456789") for _ in range(12))


def _tree(marker: str) -> dict[str, Any]:
    return {
        "docs": {
            "note.md": f"{marker}\n",
            "out.md": Link("../secret.txt"),
            "abs.md": Link("secret.txt", absolute=True),
            "inbox": Fifo(),
            "huge.md": Sparse(50_000_000),
            "\udcff.md": "odd\n",
        },
        "secret.txt": f"{marker}\n",
    }


def _spy_book() -> Book:
    book = Book(97, "Files", module="spy", chapter="Chapter 97")
    check = book.baseline(points=1, section="s", asks="a", hint="h")

    @check
    def sees_the_folder_as_made(rng: random.Random) -> Trial:
        marker = _marker(rng)
        base = yield folder(_tree(marker))
        seen = yield call("kinds", f"{base}/docs")
        text = yield call("read", f"{base}/docs/out.md")
        hexed = {name.encode("utf-8", "surrogateescape").hex() for name in _tree(marker)["docs"]}
        return expect(
            set(seen) == hexed
            and seen[b"inbox".hex()] == ["fifo"]
            and seen[b"huge.md".hex()] == ["file", 50_000_000]
            and seen[b"out.md".hex()] == ["link", "../secret.txt", True]
            and seen[b"abs.md".hex()] == ["link", f"{base}/secret.txt", True]
            and text == f"{marker}\n",
            "not as made",
        )

    @check
    def finds_what_a_question_carries(rng: random.Random) -> Trial:
        marker = _marker(rng)
        base = yield folder({"docs": {"note.md": "plain\n"}})
        found = yield call("hunt", f"{base}/docs", marker)
        return expect(marker in found, "the hunt found nothing it was handed")

    @check
    def never_finds_the_description(rng: random.Random) -> Trial:
        marker = _marker(rng)
        base = yield folder(_tree(marker))
        found = yield call("hunt", f"{base}/docs")
        return expect(marker not in found, "the description reached the sandbox")

    @check
    def changes_nothing_of_it(rng: random.Random) -> Trial:
        marker = _marker(rng)
        base = yield folder(_tree(marker))
        before = yield call("kinds", f"{base}/docs")
        done = yield call("tamper", f"{base}/docs")
        after = yield call("kinds", f"{base}/docs")
        text = yield call("read", f"{base}/docs/note.md")
        return expect(
            done == [] and after == before and text == f"{marker}\n", "the folder changed"
        )

    return book


@pytest.fixture
def spy_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "spy"
    folder.mkdir()
    (folder / "spy.py").write_text(SPY, encoding="utf-8")
    return folder


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The grader's temporary folders go here, to see that none is left behind."""
    where = tmp_path / "grader-tmp"
    where.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(where))
    yield where


def test_in_bubblewrap_a_submission_sees_the_folder_only_by_its_path_and_cannot_change_it(
    spy_folder: Path, own_tmp: Path
) -> None:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    before = {path: path.read_bytes() for path in spy_folder.parent.rglob("*") if path.is_file()}
    report = grade_submission(
        spy_folder,
        _spy_book(),
        isolation=Isolation.BUBBLEWRAP,
        limits=Limits(timeout=30),
        seed=random.randrange(10**6),
        name="spy",
    )
    assert {check.id: check.outcome for check in report.checks} == {
        "sees_the_folder_as_made": "passed",
        "finds_what_a_question_carries": "passed",
        "never_finds_the_description": "passed",
        "changes_nothing_of_it": "passed",
    }
    # Nothing outside the sandbox changed, and the grader's folders are gone.
    after = {path: path.read_bytes() for path in spy_folder.parent.rglob("*") if path.is_file()}
    assert after == before
    assert os.listdir(own_tmp) == []


def test_in_process_mode_the_folder_is_the_same_and_is_removed_after(
    spy_folder: Path, own_tmp: Path
) -> None:
    book = _spy_book()
    book.checks[:] = [check for check in book.checks if check.id == "sees_the_folder_as_made"]
    # Our own spy: where nobody cannot start Python, it may run as root.
    with root_children_accepted():
        report = grade_submission(
            spy_folder,
            book,
            isolation=Isolation.PROCESS,
            limits=Limits(timeout=30),
            seed=3,
            name="spy",
        )
    assert [check.outcome for check in report.checks] == ["passed"]
    assert os.listdir(own_tmp) == []


# --- how a check must ask ------------------------------------------------------------------


class RecordingSession:
    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []

    def begin(self) -> None:
        pass

    def ask(self, op: dict[str, Any]) -> Answer:
        self.ops.append(op)
        return Answer("returned", None)


def test_only_the_path_is_ever_asked_and_the_folder_is_made_before_any_question() -> None:
    book = Book(96, "t", module="m", chapter="Chapter 96")
    made: list[Tree] = []

    @book.baseline(points=1, section="s", asks="a", hint="h")
    def asks_about_a_folder(rng: random.Random) -> Trial:
        path = yield folder({"note.md": SECRET})
        yield call("look", path)
        return None

    prepared = prepare(
        asks_about_a_folder, random.Random(0), lambda request: made.append(request.tree) or "/f0"
    )
    assert made == [{"note.md": SECRET}]
    session = RecordingSession()
    outcome = _run_trial(asks_about_a_folder, session, prepared, NOTHING_HANDED_IN)  # type: ignore[arg-type]
    assert outcome.outcome == "passed"
    assert session.ops == [{"op": "call", "fn": "look", "args": ["/f0"], "kwargs": {}}]


def test_a_folder_asked_for_after_a_question_is_a_defect_of_the_book() -> None:
    book = Book(96, "t", module="m", chapter="Chapter 96")

    @book.baseline(points=1, section="s", asks="a", hint="h")
    def too_late(rng: random.Random) -> Trial:
        yield call("look")
        yield folder({"note.md": "x"})
        return None

    prepared = prepare(too_late, random.Random(0), lambda request: "/f0")
    with pytest.raises(TypeError, match="after its first question"):
        _run_trial(too_late, RecordingSession(), prepared, NOTHING_HANDED_IN)  # type: ignore[arg-type]
