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
from bookproof.grade.gradescope import build_autograder
from bookproof.grade.sandbox import unprivileged_problem

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions" / "book02"
BOOK = load_book(2)
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


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
        assert {"name", "score", "max_score", "output", "visibility"} <= set(test)
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
        assert results["score"] == sum(test["score"] for test in results["tests"])


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
        "--book", "2", "--isolation", "process", "--gradescope", str(tmp_path), str(SOLUTIONS)
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
        "--book", "2", "--isolation", "process", "--gradescope", str(tmp_path), str(starter)
    )
    assert completed.returncode == 0, completed.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert_results_shape(results)
    failed = [test for test in results["tests"] if test["status"] == "failed"]
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
    """The zip unpacked as Gradescope does, with the project installed as setup.sh would."""
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    root = tmp_path_factory.mktemp("autograder")
    out = root / "autograder.zip"
    build_autograder(ROOT, BOOK, out)
    with zipfile.ZipFile(out) as archive:
        archive.extractall(root / "source")
    # setup.sh's last line; the apt and pip lines are the machine's business.
    subprocess.run(
        ["uv", "sync", "--locked", "--offline", "--quiet"],
        cwd=root / "source",
        check=True,
        timeout=600,
        env={key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"},
    )
    shutil.copyfile(root / "source" / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    return root


def _run_autograder(
    root: Path, files: dict[str, Path], path: str | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
        (root / folder).mkdir()
    for name, source in files.items():
        shutil.copyfile(source, root / "submission" / name)
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    env["AUTOGRADER_ROOT"] = str(root)
    if path is not None:
        env["PATH"] = path
    completed = subprocess.run(
        [str(root / "run_autograder")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    results_file = root / "results" / "results.json"
    if not results_file.exists():
        return completed, None
    results: dict[str, Any] = json.loads(results_file.read_text())
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
