"""The verifier's report as the site reads it: anything malformed is a ReportError."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from bookproof.site.evidence import ReportError, load_report

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["chapters", "file", "number", "ok", "listings", "blocks", "line", "x"]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=examples(200))
@given(_json)
def test_any_json_document_is_read_or_refused_with_a_report_error(document: object) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        try:
            report = load_report(path)
        except ReportError as error:
            assert str(error).startswith(str(path))
        else:
            assert isinstance(report.chapters, tuple)


def test_a_report_that_is_not_json_is_refused_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ReportError, match="the verifier report is not JSON"):
        load_report(path)


def test_a_number_written_as_text_is_refused_not_converted(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    chapter = {
        "file": "ch01.md",
        "number": "1",
        "ok": True,
        "listings": {"passed": 0, "total": 0},
        "blocks": [],
        "checkpoint": "ok",
        "learner": "ok",
        "failures": [],
        "isolation": "bwrap",
    }
    path.write_text(json.dumps({"chapters": [chapter]}), encoding="utf-8")
    with pytest.raises(ReportError, match=r"chapters\.0\.number"):
        load_report(path)


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_a_deeply_nested_report_is_refused_with_a_report_error(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "report.json"
    path.write_text('{"chapters": ' + "[" * depth + "]" * depth + "}", encoding="utf-8")
    with pytest.raises(ReportError, match="nested too deeply"):
        load_report(path)


def test_a_report_that_does_not_say_how_the_code_ran_is_refused(tmp_path: Path) -> None:
    """The site states the isolation on every chapter: it never guesses it."""
    path = tmp_path / "report.json"
    chapter = {
        "file": "ch01.md",
        "number": 1,
        "ok": True,
        "listings": {"passed": 0, "total": 0},
        "blocks": [],
        "checkpoint": "ok",
        "learner": "ok",
        "failures": [],
    }
    path.write_text(json.dumps({"chapters": [chapter]}), encoding="utf-8")
    with pytest.raises(ReportError, match=r"chapters\.0\.isolation: Field required"):
        load_report(path)
    chapter["isolation"] = "container"
    path.write_text(json.dumps({"chapters": [chapter]}), encoding="utf-8")
    with pytest.raises(ReportError, match=r"chapters\.0\.isolation"):
        load_report(path)
    chapter["isolation"] = "none"
    path.write_text(json.dumps({"chapters": [chapter]}), encoding="utf-8")
    assert load_report(path).chapters[0].isolation == "none"
