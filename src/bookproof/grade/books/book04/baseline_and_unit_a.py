"""Exercise Book 4: the checks for a submission's `evidence.py`, its `suite.toml` and its tests.

The graded interface is the "grader's door" at the end of the starter
(`exercises/book04/evidence.py`): plain JSON in and out, a trace or a suite
passed as its text, which the door writes to a scratch file in the sandbox's
`/tmp` before it runs the learner's code on it:

- `record_run(task, shop, prices, replies, max_steps, max_tool_calls, *, hints)`:
  the trace the learner's `run_task` writes for a scripted run, as text;
- `failures_in(trace_text)`, `replay_at_290(trace_text)`, `spread(suite_text,
  variant, seeds, repeat)`: Exercises 1, 2 and 4 on a trace or a suite;
- `failure_class_of(code, stage)` and `measure(tools, calls)`: the chapter's
  failure classes and metrics, as plain values.

Exercise 2's `strawberry_at_290(**recorded)` is asked directly, and Exercise 3
is data: `suite.toml`, which the grader reads from its own copy of the folder
(`handed_in`) and never runs as the learner's code.

Where the expected values come from. This book's checks are about chapter 4's
machinery, so the grader runs the book's runtime (`sovereign_agent`, which a
learner cannot edit: the sandbox mounts it read-only, and the grading process
imports it from the repository) as the reference of what the chapter's code
does. Every trace handed to a submission is recorded here by that runtime,
from replies, shops, prices, run ids and interleavings chosen at random for
this run; the failures in it are counted here, a replay's divergence is found
by the runtime's own `replay_run`, and pass rates come from its own
`run_suite`. A learner's own `run_task` is judged by the trace it writes for a
scripted run the grader chose, against the one the runtime writes. A
learner's suite is run against the chapter's tools and against this module's
own copy of the planted regression, never against the folder's `regressed.py`.

The book in four files: this one declares it and holds chapter 4's checks and
Unit A's exercises (a trace's failed handlers, a replay that parts ways);
`unit_a_tests` grades Unit A's tests by the faulty versions they catch;
`unit_b` holds Unit B (the suite that catches the regression, a pass rate's
spread, and its tests); `reading` reads what a submission's door sent back.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Book, Trial
from bookproof.grade.books.book04 import reading
from bookproof.grade.questions import (
    Asks,
    Ref,
    attrs,
    call,
    expect,
    method,
    same,
    tool_call,
)
from sovereign_agent.evaluate.metrics import Call, invalid_choices, recoveries, shaped_for
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import NoArguments, ProductArguments, build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall, ToolOutcome
from sovereign_agent.trace import Recorder, parse_trace
from sovereign_agent.trace.recorder import encode_event
from sovereign_agent.trace.replay import ReplaySetupError, replay_run
from sovereign_agent.trace.summary import FAILURE_CLASSES, failure_class

__all__ = ["BOOK"]

BOOK = Book(
    4,
    "Exercise Book 4: traces and evaluation",
    module="evidence",
    chapter="Chapter 4",
    files=("evidence.py", "suite.toml"),
)

S_RECORDER = BOOK.section("4.2 The loop, told to a recorder")
S_EVENTS = BOOK.section("4.3 Lucy's morning plan, event by event")
S_REPLAY = BOOK.section("4.6 Replaying a run")
S_TAXONOMY = BOOK.section("4.8 The failure taxonomy")
S_HINTS = BOOK.section("4.9 Safe hints")
S_SUITE = BOOK.section("4.10 An evaluation suite")
S_UNIT_A = BOOK.section("4.17 Exercises") + " (Exercise Book 4, Unit A)"
S_UNIT_B = BOOK.section("4.17 Exercises") + " (Exercise Book 4, Unit B)"


# --- runs recorded by the book's runtime, from data this module chose ------------------


def _reply(*calls: tuple[str, str, Any], content: str | None = None) -> dict[str, Any]:
    """One scripted reply as the door takes it; arguments given as a dict become JSON text."""
    return {
        "content": content,
        "tool_calls": [
            [call_id, name, arguments if isinstance(arguments, str) else json.dumps(arguments)]
            for call_id, name, arguments in calls
        ],
    }


def _script(replies: Sequence[Mapping[str, Any]]) -> ScriptedModel:
    return ScriptedModel(
        [
            AssistantMessage(
                content=reply["content"],
                tool_calls=tuple(
                    AssistantToolCall(id=i, name=n, arguments_json=a)
                    for i, n, a in reply["tool_calls"]
                ),
            )
            for reply in replies
        ]
    )


def _run_id(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(32))


def _recorded(
    rng: random.Random,
    tools: Dispatcher,
    replies: Sequence[Mapping[str, Any]],
    *,
    task: str = "Plan this morning's re-order.",
    max_steps: int = 6,
    max_tool_calls: int = 10,
) -> list[str]:
    """The lines the runtime's run_task writes for this scripted run, under a random run id."""
    lines: list[str] = []
    tick = iter(range(1_000, 10**9, 1_000))
    run_id = _run_id(rng)
    started = 1_700_000_000_000_000_000 + rng.randrange(10**15)
    run_task(
        _script(replies),
        tools,
        task,
        max_steps=max_steps,
        max_tool_calls=max_tool_calls,
        recorder=Recorder(
            lambda event: lines.append(encode_event(event).decode("utf-8")),
            clock=lambda: next(tick),
            wall_clock=lambda: started,
            new_run_id=lambda: run_id,
        ),
    )
    return lines


