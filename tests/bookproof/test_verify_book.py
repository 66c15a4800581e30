"""--textbook on fixture books: checkpoints, learner files, drift, reports, -j N."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from verifying import verify, verify_json

FIXTURES = Path(__file__).resolve().parent / "verify_fixtures"
GOOD = FIXTURES / "book_good" / "book" / "textbook" / "book.toml"
FAULTS = FIXTURES / "book_faults" / "book" / "textbook" / "book.toml"


def verdicts(report: dict[str, Any]) -> dict[int, Any]:
    """Everything a verdict holds except timings, keyed by chapter number."""
    return {
        chapter["number"]: {key: value for key, value in chapter.items() if key != "seconds"}
        for chapter in report["chapters"]
    }


@dataclass(frozen=True)
class Run:
    """One verification of a fixture book: what it printed, and the reports it wrote."""

    completed: subprocess.CompletedProcess[str]
    report: dict[str, Any]
    junit: Path


def verified(folder: Path, manifest: Path, *options: str) -> Run:
    report, junit = folder / "report.json", folder / "report.xml"
    completed = verify(
        "--textbook", "--manifest", manifest, *options, "--json", report, "--junit", junit
    )
    return Run(completed, json.loads(report.read_text(encoding="utf-8")), junit)


# Each book is verified once (with -j 1, the default) and the tests below read
# what that one run printed and reported: a run takes seconds, and every test
# asks it a different question.
@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return verified(tmp_path_factory.mktemp("good"), GOOD)


@pytest.fixture(scope="module")
def faults(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return verified(tmp_path_factory.mktemp("faults"), FAULTS)


def test_a_book_where_everything_holds_exits_0_and_reports_each_chapter(good: Run) -> None:
    completed = good.completed
    assert completed.returncode == 0, completed.stdout
    lines = completed.stdout.splitlines()
    assert any(line.startswith("ch01  ok") for line in lines)
    report = [line for line in lines if line.startswith(("   1 ", "   2 "))]
    assert "Counting tubs" in report[0] and "drafted" in report[0]
    assert "listings 1/1" in report[0] and "checkpoint ok" in report[0]
    assert "learner ok" in report[0] and "holds" in report[0]
    assert "Ordering tubs" in report[1] and "planned  (not verified)" in report[1]
    assert lines[-1].startswith("Summary: 1 chapter(s) verified, 1 hold, 0 failed, 1 planned")


def test_each_fault_of_the_faulty_book_is_found(faults: Run) -> None:
    report = faults.report
    assert faults.completed.returncode == 1
    chapters = verdicts(report)
    assert sorted(chapters) == [1, 2, 3, 4, 5]
    assert report["planned"] == [{"number": 6, "title": "Still planned", "status": "planned"}]
    kinds = {n: [(f["kind"], f["line"]) for f in c["failures"]] for n, c in chapters.items()}
    assert kinds[1] == [("checkpoint-output", 15)]
    assert kinds[2] == [("learner", 1)]
    assert kinds[3] == [("drift", 1), ("drift", 5)]
    assert kinds[4] == [("exercises", 1), ("exercises", 1)]
    assert kinds[5] == [("checkpoint-drift", 4)]
    checkpoints = [chapters[n]["checkpoint"] for n in (1, 2, 3, 4, 5)]
    assert checkpoints == ["failed", "ok", "ok", "ok", "failed"]
    assert [chapters[n]["learner"] for n in (1, 2, 3, 4, 5)] == [
        "ok",
        "failed",
        "failed",
        "ok",
        "ok",
    ]
    assert chapters[4]["exercises"] == "missing"
    # Every listing itself passes: the faults are elsewhere.
    assert all(c["listings"] == {"passed": 1, "total": 1} for c in chapters.values())


def test_checkpoint_code_that_drifts_from_its_listing_fails_though_its_output_matches(
    faults: Run,
) -> None:
    report = faults.report
    (failure,) = verdicts(report)[5]["failures"]
    assert failure["file"].endswith("fixture_ch05_checkpoint.py")
    assert "`replenishment_need` differs from every listing that defines it" in failure["message"]
    assert "-    return max(0, reorder_point - on_hand)" in failure["detail"]
    assert "+    return reorder_point - on_hand" in failure["detail"]
    # `main` is the checkpoint's own glue: no listing teaches it, so it is free.
    assert "main" not in failure["message"]


def test_a_drifting_checkpoint_shows_a_diff(faults: Run) -> None:
    report = faults.report
    detail = verdicts(report)[1]["failures"][0]["detail"]
    assert "-vanilla needs 6\n+vanilla needs 7" in detail


def test_a_learner_file_that_prints_on_import_fails(faults: Run) -> None:
    report = faults.report
    failure = verdicts(report)[2]["failures"][0]
    assert failure["file"].endswith("fixture_ch02_learner.py")
    assert "printed output" in failure["message"]
    assert "importing the learner file" in failure["detail"]


def test_a_learner_definition_that_drifts_names_it_and_shows_a_diff(faults: Run) -> None:
    report = faults.report
    changed, unknown = verdicts(report)[3]["failures"]
    assert "`replenishment_need` differs from every listing" in changed["message"]
    assert "-    return max(0, reorder_point - on_hand)" in changed["detail"]
    assert "+    return max(1, reorder_point - on_hand)" in changed["detail"]
    assert "`Freezer` is defined in the learner file but in no listing" in unknown["message"]


def test_two_jobs_give_the_same_verdicts_as_one(tmp_path: Path, faults: Run, good: Run) -> None:
    (tmp_path / "faults").mkdir()
    (tmp_path / "good").mkdir()
    two = verified(tmp_path / "faults", FAULTS, "-j", "2")
    assert faults.completed.returncode == two.completed.returncode == 1
    assert verdicts(faults.report) == verdicts(two.report)
    good_two = verified(tmp_path / "good", GOOD, "-j", "2")
    assert good.completed.returncode == good_two.completed.returncode == 0
    assert verdicts(good.report) == verdicts(good_two.report)


def test_the_junit_report_parses_and_counts_failures(faults: Run) -> None:
    assert faults.completed.returncode == 1
    root = ElementTree.parse(faults.junit).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 5
    failed = [
        (suite.get("name", "").rsplit("/", 1)[-1], case.get("name"))
        for suite in suites
        for case in suite.findall("testcase")
        if case.find("failure") is not None
    ]
    assert len(failed) == int(root.get("failures", "-1")) == 7
    assert failed[0][0] == "ch01_checkpoint_drifts.md"
    assert failed[-1][0] == "ch05_checkpoint_code_drifts.md"
    assert failed[-1][1].startswith("checkpoint: ")
    assert all(case.find("failure") is None for case in suites[0].findall("testcase")[:1])


def test_a_manifest_chapter_named_on_the_command_line_gets_its_checkpoint(
    tmp_path: Path,
) -> None:
    chapter = GOOD.parent / "ch01_counting_tubs.md"
    status, report = verify_json(tmp_path, "--manifest", GOOD, chapter)
    assert status == 0
    (only,) = report["chapters"]
    assert (only["number"], only["checkpoint"], only["learner"]) == (1, "ok", "ok")
    assert only["coverage"]["checkpoint_checked"] == 1


def test_a_chapter_the_manifest_does_not_name_has_its_checkpoint_output_not_checked(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "copy.md"
    copy.write_text((GOOD.parent / "ch01_counting_tubs.md").read_text(), encoding="utf-8")
    status, report = verify_json(tmp_path, "--manifest", GOOD, copy)
    assert status == 0
    (only,) = report["chapters"]
    assert (only["number"], only["checkpoint"], only["learner"]) == (None, "not checked", "none")
    assert only["coverage"]["checkpoint_checked"] == 0
    assert only["coverage"]["checkpoint_not_checked"] == 1
