"""The instructor's gradebook: check visibility, the roster, when and by which grader
a report was made, and who may read it."""

from __future__ import annotations

import csv
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from committed import EXERCISES
from hypothesis import given
from hypothesis import strategies as st

from bookproof.grade.book import VISIBILITIES, Book, BookError
from bookproof.grade.books import load_book
from bookproof.grade.gradescope import hand_in
from bookproof.grade.provenance import STAMP, UNKNOWN, grader_commit
from bookproof.grade.questions import call
from bookproof.grade.report import REPORT_MODE, write_atomically, write_csv
from bookproof.grade.roster import RosterError, parse_roster, read_roster
from bookproof.grade.runner import CheckOutcome, SubmissionReport
from bookproof.grade.sandbox import Isolation
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
SCRIPT = ROOT / "scripts" / "grade_exercises.py"
SOLUTION = ROOT / "solutions" / "book02"
# Graded where only the reports matter (their stamps, their modes), not the score:
# the starter is graded in about a second, the reference (its own tests run
# against every faulty version) in about ten.
STARTER = EXERCISES / "book02"


def _grade(*args: str, cwd: Path, umask: int | None = None) -> subprocess.CompletedProcess[str]:
    def set_umask() -> None:
        if umask is not None:
            os.umask(umask)

    return subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--isolation",
            "process",
            "--run-submissions-as-root",
            "--book",
            "2",
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        preexec_fn=set_umask,
        check=False,
    )


def plain(rng: object):  # type: ignore[no-untyped-def]
    yield call("f")


# --- visibility, declared with the check -----------------------------------------


def test_a_check_is_visible_unless_declared_otherwise() -> None:
    book = Book(99, "t", module="m", chapter="Chapter 99")
    check = book.baseline(points=1, section="s", asks="a", hint="h")(plain)
    assert check.visibility == "visible"

    def later(rng: object):  # type: ignore[no-untyped-def]
        yield call("f")

    deferred = book.exercise(
        1, points=1, section="s", asks="a", hint="h", visibility="after_due_date"
    )(later)
    assert deferred.visibility == "after_due_date"


@pytest.mark.parametrize("visibility", ["Hidden", "secret", "", "after_due"])
def test_a_visibility_gradescope_does_not_know_is_refused(visibility: str) -> None:
    book = Book(99, "t", module="m", chapter="Chapter 99")
    with pytest.raises(BookError, match="visibility must be one of visible, hidden"):
        book.baseline(points=1, section="s", asks="a", hint="h", visibility=visibility)(  # type: ignore[arg-type]
            plain
        )


def test_every_book_declares_only_gradescope_visibilities() -> None:
    for number in range(1, 9):
        for check in load_book(number).checks:
            assert check.visibility in VISIBILITIES