def _morning(rng: random.Random) -> tuple[dict[str, Any], dict[str, int], list[dict[str, Any]]]:
    """Lucy's morning plan on a shop of random stock and prices: 14 events, strawberry's draft 11th.

    Vanilla and strawberry are below target, chocolate is not; the model reads
    the stock, drafts vanilla then strawberry in one turn, and answers.
    """
    rows = fx.shop_rows()
    rows[0]["on_hand"] = rng.randint(0, 7)
    rows[1]["on_hand"] = rng.randint(6, 12)
    rows[2]["on_hand"] = rng.randint(0, 4)
    strawberry = rng.choice([price for price in range(150, 451, 5) if price != 290])
    prices = {fx.VANILLA: rng.randint(150, 450), fx.CHOCOLATE: rng.randint(150, 450)}
    prices[fx.STRAWBERRY] = strawberry
    a, b, c = (fx.call_id(rng) for _ in range(3))
    replies = [
        _reply((a, "list_stock", {})),
        _reply(
            (b, "draft_order", {"sku": fx.VANILLA, "quantity": fx.need(rows[0])}),
            (c, "draft_order", {"sku": fx.STRAWBERRY, "quantity": fx.need(rows[2])}),
        ),
        _reply(content="Plan " + fx.token(rng, 12)),
    ]
    return fx.shop(rows), prices, replies


def _careless_turns(
    rng: random.Random, turns: int, menu: Sequence[Callable[[], tuple[str, Any]]]
) -> list[dict[str, Any]]:
    """`turns` turns of one to three calls drawn from `menu`, then an answer."""
    replies = []
    for _ in range(turns):
        calls = [(fx.call_id(rng), *rng.choice(menu)()) for _ in range(rng.randint(1, 3))]
        replies.append(_reply(*calls))
    replies.append(_reply(content="Done " + fx.token(rng)))
    return replies


