"""`trace show`: a recorded run as a timeline on the terminal and as a page, hostile text made safe.

Traces are real: recorded by the chapter 3 checkpoint in a fresh process under
SOVEREIGN_TRACE, or by `run_task` with a file sink. The commands run as a user
runs them, `python -m sovereign_agent.trace`, in a fresh process.
"""

from __future__ import annotations

import html.parser
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from morning_plan import CHAPTER_3, PLAN, ROOT, SHOP, ask, turn
from strength import examples

from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import NoArguments, ProductArguments, build_tools
from sovereign_agent.skills import build_skill_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool
from sovereign_agent.trace import JsonLinesFile, Recorder, parse_trace, read_trace
from sovereign_agent.trace.inputs import printable
from sovereign_agent.trace.timeline import format_timeline, timeline, timeline_html

HOSTILE = "\x1b[2J\x1b]0;owned\x07<script>alert(1)</script>\u202eevil&\"'<img src=x>"


def cli(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    return subprocess.run(
        [sys.executable, "-m", "sovereign_agent.trace", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def checkpoint_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The chapter 3 checkpoint, run twice in fresh processes with SOVEREIGN_TRACE set."""
    trace = tmp_path_factory.mktemp("recorded") / "morning.jsonl"
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    for _ in range(2):
        subprocess.run(
            [sys.executable, str(CHAPTER_3)],
            cwd=ROOT,
            env={**env, "SOVEREIGN_TRACE": str(trace)},
            capture_output=True,
            check=True,
            timeout=120,
        )
    return trace


def hostile_trace(path: Path) -> None:
    """A run whose task, tool result, exception and answer all hold terminal and HTML attacks."""

    def lookup(arguments: ProductArguments) -> Any:
        if arguments.sku == "SKU-VANILLA":
            raise ValueError(HOSTILE)
        return {"note": HOSTILE}

    shop = build_tools(SHOP)
    tool = ExecutableTool("lookup", HOSTILE, ProductArguments, lookup, False)
    dispatcher = Dispatcher([*shop.tools.values(), tool], allowed=[*shop.allowed, "lookup"])
    script = [
        turn(
            ask("c1", "lookup", sku="SKU-VANILLA"),
            ask("c2", "lookup", sku="SKU-CHOCOLATE"),
        ),
        AssistantMessage(content=HOSTILE),
    ]
    run_task(
        ScriptedModel(script),
        dispatcher,
        HOSTILE,
        max_steps=4,
        max_tool_calls=4,
        recorder=Recorder(JsonLinesFile(path)),
    )


def test_show_prints_the_recorded_checkpoint_run_as_its_steps(checkpoint_trace: Path) -> None:
    first = read_trace(checkpoint_trace)[0]
    result = cli("show", str(checkpoint_trace), "--run", first.run_id[:10])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # One run only, though the file holds two.
    assert sum(line.split()[:1] == ["run"] for line in lines) == 1
    assert f"{first.run_id} (trace lines 1-14)" in lines[0]
    steps = [line.split()[:3] for line in lines if line[:2].strip().isdigit()]
    assert steps == [
        ["1", "chat", "offline"],
        ["1", "tool", "list_stock"],
        ["2", "chat", "offline"],
        ["2", "tool", "draft_order"],
        ["2", "tool", "draft_order"],
        ["3", "chat", "offline"],
    ]
    assert any('{"sku": "SKU-VANILLA", "quantity": 6} -> ok' in line for line in lines)
    finished = next(line for line in lines if "finished" in line)
    assert "final_answer after 3 step(s)" in finished
    # Durations are the recorded ones, in a unit.
    assert all(any(unit in line for unit in (" us", " ms", " s ")) for line in lines[4:10])


def test_show_without_run_prints_every_run(checkpoint_trace: Path) -> None:
    runs = read_trace(checkpoint_trace)
    result = cli("show", str(checkpoint_trace))
    assert result.returncode == 0, result.stderr
    for run in runs:
        assert run.run_id in result.stdout
    assert "(trace lines 15-28)" in result.stdout


def test_a_missing_run_id_is_one_line_and_exit_2(checkpoint_trace: Path, tmp_path: Path) -> None:
    for argv in (
        ("show", str(checkpoint_trace), "--run", "f00d"),
        ("export", str(checkpoint_trace), "--run", "f00d", "--otlp-json", str(tmp_path / "x")),
    ):
        result = cli(*argv)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr == "error: no run whose id starts with 'f00d'\n"
    assert not (tmp_path / "x").exists()


def test_a_model_error_and_failures_are_shown_with_their_cause(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    hostile_trace(trace)
    # A script one reply short: the second request is never answered.
    run_task(
        ScriptedModel(PLAN[:1]),
        build_tools(SHOP),
        "Plan.",
        max_steps=4,
        max_tool_calls=4,
        recorder=Recorder(JsonLinesFile(trace)),
    )
    runs = read_trace(trace)
    failed = [printable(line) for line in format_timeline(timeline(runs[0]))]
    assert any("tool_failed, at handler: ValueError: \\x1b[2J" in line for line in failed)
    stopped = format_timeline(timeline(runs[1]))
    assert any("no reply" in line for line in stopped)
    assert any("model_error after 2 step(s) (ModelResponseError)" in line for line in stopped)


def test_a_narrowing_is_shown_with_what_it_kept_and_removed() -> None:
    events: list[dict[str, Any]] = []
    script = [
        turn(ask("c1", "load_skill", skill="bulk-buyer")),
        AssistantMessage(content="Loaded."),
    ]
    shop = {"products": [dict(p) for p in SHOP["products"]]}
    run_task(
        ScriptedModel(script),
        build_skill_tools(shop, skills_root=str(ROOT / "book/textbook/skills"), provenance="shop"),
        "Stock up.",
        max_steps=3,
        max_tool_calls=3,
        recorder=Recorder(events.append),
    )
    run = parse_trace([json.dumps(event) + "\n" for event in events])[0]
    lines = format_timeline(timeline(run))
    narrowed = next(line for line in lines if "narrowed" in line)
    assert "by load_skill [c1]: skill bulk-buyer; kept" in narrowed
    assert "removed" in narrowed


def test_hostile_text_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    trace = tmp_path / "hostile.jsonl"
    hostile_trace(trace)
    result = cli("show", str(trace))
    assert result.returncode == 0, result.stderr
    for character in ("\x1b", "\x07", "\u202e"):
        assert character not in result.stdout
    assert "\\x1b[2J" in result.stdout and "\\u202e" in result.stdout


class _Page(html.parser.HTMLParser):
    """What a browser would build from the page: its elements and their attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += attrs

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_the_page_shows_hostile_text_and_runs_none_of_it(tmp_path: Path) -> None:
    trace = tmp_path / "hostile.jsonl"
    hostile_trace(trace)
    page = tmp_path / "run.html"
    result = cli("show", str(trace), "--html", str(page))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"wrote {page}: 1 run(s)\n"
    text = page.read_text(encoding="utf-8")
    parsed = _Page()
    parsed.feed(text)
    # Only the page's own elements: none of the trace's <script> or <img>.
    assert set(parsed.tags) <= {
        "html", "head", "meta", "title", "style", "body", "h1", "table", "thead",
        "tbody", "tr", "th", "td",
    }  # fmt: skip
    assert not any(name.startswith("on") or name == "src" for name, _ in parsed.attributes)
    shown = "".join(parsed.text)
    assert "<script>alert(1)</script>" in shown and "<img src=x>" in shown
    # Nothing that loads from elsewhere, and no control or direction characters.
    assert "http://" not in text and "https://" not in text and "url(" not in text
    for character in ("\x1b", "\x07", "\u202e"):
        assert character not in text
    # No temporary file left beside it.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["hostile.jsonl", "run.html"]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(task=st.text(max_size=60), answer=st.text(max_size=60))
def test_any_text_in_a_run_is_escaped_on_the_page(task: str, answer: str) -> None:
    events: list[dict[str, Any]] = []
    run_task(
        ScriptedModel([AssistantMessage(content=answer or "done")]),
        build_tools(SHOP),
        task or "t",
        max_steps=2,
        max_tool_calls=2,
        recorder=Recorder(events.append),
    )
    run = parse_trace([json.dumps(event) + "\n" for event in events])[0]
    page = timeline_html([run], title=task)
    parsed = _Page()
    parsed.feed(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    body = page.split("<body>", 1)[1]
    # Every "<" in the body opens one of the page's own tags.
    for piece in body.split("<")[1:]:
        assert piece.split(">", 1)[0].split(" ", 1)[0].lstrip("/") in {
            "h1", "table", "thead", "tbody", "tr", "th", "td", "body", "html", "",
        }  # fmt: skip


def test_show_refuses_a_page_it_cannot_write_in_one_line(
    checkpoint_trace: Path, tmp_path: Path
) -> None:
    result = cli("show", str(checkpoint_trace), "--html", str(tmp_path / "missing" / "p.html"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: cannot write {tmp_path / 'missing' / 'p.html'}")


def test_a_long_result_is_cut_on_the_terminal_and_whole_on_the_page(tmp_path: Path) -> None:
    long_note = "cold " * 200 + "END-OF-NOTE"

    def report(arguments: NoArguments) -> Any:
        return long_note

    shop = build_tools(SHOP)
    tool = ExecutableTool("report", "A long report.", NoArguments, report, False)
    trace = tmp_path / "long.jsonl"
    run_task(
        ScriptedModel([turn(ask("c1", "report")), AssistantMessage(content="Read.")]),
        Dispatcher([*shop.tools.values(), tool], allowed=[*shop.allowed, "report"]),
        "Report.",
        max_steps=3,
        max_tool_calls=3,
        recorder=Recorder(JsonLinesFile(trace)),
    )
    shown = cli("show", str(trace))
    line = next(line for line in shown.stdout.splitlines() if "tool report" in line)
    assert "END-OF-NOTE" not in line and line.endswith("\u2026")
    assert len(line) < 160
    page = tmp_path / "long.html"
    assert cli("show", str(trace), "--html", str(page)).returncode == 0
    assert "END-OF-NOTE" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize("command", ["show", "export"])
def test_a_fifo_named_as_the_trace_is_refused_at_once(command: str, tmp_path: Path) -> None:
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    extra = ["--otlp-json", str(tmp_path / "out.json")] if command == "export" else []
    result = cli(command, str(fifo), *extra)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "FIFO" in result.stderr


def test_the_page_is_readable_by_its_owner_only(checkpoint_trace: Path, tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_text("an older page", encoding="utf-8")
    assert cli("show", str(checkpoint_trace), "--html", str(page)).returncode == 0
    assert page.stat().st_mode & 0o777 == 0o600
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
