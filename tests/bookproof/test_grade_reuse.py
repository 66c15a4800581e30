"""Reusing runs of a learner's tests within a batch: identical inputs share, anything else never.

The grader runs a learner's test file once per distinct key (`reuse`) and
gives every identical folder of the batch the same verdicts. These tests
hold the key to everything a run can read: Hypothesis varies folders and
options and the digest must follow every change but the book's module
(which a run never sees); a real batch in bubblewrap grades pairs of folders
whose test files are byte for byte the same but whose other files (a
conftest.py, a helper module, a data file the tests read) differ, and a
test file one byte off, and each must get its own verdict; a folder that
differs from another in the module alone is reused, and says so.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from grading import grade_with_cli
from hypothesis import given
from hypothesis import strategies as st
from system_components import require_executable

from bookproof.grade.book import LearnerTests
from bookproof.grade.books import load_book
from bookproof.grade.reuse import Graded, Reuse, folder_digest, runs_key
from bookproof.grade.sandbox import Isolation, Limits
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
SOLUTIONS = ROOT / "solutions" / "book02"
SOLUTION = (SOLUTIONS / "shop_tools.py").read_text(encoding="utf-8")
MANGO = (SOLUTIONS / "test_book02_mango.py").read_text(encoding="utf-8")
MODULE = "shop_tools.py"
(MANGO_GROUP,) = load_book(2).groups()
GROUPS: list[LearnerTests] = [MANGO_GROUP, *load_book(6).groups()]
TESTS_CHECKS = {check.id for check in MANGO_GROUP.checks}

# --- the key, by Hypothesis --------------------------------------------------------------

# Paths of a small folder: none is both a file and a folder, so any choice is a tree.
PATHS = [
    MODULE,
    "test_book02_mango.py",
    "conftest.py",
    "mango_numbers.py",
    "expected.txt",
    "data/expected.txt",
    "data/more/deep.txt",
    "pkg/__init__.py",
]
OTHERS = [path for path in PATHS if path != MODULE]
trees = st.dictionaries(st.sampled_from(PATHS), st.binary(max_size=12), max_size=6)


def _written(tree: Mapping[str, bytes], modes: Mapping[str, int] | None = None) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="reuse-tree-"))
    for relative, data in tree.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, (modes or {}).get(relative, 0o644))
    return folder


def _digest(tree: Mapping[str, bytes], modes: Mapping[str, int] | None = None) -> str:
    folder = _written(tree, modes)
    try:
        return folder_digest(folder, MODULE)
    finally:
        for path in sorted(folder.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        folder.rmdir()


def _seen(tree: Mapping[str, bytes]) -> dict[str, bytes]:
    """What a run sees of a tree: all of it but the module, which becomes a stand-in."""
    return {path: data for path, data in tree.items() if path != MODULE}


@given(trees, trees)
def test_two_folders_share_a_digest_exactly_when_a_run_sees_the_same_bytes(
    first: dict[str, bytes], second: dict[str, bytes]
) -> None:
    same_view = _seen(first) == _seen(second)
    # Folders are what the files imply: the same files, the same folders.
    assert (_digest(first) == _digest(second)) is same_view


@given(trees, st.binary(max_size=12))
def test_the_module_alone_never_changes_the_digest(tree: dict[str, bytes], module: bytes) -> None:
    assert _digest(tree) == _digest({**tree, MODULE: module})


@given(
    trees.filter(lambda tree: any(path != MODULE for path in tree)),
    st.data(),
)
def test_any_change_a_run_could_see_changes_the_digest(
    tree: dict[str, bytes], data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(sorted(p for p in tree if p != MODULE)))
    how = data.draw(st.sampled_from(["one byte", "one more byte", "renamed", "gone", "mode"]))
    before = _digest(tree)
    changed = dict(tree)
    modes: dict[str, int] = {}
    if how == "one byte":
        if not tree[path]:
            changed[path] = b"\x00"
        else:
            at = data.draw(st.integers(0, len(tree[path]) - 1))
            flipped = bytearray(tree[path])
            flipped[at] ^= data.draw(st.integers(1, 255))
            changed[path] = bytes(flipped)
    elif how == "one more byte":
        changed[path] = tree[path] + b"\n"
    elif how == "renamed":
        target = data.draw(st.sampled_from([p for p in OTHERS if p not in tree]))
        changed[target] = changed.pop(path)
    elif how == "gone":
        del changed[path]
    else:
        modes[path] = 0o755
    assert _digest(changed, modes) != before


def test_names_and_contents_cannot_run_together() -> None:
    # Each name and each content is length-prefixed in the digest.
    assert _digest({"ab.txt": b"c"}) != _digest({"ab.tx": b"tc"})
    assert _digest({"a.txt": b"", "b.txt": b"x"}) != _digest({"a.txt": b"x", "b.txt": b""})
    # An empty folder is something a run can see too.
    empty = _written({})
    try:
        bare = folder_digest(empty, MODULE)
        (empty / "data").mkdir()
        assert folder_digest(empty, MODULE) != bare
        # The module's name inside a folder is an ordinary file: a run sees it.
        (empty / "data" / MODULE).write_text("x = 1\n", encoding="utf-8")
        with_nested = folder_digest(empty, MODULE)
        (empty / "data" / MODULE).write_text("x = 2\n", encoding="utf-8")
        assert folder_digest(empty, MODULE) != with_nested
    finally:
        for path in sorted(empty.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        empty.rmdir()


# Every input of a grading's key, each with values to choose from.
CHOICES: dict[str, list[Any]] = {
    "group": list(range(len(GROUPS))),
    "isolation": list(Isolation),
    "timeout": [10.0, 10.5, 20.0],
    "memory_bytes": [1024 * 1024 * 1024, 512 * 1024 * 1024],
    "output_bytes": [1024 * 1024, 1024 * 1024 + 1],
    "file_bytes": [8 * 1024 * 1024, 1024],
    "open_files": [256, 255],
    "tmp_bytes": [64 * 1024 * 1024, 1024],
    "seed": ["1:2", "2:2", "1:6", "11:2"],
    "one_sandbox_per_run": [False, True],
    "folder": ["0" * 64, "0" * 63 + "1"],
}
LIMITS = ("timeout", "memory_bytes", "output_bytes", "file_bytes", "open_files", "tmp_bytes")
settings_of_a_run = st.fixed_dictionaries(
    {name: st.sampled_from(values) for name, values in CHOICES.items()}
)


def _key(setting: Mapping[str, Any]) -> str:
    return runs_key(
        GROUPS[setting["group"]],
        setting["folder"],
        isolation=setting["isolation"],
        limits=Limits(**{name: setting[name] for name in LIMITS}),
        seed=setting["seed"],
        options={"one_sandbox_per_run": setting["one_sandbox_per_run"]},
    )


@given(settings_of_a_run, st.data())
def test_changing_any_one_input_changes_the_key(
    setting: dict[str, Any], data: st.DataObject
) -> None:
    assert _key(setting) == _key(dict(setting))
    name = data.draw(st.sampled_from(sorted(CHOICES)))
    other = data.draw(st.sampled_from([v for v in CHOICES[name] if v != setting[name]]))
    assert _key(setting) != _key({**setting, name: other})


@given(settings_of_a_run, settings_of_a_run)
def test_two_gradings_share_a_key_exactly_when_every_input_is_the_same(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    assert (_key(first) == _key(second)) is (first == second)


# --- the memo, with real threads -----------------------------------------------------------


def test_a_key_being_graded_is_waited_for_and_graded_once() -> None:
    reuse = Reuse({})
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow() -> Graded:
        calls.append("graded")
        started.set()
        release.wait(10)
        return Graded({"check": ("passed", "")}, 9)

    results: list[tuple[Graded, bool]] = []
    first = threading.Thread(target=lambda: results.append(reuse.graded("k", slow)))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: results.append(reuse.graded("k", slow)))
    second.start()
    time.sleep(0.2)
    assert len(results) == 0  # the second waits for the first instead of grading beside it
    release.set()
    first.join(10)
    second.join(10)
    assert calls == ["graded"]
    assert sorted(reused for _, reused in results) == [False, True]
    assert results[0][0] is results[1][0]
    assert (reuse.ran, reuse.reused) == (9, 9)
    # Another key is graded afresh.
    _, reused = reuse.graded("other", lambda: Graded({}, 3))
    assert (reused, reuse.ran, reuse.reused) == (False, 12, 9)


def test_a_grading_that_failed_is_never_reused() -> None:
    reuse = Reuse({})

    def broken() -> Graded:
        raise RuntimeError("the sandbox stopped")

    with pytest.raises(RuntimeError):
        reuse.graded("k", broken)
    graded, reused = reuse.graded("k", lambda: Graded({}, 2))
    assert (graded.runs, reused, reuse.ran, reuse.reused) == (2, False, 2, 0)


# --- a real batch, in bubblewrap ------------------------------------------------------------

CONFTEST_FAILS = (
    "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef _refuse():\n"
    "    raise AssertionError('every test of this folder errors')\n"
)
# The same test file in two folders: the number it expects comes from a helper module.
FROM_HELPER = MANGO.replace(
    "from shop_tools import SHOP, ToolCall, build_tools\n",
    "from mango_numbers import TOTAL\nfrom shop_tools import SHOP, ToolCall, build_tools\n",
).replace('"total_pence": 1300,', '"total_pence": TOTAL,')
# The same test file in two folders: the number it expects is read from a data file.
FROM_FILE = MANGO.replace(
    "from shop_tools import SHOP, ToolCall, build_tools\n",
    "from pathlib import Path\n\nfrom shop_tools import SHOP, ToolCall, build_tools\n\n"
    'TOTAL = int((Path(__file__).parent / "data" / "total.txt").read_text())\n',
).replace('"total_pence": 1300,', '"total_pence": TOTAL,')
assert FROM_HELPER.count("TOTAL") == 2 and FROM_FILE.count("TOTAL") == 2
ONE_BYTE_OFF = MANGO.replace('"total_pence": 1300,', '"total_pence": 1301,')
assert len(ONE_BYTE_OFF) == len(MANGO) and ONE_BYTE_OFF != MANGO

FOLDERS: dict[str, dict[str, str]] = {
    "reference": {MODULE: SOLUTION, "test_book02_mango.py": MANGO},
    # The module differs (a comment of the learner's), which no run of the tests sees.
    "same_tests": {MODULE: SOLUTION + "\n# my own copy\n", "test_book02_mango.py": MANGO},
    "conftest_fails": {
        MODULE: SOLUTION,
        "test_book02_mango.py": MANGO,
        "conftest.py": CONFTEST_FAILS,
    },
    "helper_right": {
        MODULE: SOLUTION,
        "test_book02_mango.py": FROM_HELPER,
        "mango_numbers.py": "TOTAL = 1300\n",
    },
    "helper_wrong": {
        MODULE: SOLUTION,
        "test_book02_mango.py": FROM_HELPER,
        "mango_numbers.py": "TOTAL = 1301\n",
    },
    "file_right": {MODULE: SOLUTION, "test_book02_mango.py": FROM_FILE, "data/total.txt": "1300"},
    "file_wrong": {MODULE: SOLUTION, "test_book02_mango.py": FROM_FILE, "data/total.txt": "1301"},
    "one_byte_off": {MODULE: SOLUTION, "test_book02_mango.py": ONE_BYTE_OFF},
}
KEEP_THE_TESTS_POINTS = {"reference", "same_tests", "helper_right", "file_right"}
SEED = "5"


def _grade(base: Path, names: list[str], *options: str) -> dict[str, Any]:
    out = base / f"report-{len(list(base.glob('report-*')))}.json"
    completed, text = grade_with_cli(
        2, [base / name for name in names], out, "--seed", SEED, *options
    )
    return {"stderr": completed.stderr, "report": json.loads(text)}


def _by_name(graded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["submission"]: entry for entry in graded["report"]["submissions"]}


def _outcomes(entry: dict[str, Any]) -> dict[str, str]:
    return {check["id"]: check["outcome"] for check in entry["checks"]}


@pytest.fixture(scope="module")
def batches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    base = tmp_path_factory.mktemp("reuse")
    for name, files in FOLDERS.items():
        for relative, text in files.items():
            path = base / name / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    reused = _grade(base, list(FOLDERS))
    fresh = _grade(base, ["reference", "same_tests", "conftest_fails"], "--no-reuse")
    yield {"reused": reused, "fresh": fresh}


@pytest.mark.slow
def test_folders_whose_tests_see_other_bytes_each_get_their_own_verdict(
    batches: dict[str, Any],
) -> None:
    entries = _by_name(batches["reused"])
    assert entries.keys() == FOLDERS.keys()
    for name, entry in entries.items():
        lost = {check["id"] for check in entry["checks"] if not check["passed"]}
        if name in KEEP_THE_TESTS_POINTS:
            assert entry["total"] == entry["max"], name
        else:
            # Each broke the tests against the correct module: every test check lost, and
            # nothing else (the module is the reference in every folder).
            assert lost == TESTS_CHECKS, name
            feedback = {check["feedback"] for check in entry["checks"] if check["id"] in lost}
            assert all("failed against a correct shop_tools.py" in text for text in feedback)


@pytest.mark.slow
def test_a_folder_whose_tests_see_the_same_bytes_reuses_the_runs_and_says_so(
    batches: dict[str, Any],
) -> None:
    graded = batches["reused"]
    entries = _by_name(graded)
    runs = {name: entry["test_runs"] for name, entry in entries.items()}
    full = MANGO_GROUP.reference_runs + len(MANGO_GROUP.versions())
    # The reference and the folder that differs in its module alone: one made the runs,
    # the other was given their verdicts; no other folder shares a key with any.
    pair = sorted((runs["reference"], runs["same_tests"]), key=lambda r: r["made"])
    assert pair == [{"made": 0, "reused": full}, {"made": full, "reused": 0}]
    for name in FOLDERS.keys() - {"reference", "same_tests"}:
        assert runs[name]["reused"] == 0 and runs[name]["made"] >= 1, name
    assert graded["report"]["reuse"] is True
    made = sum(run["made"] for run in runs.values())
    assert (
        f"grade-exercises: runs of learners' tests: {made} made, {full} reused from a folder"
        in graded["stderr"]
    )
    reused_name = "reference" if runs["reference"]["reused"] else "same_tests"
    assert f"{reused_name}: 40/40 (" in graded["stderr"]
    assert f"0 test runs, {full} reused from an identical folder)" in graded["stderr"]


@pytest.mark.slow
def test_no_reuse_runs_every_folder_and_grades_the_same(batches: dict[str, Any]) -> None:
    fresh, reused = _by_name(batches["fresh"]), _by_name(batches["reused"])
    full = MANGO_GROUP.reference_runs + len(MANGO_GROUP.versions())
    assert batches["fresh"]["report"]["reuse"] is False
    for name, entry in fresh.items():
        assert entry["test_runs"]["reused"] == 0, name
        # The same seed, the same grades, whether the runs were made or reused.
        assert _outcomes(entry) == _outcomes(reused[name]), name
        assert entry["total"] == reused[name]["total"], name
    assert (
        fresh["reference"]["test_runs"]
        == fresh["same_tests"]["test_runs"]
        == {
            "made": full,
            "reused": 0,
        }
    )
    assert "none reused (--no-reuse)" in batches["fresh"]["stderr"]