def _sloppy_menu(rng: random.Random) -> list[Callable[[], tuple[str, Any]]]:
    """Calls a careless model makes on chapter 1's shop: some run, some fail, some are refused."""
    return [
        lambda: ("list_stock", {}),
        lambda: ("supplier", {"sku": rng.choice(sorted(fx.prices()))}),
        lambda: ("supplier", {"sku": fx.sku(rng)}),
        lambda: ("draft_order", {"sku": fx.VANILLA, "quantity": rng.choice([5, 7, 8, 12])}),
        lambda: ("draft_order", {"sku": fx.sku(rng), "quantity": rng.randint(1, 9)}),
        lambda: ("draft_order", {"sku": fx.STRAWBERRY, "quantity": str(rng.randint(1, 9))}),
        lambda: ("draft_order", {"sku": fx.VANILLA, "quantity": 6, fx.token(rng, 6): True}),
        lambda: ("run_" + fx.token(rng, 6), {}),
        lambda: ("draft_order", '{"sku": "' + fx.token(rng)),
    ]


# --- chapter 4, as the starter already has it -------------------------------------------

DOOR = ("record_run", "failures_in", "replay_at_290", "spread", "failure_class_of", "measure")


@BOOK.baseline(
    points=1,
    section=S_RECORDER,
    asks="evidence.py imports and defines run_task, build_tools, the exercises and the door.",
    hint="evidence.py must import cleanly and keep run_task, build_tools, handler_failures, "
    "strawberry_at_290, pass_rate_spread and the grader's door.",
)
def imports(rng: random.Random) -> Trial:
    names = (
        "run_task",
        "build_tools",
        "handler_failures",
        "strawberry_at_290",
        "pass_rate_spread",
        *DOOR,
    )
    found = yield attrs(*names)
    return expect(same(dict.fromkeys(names, True), found), "A required function is missing.")


@BOOK.baseline(
    points=1,
    section=S_EVENTS,
    asks="The morning plan's run writes its 14 events in order, as chapter 4's run_task does.",
    hint="run_task must tell its recorder every step: run_started, each model_request and "
    "model_reply, each tool_call and tool_outcome, then run_finished.",
)
def ch4_trace_events(rng: random.Random) -> Trial:
    shop, prices, replies = _morning(rng)
    task = "Plan this morning's re-order, " + fx.token(rng, 6) + "."
    expected = _recorded(rng, build_tools(shop, prices), replies, task=task, max_tool_calls=8)
    text = yield call("record_run", task, shop, prices, replies, 6, 8)
    got = reading.events(text)
    if isinstance(got, str):
        return got
    return reading.differs([json.loads(line) for line in expected], got)


@BOOK.baseline(
    points=1,
    section=S_REPLAY,
    asks="A careless run's trace, written by your run_task, replays through chapter 4's "
    "runtime with no divergence.",
    hint="Your run_task, dispatcher and tools must do what chapter 4's do, so that the "
    "runtime's replay of your trace matches every event.",
)
def ch4_replays(rng: random.Random) -> Trial:
    hints = rng.random() < 0.5
    replies = _careless_turns(rng, rng.randint(2, 3), _sloppy_menu(rng))
    budget = rng.randint(3, 9)
    task = "Plan the re-order, " + fx.token(rng, 6) + "."
    tools = build_tools(fx.shop(), fx.prices(), hints=hints)
    expected = _recorded(rng, tools, replies, task=task, max_steps=4, max_tool_calls=budget)
    text = yield call("record_run", task, fx.shop(), fx.prices(), replies, 4, budget, hints=hints)
    events = reading.events(text)
    if isinstance(events, str):
        return events
    # The run asked for, not any run that replays: the same replies, as many events.
    replied = [
        [event["content"], event["tool_calls"]]
        for event in events
        if event["event"] == "model_reply"
    ]
    wanted = [json.loads(line) for line in expected]
    if len(events) != len(wanted) or replied != [
        [event["content"], event["tool_calls"]]
        for event in wanted
        if event["event"] == "model_reply"
    ]:
        return "Your trace is not a record of the run the grader's model played."
    (run,) = parse_trace(str(text).splitlines(keepends=True))
    try:
        # The shop's own factory, named here: a trace's word never picks the code to run.
        divergence = replay_run(run, setup=build_tools).divergence
    except ReplaySetupError:
        return "Your trace's setup cannot build the shop's tools again."
    if divergence is not None:
        return (
            f"Replaying your trace with chapter 4's runtime diverged at event {divergence.seq} "
            f"({divergence.kind}): your run does not do what the chapter's does."
        )
    return None


