"""The trace file's lines, written straight from what the recorder is told, are the events' bytes.

A recorder whose sink is a `JsonLinesFile` does not build the event and
encode it: it writes each line from its parts. The format does not change
by a byte: here the same calls go to two recorders with the same clocks and
run id, one writing lines to a file, the other handing every event to the
same kind of file through a plain function (which encodes the event, and
redacts it when it holds a secret). The two files must be equal, for any
text (controls, quotes, text beyond ASCII, lone surrogates), any numbers,
any observation, failure, refusal, source, classes, setup, and with and
without a key to hide.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from morning_plan import SHOP
from strength import examples

from sovereign_agent.loop import RunRecord, StopReason
from sovereign_agent.models import AssistantMessage, AssistantToolCall, ModelReply, Usage
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import build_tools
from sovereign_agent.tools import ArgumentProblem, Dispatcher, ToolFailure, ToolOutcome
from sovereign_agent.trace import JsonLinesFile, Recorder, read_trace

TEXT = st.text(
    st.one_of(st.sampled_from('"\\/\n\t\x00\x1f\x7fé€\u2028😀\udc80'), st.characters()),
    max_size=12,
)
# Plain JSON data a handler may return: floats and big numbers included.
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
KEY = "sk-proj-5f0e2b9c7a41d3e8aa"


def call_of(draw: st.DrawFn, number: int) -> AssistantToolCall:
    name = draw(st.sampled_from(["list_stock", "draft_order", "made_up"]) | TEXT)
    arguments = draw(st.sampled_from(["{}", '{"sku": "SKU-VANILLA", "quantity": 6}']) | TEXT)
    return AssistantToolCall(id=f"call-{number}-{draw(TEXT)}", name=name, arguments_json=arguments)


def outcome_of(draw: st.DrawFn) -> ToolOutcome:
    ok = draw(st.booleans())
    observation: dict[str, Any] = (
        {"ok": True, "result": draw(JSON)}
        if ok
        else {"ok": False, "error": draw(st.sampled_from(["invalid_arguments", "tool_failed"]))}
    )
    failure = None
    if draw(st.booleans()):
        failure = ToolFailure(
            stage=draw(st.sampled_from(["before_write", "handler", "result"])),
            error_type=draw(TEXT),
            message=draw(TEXT),
        )
    problems = tuple(
        ArgumentProblem(
            location=tuple(draw(st.lists(TEXT | st.integers(0, 9), max_size=2))), kind=draw(TEXT)
        )
        for _ in range(draw(st.integers(0, 2)))
    )
    return ToolOutcome(
        observation, handler_ran=draw(st.booleans()), failure=failure, argument_problems=problems
    )


@st.composite
def sessions(draw: st.DrawFn) -> list[tuple[str, tuple[Any, ...]]]:
    """The calls `run_task` makes on its recorder over one run, with random values."""
    dispatcher: Dispatcher = build_tools(SHOP)
    calls: list[tuple[str, tuple[Any, ...]]] = [
        (
            "run_started",
            (
                ScriptedModel([], label=draw(TEXT)) if draw(st.booleans()) else ScriptedModel([]),
                dispatcher,
                draw(TEXT),
                draw(st.none() | TEXT),
                draw(st.integers(1, 10**20)),
                draw(st.integers(0, 10**20)),
            ),
        )
    ]
    requested: list[str] = []
    number = itertools.count()
    for step in range(draw(st.integers(1, 3))):
        tools = dispatcher.schemas() if step == 0 or draw(st.booleans()) else []
        calls.append(("model_request", ([None] * draw(st.integers(1, 9)), tools)))
        tool_calls = [call_of(draw, next(number)) for _ in range(draw(st.integers(0, 2)))]
        usage = None
        if draw(st.booleans()):
            usage = Usage(
                input_tokens=draw(st.integers(0, 10**6)), output_tokens=draw(st.integers(0, 99))
            )
        reply = ModelReply(
            message=AssistantMessage(content=draw(st.none() | TEXT), tool_calls=tool_calls),
            model=draw(TEXT),
            finish_reason=draw(st.none() | st.just("") | TEXT),
            usage=usage,
        )
        calls.append(("model_reply", (reply,)))
        for call in tool_calls:
            requested.append(call.name)
            calls.append(("tool_call", (call,)))
            calls.append(("tool_outcome", (call, outcome_of(draw))))
    record = RunRecord(
        stop_reason=draw(st.sampled_from(list(StopReason))),
        answer=draw(st.none() | TEXT),
        error=draw(st.none() | TEXT.map(lambda words: f"ModelHTTPError: {words}")),
        steps=draw(st.integers(0, 6)),
        messages=(),
        requested=tuple(requested),
        executed=tuple(draw(st.lists(TEXT, max_size=2))),
        refused=tuple(draw(st.lists(st.tuples(TEXT, TEXT), max_size=2))),
        narrowings=(),
    )
    calls.append(("run_finished", (record,)))
    return calls


def play(recorder: Recorder, calls: list[tuple[str, tuple[Any, ...]]]) -> None:
    for method, arguments in calls:
        if method == "run_started":
            model, dispatcher, task, system, max_steps, max_tool_calls = arguments
            recorder.run_started(
                model,
                dispatcher,
                task,
                system=system,
                max_steps=max_steps,
                max_tool_calls=max_tool_calls,
            )
        else:
            getattr(recorder, method)(*arguments)


def recorder_for(sink: Any, sources: dict[str, str] | None, effects: bool) -> Recorder:
    clock, wall = itertools.count(1_000, 7), itertools.count(1_700_000_000_000_000_000, 11)
    return Recorder(
        sink,
        clock=lambda: next(clock),
        wall_clock=lambda: next(wall),
        new_run_id=lambda: "run-0001",
        sources=sources,
        effects=effects,
    )


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    calls=sessions(),
    sources=st.none() | st.just({"list_stock": "shop", "draft_order": "supplier \u2028 desk"}),
    effects=st.booleans(),
    secrets=st.sampled_from([(), (KEY,)]),
    quote_key=st.booleans(),
)
def test_the_lines_written_directly_are_the_bytes_of_the_events(
    tmp_path_factory: Any,
    calls: list[tuple[str, tuple[Any, ...]]],
    sources: dict[str, str] | None,
    effects: bool,
    secrets: tuple[str, ...],
    quote_key: bool,
) -> None:
    folder: Path = tmp_path_factory.mktemp("lines")
    if quote_key:
        # A task that quotes the key: that line must go the event's way, and be redacted.
        model, dispatcher, task, *rest = calls[0][1]
        calls = [("run_started", (model, dispatcher, f"{task} {KEY.upper()}", *rest)), *calls[1:]]
    direct, through_events = folder / "direct.jsonl", folder / "events.jsonl"
    file = JsonLinesFile(direct, secrets=secrets)
    play(recorder_for(file, sources, effects), calls)
    reference = JsonLinesFile(through_events, secrets=secrets)
    play(recorder_for(lambda event: reference(event), sources, effects), calls)
    written = direct.read_bytes()
    assert written == through_events.read_bytes()
    assert len(written.splitlines()) == len(calls)
    if secrets:
        assert KEY[3:9].encode() not in written.lower()


def test_the_morning_plans_lines_are_read_back_as_the_events_it_was_told(tmp_path: Path) -> None:
    # The recorder SOVEREIGN_TRACE makes writes lines; the reader sees the run as a list sink does.
    from morning_plan import PLAN, TASK

    from sovereign_agent.loop import run_task

    events: list[dict[str, Any]] = []
    trace = tmp_path / "plan.jsonl"
    for sink in (JsonLinesFile(trace), events.append):
        recorder = recorder_for(sink, None, True)
        run_task(
            ScriptedModel(PLAN),
            build_tools(SHOP),
            TASK,
            max_steps=6,
            max_tool_calls=8,
            recorder=recorder,
        )
    lines = trace.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == json.loads(json.dumps(events))
    (run,) = read_trace(trace)
    assert run.complete
