"""The grader's command line: exit codes, the JSON report's shape, the console script."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from committed import EXERCISES
from hypothesis import given
from hypothesis import strategies as st
from system_components import require_executable

from bookproof.grade.book import VISIBILITIES
from bookproof.grade.books import BookError, load_book
from bookproof.grade.cli import submission_names
from bookproof.grade.session import OUTCOMES
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
SCRIPT = ROOT / "scripts" / "grade_exercises.py"
SOLUTION = ROOT / "solutions" / "book02"
# The first line of a batch that started grading names the book.
BOOK_TITLE = load_book(2).title
# The reference's module without the tests beside it: a batch of seconds, not of every
# run of those tests against each faulty version, for tests about the command itself.
WITHOUT_TESTS = shutil.ignore_patterns("test_*")


def _grade(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Process isolation: these tests are about the command, not the sandbox;
    # the submissions are ours, so running them as root is accepted.
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--isolation", "process", "--run-submissions-as-root", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_unknown_book_is_a_usage_error(tmp_path: Path) -> None:
    completed = _grade("--book", "99", str(SOLUTION), cwd=tmp_path)
    assert completed.returncode == 2
    assert "no exercise book 99" in completed.stderr


def test_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    completed = _grade("--book", "2", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert completed.returncode == 2
    assert "no such file or folder" in completed.stderr


def test_unknown_flag_is_a_usage_error(tmp_path: Path) -> None:
    assert _grade("--book", "2", "--shiny", str(SOLUTION), cwd=tmp_path).returncode == 2


def test_json_report_has_the_documented_shape(tmp_path: Path) -> None:
    student = tmp_path / "alice"
    shutil.copytree(EXERCISES / "book02", student, ignore=shutil.ignore_patterns("*.ipynb"))
    out = tmp_path / "report.json"
    completed = _grade(
        "--book", "2", str(student), str(SOLUTION), "--json", str(out), "--seed", "7", cwd=tmp_path
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["seed"] == 7
    assert report["isolation"] == "process"
    assert set(report) == {
        "book",
        "title",
        "made_at",
        "grader_commit",
        "seed",
        "isolation",
        "reuse",
        "submissions",
    }
    # Process mode reuses no run of a learner's tests: a run there sees more than its folder.
    assert report["reuse"] is False
    assert "none reused (process mode, where a run can see more than its folder)" in (
        completed.stderr
    )
    assert [entry["submission"] for entry in report["submissions"]] == ["alice", "book02"]
    alice, reference = report["submissions"]
    book = load_book(2)
    assert (
        alice["total"] < alice["max"] == reference["total"] == reference["max"] == book.max_points
    )
    assert alice["exercises"]["points"] == 0
    assert alice["chapter_baseline"]["points"] == alice["chapter_baseline"]["max"] > 0
    check_ids = [check.id for check in book.checks]
    # The starter hands in no tests; the reference's runs are all made for it.
    assert alice["test_runs"] == {"made": 0, "reused": 0}
    assert reference["test_runs"]["made"] > 0 == reference["test_runs"]["reused"]
    for entry in report["submissions"]:
        assert entry["isolation"] == "process"
        assert [check["id"] for check in entry["checks"]] == check_ids
        for check in entry["checks"]:
            assert set(check) == {
                "id",
                "kind",
                "exercise",
                "points",
                "max_points",
                "passed",
                "feedback",
                "outcome",
                "visibility",
            }
            assert check["kind"] in {"chapter baseline", "exercise"}
            assert check["visibility"] in VISIBILITIES
            assert check["passed"] is (check["outcome"] == "passed")
            assert check["outcome"] in OUTCOMES
            assert "\n" not in check["feedback"]
    failed = [check for check in alice["checks"] if check["outcome"] == "failed"]
    assert failed
    assert all("Re-read Chapter 2, '2." in check["feedback"] for check in failed)
    # Progress lines on stderr, one per submission, with the runs of its tests; the table
    # on stdout.
    assert completed.stderr.count("] ") == 2
    assert f"] book02: {book.max_points}/{book.max_points} (" in completed.stderr
    assert f" s; {reference['test_runs']['made']} test runs)" in completed.stderr
    assert "alice: " in completed.stdout


def test_folders_with_the_same_name_get_rows_an_instructor_can_tell_apart(
    tmp_path: Path,
) -> None:
    # The module alone: the rows' names are the point, not what the tests handed in catch.
    for group in ("monday", "tuesday"):
        shutil.copytree(SOLUTION, tmp_path / group / "alice", ignore=WITHOUT_TESTS)
    shutil.copytree(SOLUTION, tmp_path / "tuesday" / "bob", ignore=WITHOUT_TESTS)
    out, gradebook = tmp_path / "report.json", tmp_path / "gradebook.csv"
    completed = _grade(
        "--book",
        "2",
        "monday/alice",
        "tuesday/alice",
        "tuesday/bob",
        "--json",
        str(out),
        "--csv",
        str(gradebook),
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    names = [entry["submission"] for entry in json.loads(out.read_text())["submissions"]]
    assert names == ["monday/alice", "tuesday/alice", "bob"]
    rows = gradebook.read_text(encoding="utf-8").splitlines()[1:]
    assert [row.split(",")[0] for row in rows] == names


def test_the_same_folder_given_twice_is_a_usage_error(tmp_path: Path) -> None:
    shutil.copytree(SOLUTION, tmp_path / "alice")
    completed = _grade("--book", "2", "alice", "./alice/", cwd=tmp_path)
    assert completed.returncode == 2
    assert "given twice: alice" in completed.stderr


def test_load_book_refuses_a_book_that_does_not_exist() -> None:
    with pytest.raises(BookError):
        load_book(42)


@given(
    st.lists(
        st.lists(st.sampled_from(["a", "b", "book02", "alice"]), min_size=1, max_size=4),
        min_size=1,
        max_size=8,
        unique_by=tuple,
    )
)
def test_submission_names_are_unique_suffixes_and_short_when_they_can_be(
    paths: list[list[str]],
) -> None:
    folders = [Path("/class", *parts) for parts in paths]
    names = submission_names(folders)
    assert len(set(names)) == len(names)
    for folder, name in zip(folders, names, strict=True):
        assert folder.as_posix().endswith("/" + name)
        if [other.name for other in folders].count(folder.name) == 1:
            assert name == folder.name


def test_the_same_seed_asks_the_same_questions_and_gives_the_same_report(tmp_path: Path) -> None:
    starter = EXERCISES / "book03"
    reports: list[dict[str, object]] = []
    for attempt in ("first", "second"):
        out = tmp_path / f"{attempt}.json"
        completed = _grade(
            "--book", "3", str(starter), "--seed", "424242", "--json", str(out), cwd=tmp_path
        )
        assert completed.returncode == 0, completed.stderr
        report = json.loads(out.read_text(encoding="utf-8"))
        # Everything but the moment each report was made.
        del report["made_at"]
        reports.append(report)
    assert reports[0] == reports[1]
    assert reports[0]["seed"] == 424242


def test_a_name_that_looks_like_a_formula_is_inert_in_the_gradebook(tmp_path: Path) -> None:
    evil = tmp_path / "=1+2"
    shutil.copytree(SOLUTION, evil, ignore=WITHOUT_TESTS)
    gradebook = tmp_path / "gradebook.csv"
    completed = _grade("--book", "2", str(evil), "--csv", str(gradebook), cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    rows = list(csv.reader(gradebook.read_text(encoding="utf-8").splitlines()))
    assert rows[0][-5:] == ["chapter_baseline", "exercises", "total", "max", "isolation"]
    assert rows[1][0] == "'=1+2"


def test_without_bubblewrap_the_grader_refuses_unless_told_to_accept_less(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    alice = tmp_path / "alice"
    shutil.copytree(SOLUTION, alice, ignore=WITHOUT_TESTS)
    refused = subprocess.run(
        [sys.executable, str(SCRIPT), "--book", "2", str(alice)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
        check=False,
    )
    assert refused.returncode == 3
    assert "refusing to grade: bubblewrap is not installed" in refused.stderr
    assert "--isolation process" in refused.stderr
    accepted = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--book",
            "2",
            "--isolation",
            "process",
            "--run-submissions-as-root",
            str(alice),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
        check=False,
    )
    assert accepted.returncode == 0, accepted.stderr
    assert "process only" in accepted.stderr


@pytest.mark.parametrize("isolation", ["bubblewrap", "unprivileged"])
def test_accepting_root_goes_only_with_process_mode(tmp_path: Path, isolation: str) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--book",
            "2",
            "--isolation",
            isolation,
            "--run-submissions-as-root",
            str(SOLUTION),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 2
    assert "--run-submissions-as-root goes only with --isolation process" in completed.stderr


def test_an_interrupted_grader_writes_no_report_and_leaves_no_process(tmp_path: Path) -> None:
    for name in ("spins", "also_spins"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "shop_tools.py").write_text("while True:\n    pass\n")
    out = tmp_path / "report.json"
    grader = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPT),
            "--isolation",
            "process",
            "--run-submissions-as-root",
            "--book",
            "2",
            "-j",
            "2",
            "--timeout",
            "60",
            "--json",
            str(out),
            str(tmp_path / "spins"),
            str(tmp_path / "also_spins"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(3)  # both submissions are spinning by now
    grader.send_signal(signal.SIGTERM)
    _, stderr = grader.communicate(timeout=60)
    assert grader.returncode == 130
    assert "interrupted; no report was written" in stderr
    assert not out.exists()
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        assert str(tmp_path).encode() not in cmdline


def test_a_sandbox_that_fails_mid_batch_stops_the_grader_instead_of_blaming_a_learner(
    tmp_path: Path,
) -> None:
    real = require_executable("bwrap", install="sudo apt-get install bubblewrap")
    # Works for the grader's first probe; refuses every sandbox after that,
    # as a machine out of user namespaces would.
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in *harness*) echo "bwrap: Creating new namespace failed" >&2; exit 1;;\n'
        "esac\n"
        f'exec {real} "$@"\n'
    )
    fake.chmod(0o755)
    out = tmp_path / "report.json"
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--book", "2", "--json", str(out), str(SOLUTION)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"},
        timeout=300,
        check=False,
    )
    assert completed.returncode == 3
    assert "the sandbox failed" in completed.stderr
    assert "Creating new namespace failed" in completed.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--timeout", "nan"),
        ("--timeout", "inf"),
        ("--timeout", "-inf"),
        ("--timeout", "1e300"),
        ("--timeout", "0"),
        ("--memory-mb", str(10**12)),
        ("--memory-mb", "63"),
    ],
)
def test_a_limit_that_is_not_a_finite_number_in_range_is_a_usage_error(
    tmp_path: Path, flag: str, value: str
) -> None:
    completed = _grade("--book", "2", flag, value, str(SOLUTION), cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert flag in completed.stderr.splitlines()[-1]
    assert "Traceback" not in completed.stderr


def test_a_report_path_that_is_a_folder_is_refused_before_grading(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    completed = _grade("--book", "2", "--json", "reports", str(SOLUTION), cwd=tmp_path)
    assert completed.returncode == 2
    assert "--json names a folder" in completed.stderr
    assert BOOK_TITLE not in completed.stderr  # no grading started


def test_two_reports_into_one_file_are_refused_before_grading(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "out")
    for other in ("out/report", "./out/report", "alias/report"):
        completed = _grade(
            "--book", "2", "--json", "out/report", "--csv", other, str(SOLUTION), cwd=tmp_path
        )
        assert completed.returncode == 2, other
        assert "--json and --csv name the same file" in completed.stderr
        assert BOOK_TITLE not in completed.stderr
    assert list((tmp_path / "out").iterdir()) == []


def test_gradescope_makes_its_folder_like_json_makes_its_file(tmp_path: Path) -> None:
    completed = _grade(
        "--book", "2", "--gradescope", "results", str(SOLUTION / "shop_tools.py"), cwd=tmp_path
    )
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "results" / "results.json").is_file()
    missing_parent = _grade(
        "--book", "2", "--gradescope", "no/such/results", str(SOLUTION), cwd=tmp_path
    )
    assert missing_parent.returncode == 2
    assert "no folder for --gradescope" in missing_parent.stderr
    (tmp_path / "a_file").write_text("")
    not_a_folder = _grade("--book", "2", "--gradescope", "a_file", str(SOLUTION), cwd=tmp_path)
    assert not_a_folder.returncode == 2
    assert "--gradescope needs a folder" in not_a_folder.stderr


def test_one_folder_given_under_two_names_is_graded_once_and_said_so(tmp_path: Path) -> None:
    shutil.copytree(SOLUTION, tmp_path / "class" / "alice", ignore=WITHOUT_TESTS)
    (tmp_path / "same_class").symlink_to(tmp_path / "class")
    out = tmp_path / "report.json"
    completed = _grade(
        "--book",
        "2",
        "--json",
        str(out),
        "class/alice",
        "same_class/alice",
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    assert "same_class/alice is the same folder as class/alice: graded once" in completed.stderr
    names = [entry["submission"] for entry in json.loads(out.read_text())["submissions"]]
    assert names == ["alice"]