@BOOK.baseline(
    points=1,
    section=S_HINTS,
    asks="A hinted refusal names the field and what it expects, and never a value or key "
    "the model sent; without hints the code is bare.",
    hint="With hints=True, invalid_arguments carries hints built from the schema alone; "
    "without it, only the code.",
)
def ch4_hints_safe(rng: random.Random) -> Trial:
    secret = "secret-token-" + fx.token(rng, 12)
    invented = "secret-token-" + fx.token(rng, 9)
    requests: list[tuple[str, dict[str, Any]]] = [
        ("draft_order", {"sku": fx.VANILLA, "quantity": secret}),
        ("draft_order", {"sku": fx.VANILLA, "quantity": 6, invented: secret}),
        ("supplier", {"sku": secret + fx.token(rng, 100)}),
        ("draft_order", {"quantity": rng.randint(1, 9)}),
        ("list_stock", {invented: rng.randint(1, 9)}),
        ("draft_order", {"sku": rng.randint(1, 99), "quantity": rng.randint(1, 9)}),
    ]
    rng.shuffle(requests)
    reference = build_tools(fx.shop(), fx.prices(), hints=True)
    hinted = yield call("build_tools", fx.shop(), fx.prices(), hints=True, keep=True)
    for name, arguments in requests:
        call_id = fx.call_id(rng)
        answer = yield method(hinted, "invoke", tool_call(call_id, name, arguments))
        if secret in json.dumps(answer) or invented in json.dumps(answer):
            return "A hinted refusal repeated a value or a key the model sent."
        wanted = reference.invoke(ToolCall(id=call_id, name=name, arguments=arguments))
        if not same(wanted, answer):
            return "A hinted refusal is not the one chapter 4's safe hints give."
    bare = yield call("build_tools", fx.shop(), fx.prices(), keep=True)
    name, arguments = requests[0]
    answer = yield method(bare, "invoke", tool_call(fx.call_id(rng), name, arguments))
    return expect(
        same(fx.refused("invalid_arguments"), answer),
        "Without hints=True a refusal must stay the bare code.",
    )


# The codes chapter 4 classifies. The runtime's table grows with later chapters
# (chapter 13's limits add their own), which a chapter 4 copy cannot know.
CHAPTER_4_CODES = (
    "tool_not_allowed",
    "invalid_arguments",
    "write_authority_required",
    "tool_failed",
    "result_too_large",
    "malformed_tool_call",
    "step_limit",
    "tool_call_limit",
    "duplicate_call_id",
    "model_error",
)
assert set(CHAPTER_4_CODES) <= set(FAILURE_CLASSES)


@BOOK.baseline(
    points=1,
    section=S_TAXONOMY,
    asks="Every code has its failure class; a refused write is a missing authority; an "
    "unknown code raises ValueError.",
    hint="failure_class must map each code to its class, tool_failed at the before_write "
    "stage to missing authority, and refuse a code it does not know.",
)
def ch4_failure_classes(rng: random.Random) -> Trial:
    pairs: list[tuple[str, str | None]] = [(code, None) for code in CHAPTER_4_CODES]
    pairs += [("ok", None), ("final_answer", None)]
    pairs += [("tool_failed", stage) for stage in ("before_write", "handler", "result")]
    rng.shuffle(pairs)
    for code, stage in pairs:
        got = yield call("failure_class_of", code, stage)
        found = failure_class(code, stage)
        if not same(None if found is None else found.value, got):
            return "A code (or a code at a stage) got the wrong failure class."
    unknown = yield call("failure_class_of", "code_" + fx.token(rng), None, raises=True)
    return expect(unknown.raised_a("ValueError"), "A code with no class should raise ValueError.")


