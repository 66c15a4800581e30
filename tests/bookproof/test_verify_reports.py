"""The reports stay valid and readable, whatever the listings print or raise."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from verifying import verify

CONTROL = """\
# Control characters

```python
print("\\x1b[31mred\\x00\\x07 \\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
```

```output
red
```

```python
raise ValueError("bad \\x1b[2J \\x00 \\x0c \\ud800")
```
"""

FLOOD = """\
# Long outputs

```python
for n in range(50_000):
    print("line", n)
```

```output
line 0
```

```python
print("x" * 500_000)
```

```output
x
```
"""


def run_reports(tmp_path: Path, text: str) -> tuple[str, dict, ElementTree.Element]:
    chapter = tmp_path / "chapter.md"
    chapter.write_text(text, encoding="utf-8")
    report, junit = tmp_path / "report.json", tmp_path / "report.xml"
    completed = verify(chapter, "--json", report, "--junit", junit)
    assert completed.returncode == 1, completed.stderr
    # Strict parsers: no lone surrogate in the JSON, nothing XML 1.0 forbids.
    document = json.loads(report.read_bytes().decode("utf-8"))
    json.dumps(document, ensure_ascii=False).encode("utf-8")
    return completed.stdout, document, ElementTree.parse(junit).getroot()


def test_control_characters_and_lone_surrogates_keep_every_report_valid(tmp_path: Path) -> None:
    _, document, root = run_reports(tmp_path, CONTROL)
    failures = document["chapters"][0]["failures"]
    assert [failure["kind"] for failure in failures] == ["output-mismatch", "exception"]
    assert "\ufffd" in failures[1]["detail"]
    texts = [element.text or "" for element in root.iter("failure")]
    assert any("\\x1b[31mred\\x00\\x07" in text for text in texts)
    assert any("bad \\x1b[2J \\x00 \\x0c" in text for text in texts)


def test_long_outputs_are_quoted_up_to_a_bound_with_the_size_left_out(tmp_path: Path) -> None:
    printed, document, root = run_reports(tmp_path, FLOOD)
    many_lines, long_line = document["chapters"][0]["failures"]
    assert "more diff lines)" in many_lines["detail"]
    # The diff line is "+" and the 500,000 characters; 400 of them are shown.
    assert "(499,601 more character(s) not shown)" in long_line["detail"]
    for failure in (many_lines, long_line):
        assert len(failure["detail"]) < 25_000
    assert len(printed) < 100_000
    assert all(len(element.text or "") < 25_000 for element in root.iter("failure"))


def test_the_json_report_keeps_its_shape(tmp_path: Path) -> None:
    # Other tools (the site builder) read these keys; a change here is a change for them.
    _, document, _ = run_reports(tmp_path, CONTROL)
    assert sorted(document) == ["chapters", "exit_status", "isolation", "ok", "planned", "summary"]
    assert sorted(document["isolation"]) == ["mode", "reason", "statement"]
    assert document["isolation"]["mode"] in ("bwrap", "none")
    (chapter,) = document["chapters"]
    assert sorted(chapter) == [
        "blocks",
        "cache",
        "cached_from",
        "checkpoint",
        "coverage",
        "exercises",
        "failures",
        "file",
        "isolation",
        "learner",
        "listings",
        "number",
        "ok",
        "seconds",
        "status",
        "title",
        "updated",
        "warnings",
    ]
    assert sorted(chapter["blocks"][0]) == ["line", "mode", "output_line", "status"]
    assert sorted(chapter["failures"][0]) == [
        "cascade_of",
        "detail",
        "file",
        "kind",
        "line",
        "message",
    ]
    assert sorted(document["summary"]) == [
        "cached",
        "chapters",
        "failed",
        "held",
        "listings_cached",
        "listings_passed",
        "listings_total",
        "planned",
    ]
    # A chapter named on the command line is never looked up in the cache.
    assert (chapter["cache"], chapter["cached_from"]) == ("run", None)
    assert document["summary"]["cached"] == document["summary"]["listings_cached"] == 0
