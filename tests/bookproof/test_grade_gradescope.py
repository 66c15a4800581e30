"""Gradescope: the results.json the grader writes, and the autograder zip that produces it there.

The shape is the one Gradescope documents for results.json (a score; tests
with name, score, max_score, output, visibility), held here field by field.
The zip is unpacked the way Gradescope unpacks it and its run_autograder is
run for real, with the project installed from the lock file.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from committed import EXERCISES
from system_components import require_executable

from bookproof.grade.books import load_book
from bookproof.grade.gradescope import (
    build_autograder,
    hand_in,
    run_autograder,
    run_setup,
    unpack,
)
from bookproof.grade.sandbox import unprivileged_problem
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
SOLUTIONS = ROOT / "solutions" / "book02"
BOOK = load_book(2)
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
# setup.sh installs from uv's cache: a test needs no network.
OFFLINE = {"UV_OFFLINE": "1"}


def assert_results_shape(results: dict[str, Any]) -> None:
    """Gradescope's documented results.json, as far as we write it."""
    assert set(results) <= {
        "score",
        "execution_time",
        "output",
        "visibility",
        "stdout_visibility",
        "extra_data",
        "tests",
        "leaderboard",
    }
    assert isinstance(results["score"], int | float)
    assert isinstance(results.get("execution_time", 0), int)
    assert isinstance(results.get("output", ""), str)
    assert results.get("visibility", "visible") in VISIBILITY
    assert results.get("stdout_visibility", "hidden") in VISIBILITY
    assert isinstance(results["tests"], list)
    for test in results["tests"]:
        assert {"name", "output", "visibility"} <= set(test)
        if "score" not in test:
            # A locked check: neither passed nor failed, so Gradescope shows it
            # without a colour (no status, no score, no max_score).
            assert not {"max_score", "status"} & set(test)
            assert "locked" in test["name"]
            continue
        assert {"score", "max_score"} <= set(test)
        assert set(test) <= {
            "name",
            "number",
            "score",
            "max_score",
            "status",
            "output",
            "tags",
            "visibility",
            "name_format",
            "output_format",
            "extra_data",
        }
        assert isinstance(test["name"], str) and test["name"]
        assert isinstance(test["score"], int | float)
        assert isinstance(test["max_score"], int | float)
        assert 0 <= test["score"] <= test["max_score"]
        assert isinstance(test["output"], str)
        assert test["visibility"] in VISIBILITY
        assert test.get("status", "passed") in {"passed", "failed"}
    if results["tests"]:
        assert results["score"] == sum(test.get("score", 0) for test in results["tests"])


