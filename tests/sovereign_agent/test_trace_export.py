"""`trace export --otlp-json`: OpenTelemetry spans any OTLP tool can load, and nothing sensitive.

The export is checked against the official schema: the `opentelemetry-proto`
package's `ExportTraceServiceRequest`, parsed with protobuf's own JSON parser,
which refuses a field, a type or an enum the schema does not define. OTLP's
JSON encoding differs from protobuf's in one point, the ids: OTLP writes them
as hex, protobuf as base64. The test checks the hex (valid, right length,
non-zero), then turns it into base64, as an OTLP receiver does, before parsing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from morning_plan import CHAPTER_3, ROOT, SHOP, ask, turn
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from otlp_json import attributes, parse_otlp, spans_of
from strength import examples

from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import NoArguments, ProductArguments, build_tools
from sovereign_agent.skills import build_skill_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool
from sovereign_agent.trace import JsonLinesFile, Recorder, parse_trace, read_trace
from sovereign_agent.trace.format import ToolOutcomeEvent
from sovereign_agent.trace.otlp import export_runs

SECRET = "secret-token-41d09c7be2"
SECRET_ARGUMENT = "secret-token-arg-5f2a"
SECRET_TASK = "secret-token-task-93b1"


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    return subprocess.run(
        [sys.executable, "-m", "sovereign_agent.trace", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def checkpoint_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    trace = tmp_path_factory.mktemp("recorded") / "morning.jsonl"
    env = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    subprocess.run(
        [sys.executable, str(CHAPTER_3)],
        cwd=ROOT,
        env={**env, "SOVEREIGN_TRACE": str(trace)},
        capture_output=True,
        check=True,
        timeout=120,
    )
    return trace


def secret_trace(path: Path) -> None:
    """A run whose task, arguments, tool result and exception hold planted secrets."""

    def vault(arguments: NoArguments) -> Any:
        return {"combination": SECRET}

    def broken(arguments: ProductArguments) -> Any:
        raise ValueError(f"cannot reach {SECRET}")

    shop = build_tools(SHOP)
    tools = [
        ExecutableTool("vault", "Read the vault.", NoArguments, vault, False),
        ExecutableTool("broken", "Always fails.", ProductArguments, broken, False),
    ]
    dispatcher = Dispatcher(
        [*shop.tools.values(), *tools], allowed=[*shop.allowed, "vault", "broken"]
    )
    script = [
        turn(ask("c1", "vault"), ask("c2", "broken", sku=SECRET_ARGUMENT)),
        AssistantMessage(content=f"The combination is {SECRET}."),
    ]
    run_task(
        ScriptedModel(script),
        dispatcher,
        f"Open the vault, {SECRET_TASK}.",
        max_steps=4,
        max_tool_calls=4,
        system=f"You know {SECRET_TASK}.",
        recorder=Recorder(JsonLinesFile(path)),
    )


def test_the_export_parses_with_the_official_schema_one_span_per_call(
    checkpoint_trace: Path, tmp_path: Path
) -> None:
    target = tmp_path / "spans.json"
    result = cli("export", str(checkpoint_trace), "--otlp-json", str(target))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"wrote {target}: 1 run(s), 7 span(s), without content\n"
    request = parse_otlp(json.loads(target.read_text(encoding="utf-8")))
    spans = spans_of(request)
    run = read_trace(checkpoint_trace)[0]
    replies = sum(event.event == "model_reply" for event in run.events)
    outcomes = [event for event in run.events if isinstance(event, ToolOutcomeEvent)]
    root = spans[0]
    assert root.name == "invoke_agent" and root.parent_span_id == b""
    assert root.kind == Span.SPAN_KIND_INTERNAL
    chats = [span for span in spans if span.name.startswith("chat ")]
    tools = [span for span in spans if span.name.startswith("execute_tool ")]
    assert len(chats) == replies == 3
    assert [span.name for span in tools] == [f"execute_tool {e.tool_name}" for e in outcomes]
    assert len(spans) == 1 + len(chats) + len(tools)
    # Every child hangs from the run span, in the run's one trace.
    for span in spans[1:]:
        assert span.parent_span_id == root.span_id
        assert span.trace_id == root.trace_id
        assert root.start_time_unix_nano <= span.start_time_unix_nano
        assert span.start_time_unix_nano <= span.end_time_unix_nano <= root.end_time_unix_nano
    assert len({span.span_id for span in spans}) == len(spans)
    # Durations are the recorded ones.
    for span, outcome in zip(tools, outcomes, strict=True):
        assert span.end_time_unix_nano - span.start_time_unix_nano == outcome.duration_ns
    # The GenAI conventions' names.
    assert attributes(root)["gen_ai.operation.name"] == "invoke_agent"
    assert attributes(chats[0])["gen_ai.operation.name"] == "chat"
    assert attributes(chats[0])["gen_ai.response.model"] == "offline"
    assert attributes(chats[0])["gen_ai.response.finish_reasons"] == ["tool_calls"]
    first_tool = attributes(tools[0])
    assert first_tool["gen_ai.operation.name"] == "execute_tool"
    assert first_tool["gen_ai.tool.name"] == "list_stock"
    assert first_tool["gen_ai.tool.call.id"] == outcomes[0].call_id
    # A trace recorded without sources claims none: absent, never a guess such as "local".
    assert all("sovereign_agent.source" not in attributes(span) for span in tools)
    assert request.resource_spans[0].resource.attributes[0].key == "service.name"


def test_failures_are_error_spans_with_an_exception_event(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    secret_trace(trace)
    spans = spans_of(parse_otlp(export_runs(read_trace(trace))))
    broken = next(span for span in spans if span.name == "execute_tool broken")
    assert broken.status.code == Status.STATUS_CODE_ERROR
    assert broken.status.message == "tool_failed"
    assert attributes(broken)["error.type"] == "ValueError"
    assert [event.name for event in broken.events] == ["exception"]
    vault = next(span for span in spans if span.name == "execute_tool vault")
    assert vault.status.code == Status.STATUS_CODE_UNSET


def test_no_sensitive_content_leaves_without_the_flag(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    secret_trace(trace)
    assert SECRET in trace.read_text(encoding="utf-8")  # the trace itself holds it
    plain, full = tmp_path / "plain.json", tmp_path / "full.json"
    assert cli("export", str(trace), "--otlp-json", str(plain)).returncode == 0
    written = plain.read_text(encoding="utf-8")
    for planted in (SECRET, SECRET_ARGUMENT, SECRET_TASK):
        assert planted not in written
    parse_otlp(json.loads(written))

    result = cli("export", str(trace), "--otlp-json", str(full), "--content")
    assert result.returncode == 0, result.stderr
    assert "with content" in result.stdout
    spans = spans_of(parse_otlp(json.loads(full.read_text(encoding="utf-8"))))
    vault = attributes(next(span for span in spans if span.name == "execute_tool vault"))
    assert SECRET in vault["gen_ai.tool.call.result"]
    broken = next(span for span in spans if span.name == "execute_tool broken")
    assert SECRET_ARGUMENT in attributes(broken)["gen_ai.tool.call.arguments"]
    exception = {pair.key: pair.value.string_value for pair in broken.events[0].attributes}
    assert SECRET in exception["exception.message"]
    root = attributes(spans[0])
    assert SECRET_TASK in root["gen_ai.input.messages"]
    assert SECRET_TASK in root["gen_ai.system_instructions"]
    assert SECRET in root["gen_ai.output.messages"]
    messages = json.loads(root["gen_ai.input.messages"])
    assert messages[0]["role"] == "user" and messages[0]["parts"][0]["type"] == "text"


def test_the_export_is_the_same_bytes_every_time_and_ids_follow_content(
    checkpoint_trace: Path, tmp_path: Path
) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for target in (first, second):
        assert cli("export", str(checkpoint_trace), "--otlp-json", str(target)).returncode == 0
    assert first.read_bytes() == second.read_bytes()
    # A run that differs in anything recorded gets other ids.
    lines = checkpoint_trace.read_text(encoding="utf-8").splitlines(keepends=True)
    events = [json.loads(line) for line in lines]
    events[-1]["duration_ns"] += 1
    changed = parse_trace([json.dumps(event) + "\n" for event in events])
    original = export_runs(read_trace(checkpoint_trace))
    edited = export_runs(changed)
    ids = [
        {span["traceId"] for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]}
        for doc in (original, edited)
    ]
    assert ids[0].isdisjoint(ids[1])


def test_a_model_error_and_an_unfinished_run_export_as_error_spans(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = []
    run_task(
        ScriptedModel([turn(ask("c1", "list_stock"))]),
        build_tools(SHOP),
        "Plan.",
        max_steps=4,
        max_tool_calls=4,
        recorder=Recorder(events.append),
    )
    lines = [json.dumps(event) + "\n" for event in events]
    finished, cut = parse_trace(lines), parse_trace(lines[:-1])
    spans = spans_of(parse_otlp(export_runs(finished)))
    assert spans[0].status.code == Status.STATUS_CODE_ERROR
    assert spans[0].status.message == "model_error"
    unanswered = spans[-1]
    assert unanswered.name.startswith("chat") and unanswered.status.message == "no reply"
    spans = spans_of(parse_otlp(export_runs(cut)))
    assert spans[0].status.message.startswith("unfinished")


def test_a_narrowing_is_an_event_on_its_call_span() -> None:
    events: list[dict[str, Any]] = []
    shop = {"products": [dict(p) for p in SHOP["products"]]}
    run_task(
        ScriptedModel(
            [turn(ask("c1", "load_skill", skill="bulk-buyer")), AssistantMessage(content="ok")]
        ),
        build_skill_tools(shop, skills_root=str(ROOT / "book/textbook/skills"), provenance="shop"),
        "Stock up.",
        max_steps=3,
        max_tool_calls=3,
        recorder=Recorder(events.append),
    )
    run = parse_trace([json.dumps(event) + "\n" for event in events])
    spans = spans_of(parse_otlp(export_runs(run)))
    load = next(span for span in spans if span.name == "execute_tool load_skill")
    assert [event.name for event in load.events] == ["sovereign_agent.scope_narrowed"]


def test_export_refuses_an_unusable_target_in_one_line(
    checkpoint_trace: Path, tmp_path: Path
) -> None:
    result = cli("export", str(checkpoint_trace), "--otlp-json", str(tmp_path / "no" / "x.json"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: cannot write")
    result = cli("export", str(checkpoint_trace))
    assert result.returncode == 2 and "--otlp-json" in result.stderr


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(task=st.text(max_size=40), answer=st.text(min_size=1, max_size=40))
def test_any_run_exports_to_the_schema_and_keeps_its_words_out(task: str, answer: str) -> None:
    events: list[dict[str, Any]] = []
    run_task(
        ScriptedModel([turn(ask("c1", "list_stock")), AssistantMessage(content=answer)]),
        build_tools(SHOP),
        task or "t",
        max_steps=3,
        max_tool_calls=3,
        recorder=Recorder(events.append),
    )
    runs = parse_trace([json.dumps(event) + "\n" for event in events])
    plain = export_runs(runs)
    spans = spans_of(parse_otlp(plain))
    assert [span.name for span in spans] == [
        "invoke_agent",
        "chat offline",
        "execute_tool list_stock",
        "chat offline",
    ]
    assert all(
        pair.key not in ("gen_ai.input.messages", "gen_ai.output.messages")
        for span in spans
        for pair in span.attributes
    )
    full = spans_of(parse_otlp(export_runs(runs, content=True)))
    said = json.loads(attributes(full[0])["gen_ai.output.messages"])
    assert said[0]["parts"][0]["content"] == answer
