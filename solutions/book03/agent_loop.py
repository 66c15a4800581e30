"""Solutions 3: chapter 3's bounded loop, with the exercises of Exercise Book 3 done.

Exercise 1 (Unit A): `next_move`, one policy for every step of the offline
model, which survives a delivery arriving in the middle of a run.
Exercise 2 (Unit B): `StopReason.REPEATED_REFUSAL`, which ends a run whose
model sends again a request the dispatcher already refused.
Exercise 3 (Unit C, an open design task): `run_task`'s `patience`, which ends
a run `no_progress` once that many turns in a row ran nothing.

The grader calls only the functions under "The grader's door" at the end.
"""

import json
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

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
    DraftArguments,
    NoArguments,
    ProductArguments,
    draft_order,
    stock_report,
    supplier_quote,
)
from sovereign_agent.tools import Dispatcher, ExecutableTool, Observation, ToolCall


def tool_call(call_id: str, name: str, **arguments: Any) -> AssistantToolCall:
    """A tool call in the one form every client hands to the loop: arguments as JSON text."""
    return AssistantToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


class StopReason(StrEnum):
    """Why a run ended. The runtime names it; the model never chooses it."""

    FINAL_ANSWER = "final_answer"
    STEP_LIMIT = "step_limit"
    TOOL_CALL_LIMIT = "tool_call_limit"
    MODEL_ERROR = "model_error"
    DUPLICATE_CALL_ID = "duplicate_call_id"
    # Exercise 2: a model sending again a request the dispatcher already refused.
    REPEATED_REFUSAL = "repeated_refusal"
    # Exercise 3: a model whose turns, `patience` of them in a row, ran nothing.
    NO_PROGRESS = "no_progress"


class RunRecord(BaseModel):
    """Everything one run did, frozen once the run is over."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stop_reason: StopReason
    answer: str | None
    error: str | None
    steps: int
    messages: tuple[Message, ...]
    requested: tuple[str, ...]
    executed: tuple[str, ...]
    refused: tuple[tuple[str, str], ...]


def check_setup(dispatcher: Dispatcher, *, max_steps: int, max_tool_calls: int) -> None:
    """Refuse a run that could only fail, before the model is asked anything."""
    for name, bound in (("max_steps", max_steps), ("max_tool_calls", max_tool_calls)):
        # bool is a subclass of int: True must not pass for a bound of 1.
        if isinstance(bound, bool) or not isinstance(bound, int) or bound < 1:
            raise ValueError(f"{name} must be a positive int, got {bound!r}")
    for name in sorted(dispatcher.allowed & dispatcher.tools.keys()):
        # Otherwise every call to this tool would come back refused, and the
        # run would look like a model that keeps failing, not a missing setting.
        if dispatcher.tools[name].consequential and not dispatcher.has_write_authority:
            raise ValueError(f"tool {name!r} is allowed and consequential, but no before_write")


# Arguments for the shop's tools fit in a few dozen characters and one level of
# nesting. The bounds keep a runaway model from making the runtime parse
# megabytes of text, and make deep nesting malformed on every Python version:
# how deep json.loads itself can go differs from one version to the next.
MAX_ARGUMENTS_CHARS = 4_096
MAX_ARGUMENTS_DEPTH = 32


def refuse_constant(name: str) -> float:
    """NaN and Infinity are not JSON, though Python's parser accepts them by default."""
    raise ValueError(f"{name} is not JSON")


def refuse_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """One key twice in one object has no single meaning, though Python's parser keeps the last."""
    value = dict(pairs)
    if len(value) < len(pairs):
        raise ValueError("a key appears twice in one object")
    return value


# json.loads given an option builds a new decoder on every call. One decoder
# reads every call's arguments instead: it keeps nothing from one text to the
# next, as the decoder json.loads shares when given no option keeps nothing.
ARGUMENTS_DECODER = json.JSONDecoder(
    parse_constant=refuse_constant, object_pairs_hook=refuse_duplicate_keys
)


def nested_deeper_than(value: object, depth: int) -> bool:
    """Whether lists and objects nest more than `depth` levels deep in a parsed JSON value."""
    # Only lists and objects go down to the next level, so the walk ends at the
    # first level that holds none: a flat object takes one step, not `depth`.
    containers = [value] if isinstance(value, dict | list) else []
    for _ in range(depth):
        if not containers:
            return False
        containers = [
            child
            for item in containers
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, dict | list)
        ]
    return bool(containers)