@BOOK.baseline(
    points=1,
    section=S_SUITE,
    asks="Calls are matched to the tool their arguments fit, and invalid choices, mistakes "
    "and recoveries are counted as chapter 4 counts them.",
    hint="shaped_for, invalid_choices and recoveries must be chapter 4's.",
)
def ch4_metrics(rng: random.Random) -> Trial:
    tools = build_tools(fx.shop()).schemas()
    asked = ["list_stock", "draft_order", "supplier", "check_freezer"]
    written = [
        "{}",
        json.dumps({"sku": fx.VANILLA}),
        json.dumps({"sku": fx.STRAWBERRY, "quantity": rng.randint(1, 9)}),
        json.dumps({fx.token(rng, 5): 1}),
        '{"sku": ',
        "[1, 2]",
    ]
    codes = ["ok", "ok", "tool_failed", "invalid_arguments", "tool_not_allowed"]
    codes += ["malformed_tool_call", "step_limit"]
    calls = [
        [rng.choice(asked), rng.choice(written), rng.choice(codes)]
        for _ in range(rng.randint(6, 12))
    ]
    made = [Call(name, shaped_for(arguments, name, tools), code) for name, arguments, code in calls]
    mistakes, recovered = recoveries(made)
    wanted = {
        "fits": [c.fits for c in made],
        "invalid_choices": invalid_choices(made),
        "mistakes": mistakes,
        "recovered": recovered,
    }
    got = yield call("measure", tools, calls)
    return expect(same(wanted, got), "The fits, invalid choices or recoveries are not chapter 4's.")


# --- exercise 1: which handlers raised? -------------------------------------------------


def _result_tool(rng: random.Random) -> ExecutableTool[NoArguments]:
    # A value JSON cannot carry: the handler ran, and the result stage fails.
    return ExecutableTool(
        "reading_" + fx.token(rng, 5), "A freezer reading.", NoArguments, lambda _: float("nan")
    )


def _careless_tools(rng: random.Random, *, authority: bool) -> tuple[Dispatcher, list[str]]:
    """The shop's tools, a tool whose result is not JSON and, with `authority`, a refused write.

    Returns the dispatcher and the names of the extra tools a model may ask for.
    """
    shop = build_tools(fx.shop(), fx.prices())
    extra: list[ExecutableTool[Any]] = [_result_tool(rng)]
    reason = "not approved " + fx.token(rng, 6)

    def refuse(call: ToolCall) -> None:
        raise PermissionError(reason)

    if authority:
        extra.append(
            ExecutableTool(
                "place_order",
                "Place an order.",
                ProductArguments,
                lambda args: "placed",
                consequential=True,
            )
        )
    tools = Dispatcher(
        [*shop.tools.values(), *extra],
        allowed=[*shop.allowed, *(tool.name for tool in extra)],
        before_write=refuse if authority else None,
    )
    return tools, [tool.name for tool in extra]


def _failing_menu(rng: random.Random, extra: Sequence[str]) -> list[Callable[[], tuple[str, Any]]]:
    """Calls whose handler fails (and a few that run or are refused), for Exercise 1's traces."""
    menu = _sloppy_menu(rng) + [lambda: ("supplier", {"sku": fx.sku(rng)})] * 2
    menu += [lambda: (extra[0], {})] * 2
    if "place_order" in extra:
        menu += [lambda: ("place_order", {"sku": fx.VANILLA})] * 2
    return menu


