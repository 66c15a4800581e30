"""Exercise Book 4 starter: chapter 4's code, ready for the exercises.

The first part is chapter 4's learner file, unchanged. After it come the
exercises of Unit A (a query over a trace; a replay that must diverge at a
stated event), of Unit B (how much a pass rate moves from seed to seed) and
of Unit C (an open design task: which runs need Lucy), Lucy's morning plan
for the notebooks and your tests, and at the end "the grader's door": small
functions through which the grader, which only sends and receives plain
JSON, runs your code on traces and suites it sends as text. Unit B's other
exercise is not in this file: it is an expectation you add to `suite.toml`,
beside it.

It runs, and it does none of the exercises yet: look for `Exercise 1`,
`Exercise 2`, `Exercise 4` and `Exercise 5`.
"""

import copy
import hashlib
import json
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from sovereign_agent.evaluate import load_suite, run_suite
from sovereign_agent.loop import (
    RunRecord,
    StopReason,
    check_setup,
    one_line,
    parse_tool_call,
)
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelClient,
    ModelError,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import (
    PRICES_PENCE,
    SHOP_TOOL_NAMES,
    DraftArguments,
    NoArguments,
    ProductArguments,
    draft_order,
    stock_report,
    supplier_quote,
)
from sovereign_agent.tools import (
    EXPECTED_FAILURES,
    MAX_RESULT_BYTES_LIMITS,
    ArgumentProblem,
    ExecutableTool,
    Observation,
    ToolCall,
    ToolOutcome,
    _argument_problems,
    _failed,
    _refusal,
    parameters_schema,
)
from sovereign_agent.trace import Recorder, read_trace, recorder_from_env
from sovereign_agent.trace.recorder import encode_event
from sovereign_agent.trace.replay import replay_run


@dataclass(frozen=True)
class Setup:
    """How to build a dispatcher again: an importable factory and the arguments it was given.

    `factory` is `package.module:function`; `arguments` are the keyword
    arguments, plain JSON data. A trace writes both when a run starts, so a
    replay in another process, on another day, starts from the same tools.
    """

    factory: str
    arguments: Mapping[str, Any]


def schema_fingerprint(schema: Mapping[str, Any]) -> str:
    """A name for one exact tool schema: change anything in it, and the name changes.

    The schema is written as canonical JSON (sorted keys, no spaces) so that the
    same schema always gives the same text, then hashed with SHA-256.
    """
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def expected_value(schema: Mapping[str, Any]) -> str:
    """What one JSON schema accepts, in a few words: its type, then its bounds."""
    if "anyOf" in schema:
        return " or ".join(expected_value(option) for option in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(value) for value in schema["enum"])
    signs = {"exclusiveMinimum": ">", "minimum": ">=", "exclusiveMaximum": "<", "maximum": "<="}
    bounds = [f"{sign} {schema[key]}" for key, sign in signs.items() if key in schema]
    if "minLength" in schema or "maxLength" in schema:
        low, high = schema.get("minLength", 0), schema.get("maxLength", "any number of")
        bounds.append(f"of {low} to {high} characters")
    if "pattern" in schema:
        bounds.append(f"matching {schema['pattern']}")
    kind = str(schema.get("type", "value"))
    return f"{kind} {' and '.join(bounds)}" if bounds else kind


def safe_hints(
    parameters: Mapping[str, Any], problems: Iterable[ArgumentProblem]
) -> list[dict[str, Any]]:
    """What a refused request got wrong, in words built from the schema alone.

    A hint names a field the schema declares and what that field expects. It
    never repeats a value the model sent, nor a key the model invented: both
    came from the model, and an observation must not carry them back.
    """
    declared: Mapping[str, Any] = parameters.get("properties", {})
    hints: list[dict[str, Any]] = []
    for problem in problems:
        field = problem.location[0] if problem.location else None
        if isinstance(field, str) and field in declared:
            expected = expected_value(declared[field])
            if problem.kind == "missing":
                expected = "required: " + expected
            hint: dict[str, Any] = {"field": field, "expected": expected}
        elif problem.kind == "extra_forbidden":
            # Which keys exist, never which one was sent.
            names = ", ".join(sorted(declared)) or "none"
            hint = {"field": None, "expected": f"only the declared fields: {names}"}
        else:
            hint = {"field": None, "expected": expected_value(parameters)}
        if hint not in hints:
            hints.append(hint)
    return hints