def parse_tool_call(raw: AssistantToolCall) -> ToolCall | None:
    """The model's raw request as a checked envelope, or None when it is malformed."""
    if len(raw.arguments_json) > MAX_ARGUMENTS_CHARS:
        return None
    try:
        arguments = ARGUMENTS_DECODER.decode(raw.arguments_json)
    except (ValueError, RecursionError):
        # Bad JSON, NaN or Infinity, a key twice in one object; or nesting deep
        # enough that this version of Python's parser gave up before our own bound applied.
        return None
    if nested_deeper_than(arguments, MAX_ARGUMENTS_DEPTH):
        return None
    try:
        return ToolCall(id=raw.id, name=raw.name, arguments=arguments)
    except ValueError:
        # Pydantic's ValidationError is a ValueError: a bad id or name, or
        # arguments that are not a JSON object.
        return None


# Built once, as ARGUMENTS_DECODER is (json.dumps given an option builds one
# per call); encode() keeps nothing from one observation to the next.
OBSERVATION_ENCODER = json.JSONEncoder(sort_keys=True, allow_nan=False)


def observation_message(call_id: str, observation: Observation) -> ToolMessage:
    """One answer to one call, under that call's id, as JSON with sorted keys."""
    return ToolMessage(tool_call_id=call_id, content=OBSERVATION_ENCODER.encode(observation))


def one_line(error: Exception) -> str:
    """A model error as one short line: its class, then its message."""
    text = " ".join(str(error).split())[:200]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def run_task(
    model: ModelClient,
    dispatcher: Dispatcher,
    task: str,
    *,
    max_steps: int,
    max_tool_calls: int,
    system: str | None = None,
    patience: int | None = None,
) -> RunRecord:
    """Let the model work on one task, inside bounds the runtime set and enforces.

    Exercise 3: with `patience`, a run whose last `patience` turns ran no
    handler at all stops `no_progress`. Turns, not calls, are counted: a
    model that tries three wrong tools in one turn has had one chance, and a
    turn in which anything ran has moved the run on, so the count starts
    again. A handler that ran and failed counts as running: the shop heard
    the request and answered it, which is chapter 3's line between executed
    and refused.
    """
    check_setup(dispatcher, max_steps=max_steps, max_tool_calls=max_tool_calls)
    # Like the other bounds, a patience that could only fail is refused before
    # the model is asked anything (bool is an int: True is not a patience of 1).
    if patience is not None and (
        isinstance(patience, bool) or not isinstance(patience, int) or patience < 1
    ):
        raise ValueError(f"patience must be a positive int or None, got {patience!r}")
    idle_turns = 0
    messages: list[Message] = [] if system is None else [SystemMessage(content=system)]
    messages.append(UserMessage(content=task))
    requested: list[str] = []
    executed: list[str] = []
    refused: list[tuple[str, str]] = []
    answered_ids: set[str] = set()
    steps = 0
    dispatched = 0
    # Exercise 2: (name, arguments as sorted JSON) of every request the dispatcher refused.
    refused_requests: set[tuple[str, str]] = set()

    def finish(
        reason: StopReason, answer: str | None = None, error: str | None = None
    ) -> RunRecord:
        return RunRecord(
            stop_reason=reason,
            answer=answer,
            error=error,
            steps=steps,
            messages=tuple(messages),
            requested=tuple(requested),
            executed=tuple(executed),
            refused=tuple(refused),
        )

    while True:
        steps += 1
        try:
            # The tools on offer are asked for at every step, not once: what a
            # run may use can narrow while it runs.
            reply = model.complete(tuple(messages), tools=dispatcher.schemas())
        except ModelError as error:
            return finish(StopReason.MODEL_ERROR, error=one_line(error))
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
        ran_before = len(executed)
        for raw in calls:
            requested.append(raw.name)
            call = parse_tool_call(raw)
            handler_ran = False
            if call is None:
                # A fixed code: the model's own malformed text is never echoed back.
                observation: Observation = {"ok": False, "error": "malformed_tool_call"}
            elif stop is StopReason.STEP_LIMIT:
                observation = {"ok": False, "error": "step_limit"}
            elif (call.name, json.dumps(call.arguments, sort_keys=True)) in refused_requests:
                # Exercise 2: the same request would be refused the same way;
                # sending it again is a model going round in circles.
                observation = {"ok": False, "error": "repeated_refusal"}
                if stop is None:
                    stop = StopReason.REPEATED_REFUSAL
            elif dispatched == max_tool_calls:
                # The budget is spent mid-turn: the rest of this turn is refused,
                # and the model is not asked again.
                observation = {"ok": False, "error": "tool_call_limit"}
                if stop is None:
                    stop = StopReason.TOOL_CALL_LIMIT
            else:
                dispatched += 1
                outcome = dispatcher.attempt(call)
                observation, handler_ran = outcome.observation, outcome.handler_ran
                if observation.get("ok") is not True:
                    refused_requests.add((call.name, json.dumps(call.arguments, sort_keys=True)))
            # A call whose handler ran is executed, whatever the model was told:
            # a handler that failed, or whose result was too large, still ran.
            if handler_ran:
                executed.append(raw.name)
            else:
                refused.append((raw.name, str(observation["error"])))
            # Every call is answered, in the model's order, under its own id:
            # a provider rejects a transcript with an unanswered call.
            messages.append(observation_message(raw.id, observation))
        idle_turns = idle_turns + 1 if len(executed) == ran_before else 0
        # The turn is answered whole first; any stop already decided names the run.
        if stop is None and patience is not None and idle_turns >= patience:
            stop = StopReason.NO_PROGRESS
        if stop is not None:
            return finish(stop)