def _careless_runs(rng: random.Random, count: int, *, authority: bool) -> list[list[str]]:
    """`count` recorded careless runs, each with at least one failed handler."""
    runs: list[list[str]] = []
    while len(runs) < count:
        tools, extra = _careless_tools(rng, authority=authority)
        replies = _careless_turns(rng, rng.randint(1, 3), _failing_menu(rng, extra))
        lines = _recorded(rng, tools, replies, max_steps=5, max_tool_calls=12)
        refused_write = any(
            json.loads(line).get("failure_stage") == "before_write" for line in lines
        )
        if reading.failed_handlers(lines) and (refused_write or not authority):
            runs.append(lines)
    return runs


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="Every call whose handler raised is found, with its line, run, tool, call id, "
    "exception and message.",
    hint="A handler or result failure in the trace was missing from the findings, or one of "
    "its fields (line, run, tool, call, exception) was wrong.",
)
def ex1_finds_failed_handlers(rng: random.Random) -> Trial:
    lines = [
        line for run in _careless_runs(rng, rng.randint(2, 3), authority=False) for line in run
    ]
    got = yield call("failures_in", "".join(lines))
    return reading.judge_failures(reading.failed_handlers(lines), got)


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="A write refused by its before_write authority is not counted: its handler never ran.",
    hint="A write the authority refused before any handler ran was reported as a failed handler.",
)
def ex1_not_the_authority(rng: random.Random) -> Trial:
    lines = [line for run in _careless_runs(rng, 2, authority=True) for line in run]
    expected = reading.failed_handlers(lines)
    got = yield call("failures_in", "".join(lines))
    view = reading.failures_view(got)
    if view is not None and any(item["tool"] == "place_order" for item in view):
        return "A write its authority refused was counted as a failed handler."
    return reading.judge_failures(expected, got)


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="Failures of runs that interleave in one file come back in the file's line order.",
    hint="The findings were not in the order their lines appear in the trace file.",
)
def ex1_file_order(rng: random.Random) -> Trial:
    inner, outer = _careless_runs(rng, 2, authority=False)
    while len(reading.failed_handlers(outer)) < 2:
        (outer,) = _careless_runs(rng, 1, authority=False)
    # The outer run starts first and finishes last, with a failure on each side
    # of the inner run: neither run's failures alone are in the file's order.
    cut = next(
        index for index, line in enumerate(outer, start=1) if reading.failed_handlers([line])
    )
    lines = outer[:cut] + inner + outer[cut:]
    got = yield call("failures_in", "".join(lines))
    return reading.judge_failures(reading.failed_handlers(lines), got)


# --- exercise 2: a replay that parts ways at event 11 -----------------------------------


class _Answered(Dispatcher):
    """A dispatcher that answers as a submission's did, asked beforehand in the loop's order.

    The submission's setup lives in its sandbox; the replay runs here. So its
    schemas and observations for the recorded calls are asked for first, in
    the order the loop will want them, and this plays them back to the
    runtime's own replay.
    """

    def __init__(self, schemas: list[Any], observations: list[Any], names: Sequence[str]) -> None:
        super().__init__([], allowed=names)
        self._schemas = schemas
        self._observations = observations

    def schemas(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self._schemas.pop(0)) if self._schemas else []

    def attempt(self, call: ToolCall) -> ToolOutcome:
        observation = self._observations.pop(0)
        code = "ok" if observation.get("ok") is True else observation.get("error")
        return ToolOutcome(
            observation, handler_ran=code in ("ok", "tool_failed", "result_too_large")
        )