class Dispatcher:
    """Runs a requested tool only after every check before it has passed."""

    def __init__(
        self,
        tools: Iterable[ExecutableTool[Any]],
        *,
        allowed: Iterable[str],
        before_write: Callable[[ToolCall], None] | None = None,
        max_result_bytes: int = 16_384,
        hints: bool = False,
        setup: Setup | None = None,
    ) -> None:
        low, high = MAX_RESULT_BYTES_LIMITS
        if (
            isinstance(max_result_bytes, bool)
            or not isinstance(max_result_bytes, int)
            or not low <= max_result_bytes <= high
        ):
            raise ValueError(f"max_result_bytes must be an int from {low} to {high}")
        registry: dict[str, ExecutableTool[Any]] = {}
        for tool in tools:
            if tool.name in registry:
                # Two tools under one name leave it to chance which one runs:
                # an ambiguous configuration is refused before any request.
                raise ValueError(f"duplicate tool name: {tool.name!r}")
            registry[tool.name] = tool
        self._tools: Mapping[str, ExecutableTool[Any]] = MappingProxyType(registry)
        self._allowed: frozenset[str] = frozenset(allowed)
        # What may run: a name both allowed and registered. Neither changes after
        # construction, so it is worked out here once, not at every request.
        self._usable: frozenset[str] = self._allowed.intersection(registry)
        self._before_write = before_write
        self._max_result_bytes = max_result_bytes
        self._hints = hints
        self._setup = setup

    @property
    def tools(self) -> Mapping[str, ExecutableTool[Any]]:
        """Every registered tool, allowed or not, as a read-only mapping."""
        return self._tools

    @property
    def allowed(self) -> frozenset[str]:
        """The names this dispatcher will run; a registered name outside it is refused."""
        return self._allowed

    @property
    def has_write_authority(self) -> bool:
        """Whether a consequential tool could ever pass step 3 of `attempt`."""
        return self._before_write is not None

    @property
    def max_result_bytes(self) -> int:
        return self._max_result_bytes

    @property
    def hints(self) -> bool:
        """Whether an `invalid_arguments` observation carries safe hints."""
        return self._hints

    @property
    def setup(self) -> Setup | None:
        """How to build this dispatcher again, when whoever built it could say."""
        return self._setup

    def schemas(self) -> list[dict[str, Any]]:
        """The schemas of the allowed tools, sorted by name: all a model is told exists."""
        return [self._tools[name].schema() for name in sorted(self._usable)]

    def invoke(self, call: ToolCall) -> Observation:
        """What the model is told about a request: the observation of `attempt`."""
        return self.attempt(call).observation

    def attempt(self, call: ToolCall) -> ToolOutcome:
        """Check a request in a fixed order, run it if every check passed, and report what happened.

        Nothing after a refusal runs. The outcome's observation is safe for the
        model; the rest of it (did the handler run, what failed) is for the operator.
        """
        # 1. One answer for "unknown" and "not allowed", so a refusal does not
        #    tell a probing model which forbidden names exist. What may run is
        #    what `schemas` offers: a name both allowed and registered.
        if call.name not in self._usable:
            return ToolOutcome(_refusal("tool_not_allowed"), handler_ran=False)
        tool = self._tools[call.name]
        # 2. Strict validation: no coercion of "6" or True or 6.0 into 6.
        try:
            arguments = tool.arguments.model_validate(call.arguments, strict=True)
        except ValidationError as error:
            problems = _argument_problems(error)
            refusal = _refusal("invalid_arguments")
            if self._hints:
                # Built from the schema the model was already shown: a hint tells
                # it nothing it was not told, and repeats nothing it sent.
                refusal["hints"] = safe_hints(parameters_schema(tool.arguments), problems)
            return ToolOutcome(refusal, handler_ran=False, argument_problems=problems)
        # 3. A consequential tool with nobody to authorise it never runs.
        if tool.consequential and self._before_write is None:
            return ToolOutcome(_refusal("write_authority_required"), handler_ran=False)
        # 4. The authority may refuse by raising; only then the handler.
        if tool.consequential and self._before_write is not None:
            try:
                self._before_write(call)
            except EXPECTED_FAILURES as error:
                return _failed("before_write", error, handler_ran=False)
        try:
            value = tool.handler(arguments)
        except EXPECTED_FAILURES as error:
            return _failed("handler", error, handler_ran=True)
        # 5. Bound what goes back into the model's context. The handler has
        #    already run by now: this refusal hides a result, it undoes nothing.
        #    The encoder escapes every non-ASCII character, so the length of
        #    `encoded` in characters is its size in bytes. It is the very text
        #    the loop sends, so a value whose keys cannot be sorted ({1: "a", "b": 2})
        #    fails here, as the tool's failure, not later inside the loop.
        outcome = ToolOutcome({"ok": True, "value": value}, handler_ran=True)
        try:
            size = len(outcome.encoded)
        except EXPECTED_FAILURES as error:
            return _failed("result", error, handler_ran=True)
        if size > self._max_result_bytes:
            return ToolOutcome(_refusal("result_too_large"), handler_ran=True)
        return outcome