def _grade(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "grade_exercises.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_gradescope_results_have_the_documented_shape_and_the_grade(tmp_path: Path) -> None:
    completed = _grade(
        "--book",
        "2",
        "--isolation",
        "process",
        "--run-submissions-as-root",
        "--gradescope",
        str(tmp_path),
        str(SOLUTIONS),
    )
    assert completed.returncode == 0, completed.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert_results_shape(results)
    assert results["score"] == BOOK.max_points
    assert [test["name"].split(" ")[0] for test in results["tests"]] == [
        check.id for check in BOOK.checks
    ]
    assert "process" in results["output"]


def test_gradescope_results_say_what_failed_and_where_to_read(tmp_path: Path) -> None:
    starter = EXERCISES / "book02"
    completed = _grade(
        "--book",
        "2",
        "--isolation",
        "process",
        "--run-submissions-as-root",
        "--gradescope",
        str(tmp_path),
        str(starter),
    )
    assert completed.returncode == 0, completed.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert_results_shape(results)
    failed = [test for test in results["tests"] if test.get("status") == "failed"]
    assert failed
    assert all("Re-read Chapter 2" in test["output"] for test in failed)
    assert all("def " not in test["output"] for test in results["tests"])


def test_gradescope_takes_exactly_one_submission(tmp_path: Path) -> None:
    completed = _grade(
        "--book",
        "2",
        "--gradescope",
        str(tmp_path),
        str(SOLUTIONS),
        str(EXERCISES / "book02"),
    )
    assert completed.returncode == 2
    assert "exactly one submission" in completed.stderr


def test_the_zip_holds_the_two_scripts_at_its_root_and_only_what_grading_needs(
    tmp_path: Path,
) -> None:
    out = tmp_path / "autograder.zip"
    build_autograder(ROOT, BOOK, out)
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
    assert names[:2] == ["setup.sh", "run_autograder"]
    for script in ("setup.sh", "run_autograder"):
        assert modes[script] & stat.S_IXUSR
    assert "solutions/book02/shop_tools.py" in names
    assert not any(name.startswith(("tests/", "exercises/", "book/")) for name in names)
    assert not any("test_book02" in name or "__pycache__" in name for name in names)
    assert not any(name.startswith("solutions/") and "book02" not in name for name in names)
    # The same sources give the same bytes: an instructor can tell two builds apart.
    again = tmp_path / "again.zip"
    build_autograder(ROOT, BOOK, again)
    assert again.read_bytes() == out.read_bytes()


@pytest.fixture(scope="module")
def autograder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The zip unpacked as Gradescope does, after its own setup.sh ran (from uv's cache)."""
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    root = tmp_path_factory.mktemp("autograder")
    out = root / "autograder.zip"
    build_autograder(ROOT, BOOK, out)
    unpack(out, root)
    setup = run_setup(root, OFFLINE)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    return root


def _run_autograder(
    root: Path, files: dict[str, Path], path: str | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    submission = root.parent / "handed-in"
    shutil.rmtree(submission, ignore_errors=True)
    submission.mkdir()
    for name, source in files.items():
        shutil.copyfile(source, submission / name)
    hand_in(submission, root)
    completed, results = run_autograder(root, {"PATH": path} if path is not None else None)
    if results is not None:
        assert_results_shape(results)
    return completed, results


def test_run_autograder_grades_the_reference_with_full_marks(autograder: Path) -> None:
    completed, results = _run_autograder(
        autograder,
        {
            "shop_tools.py": SOLUTIONS / "shop_tools.py",
            "test_book02_mango.py": SOLUTIONS / "test_book02_mango.py",
        },
    )
    assert completed.returncode == 0, completed.stdout
    assert results is not None
    assert results["score"] == BOOK.max_points
    assert "bubblewrap" in results["output"]


def test_run_autograder_that_cannot_isolate_records_no_score_and_says_why(
    autograder: Path, tmp_path: Path
) -> None:
    # A bwrap that cannot make a sandbox, first on the PATH: as in a container
    # that refuses user namespaces. Where the interpreter lives under a 0700
    # /root, the user nobody cannot start it either: no isolation is left.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text(
        "#!/bin/sh\necho 'No permissions to create new namespace' >&2\nexit 1\n"
    )
    os.chmod(fake / "bwrap", 0o755)
    completed, results = _run_autograder(
        autograder,
        {"shop_tools.py": SOLUTIONS / "shop_tools.py"},
        path=f"{fake}{os.pathsep}{os.environ['PATH']}",
    )
    if unprivileged_problem() is None:
        # This machine lets nobody start the interpreter: the fallback grades.
        assert results is not None and "unprivileged user" in results["output"]
        return
    # No results.json at all: Gradescope's "autograder failed", never a 0.
    assert results is None
    assert completed.returncode != 0
    assert "refusing to grade" in completed.stdout
    assert "no grade recorded" in completed.stdout


def test_each_check_carries_its_declared_visibility_and_a_locked_check_no_colour(
    tmp_path: Path,
) -> None:
    starter = EXERCISES / "book02"
    completed = _grade(
        "--book",
        "2",
        "--isolation",
        "process",
        "--run-submissions-as-root",
        "--gradescope",
        str(tmp_path),
        str(starter),
    )
    assert completed.returncode == 0, completed.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert_results_shape(results)
    declared = {check.id: check.visibility for check in BOOK.checks}
    shown = {test["name"].split(" ")[0]: test["visibility"] for test in results["tests"]}
    assert shown == declared
    # Book 2 defers Unit A's faulty versions, but for mango's own price.
    assert shown["ex1_tests_catch_stale_price"] == "after_due_date"
    assert shown["ex1_tests_catch_new_product_price"] == "visible"
    # The learner is told why the visible tests add up to less than the score.
    assert "5 checks worth 5 points are shown after the due date" in results["output"]
    # The starter's ex2_reserved_absent holds but waits for ex2_need_reserved.
    locked = {test["name"].split(" ")[0]: test for test in results["tests"] if "score" not in test}
    assert "ex2_reserved_absent" in locked
    assert "status" not in locked["ex2_reserved_absent"]
    assert "ex2_need_reserved" in locked["ex2_reserved_absent"]["output"]
    assert not any(test.get("status") == "failed" for test in locked.values())


# --- what the zip installs, and trying it here before uploading ---------------------

# Development tools the autograder's image must not carry: they are hundreds of
# megabytes, and grading needs none of them.
NOT_FOR_GRADING = (
    "sphinx",
    "playwright",
    "mypy",
    "openai",
    "anthropic",
    "matplotlib",
    "jupyterlab",
)


def test_the_autograder_installs_the_grading_group_and_no_development_tool(
    autograder: Path,
) -> None:
    setup = (autograder / "source" / "setup.sh").read_text()
    assert "uv sync --locked --no-default-groups --group grading" in setup
    (site,) = (autograder / "source" / ".venv" / "lib").glob("python3.*/site-packages")
    installed = {path.name.lower() for path in site.iterdir()}
    for needed in ("pytest", "hypothesis", "pydantic", "yaml"):
        assert needed in installed
    for unwanted in NOT_FOR_GRADING:
        assert not any(name.startswith(unwanted) for name in installed), unwanted
    python = autograder / "source" / ".venv" / "bin" / "python"
    probe = (
        "import importlib.util as u; "
        "print([m for m in ('sphinx', 'playwright', 'mypy') if u.find_spec(m)])"
    )
    found = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


def _try(folder: Path, workdir: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    completed = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "build_gradescope_autograder.py"),
            "--book",
            "2",
            "--try",
            str(folder),
            "--workdir",
            str(workdir),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, **OFFLINE},
    )
    assert completed.returncode == 0, completed.stderr
    results: dict[str, Any] = json.loads(completed.stdout)
    assert_results_shape(results)
    return completed, results