def next_call_id(messages: Sequence[Message], offset: int = 0) -> str:
    """A fresh id, counting the calls already in the conversation, as a provider would."""
    made = sum(len(m.tool_calls) for m in messages if isinstance(m, AssistantMessage))
    return f"call-{made + 1 + offset}"


def latest_observations(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The answers to the model's most recent turn, in the order of its calls."""
    answers: list[dict[str, Any]] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        answers.insert(0, json.loads(message.content))
    return answers


def ask_for_stock(messages: Sequence[Message]) -> AssistantMessage:
    """Offline model, step 1: ask the shop instead of trusting a snapshot."""
    return AssistantMessage(tool_calls=(tool_call(next_call_id(messages), "list_stock"),))


def draft_what_is_needed(messages: Sequence[Message]) -> AssistantMessage:
    """Offline model, step 2: one draft per product below target, largest need first."""
    stock = latest_observations(messages)[-1]["value"]
    needed = sorted((row for row in stock if row["needed"] > 0), key=lambda row: -row["needed"])
    calls = [
        tool_call(next_call_id(messages, i), "draft_order", sku=row["sku"], quantity=row["needed"])
        for i, row in enumerate(needed)
    ]
    return AssistantMessage(tool_calls=tuple(calls))


def report_plan(messages: Sequence[Message]) -> AssistantMessage:
    """Offline model, step 3: a plan built only from the drafts the shop returned."""
    drafts = [obs["value"] for obs in latest_observations(messages) if obs["ok"]]
    parts = [f"{d['quantity']} tubs of {d['sku']} ({d['total_pence']:,} pence)" for d in drafts]
    total = sum(d["total_pence"] for d in drafts)
    return AssistantMessage(
        content=f"Draft {' and '.join(parts)}: {total:,} pence in all. Nothing is bought yet."
    )


SHOP_SCRIPT = (ask_for_stock, draft_what_is_needed, report_plan)


def show_run(record: RunRecord) -> None:
    """How a run ended, and the three trajectories, one line each."""
    print(f"stop: {record.stop_reason} after {record.steps} step(s)")
    print("requested:", ", ".join(record.requested) or "(none)")
    print("executed:", ", ".join(record.executed) or "(none)")
    print("refused:", ", ".join(f"{name} ({code})" for name, code in record.refused) or "(none)")


def show_transcript(record: RunRecord) -> None:
    """Every message of a run, one line each, long observations cut short."""
    for message in record.messages:
        if isinstance(message, UserMessage):
            print("user:", message.content)
        elif isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                print(f"model asks [{call.id}]: {call.name} {call.arguments_json}")
            if message.content:
                print("model says:", message.content)
        elif isinstance(message, ToolMessage):
            text = message.content if len(message.content) <= 60 else message.content[:59] + "…"
            print(f"runtime answers [{message.tool_call_id}]: {text}")


def drafts_in(record: RunRecord) -> list[dict[str, Any]]:
    """The drafts a run produced, each answer matched by id to a call of the turn it answers."""
    drafts = []
    names: dict[str, str] = {}
    for message in record.messages:
        if isinstance(message, AssistantMessage):
            # Only this turn's ids: a later reply that reuses an id must not
            # turn an earlier answer (a stock report, say) into a draft.
            names = {call.id: call.name for call in message.tool_calls}
        elif isinstance(message, ToolMessage) and names.get(message.tool_call_id) == "draft_order":
            observation = json.loads(message.content)
            if observation["ok"]:
                drafts.append(observation["value"])
    return drafts


# --- Exercise 1 (Unit A): one policy for every step ---------------------------


def drafts_so_far(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Every draft the shop has returned in this conversation, matched to its call by id."""
    names = {
        call.id: call.name
        for message in messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
    }
    drafts = []
    for message in messages:
        if isinstance(message, ToolMessage) and names.get(message.tool_call_id) == "draft_order":
            observation = json.loads(message.content)
            if observation["ok"]:
                drafts.append(observation["value"])
    return drafts


def latest_calls(messages: Sequence[Message]) -> tuple[AssistantToolCall, ...]:
    """The tool calls of the model's most recent turn."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return message.tool_calls
    return ()


def plan_answer(drafts: Sequence[dict[str, Any]]) -> AssistantMessage:
    """The final answer: every draft the shop made, and their total in pence."""
    total = sum(d["total_pence"] for d in drafts)
    if not drafts:
        return AssistantMessage(content=f"Nothing to re-order today: {total:,} pence in all.")
    parts = [f"{d['quantity']} tubs of {d['sku']} ({d['total_pence']:,} pence)" for d in drafts]
    return AssistantMessage(
        content=f"Draft {' and '.join(parts)}: {total:,} pence in all. Nothing is bought yet."
    )


def next_move(messages: Sequence[Message]) -> AssistantMessage:
    """Exercise 1: decide the next step from the conversation alone, whatever happened before."""
    calls = latest_calls(messages)
    if not calls:
        return ask_for_stock(messages)
    answers = latest_observations(messages)
    drafted = {d["sku"] for d in drafts_so_far(messages)}
    if [c.name for c in calls] == ["list_stock"] and answers[-1]["ok"]:
        # Fresh numbers: draft what is still needed and not drafted yet.
        stock = answers[-1]["value"]
        needed = sorted(
            (row for row in stock if row["needed"] > 0 and row["sku"] not in drafted),
            key=lambda row: -row["needed"],
        )
        if not needed:
            return plan_answer(drafts_so_far(messages))
        return AssistantMessage(
            tool_calls=tuple(
                tool_call(
                    next_call_id(messages, i), "draft_order", sku=row["sku"], quantity=row["needed"]
                )
                for i, row in enumerate(needed)
            )
        )
    if any(not answer["ok"] for answer in answers):
        # Something changed since the stock was read: read it again.
        return ask_for_stock(messages)
    return plan_answer(drafts_so_far(messages))


# --- The grader's door (leave this part as it is) ------------------------------
# The grader can only send and receive plain JSON, so these functions build
# the model and the shop from JSON and describe the run as JSON.

TASK = "Plan this morning's re-order."


def delivery_tools(
    shop: Mapping[str, Any], prices: Mapping[str, int], delivery: Mapping[str, int]
) -> Dispatcher:
    """Chapter 2's three shop tools, except that `delivery` (sku -> tubs) reaches the
    freezer right after the first stock report has been read."""
    products = [dict(row) for row in shop["products"]]
    price_list = dict(prices)
    reports = []

    def list_stock(_: NoArguments) -> list[dict[str, Any]]:
        report = stock_report(products)
        reports.append(report)
        if len(reports) == 1:
            for row in products:
                row["on_hand"] += delivery.get(row["sku"], 0)
        return report

    tools = [
        ExecutableTool(
            "list_stock", "Every product with its stock and need.", NoArguments, list_stock
        ),
        ExecutableTool(
            "supplier",
            "The supplier's quote for one sku.",
            ProductArguments,
            lambda args: supplier_quote(price_list, args.sku),
        ),
        ExecutableTool(
            "draft_order",
            "Draft (never place) a re-order for exactly the tubs needed.",
            DraftArguments,
            lambda args: draft_order(products, price_list, args.sku, args.quantity),
        ),
    ]
    return Dispatcher(tools, allowed=["draft_order", "list_stock", "supplier"])


def record_summary(record: RunRecord) -> dict[str, Any]:
    """A run record as plain JSON: how it ended, its trajectories, every answer, the drafts."""
    return {
        "stop_reason": str(record.stop_reason),
        "steps": record.steps,
        "answer": record.answer,
        "error": record.error,
        "requested": list(record.requested),
        "executed": list(record.executed),
        "refused": [[name, code] for name, code in record.refused],
        "answers": [
            [m.tool_call_id, json.loads(m.content)]
            for m in record.messages
            if isinstance(m, ToolMessage)
        ],
        "drafts": door_drafts(record),
    }


def door_drafts(record: RunRecord) -> list[list[Any]]:
    """[sku, quantity, total_pence] of each accepted draft, each answer read against its own turn.

    Matched turn by turn rather than by id over the whole run, so that a reply
    reusing an earlier call's id (which ends the run unanswered) cannot pass
    that earlier call's answer off as a draft.
    """
    drafts: list[list[Any]] = []
    turn: dict[str, str] = {}
    for message in record.messages:
        if isinstance(message, AssistantMessage):
            turn = {call.id: call.name for call in message.tool_calls}
        elif isinstance(message, ToolMessage) and turn.get(message.tool_call_id) == "draft_order":
            observation = json.loads(message.content)
            if observation["ok"]:
                value = observation["value"]
                drafts.append([value["sku"], value["quantity"], value["total_pence"]])
    return drafts


def run_scripted(
    replies: list[dict[str, Any]],
    shop: dict[str, Any],
    prices: dict[str, int],
    max_steps: int,
    max_tool_calls: int,
) -> dict[str, Any]:
    """`run_task` with a scripted model whose replies are given as JSON:
    {"content": text or None, "tool_calls": [[id, name, arguments_json], ...]}."""
    script = [
        AssistantMessage(
            content=reply.get("content"),
            tool_calls=tuple(
                AssistantToolCall(id=i, name=n, arguments_json=a) for i, n, a in reply["tool_calls"]
            ),
        )
        for reply in replies
    ]
    record = run_task(
        ScriptedModel(script),
        delivery_tools(shop, prices, {}),
        TASK,
        max_steps=max_steps,
        max_tool_calls=max_tool_calls,
    )
    return record_summary(record)


def run_patient(
    replies: list[dict[str, Any]],
    shop: dict[str, Any],
    prices: dict[str, int],
    max_steps: int,
    max_tool_calls: int,
    patience: int,
) -> dict[str, Any]:
    """`run_scripted`'s run, with Unit C's `patience` handed to `run_task`."""
    script = [
        AssistantMessage(
            content=reply.get("content"),
            tool_calls=tuple(
                AssistantToolCall(id=i, name=n, arguments_json=a) for i, n, a in reply["tool_calls"]
            ),
        )
        for reply in replies
    ]
    # Until Unit C gives run_task its `patience`, the run goes on as chapter 3's
    # loop runs it: the notebook shows what is missing, not a TypeError.
    import inspect

    given = {"patience": patience} if "patience" in inspect.signature(run_task).parameters else {}
    record = run_task(
        ScriptedModel(script),
        delivery_tools(shop, prices, {}),
        TASK,
        max_steps=max_steps,
        max_tool_calls=max_tool_calls,
        **given,
    )
    return record_summary(record)


def run_next_move(
    shop: dict[str, Any],
    prices: dict[str, int],
    delivery: dict[str, int],
    max_steps: int,
    max_tool_calls: int,
) -> dict[str, Any]:
    """`run_task` with `next_move` as every step of the model, and a delivery mid-run."""
    record = run_task(
        ScriptedModel([next_move] * max_steps),
        delivery_tools(shop, prices, delivery),
        TASK,
        max_steps=max_steps,
        max_tool_calls=max_tool_calls,
    )
    return record_summary(record)