def build_tools(
    shop: Mapping[str, Any],
    prices: Mapping[str, int] | None = None,
    *,
    allowed: Iterable[str] = SHOP_TOOL_NAMES,
    before_write: Callable[[ToolCall], None] | None = None,
    hints: bool = False,
) -> Dispatcher:
    """A dispatcher over its own copy of the shop, so no two runs share stock."""
    products = copy.deepcopy(list(shop["products"]))
    price_list = dict(PRICES_PENCE if prices is None else prices)
    names = sorted(allowed)
    tools = (
        ExecutableTool(
            name="list_stock",
            description="Every product with its stock, its target and the tubs needed.",
            arguments=NoArguments,
            handler=lambda _: stock_report(products),
        ),
        ExecutableTool(
            name="supplier",
            description="The supplier's quote for one sku, in integer pence.",
            arguments=ProductArguments,
            handler=lambda args: supplier_quote(price_list, args.sku),
        ),
        ExecutableTool(
            name="draft_order",
            description="Draft (never place) a re-order for exactly the tubs needed.",
            arguments=DraftArguments,
            handler=lambda args: draft_order(products, price_list, args.sku, args.quantity),
        ),
    )
    # The rows are this dispatcher's own, so a trace that writes them when a run
    # starts records the stock that run began with. An authority is code, not
    # data: a dispatcher with one has no setup a replay could rebuild.
    setup = Setup(
        "sovereign_agent.shop:build_tools",
        {"shop": {"products": products}, "prices": price_list, "allowed": names, "hints": hints},
    )
    return Dispatcher(
        tools,
        allowed=names,
        before_write=before_write,
        hints=hints,
        setup=setup if before_write is None else None,
    )