def _learner_sees(results: dict[str, Any]) -> set[str]:
    """The tests Gradescope shows a learner before the due date: the visible ones."""
    return {
        test["name"].split(" ")[0] for test in results["tests"] if test["visibility"] == "visible"
    }


# A hand-in that tries to take the reference's marks and forge its grade: it
# runs the reference as its own, writes results.json itself, and plants a
# module in the runtime every later submission imports.
THIEF = """
import glob as _glob
for _path in _glob.glob("WORKDIR/source/solutions/**/*.py", recursive=True):
    try:
        exec(compile(open(_path, encoding="utf-8").read(), _path, "exec"), globals())
    except OSError:
        pass
for _path, _text in [
    ("WORKDIR/results/results.json", '{"score": 1000, "tests": []}'),
    ("WORKDIR/source/src/sovereign_agent/planted_by_submission.py", "X = 1\\n"),
]:
    try:
        open(_path, "w", encoding="utf-8").write(_text)
    except OSError:
        pass
"""


@pytest.mark.slow
def test_try_runs_the_zip_here_as_gradescope_would(tmp_path: Path) -> None:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    deferred = {check.id for check in BOOK.checks if check.visibility != "visible"}
    assert deferred

    completed, reference = _try(SOLUTIONS, tmp_path / "reference")
    assert reference["score"] == BOOK.max_points
    assert "bubblewrap" in reference["output"]
    everything = {test["name"].split(" ")[0] for test in reference["tests"]}
    assert deferred <= everything
    assert not deferred & _learner_sees(reference)
    assert f"{len(deferred)} of {len(BOOK.checks)} tests are not shown" in completed.stderr

    baseline = sum(check.points for check in BOOK.checks if check.kind == "chapter baseline")
    _, starter = _try(EXERCISES / "book02", tmp_path / "starter")
    assert starter["score"] == baseline

    hostile = tmp_path / "hostile"
    hostile.mkdir()
    workdir = tmp_path / "hostile-run"
    thief = THIEF.replace("WORKDIR", str(workdir))
    starter_code = (EXERCISES / "book02" / "shop_tools.py").read_text()
    (hostile / "shop_tools.py").write_text(starter_code + thief)
    _, forged = _try(hostile, workdir)
    assert forged["score"] <= baseline  # not 1000: the grader wrote results.json
    assert [test["name"].split(" ")[0] for test in forged["tests"]] == [
        check.id for check in BOOK.checks
    ]
    assert not (
        workdir / "source" / "src" / "sovereign_agent" / "planted_by_submission.py"
    ).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --out (the zip to write), --try FOLDER, or both"),
        (["--try", "solutions/book02/shop_tools.py"], "--try needs a folder"),
        (["--out", "a.zip", "--workdir", "w"], "--workdir goes with --try"),
        (["--try", "solutions/book02", "--workdir", "README.md"], "must be a new or empty folder"),
        (["--out", "nowhere/a.zip"], "no folder for nowhere/a.zip"),
    ],
)
def test_build_arguments_that_cannot_be_followed_are_one_line_usage_errors(
    args: list[str], message: str
) -> None:
    script = ROOT / "scripts" / "build_gradescope_autograder.py"
    completed = subprocess.run(
        [sys.executable, str(script), "--book", "2", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr.splitlines()[-1].startswith("build_gradescope_autograder: ")
    assert message in completed.stderr
