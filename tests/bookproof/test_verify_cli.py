"""The verifier's command line, run as a user runs it: a real subprocess per case."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from real_book import RealBookRun
from verifying import verify, verify_json

CHAPTERS = Path(__file__).resolve().parent / "verify_fixtures" / "chapters"


def failures(report: dict[str, Any]) -> list[tuple[int, str]]:
    return [(f["line"], f["kind"]) for c in report["chapters"] for f in c["failures"]]


def test_a_chapter_where_every_rule_holds_exits_0(tmp_path: Path) -> None:
    status, report = verify_json(tmp_path, CHAPTERS / "passing.md")
    assert status == 0
    chapter = report["chapters"][0]
    assert chapter["ok"] and failures(report) == []
    assert chapter["listings"] == {"passed": 9, "total": 9}
    assert [block["status"] for block in chapter["blocks"]] == ["passed"] * 9
    assert chapter["coverage"] == {
        "exact": 7,
        "wildcard": 1,
        "no_output": 1,
        "skipped": 1,
        "checkpoint_checked": 0,
        "checkpoint_not_checked": 0,
    }


def test_the_chapter_runs_in_the_repository_root_from_any_working_directory(
    tmp_path: Path,
) -> None:
    # passing.md asserts the working directory holds pyproject.toml and src/.
    completed = verify(CHAPTERS / "passing.md", cwd=tmp_path)
    assert completed.returncode == 0, completed.stdout


def test_provider_variables_never_reach_the_book_code_or_the_reports(tmp_path: Path) -> None:
    secret = "secret-token-4f1c9e"
    env = {
        **os.environ,
        "SOVEREIGN_MODEL": "openai:gpt-test",
        "OPENAI_API_KEY": secret,
        "ANTHROPIC_API_KEY": secret,
    }
    report = tmp_path / "report.json"
    junit = tmp_path / "report.xml"
    # passing.md prints the SOVEREIGN_* and OPENAI_* names it can see, expecting none.
    completed = verify(CHAPTERS / "passing.md", "--json", report, "--junit", junit, env=env)
    assert completed.returncode == 0, completed.stdout
    for text in (completed.stdout, completed.stderr, report.read_text(), junit.read_text()):
        assert secret not in text


def test_a_chapter_outside_the_repository_is_verified_the_same_way(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text((CHAPTERS / "passing.md").read_text(encoding="utf-8"), encoding="utf-8")
    assert verify(outside).returncode == 0


def test_an_output_mismatch_fails_with_a_diff_naming_file_and_line(tmp_path: Path) -> None:
    completed = verify(CHAPTERS / "mismatch.md")
    assert completed.returncode == 1
    assert "mismatch.md:3: printed output differs from the `output` block at line 8" in (
        completed.stdout
    )
    assert "-chocolate: 8\n    +chocolate: 7" in completed.stdout


def test_output_from_a_listing_without_an_output_block_fails(tmp_path: Path) -> None:
    status, report = verify_json(tmp_path, CHAPTERS / "unexpected_output.md")
    assert status == 1
    assert failures(report) == [(3, "unexpected-output")]
    assert "surprise" in report["chapters"][0]["failures"][0]["detail"]


def test_exception_names_are_checked_and_tracebacks_point_into_the_chapter(
    tmp_path: Path,
) -> None:
    status, report = verify_json(tmp_path, CHAPTERS / "exceptions.md")
    assert status == 1
    # Line 3 raises the ValueError it names (and prints what it shows), so it passes.
    assert failures(report) == [
        (12, "wrong-exception"),
        (16, "no-exception"),
        (24, "exception"),
    ]
    found = report["chapters"][0]["failures"]
    assert found[0]["cascade_of"] is None
    assert found[1]["cascade_of"].endswith("exceptions.md:12")
    traceback = found[2]["detail"]
    assert 'exceptions.md", line 29, in <module>' in traceback
    assert 'exceptions.md", line 26, in divide' in traceback
    assert "return total / parts" in traceback
    assert "ZeroDivisionError: division by zero" in traceback


def test_wildcards_loosen_only_what_they_say(tmp_path: Path) -> None:
    status, report = verify_json(tmp_path, CHAPTERS / "wildcard_mismatch.md")
    assert status == 1
    assert failures(report) == [(3, "output-mismatch"), (15, "output-mismatch")]
    assert report["chapters"][0]["coverage"]["wildcard"] == 2


def test_a_syntax_error_fails_its_listing_and_the_next_listings_still_run(
    tmp_path: Path,
) -> None:
    status, report = verify_json(tmp_path, CHAPTERS / "syntax_error.md")
    assert status == 1
    assert failures(report) == [(11, "syntax-error")]
    assert "line 12" in report["chapters"][0]["failures"][0]["message"]
    assert report["chapters"][0]["listings"] == {"passed": 2, "total": 3}


def test_a_hanging_listing_is_stopped_and_the_other_chapters_are_still_verified(
    tmp_path: Path,
) -> None:
    status, report = verify_json(
        tmp_path, "--timeout", "1", CHAPTERS / "hang.md", CHAPTERS / "passing.md"
    )
    assert status == 1
    hang, passing = report["chapters"]
    assert [(f["line"], f["kind"]) for f in hang["failures"]] == [
        (11, "timeout"),
        (19, "not-run"),
    ]
    assert "did not finish within 1 s" in hang["failures"][0]["message"]
    printed = "printed before it was stopped:\n  | waiting for a delivery"
    assert printed in hang["failures"][0]["detail"]
    assert [b["status"] for b in hang["blocks"]] == ["passed", "failed", "not-run"]
    assert passing["ok"]


def test_a_listing_that_floods_its_output_is_stopped_and_the_chapter_goes_on(
    tmp_path: Path,
) -> None:
    status, report = verify_json(tmp_path, CHAPTERS / "flood.md")
    assert status == 1
    (failure,) = report["chapters"][0]["failures"]
    assert (failure["line"], failure["kind"]) == (3, "too-much-output")
    assert "was stopped at the worker's file-size limit" in failure["message"]
    assert "not shown)" in failure["detail"]
    assert len(failure["detail"]) < 10_000
    assert report["chapters"][0]["listings"] == {"passed": 1, "total": 2}


def test_an_orphan_output_block_is_a_usage_error_naming_file_and_line() -> None:
    completed = verify(CHAPTERS / "orphan_output.md", CHAPTERS / "passing.md")
    assert completed.returncode == 2
    assert "orphan_output.md:9: `output` block with no `python` block" in completed.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("--no-such-flag", "--textbook"), "unrecognized arguments"),
        (("missing-chapter.md",), "no such chapter file"),
        ((), "nothing to verify"),
        (("--textbook", "x.md"), "not both"),
        (("--timeout", "0", "--textbook"), "positive number"),
        (("-j", "0", "--textbook"), "at least 1"),
    ],
)
def test_usage_errors_exit_2(arguments: tuple[str, ...], message: str) -> None:
    completed = verify(*arguments)
    assert completed.returncode == 2
    assert message in completed.stderr


def test_a_malformed_manifest_is_a_usage_error_naming_its_line(tmp_path: Path) -> None:
    manifest = tmp_path / "book.toml"
    manifest.write_text('title = "x"\n\n[[chapters]]\nnumber = = 1\n', encoding="utf-8")
    completed = verify("--textbook", "--manifest", manifest)
    assert completed.returncode == 2
    assert f"{manifest}:4: malformed TOML" in completed.stderr


def test_a_manifest_entry_missing_a_field_is_a_usage_error(tmp_path: Path) -> None:
    manifest = tmp_path / "book.toml"
    manifest.write_text(
        '[[chapters]]\nnumber = 1\ntitle = "One"\nstatus = "planned"\n',
        encoding="utf-8",
    )
    completed = verify("--textbook", "--manifest", manifest)
    assert completed.returncode == 2
    assert f"{manifest}:1: chapter 1: a planned chapter needs a one-line `summary`" in (
        completed.stderr
    )


def test_a_manifest_error_names_the_line_of_the_offending_key(tmp_path: Path) -> None:
    manifest = tmp_path / "book.toml"
    manifest.write_text(
        '[[chapters]]\nnumber = 1\ntitle = "One"\nstatus = "planned"\nsummary = "s"\n'
        '\n[[chapters]]\nnumber = 2\ntitle = "Two"\nstatus = "finished"\n',
        encoding="utf-8",
    )
    completed = verify("--textbook", "--manifest", manifest)
    assert completed.returncode == 2
    assert f"{manifest}:10: chapter 2: `status` must be" in completed.stderr


def test_a_file_named_by_the_manifest_but_missing_is_a_usage_error(tmp_path: Path) -> None:
    manifest = tmp_path / "book" / "textbook" / "book.toml"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        '[[chapters]]\nnumber = 1\ntitle = "One"\nstatus = "drafted"\n'
        'text = "ch01_one.md"\ncheckpoint = "c.py"\nlearner = "l.py"\n'
        'exercises = "exercises/book01"\nsolutions = "solutions/book01"\n',
        encoding="utf-8",
    )
    completed = verify("--textbook", "--manifest", manifest)
    assert completed.returncode == 2
    assert f"{manifest}:5: chapter 1: `text` names a missing file" in completed.stderr


def test_help_documents_the_manifest_option() -> None:
    completed = verify("--help")
    assert completed.returncode == 0
    assert "--manifest PATH" in completed.stdout
    assert "--update" in completed.stdout


@pytest.mark.slow
def test_the_real_book_verifies_and_lists_planned_chapters_as_planned(
    real_book: RealBookRun,
) -> None:
    # `verify_book_assets_v2.py --textbook --no-cache`, run once for the whole
    # session (tests/real_book.py): the chapters' and the site's tests read it too.
    completed = real_book
    assert completed.verified_afresh
    assert completed.returncode == 0, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Construction report"))
    report = lines[start:]
    chapter_lines = [line for line in report if line[:4].strip().isdigit()]
    assert len(chapter_lines) == 14
    for line in chapter_lines:
        assert ("planned  (not verified)" in line) or ("drafted" in line and "holds" in line)
    assert report[-1].startswith("Summary:")