def run_task(
    model: ModelClient,
    dispatcher: Dispatcher,
    task: str,
    *,
    max_steps: int,
    max_tool_calls: int,
    system: str | None = None,
    recorder: Recorder | None = None,
) -> RunRecord:
    """Let the model work on one task, inside bounds the runtime set and enforces.

    Everything the run does is told to `recorder`; without one, to a recorder
    for the file SOVEREIGN_TRACE names, which records nothing when it is unset.
    """
    check_setup(dispatcher, max_steps=max_steps, max_tool_calls=max_tool_calls)
    trace = recorder_from_env() if recorder is None else recorder
    messages: list[Message] = [] if system is None else [SystemMessage(content=system)]
    messages.append(UserMessage(content=task))
    trace.run_started(
        model, dispatcher, task, system=system, max_steps=max_steps, max_tool_calls=max_tool_calls
    )
    requested: list[str] = []
    executed: list[str] = []
    refused: list[tuple[str, str]] = []
    answered_ids: set[str] = set()
    steps = 0
    dispatched = 0

    def finish(
        reason: StopReason, answer: str | None = None, error: str | None = None
    ) -> RunRecord:
        record = RunRecord(
            stop_reason=reason,
            answer=answer,
            error=error,
            steps=steps,
            messages=tuple(messages),
            requested=tuple(requested),
            executed=tuple(executed),
            refused=tuple(refused),
        )
        trace.run_finished(record)
        return record

    while True:
        steps += 1
        # The tools on offer are asked for at every step, not once: what a
        # run may use can narrow while it runs.
        tools = dispatcher.schemas()
        trace.model_request(messages, tools)
        try:
            reply = model.complete(tuple(messages), tools=tools)
        except ModelError as error:
            return finish(StopReason.MODEL_ERROR, error=one_line(error))
        trace.model_reply(reply)
        messages.append(reply.message)
        calls = reply.message.tool_calls
        if not calls:
            return finish(StopReason.FINAL_ANSWER, answer=reply.message.content)
        ids = [raw.id for raw in calls]
        if len(set(ids)) < len(ids) or not answered_ids.isdisjoint(ids):
            # One id, two answers: no provider accepts that transcript, and no
            # one could tell which answer belongs to which call. Nothing in
            # this reply runs, and the run ends here.
            requested.extend(raw.name for raw in calls)
            refused.extend((raw.name, "duplicate_call_id") for raw in calls)
            return finish(StopReason.DUPLICATE_CALL_ID)
        answered_ids.update(ids)
        # The model gets no step after this one, so nothing it asks for now
        # would ever be read: answer each call with a refusal instead of running it.
        stop = StopReason.STEP_LIMIT if steps == max_steps else None
        for raw in calls:
            requested.append(raw.name)
            trace.tool_call(raw)
            call = parse_tool_call(raw)
            refusal: str | None = None
            if call is None:
                # A fixed code: the model's own malformed text is never echoed back.
                refusal = "malformed_tool_call"
            elif stop is StopReason.STEP_LIMIT:
                refusal = "step_limit"
            elif dispatched == max_tool_calls:
                # The budget is spent mid-turn: the rest of this turn is refused,
                # and the model is not asked again.
                refusal = "tool_call_limit"
                stop = StopReason.TOOL_CALL_LIMIT
            if call is None or refusal is not None:
                # Stopped by the loop itself: nothing ran, and the model gets a code.
                outcome = ToolOutcome({"ok": False, "error": refusal}, handler_ran=False)
            else:
                dispatched += 1
                outcome = dispatcher.attempt(call)
            trace.tool_outcome(raw, outcome)
            # A call whose handler ran is executed, whatever the model was told:
            # a handler that failed, or whose result was too large, still ran.
            if outcome.handler_ran:
                executed.append(raw.name)
            else:
                refused.append((raw.name, str(outcome.observation["error"])))
            # Every call is answered, in the model's order, under its own id:
            # a provider rejects a transcript with an unanswered call. The text
            # is the outcome's own encoding, made once (`attempt` measured it).
            messages.append(ToolMessage(tool_call_id=raw.id, content=outcome.encoded))
        if stop is not None:
            return finish(stop)


class FailureClass(StrEnum):
    """Which layer said no: every refusal of a call, and every stop but a final answer."""

    UNKNOWN_TOOL = "unknown or hidden tool"
    INVALID_ARGUMENTS = "invalid arguments"
    MISSING_AUTHORITY = "missing authority"
    TOOL_FAILED = "tool failed"
    RESULT_TOO_LARGE = "result too large"
    MALFORMED_CALL = "malformed call"
    BUDGET = "budget"
    DUPLICATE_CALL_ID = "duplicate call id"
    MODEL_ERROR = "model error"


FAILURE_CLASSES: Mapping[str, FailureClass] = {
    "tool_not_allowed": FailureClass.UNKNOWN_TOOL,
    "invalid_arguments": FailureClass.INVALID_ARGUMENTS,
    "write_authority_required": FailureClass.MISSING_AUTHORITY,
    "tool_failed": FailureClass.TOOL_FAILED,
    "result_too_large": FailureClass.RESULT_TOO_LARGE,
    "malformed_tool_call": FailureClass.MALFORMED_CALL,
    "step_limit": FailureClass.BUDGET,
    "tool_call_limit": FailureClass.BUDGET,
    "duplicate_call_id": FailureClass.DUPLICATE_CALL_ID,
    "model_error": FailureClass.MODEL_ERROR,
}