def test_hidden_checks_show_to_the_instructor_marked_in_the_table_and_the_json(
    tmp_path: Path,
) -> None:
    out = tmp_path / "report.json"
    completed = _grade(str(STARTER), "--json", str(out), "--seed", "3", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    book = load_book(2)
    deferred = [check.id for check in book.checks if check.visibility == "after_due_date"]
    assert deferred
    lines = {line.split()[1]: line for line in completed.stdout.splitlines() if "/" in line}
    for check_id in deferred:
        assert lines[check_id].endswith("[after due date]")
    assert not lines["ch2_stock_report"].endswith("]")
    entries = json.loads(out.read_text())["submissions"][0]["checks"]
    assert {entry["id"]: entry["visibility"] for entry in entries} == {
        check.id: check.visibility for check in book.checks
    }


# --- when and by which grader ----------------------------------------------------


def test_the_json_report_says_when_and_by_which_grader_commit(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    completed = _grade(str(STARTER), "--json", str(out), cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    report = json.loads(out.read_text())
    assert report["made_at"].endswith("Z") and report["made_at"][10] == "T"
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert report["grader_commit"] in (head, f"{head}-dirty")


def _git(repo: Path, *args: str) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env |= {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def test_grader_commit_is_dirty_only_for_tracked_changes_and_unknown_outside_git(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "unpacked"
    outside.mkdir()
    assert grader_commit(outside) == UNKNOWN
    repo = tmp_path / "checkout"
    repo.mkdir()
    _git(repo, "init", "-q")
    assert grader_commit(repo) == UNKNOWN  # no commit yet
    (repo / "grader.py").write_text("x = 1\n")
    _git(repo, "add", "grader.py")
    _git(repo, "commit", "-q", "-m", "grader")
    head = _git(repo, "rev-parse", "HEAD")
    assert grader_commit(repo) == head
    (repo / "grades.csv").write_text("untracked output\n")
    assert grader_commit(repo) == head
    (repo / "grader.py").write_text("x = 2\n")
    assert grader_commit(repo) == f"{head}-dirty"
    # A folder inside a repository is not that repository's checkout.
    inner = repo / "inner"
    inner.mkdir()
    assert grader_commit(inner) == UNKNOWN


def test_a_packed_grader_outside_git_reads_its_stamp_and_nothing_else(tmp_path: Path) -> None:
    packed = tmp_path / "source"
    packed.mkdir()
    commit = "0123456789abcdef0123456789abcdef01234567"
    (packed / STAMP).write_text(f"{commit}\n")
    assert grader_commit(packed) == commit
    (packed / STAMP).write_text(f"{commit}-dirty\n")
    assert grader_commit(packed) == f"{commit}-dirty"
    # A damaged or forged stamp is never repeated into a gradebook.
    for forged in ("v1.0\n", f"{commit} plus words\n", "secret-token-stamp\n", "\xff\n"):
        (packed / STAMP).write_text(forged, encoding="latin-1")
        assert grader_commit(packed) == UNKNOWN, forged
    (packed / STAMP).unlink()
    os.mkfifo(packed / STAMP)  # would hang a reader that opened it
    assert grader_commit(packed) == UNKNOWN


# --- who may read a report -------------------------------------------------------


@pytest.mark.parametrize("umask", [0o077, 0o022, 0o000])
def test_reports_are_readable_by_the_group_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    paths = {name: tmp_path / name for name in ("report.json", "grades.csv")}
    completed = _grade(
        str(STARTER),
        "--json",
        str(paths["report.json"]),
        "--csv",
        str(paths["grades.csv"]),
        "--gradescope",
        str(tmp_path / "gs"),
        cwd=tmp_path,
        umask=umask,
    )
    assert completed.returncode == 0, completed.stderr
    for path in (*paths.values(), tmp_path / "gs" / "results.json"):
        assert stat.S_IMODE(path.stat().st_mode) == REPORT_MODE == 0o640


def test_an_existing_world_readable_report_is_replaced_at_0640(tmp_path: Path) -> None:
    target = tmp_path / "grades.csv"
    target.write_text("old\n")
    os.chmod(target, 0o666)
    write_atomically(target, "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [path.name for path in tmp_path.iterdir()] == ["grades.csv"]


# --- the roster ------------------------------------------------------------------


def test_a_roster_reads_its_columns_in_any_order_with_or_without_names() -> None:
    roster = parse_roster("student_id,folder\r\ns1,alice\r\n\r\ns2, bob \r\n")
    assert {folder: student.student_id for folder, student in roster.students.items()} == {
        "alice": "s1",
        "bob": "s2",
    }
    assert not roster.has_names
    named = parse_roster('Folder,Student_ID,Name\nalice,s1,"Alice, A."\n')
    assert named.has_names and named.students["alice"].name == "Alice, A."


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the roster is empty"),
        ("folder,name\nalice,Alice\n", "line 1: the header has no student_id column"),
        ("folder,student_id,email\nalice,s1,a@x\n", "line 1: unknown column 'email'"),
        ("folder,student_id,folder\n", "line 1: a column is named twice"),
        ("folder,student_id\nalice,s1,extra\n", "line 2: 3 cells where the header names 2"),
        ("folder,student_id\nalice\n", "line 2: 1 cells where the header names 2"),
        ("folder,student_id\nalice,\n", "line 2: a folder and a student_id are both needed"),
        ("folder,student_id\nalice,s1\nalice,s2\n", "line 3: folder 'alice' is listed twice"),
        ("folder,student_id\nalice,s1\nbob,s1\n", "line 3: student_id 's1' is listed twice"),
        ("folder,student_id\n", "the roster names no students"),
        ('folder,student_id\n"alice,s1\n', "not CSV"),
    ],
)
def test_a_malformed_roster_is_named_in_one_line(text: str, message: str) -> None:
    with pytest.raises(RosterError) as raised:
        parse_roster(text)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


@given(st.text(max_size=300))
def test_any_text_is_a_roster_or_one_line_saying_why_not(text: str) -> None:
    try:
        roster = parse_roster(text)
    except RosterError as exc:
        assert "\n" not in str(exc)
        return
    assert roster.students
    assert all(folder and student.student_id for folder, student in roster.students.items())


def test_a_roster_file_that_is_not_utf8_text_is_refused(tmp_path: Path) -> None:
    binary = tmp_path / "roster.csv"
    binary.write_bytes(b"folder,student_id\n\xff\xfe,s1\n")
    with pytest.raises(RosterError, match="not UTF-8"):
        read_roster(binary)
    excel = tmp_path / "excel.csv"
    excel.write_bytes("\ufefffolder,student_id\r\nalice,s1\r\n".encode())
    assert read_roster(excel).students["alice"].student_id == "s1"
    with pytest.raises(RosterError, match="cannot read it"):
        read_roster(tmp_path / "missing.csv")


def test_the_gradebook_gains_student_ids_and_warns_of_folders_off_the_roster(
    tmp_path: Path,
) -> None:
    for learner in ("alice", "carol"):
        shutil.copytree(STARTER, tmp_path / learner, ignore=shutil.ignore_patterns("*.ipynb"))
    roster = tmp_path / "roster.csv"
    roster.write_text("folder,student_id,name\nalice,s001,Alice\nbob,s002,=HYPERLINK()\n")
    gradebook = tmp_path / "grades.csv"
    report = tmp_path / "report.json"
    completed = _grade(
        str(tmp_path / "alice"),
        str(tmp_path / "carol"),
        "--roster",
        str(roster),
        "--csv",
        str(gradebook),
        "--json",
        str(report),
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    warnings = [line for line in completed.stderr.splitlines() if "warning" in line]
    assert warnings == [
        "grade-exercises: warning: the roster names bob, which is not among the folders graded",
        "grade-exercises: warning: carol is not on the roster: graded, with no student id",
    ]
    rows = gradebook.read_text().splitlines()
    assert rows[0].startswith("submission,student_id,name,imports,")
    assert rows[1].startswith("alice,s001,Alice,")
    assert rows[2].startswith("carol,,,")  # still graded, its id left empty
    entries = json.loads(report.read_text())["submissions"]
    assert [(entry["student_id"], entry["name"]) for entry in entries] == [
        ("s001", "Alice"),
        (None, None),
    ]


def test_a_malformed_roster_stops_the_grader_before_it_grades(tmp_path: Path) -> None:
    roster = tmp_path / "roster.csv"
    roster.write_text("folder,student\nalice,s1\n")
    completed = _grade(str(SOLUTION), "--roster", str(roster), cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stderr.splitlines()[-1] == (
        f"grade-exercises: --roster {roster}: line 1: unknown column 'student'; "
        "the columns are folder, student_id and optionally name"
    )
    assert "Exercise Book 2" not in completed.stderr  # nothing was graded


def test_roster_cells_that_look_like_formulas_are_inert_in_the_gradebook(tmp_path: Path) -> None:
    book = load_book(2)
    checks = tuple(
        CheckOutcome(check.id, check.kind, check.label, 0, check.points, "failed", "f")
        for check in book.checks
    )
    reports = [SubmissionReport(name, Isolation.PROCESS, checks) for name in ("alice", "bob")]
    roster = parse_roster('folder,student_id,name\nalice,+44 1,"=HYPERLINK(""x"")"\n')
    gradebook = tmp_path / "grades.csv"
    write_csv(gradebook, book, reports, roster)
    rows = list(csv.reader(gradebook.read_text().splitlines()))
    assert rows[1][:3] == ["alice", "'+44 1", '\'=HYPERLINK("x")']
    assert rows[2][:3] == ["bob", "", ""]


def test_hand_in_copies_what_gradescope_could_take_and_says_what_it_left_out(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "alice"
    (folder / "notes").mkdir(parents=True)
    (folder / "shop_tools.py").write_text("x = 1\n")
    (folder / "notes" / "a.md").write_text("a\n")
    (folder / "link.py").symlink_to("/etc/passwd")
    os.mkfifo(folder / "pipe")
    root = tmp_path / "autograder"
    (root / "results").mkdir(parents=True)
    (root / "results" / "results.json").write_text("{}")
    notes = hand_in(folder, root)
    assert notes == ["left out pipe: not a file Gradescope could take"]
    submission = root / "submission"
    assert (submission / "shop_tools.py").read_text() == "x = 1\n"
    assert (submission / "notes" / "a.md").read_text() == "a\n"
    assert os.readlink(submission / "link.py") == "/etc/passwd"  # a link, for the grader to refuse
    assert not (submission / "pipe").exists()
    assert list((root / "results").iterdir()) == []