def _asked_in_loop_order(
    d: Ref, replies: Sequence[Mapping[str, Any]]
) -> Asks[tuple[list[Any], list[Any]] | str]:
    """The submission's dispatcher asked as the replay's loop will ask it: schemas, then calls.

    Its schemas at each step and its observation of each call, in that order.
    """
    schemas: list[Any] = []
    observations: list[Any] = []
    for reply in replies:
        offered = yield method(d, "schemas")
        if fx.schema_names(offered) is None:
            return "Your setup's schemas() is not a list of function schemas."
        schemas.append(offered)
        for call_id, name, arguments in reply["tool_calls"]:
            answer = yield method(d, "invoke", tool_call(call_id, name, json.loads(arguments)))
            if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
                return "Your setup's tools did not answer with observations."
            observations.append(answer)
    return schemas, observations


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_A,
    asks="The morning plan's replay against your setup diverges at event 11, the strawberry "
    "draft's outcome, now at 290 pence a tub.",
    hint="Replayed with strawberry at 290, the run did not part from the recording where a "
    "changed price would make it part.",
)
def ex2_diverges_at_event_11(rng: random.Random) -> Trial:
    shop, prices, replies = _morning(rng)
    lines = _recorded(rng, build_tools(shop, prices), replies, max_tool_calls=8)
    (run,) = parse_trace(lines)
    recorded = json.loads(lines[0])["setup"]["arguments"]
    d = yield call("strawberry_at_290", keep=True, **recorded)
    asked = yield from _asked_in_loop_order(d, replies)
    if isinstance(asked, str):
        return asked
    schemas, observations = asked
    quantity = fx.need(shop["products"][2])
    draft = observations[2]
    answered = _Answered(schemas, list(observations), fx.SHOP_TOOLS)
    divergence = replay_run(run, setup=lambda **_: answered).divergence
    if divergence is None:
        return "The replay did not diverge: strawberry's draft still costs the recorded price."
    if divergence.seq == 2:
        return (
            "The replay diverged at event 2, the first request: a tool's schema changed. "
            "Change strawberry's price, not the tools."
        )
    if divergence.seq != 11:
        return f"The replay diverged at event {divergence.seq}, not at the strawberry draft (11)."
    now = build_tools(shop, {**prices, fx.STRAWBERRY: 290})
    wanted = now.invoke(
        ToolCall(id="w", name="draft_order", arguments={"sku": fx.STRAWBERRY, "quantity": quantity})
    )
    return expect(
        divergence.what == "gen_ai.tool.call.result" and same(wanted, draft),
        f"At event 11 the strawberry draft should be {quantity} tubs at 290 pence: "
        f"{quantity * 290:,} pence.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_A,
    asks="Whatever shop was recorded, your setup keeps every schema, the stock, the hints and "
    "every other price as recorded.",
    hint="The replayed tools differed from the recorded ones in something other than "
    "strawberry's price.",
    requires=ex2_diverges_at_event_11,
)
def ex2_same_schema(rng: random.Random) -> Trial:
    rows = fx.shop_rows()
    for row in rows:
        row["on_hand"] = rng.randint(0, 12)
    extra = fx.extra_product(rng)
    prices = {sku: rng.randint(150, 450) for sku in fx.prices()}
    prices[extra["sku"]] = rng.randint(101, 999)
    hints = rng.random() < 0.5
    setup = build_tools(fx.shop([*rows, extra]), prices, hints=hints).setup
    assert setup is not None  # the shop's own factory always records one
    recorded = json.loads(json.dumps(setup.arguments))
    reference = build_tools(**{**recorded, "prices": {**prices, fx.STRAWBERRY: 290}})
    d = yield call("strawberry_at_290", keep=True, **recorded)
    schemas = yield method(d, "schemas")
    if not same(reference.schemas(), schemas):
        return "Your setup changed a tool's schema: a replay would diverge at the first request."
    asked: list[tuple[str, dict[str, Any]]] = [("list_stock", {})]
    asked += [("supplier", {"sku": sku}) for sku in sorted(prices)]
    asked += [("draft_order", {"sku": extra["sku"], "quantity": fx.need(extra)})]
    asked += [("draft_order", {"sku": fx.VANILLA, "quantity": str(rng.randint(1, 9))})]
    for name, arguments in asked:
        call_id = fx.call_id(rng)
        answer = yield method(d, "invoke", tool_call(call_id, name, arguments))
        if not same(reference.invoke(ToolCall(id=call_id, name=name, arguments=arguments)), answer):
            return {
                "list_stock": "The stock should be the recorded stock.",
                "supplier": "Only strawberry's price may change; another quote differs.",
                "draft_order": "A draft, or a refusal with or without hints, is not as recorded.",
            }[name]
    return None


# The rest of the book declares its checks after these, in report order: the
# modules import BOOK from this one, so they are imported once it exists.