def failure_class(code: str, stage: str | None = None) -> FailureClass | None:
    """The class of a call's code or a run's stop reason; None when nothing failed."""
    if code in ("ok", "final_answer"):
        return None
    if code == "tool_failed" and stage == "before_write":
        # The authority refused before the handler ran: no one authorised the
        # write, which is a different conversation from a tool that broke.
        return FailureClass.MISSING_AUTHORITY
    if code not in FAILURE_CLASSES:
        raise ValueError(f"no failure class for the code {code!r}")
    return FAILURE_CLASSES[code]


UNREADABLE = "(unreadable)"


NO_FIT = "(no tool fits)"


@dataclass(frozen=True)
class Call:
    """One call of a run: the tool asked for, the tool its arguments fit, and its answer's code."""

    asked: str
    fits: str
    code: str


def shaped_for(arguments_json: str, asked: str, tools: Sequence[Mapping[str, Any]]) -> str:
    """The tool a call's arguments were written for: read from what the model wrote, not its mind.

    It is the offered tool whose declared fields hold every key sent and whose
    required fields were all sent; the tool asked for, when it is one of them.
    """
    try:
        arguments = json.loads(arguments_json)
    except ValueError:
        return UNREADABLE
    if not isinstance(arguments, dict):
        return UNREADABLE
    sent = set(arguments)
    fits = []
    for schema in tools:
        parameters = schema["function"]["parameters"]
        declared = set(parameters.get("properties", {}))
        if sent <= declared and set(parameters.get("required", ())) <= sent:
            fits.append(schema["function"]["name"])
    if asked in fits:
        return asked
    return fits[0] if fits else NO_FIT


# Refused before any handler ran, because of what the model wrote.
INVALID_CHOICES = frozenset({"tool_not_allowed", "invalid_arguments", "malformed_tool_call"})


# What a model can recover from: its invalid choices, and the shop saying no.
MISTAKES = INVALID_CHOICES | {"tool_failed"}


def invalid_choices(calls: Sequence[Call]) -> int:
    """How many calls were refused for what the model chose: a tool, its arguments, its syntax."""
    return sum(call.code in INVALID_CHOICES for call in calls)


def recoveries(calls: Sequence[Call]) -> tuple[int, int]:
    """(mistakes, recovered): refused or failed calls, and those followed by a corrected one.

    A mistake is corrected by a later call written for the same tool (its
    arguments fit it) that succeeds; a call that could not be read, or that no
    offered tool fits, by any later call that succeeds. Whether the correction
    did the whole job is for the expectations on the shop's final state to say.
    """
    mistakes = recovered = 0
    for index, call in enumerate(calls):
        if call.code not in MISTAKES:
            continue
        mistakes += 1
        later = calls[index + 1 :]
        if any(
            again.code == "ok" and call.fits in (UNREADABLE, NO_FIT, again.fits) for again in later
        ):
            recovered += 1
    return mistakes, recovered


def ticking_clock(step_ns: int = 1_000) -> Callable[[], int]:
    """A clock that moves `step_ns` each time it is read, so durations print the same."""
    now = 0

    def read() -> int:
        nonlocal now
        now += step_ns
        return now

    return read


def page_recorder(sink: Callable[[dict[str, Any]], None]) -> Recorder:
    """A recorder whose times and run id are the same on every run: fit for a printed page."""
    return Recorder(
        sink,
        clock=ticking_clock(),
        wall_clock=lambda: 1_748_849_400_000_000_000,
        new_run_id=lambda: "5eed" * 8,
    )


def show_event(event: Mapping[str, Any]) -> None:
    """One event on one line: its number, its kind, and what it says."""
    kind = event["event"]
    if kind == "run_started":
        setup = event["setup"]["factory"] if event["setup"] else None
        said = f"task {event['task']!r}, bounds {event['max_steps']}/{event['max_tool_calls']}"
        said += f", setup {setup}"
    elif kind == "model_request":
        tools = ", ".join(f"{name} {fp[7:15]}" for name, fp in event["tools"].items())
        said = f"step {event['step']}, messages: {event['messages']}, tools: {tools}"
    elif kind == "model_reply":
        calls = ", ".join(f"{c['name']} [{c['id']}]" for c in event["tool_calls"])
        said = f"step {event['step']}, {calls or repr(event['content'])}"
    elif kind == "tool_call":
        said = f"{event['gen_ai.tool.name']} [{event['gen_ai.tool.call.id']}]"
        said += f" {event['gen_ai.tool.call.arguments']}"
    elif kind == "tool_outcome":
        ran = "ran" if event["handler_ran"] else "did not run"
        said = f"{event['gen_ai.tool.name']} [{event['gen_ai.tool.call.id']}] {event['code']}"
        said += f", handler {ran}, {event['duration_ns']} ns"
        if event["exception.type"]:
            said += f", {event['exception.type']}: {event['exception.message']}"
    else:
        said = f"{event['stop_reason']} after {event['steps']} steps, {event['duration_ns']} ns"
    print(f"{event['seq']:>2} {kind:<13} {said}")


