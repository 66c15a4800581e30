"""A hostile trace: it chooses no code, reads no folder outside the root, and hangs nothing.

Each test performs the attack on a real trace file through the real command
line, in a fresh process, and checks what an attacker would want to see
(a planted secret in the output, a marker file written by planted code)
never happens.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from morning_plan import PLAN, ROOT, SHOP, turn
from strength import examples

from sovereign_agent.documents import build_document_tools
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import build_tools
from sovereign_agent.trace import JsonLinesFile, Recorder, TraceFormatError, read_trace
from sovereign_agent.trace.__main__ import main
from sovereign_agent.trace.inputs import MAX_DEPTH, printable
from sovereign_agent.trace.recorder import encode_event
from sovereign_agent.trace.replay import ReplaySetupError, replay_run
from sovereign_agent.trace.setups import KNOWN_SETUPS

SECRET = "secret-token-7c1e0f9a55d2"
READ_NOTE = [
    turn(AssistantToolCall(id="c1", name="read_document", arguments_json='{"name": "note.md"}')),
    AssistantMessage(content="Read."),
]


def cli(*argv: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    return subprocess.run(
        [sys.executable, "-m", "sovereign_agent.trace", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def record(trace: Path, script: list[Any], dispatcher: Any = None) -> None:
    run_task(
        ScriptedModel(script),
        build_tools(SHOP) if dispatcher is None else dispatcher,
        "Plan this morning's re-order.",
        max_steps=6,
        max_tool_calls=8,
        recorder=Recorder(JsonLinesFile(trace)),
    )


def edit_setup(trace: Path, **change: Any) -> None:
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    events[0]["setup"].update(change)
    trace.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A book folder holding notes, and beside it (outside it) a folder holding a secret."""
    notes = tmp_path / "book" / "notes"
    notes.mkdir(parents=True)
    (notes / "note.md").write_text("Vanilla at 250 pence.\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "note.md").write_text(f"{SECRET}\n", encoding="utf-8")
    return tmp_path / "book"


def document_trace(tmp_path: Path, book: Path) -> Path:
    trace = tmp_path / "notes.jsonl"
    record(trace, READ_NOTE, build_document_tools(SHOP, documents_root=str(book / "notes")))
    return trace


def test_a_document_run_replays_under_the_root_it_was_recorded_in(
    tmp_path: Path, book: Path
) -> None:
    trace = document_trace(tmp_path, book)
    result = cli("replay", str(trace), "--root", str(book))
    assert result.returncode == 0, result.stderr
    assert "1 match, 0 diverged" in result.stdout


@pytest.mark.parametrize("root", [None, "book"])
def test_a_documents_root_edited_to_another_folder_is_refused_before_reading(
    tmp_path: Path, book: Path, root: str | None
) -> None:
    trace = document_trace(tmp_path, book)
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    events[0]["setup"]["arguments"]["documents_root"] = str(tmp_path / "elsewhere")
    trace.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    options = [] if root is None else ["--root", str(tmp_path / root)]
    result = cli("replay", str(trace), *options)
    assert result.returncode == 2
    assert SECRET not in result.stdout + result.stderr
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    if root is None:
        assert "reads files (documents_root)" in result.stderr and "--root DIR" in result.stderr
    else:
        assert "lies outside --root" in result.stderr and "nothing read" in result.stderr


@pytest.mark.parametrize("escape", ["notes/../../elsewhere", "../elsewhere", "link"])
def test_a_relative_or_linked_folder_that_escapes_the_root_is_refused(
    tmp_path: Path, book: Path, escape: str
) -> None:
    (book / "link").symlink_to(tmp_path / "elsewhere")
    trace = document_trace(tmp_path, book)
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    events[0]["setup"]["arguments"]["documents_root"] = escape
    trace.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    result = cli("replay", str(trace), "--root", str(book))
    assert result.returncode == 2
    assert "lies outside --root" in result.stderr
    assert SECRET not in result.stdout + result.stderr


def test_a_relative_folder_is_found_under_the_root(tmp_path: Path, book: Path) -> None:
    trace = document_trace(tmp_path, book)
    (run,) = read_trace(trace)
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    events[0]["setup"]["arguments"]["documents_root"] = "notes"
    trace.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    (moved,) = read_trace(trace)
    assert replay_run(moved, root=book).divergence is None
    with pytest.raises(ReplaySetupError, match="--root DIR"):
        replay_run(run)


def test_a_factory_named_as_a_file_is_never_executed(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    marker = tmp_path / "marker"
    # Once, `sovereign_agent.x.py:f` passed a prefix check and ran as a file in the cwd.
    (tmp_path / "sovereign_agent.x.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\ndef f(**_): pass\n",
        encoding="utf-8",
    )
    edit_setup(trace, factory="sovereign_agent.x.py:f")
    result = cli("replay", str(trace), cwd=tmp_path)
    assert result.returncode == 2
    assert "which replay does not know" in result.stderr
    assert not marker.exists()


def test_a_package_callable_named_by_a_trace_is_never_called(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    planted = tmp_path / "planted.sqlite"
    # open_store creates a database file: an effect anyone could see.
    edit_setup(trace, factory="sovereign_agent.store:open_store", arguments={"path": str(planted)})
    result = cli("replay", str(trace), cwd=tmp_path)
    assert result.returncode == 2
    assert "names the setup sovereign_agent.store:open_store, which replay does not know" in (
        result.stderr
    )
    assert not planted.exists()


def test_a_known_setup_refuses_an_argument_it_does_not_take(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    arguments = read_trace(trace)[0].started.setup.arguments  # type: ignore[union-attr]
    edit_setup(trace, arguments={**arguments, "before_write": "os:system"})
    result = cli("replay", str(trace))
    assert result.returncode == 2
    assert "takes no argument 'before_write'" in result.stderr


def test_arguments_a_factory_cannot_use_are_one_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    edit_setup(trace, arguments={"shop": [1, 2], "prices": "cheap"})
    result = cli("replay", str(trace))
    assert result.returncode == 2
    assert result.stderr.startswith("error: the setup could not build the tools: ")
    assert len(result.stderr.splitlines()) == 1


def test_the_person_replaying_still_chooses_their_own_setup(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    edit_setup(trace, factory="lucys.own:tools")
    (run,) = read_trace(trace)
    assert replay_run(run, setup=build_tools).divergence is None
    result = cli("replay", str(trace), "--setup", "sovereign_agent.shop:build_tools")
    assert result.returncode == 0, result.stderr


def test_every_factory_that_records_a_setup_is_known_with_the_arguments_it_records() -> None:
    """The list and the runtime cannot drift: a new factory must be added, or its runs refuse."""
    from sovereign_agent.evaluate.variants import variant_tools
    from sovereign_agent.skills import build_skill_tools

    books = ROOT / "book/textbook"
    built = [
        build_tools(SHOP),
        variant_tools(SHOP, {"SKU-VANILLA": 250}),
        build_document_tools(SHOP, documents_root=str(books / "documents")),
        build_skill_tools(SHOP, skills_root=str(books / "skills"), provenance="shop"),
    ]
    recorded = {d.setup.factory: d.setup for d in built if d.setup is not None}
    assert sorted(recorded) == sorted(KNOWN_SETUPS)
    for name, setup in recorded.items():
        known = KNOWN_SETUPS[name]
        assert set(setup.arguments) <= known.arguments, name
        assert known.folders <= set(setup.arguments), name
        assert known.factory().__name__ == name.rpartition(":")[2]


def deep_line(depth: int) -> str:
    return '{"v": 1, "run": "r", "seq": 1, "event": "run_started", "x": ' + (
        "[" * depth + "]" * depth + "}\n"
    )


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 900, 100_000])
@pytest.mark.parametrize("command", ["replay", "summary"])
def test_one_deeply_nested_line_is_refused_with_its_line(
    tmp_path: Path, depth: int, command: str
) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    with trace.open("a", encoding="utf-8") as file:
        file.write(deep_line(depth))
    result = cli(command, str(trace))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr == f"error: {trace}, line 15: nested deeper than {MAX_DEPTH} levels\n"


def test_nesting_at_the_limit_is_read(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    value: Any = 1
    for _ in range(MAX_DEPTH - 3):  # the event, its setup and their arguments: three levels
        value = [value]
    events[0]["setup"]["arguments"]["deep"] = value
    trace.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    assert read_trace(trace)[0].started.setup is not None
    events[0]["setup"]["arguments"]["deep"] = [value]
    trace.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    with pytest.raises(TraceFormatError, match="line 1: nested deeper than"):
        read_trace(trace)


@pytest.mark.parametrize("command", ["replay", "summary"])
def test_a_fifo_named_as_the_trace_is_refused_without_waiting(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    result = cli(command, str(fifo), timeout=30)
    assert result.returncode == 2
    assert result.stderr == f"error: {fifo}: a FIFO, not a regular file\n"


def test_escapes_in_a_run_id_and_its_text_are_printed_escaped(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    hostile = "\x1b]0;owned\x07\x1b[2J\u202e\x9b31m"
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    for event in events:
        event["run"] = hostile + "abc"
    events[0]["model"] = "scripted" + hostile
    events[-1]["answer"] = "Done." + hostile  # a divergence that prints recorded text
    trace.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    replayed = cli("replay", str(trace))
    summary = cli("summary", str(trace))
    assert replayed.returncode == 1 and summary.returncode == 0
    for output in (replayed.stdout, replayed.stderr, summary.stdout, summary.stderr):
        assert not any(character in output for character in "\x1b\x07\u202e\x9b")
    assert "run \\x1b]0;owned\\x07" in replayed.stdout
    assert "Done.\\x1b]0;owned\\x07\\x1b[2J\\u202e\\x9b31m" in replayed.stdout


def test_an_escape_in_a_field_name_is_printed_escaped(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    record(trace, PLAN)
    edit_setup(trace)
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    events[0]["\x1b[2J"] = 1
    trace.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    result = cli("summary", str(trace))
    assert result.returncode == 2
    assert "\x1b" not in result.stderr and "\\x1b[2J" in result.stderr


def test_printable_escapes_controls_and_bidi_and_keeps_the_rest() -> None:
    assert printable('ok {"a": "b\\n"} é 漢') == 'ok {"a": "b\\n"} é 漢'
    assert printable("a\x1b[31mb\x00\x7f\x85\u2028\u202e\u2066\U000e0001") == (
        "a\\x1b[31mb\\x00\\x7f\\x85\\u2028\\u202e\\u2066\\U000e0001"
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)
FIELDS = ["v", "run", "seq", "event", "setup", "model", "task", "tools", "gen_ai.tool.name"]


@st.composite
def trace_lines(draw: st.DrawFn) -> str:
    """Lines a hostile or broken writer could leave: recorded lines edited, or anything at all."""
    recorded = draw(st.sampled_from(RECORDED))
    lines = recorded.splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 3))):
        index = draw(st.integers(0, len(lines) - 1))
        choice = draw(st.integers(0, 2))
        try:
            event = json.loads(lines[index])
        except ValueError:
            event = None
        if choice == 0 and isinstance(event, dict):
            event[draw(st.sampled_from([*event, *FIELDS]))] = draw(json_values)
            lines[index] = json.dumps(event) + "\n"
        elif choice <= 1:
            lines[index] = draw(st.text(max_size=40)).replace("\n", "") + "\n"
        else:
            del lines[index]
            if not lines:
                break
    return "".join(lines)


def _recorded(script: list[Any]) -> str:
    sink: list[dict[str, Any]] = []
    run_task(
        ScriptedModel(script),
        build_tools(SHOP),
        "Plan this morning's re-order.",
        max_steps=6,
        max_tool_calls=8,
        recorder=Recorder(sink.append),
    )
    return "".join(encode_event(event).decode("utf-8") for event in sink)


RECORDED = [_recorded(PLAN), _recorded(PLAN[:1])]


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=trace_lines())
def test_any_trace_text_exits_0_1_or_2_with_one_error_line(tmp_path: Path, text: str) -> None:
    """In process, so that any exception the commands let through fails the test outright."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(text, encoding="utf-8")
    for command in ("replay", "summary"):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([command, str(trace)])
        assert status in (0, 1, 2)
        assert (status == 2) == bool(err.getvalue())
        if status == 2:
            assert len(err.getvalue().splitlines()) == 1
        assert all(line.isprintable() for line in (out.getvalue() + err.getvalue()).splitlines())