# --- Unit A, Exercise 1: which handlers raised? ----------------------------------


def handler_failures(trace_path: str) -> list[dict[str, Any]]:
    """Exercise 1: every call in the trace whose handler ran and then failed, in file order.

    One dict per call: {"line", "run", "tool", "call_id", "exception",
    "message"}, where `line` is the line of its tool_outcome event in the file.
    A write its authority refused is not one of them: its handler never ran.
    """
    raise NotImplementedError("Exercise 1: read the trace and pick the failed handlers")


# --- Unit A, Exercise 2: a replay that parts ways at event 11 --------------------


def strawberry_at_290(**recorded: Any) -> Dispatcher:
    """Exercise 2: the recorded shop's tools, except that strawberry costs 290 pence.

    A setup for `replay_run`: it is called with the arguments the trace
    recorded for `build_tools`. Replaying the morning plan against it must
    diverge at event 11, the strawberry draft's outcome, and nowhere earlier.
    """
    raise NotImplementedError("Exercise 2: build the recorded tools with the new price")


# --- Unit B, Exercise 4: how much does a pass rate move? --------------------------


def pass_rate_spread(
    suite_path: str, variant: str, seeds: Sequence[int], repeat: int
) -> dict[str, Any]:
    """Exercise 4: the pass rate of one variant of a suite under each seed, and their range.

    Returns {"rates": [one pass rate per seed, in the seeds' order],
    "lowest": the smallest, "highest": the largest}. An unknown variant
    raises KeyError.
    """
    raise NotImplementedError("Exercise 4: run the suite once per seed")


# --- Unit C, Exercise 5: which runs need Lucy? (an open design task) ---------------


def runs_to_review(trace_path: str) -> list[str]:
    """Exercise 5: the ids of the runs in the trace that need Lucy, as Unit C's list says.

    Each run once, in the order the runs start in the file. The design is
    yours (Unit C).
    """
    raise NotImplementedError("Exercise 5: decide which runs need Lucy")


# --- Lucy's morning, for the notebooks and your tests ------------------------------
# The morning plan as chapter 3's model plays it: the stock, both drafts in one
# turn, the answer. Fixed replies, so every trace of it is the same run: 14
# events, the strawberry draft's outcome the 11th. The replies are plain JSON,
# {"content": text or None, "tool_calls": [[id, name, arguments_json], ...]},
# so that they can travel through the grader's door too.

TASK = "Plan this morning's re-order."
MORNING_SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
MORNING_PLAN = [
    {"content": None, "tool_calls": [["call-1", "list_stock", "{}"]]},
    {
        "content": None,
        "tool_calls": [
            ["call-2", "draft_order", '{"sku": "SKU-VANILLA", "quantity": 6}'],
            ["call-3", "draft_order", '{"sku": "SKU-STRAWBERRY", "quantity": 4}'],
        ],
    },
    {"content": "Draft 6 tubs of vanilla and 4 of strawberry: 2,600 pence.", "tool_calls": []},
]


def record_morning(trace_path: str) -> int:
    """Append the morning plan to a trace file, run by this file's run_task; return its events."""
    text = record_run(TASK, MORNING_SHOP, dict(PRICES_PENCE), MORNING_PLAN, 6, 8)
    with Path(trace_path).open("a", encoding="utf-8") as trace:
        trace.write(text)
    return len(text.splitlines())


def suite_pass_rates(suite_path: str, repeat: int, seed: int) -> dict[str, float]:
    """Run a suite (yours, suite.toml) and return each variant's pass rate."""
    results = run_suite(load_suite(Path(suite_path)), repeat=repeat, seed=seed)
    return {result.variant.name: result.pass_rate for result in results}


# --- The grader's door (leave this part as it is) ---------------------------------
# The grader, and your tests when the grader runs them, send and receive plain
# JSON only. They share no files with this process either, so a trace or a
# suite crosses the door as its text: each function below writes what it is
# given to a scratch file of its own, runs your code on it, and answers with
# plain values.


@contextmanager
def scratch_file(name: str, text: str) -> Iterator[Path]:
    """`text` in a file of its own, gone afterwards: how the door hands your code a path."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8")
        yield path


def nobody_approves(call: ToolCall) -> None:
    """The authority of `record_run(..., refuse_writes=True)`: it approves nothing."""
    raise PermissionError("no operator approved this write")


def record_run(
    task: str,
    shop: Mapping[str, Any],
    prices: Mapping[str, int],
    replies: Sequence[Mapping[str, Any]],
    max_steps: int,
    max_tool_calls: int,
    *,
    hints: bool = False,
    refuse_writes: bool = False,
) -> str:
    """Run this file's run_task on the shop's tools with scripted replies; the trace, as text.

    With `refuse_writes` the tools include `place_order`, a write whose
    authority refuses every request (so the trace shows a `before_write` stage).
    """
    script = [
        AssistantMessage(
            content=reply.get("content"),
            tool_calls=tuple(
                AssistantToolCall(id=i, name=n, arguments_json=a) for i, n, a in reply["tool_calls"]
            ),
        )
        for reply in replies
    ]
    tools = build_tools(shop, prices, hints=hints)
    if refuse_writes:
        place = ExecutableTool(
            "place_order",
            "Place an order with the supplier.",
            ProductArguments,
            lambda args: "placed",
            consequential=True,
        )
        tools = Dispatcher(
            [*tools.tools.values(), place],
            allowed=[*tools.allowed, "place_order"],
            before_write=nobody_approves,
            hints=hints,
        )
    lines: list[str] = []
    run_task(
        ScriptedModel(script),
        tools,
        task,
        max_steps=max_steps,
        max_tool_calls=max_tool_calls,
        # Each event as the trace file would hold it, written down the moment it happens.
        recorder=Recorder(lambda event: lines.append(encode_event(event).decode("utf-8"))),
    )
    return "".join(lines)


def failures_in(trace_text: str) -> list[dict[str, Any]]:
    """Exercise 1 on a trace given as text."""
    with scratch_file("trace.jsonl", trace_text) as path:
        return handler_failures(str(path))


def replay_at_290(trace_text: str) -> dict[str, Any] | None:
    """Replay the first run of a trace against Exercise 2's setup; the divergence, or None."""
    with scratch_file("trace.jsonl", trace_text) as path:
        report = replay_run(read_trace(path)[0], setup=strawberry_at_290)
    divergence = report.divergence
    if divergence is None:
        return None
    return {
        "line": divergence.line,
        "seq": divergence.seq,
        "kind": divergence.kind,
        "what": divergence.what,
        "recorded": divergence.recorded,
        "now": divergence.now,
    }


def spread(suite_text: str, variant: str, seeds: list[int], repeat: int) -> dict[str, Any]:
    """Exercise 4 on a suite given as text."""
    with scratch_file("suite.toml", suite_text) as path:
        return pass_rate_spread(str(path), variant, seeds, repeat)


def review_in(trace_text: str) -> list[str]:
    """Exercise 5 on a trace given as text."""
    with scratch_file("trace.jsonl", trace_text) as path:
        return runs_to_review(str(path))


def failure_class_of(code: str, stage: str | None) -> str | None:
    """The failure class of a code (and its stage), as its plain name."""
    found = failure_class(code, stage)
    return None if found is None else found.value


def measure(tools: list[dict[str, Any]], calls: list[list[str]]) -> dict[str, Any]:
    """What the metrics make of calls given as [tool asked for, arguments_json, code]."""
    made = [
        Call(asked, shaped_for(arguments, asked, tools), code) for asked, arguments, code in calls
    ]
    mistakes, recovered = recoveries(made)
    return {
        "fits": [call.fits for call in made],
        "invalid_choices": invalid_choices(made),
        "mistakes": mistakes,
        "recovered": recovered,
    }
