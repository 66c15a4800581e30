"""The bounded loop against the offline scripted model: every stop reason, every failure."""

from __future__ import annotations

import copy
import json
import runpy
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from sovereign_agent.loop import (
    MAX_ARGUMENTS_CHARS,
    MAX_ARGUMENTS_DEPTH,
    StopReason,
    parse_tool_call,
    run_task,
)
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelHTTPError,
    ModelReply,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import NoArguments, build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall, ToolOutcome

SHOP = runpy.run_path(
    "book/textbook/checkpoints/profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
)["SHOP"]
MALFORMED = '{"error": "malformed_tool_call", "ok": false}'


def ask(call_id: str, name: str, **arguments: Any) -> AssistantToolCall:
    return AssistantToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


def turn(*calls: AssistantToolCall) -> AssistantMessage:
    return AssistantMessage(tool_calls=calls)


def final(text: str) -> AssistantMessage:
    return AssistantMessage(content=text)


def tool_messages(messages: Sequence[Message]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def observations(messages: Sequence[Message]) -> dict[str, dict[str, Any]]:
    return {m.tool_call_id: json.loads(m.content) for m in tool_messages(messages)}


def stock_of(dispatcher: Dispatcher, sku: str) -> int:
    rows = dispatcher.invoke(ToolCall(id="probe", name="list_stock", arguments={}))["value"]
    return next(row["on_hand"] for row in rows if row["sku"] == sku)


HAPPY_SCRIPT = [
    turn(ask("c1", "list_stock")),
    turn(
        ask("c2", "draft_order", sku="SKU-VANILLA", quantity=6),
        ask("c3", "draft_order", sku="SKU-STRAWBERRY", quantity=4),
    ),
    final("Draft 6 vanilla and 4 strawberry: 2,600 pence."),
]


def test_final_answer_ends_the_run_with_the_models_text_and_every_call_answered() -> None:
    before = copy.deepcopy(SHOP)
    dispatcher = build_tools(SHOP)
    model = ScriptedModel(HAPPY_SCRIPT)
    record = run_task(model, dispatcher, "Plan the re-order.", max_steps=5, max_tool_calls=5)

    assert record.stop_reason is StopReason.FINAL_ANSWER
    assert record.answer == "Draft 6 vanilla and 4 strawberry: 2,600 pence."
    assert record.error is None
    assert record.steps == 3
    assert [m.role for m in record.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert [m.tool_call_id for m in tool_messages(record.messages)] == ["c1", "c2", "c3"]
    seen = observations(record.messages)
    assert seen["c2"]["value"]["total_pence"] == 1500
    assert seen["c3"]["value"]["total_pence"] == 1100
    assert record.requested == ("list_stock", "draft_order", "draft_order")
    assert record.executed == ("list_stock", "draft_order", "draft_order")
    assert record.refused == ()
    assert stock_of(dispatcher, "SKU-VANILLA") == 2
    assert before == SHOP


def test_observations_are_json_with_sorted_keys() -> None:
    record = run_task(
        ScriptedModel(HAPPY_SCRIPT), build_tools(SHOP), "t", max_steps=5, max_tool_calls=5
    )
    for message in tool_messages(record.messages):
        assert message.content == json.dumps(json.loads(message.content), sort_keys=True)
    assert tool_messages(record.messages)[1].content.startswith('{"ok": true, "value": {"currency"')


def test_the_model_is_offered_the_allowed_schemas_and_sees_each_observation() -> None:
    dispatcher = build_tools(SHOP, allowed=["list_stock"])
    model = ScriptedModel([turn(ask("c1", "list_stock")), final("ok")])
    run_task(model, dispatcher, "t", max_steps=3, max_tool_calls=3, system="Be careful.")
    first_messages, first_tools = model.calls[0]
    assert list(first_tools) == dispatcher.schemas()
    assert [t["function"]["name"] for t in first_tools] == ["list_stock"]
    assert first_messages == (SystemMessage(content="Be careful."), UserMessage(content="t"))
    second_messages, _ = model.calls[1]
    assert isinstance(second_messages[-1], ToolMessage)
    assert second_messages[-1].tool_call_id == "c1"


def test_unknown_tool_is_refused_and_the_model_recovers() -> None:
    model = ScriptedModel(
        [
            turn(ask("c1", "run_shell", command="rm -rf /")),
            turn(ask("c2", "list_stock")),
            final("Stock read."),
        ]
    )
    record = run_task(model, build_tools(SHOP), "t", max_steps=5, max_tool_calls=5)
    assert record.stop_reason is StopReason.FINAL_ANSWER
    assert observations(record.messages)["c1"] == {"ok": False, "error": "tool_not_allowed"}
    assert record.requested == ("run_shell", "list_stock")
    assert record.executed == ("list_stock",)
    assert record.refused == (("run_shell", "tool_not_allowed"),)


def test_wrong_quantity_is_refused_then_corrected_after_a_fresh_list_stock() -> None:
    model = ScriptedModel(
        [
            turn(ask("c1", "draft_order", sku="SKU-VANILLA", quantity=8)),
            turn(ask("c2", "list_stock")),
            turn(ask("c3", "draft_order", sku="SKU-VANILLA", quantity=6)),
            final("Drafted 6."),
        ]
    )
    record = run_task(model, build_tools(SHOP), "t", max_steps=5, max_tool_calls=5)
    seen = observations(record.messages)
    assert seen["c1"] == {"ok": False, "error": "tool_failed"}
    assert seen["c3"]["value"]["quantity"] == 6
    # The shop's own rule refused 8 inside the handler: the handler ran, so the
    # call is executed, and the model was told tool_failed.
    assert record.refused == ()
    assert record.executed == ("draft_order", "list_stock", "draft_order")
    assert record.stop_reason is StopReason.FINAL_ANSWER


def test_a_model_that_never_stops_is_ended_by_the_step_limit() -> None:
    model = ScriptedModel([turn(ask(f"c{i}", "list_stock")) for i in range(10)])
    record = run_task(model, build_tools(SHOP), "t", max_steps=3, max_tool_calls=10)
    assert record.stop_reason is StopReason.STEP_LIMIT
    assert record.steps == 3
    assert len(model.calls) == 3
    assert record.answer is None
    assert record.executed == ("list_stock", "list_stock")
    # The last step's call is answered, under its id, but never run: nobody would read it.
    assert record.refused == (("list_stock", "step_limit"),)
    assert observations(record.messages)["c2"] == {"ok": False, "error": "step_limit"}
    assert isinstance(record.messages[-1], ToolMessage)


def test_step_limit_refuses_a_write_in_the_last_step_so_nothing_runs_unread() -> None:
    ran: list[str] = []
    tool = ExecutableTool(
        name="place",
        description="a probe that records that it ran",
        arguments=NoArguments,
        handler=lambda _: ran.append("ran"),
        consequential=True,
    )
    dispatcher = Dispatcher([tool], allowed=["place"], before_write=lambda call: None)
    model = ScriptedModel([turn(ask("c1", "place"))])
    record = run_task(model, dispatcher, "t", max_steps=1, max_tool_calls=5)
    assert record.stop_reason is StopReason.STEP_LIMIT
    assert ran == []


def test_tool_call_limit_mid_turn_answers_every_call_and_stops() -> None:
    model = ScriptedModel(
        [
            turn(
                ask("a", "list_stock"),
                ask("b", "supplier", sku="SKU-VANILLA"),
                ask("c", "list_stock"),
                ask("d", "supplier", sku="SKU-CHOCOLATE"),
            ),
            final("never asked"),
        ]
    )
    record = run_task(model, build_tools(SHOP), "t", max_steps=5, max_tool_calls=2)
    assert record.stop_reason is StopReason.TOOL_CALL_LIMIT
    assert len(model.calls) == 1
    assert [m.tool_call_id for m in tool_messages(record.messages)] == ["a", "b", "c", "d"]
    assert record.executed == ("list_stock", "supplier")
    assert record.refused == (("list_stock", "tool_call_limit"), ("supplier", "tool_call_limit"))
    assert observations(record.messages)["d"] == {"ok": False, "error": "tool_call_limit"}


def test_a_model_that_spends_exactly_its_budget_may_still_answer() -> None:
    model = ScriptedModel([turn(ask("a", "list_stock"), ask("b", "list_stock")), final("done")])
    record = run_task(model, build_tools(SHOP), "t", max_steps=5, max_tool_calls=2)
    assert record.stop_reason is StopReason.FINAL_ANSWER
    assert record.executed == ("list_stock", "list_stock")


def test_a_spent_budget_refuses_the_next_turns_calls() -> None:
    model = ScriptedModel([turn(ask("a", "list_stock")), turn(ask("b", "list_stock")), final("x")])
    record = run_task(model, build_tools(SHOP), "t", max_steps=5, max_tool_calls=1)
    assert record.stop_reason is StopReason.TOOL_CALL_LIMIT
    assert record.steps == 2
    assert record.refused == (("list_stock", "tool_call_limit"),)


@pytest.mark.parametrize(
    ("call_id", "name", "arguments_json"),
    [
        ("c1", "list_stock", "[1, 2]"),
        ("c1", "list_stock", "not json secret-token-args"),
        ("c1", "list_stock", ""),
        ("c1", "list_stock", '{"x": NaN}'),
        ("c1", "list_stock", '{"x": -Infinity}'),
        ("c1", "list_stock", "[" * 2000 + "]" * 2000),
        ("c1", "list_stock", json.dumps({"pad": "x" * MAX_ARGUMENTS_CHARS})),
        ("", "list_stock", "{}"),
        ("c1", "", "{}"),
        ("c1", "run shell; secret-token-name", "{}"),
        ("c1", "x" * 101, "{}"),
        ("x" * 201, "list_stock", "{}"),
    ],
)
def test_a_malformed_call_becomes_a_fixed_refusal_never_an_echo(
    call_id: str, name: str, arguments_json: str
) -> None:
    model = ScriptedModel(
        [turn(AssistantToolCall(id=call_id, name=name, arguments_json=arguments_json)), final("ok")]
    )
    record = run_task(model, build_tools(SHOP), "t", max_steps=3, max_tool_calls=3)
    answer = tool_messages(record.messages)
    assert len(answer) == 1
    assert answer[0].tool_call_id == call_id
    assert answer[0].content == MALFORMED
    assert record.refused == ((name, "malformed_tool_call"),)
    assert record.executed == ()
    assert record.stop_reason is StopReason.FINAL_ANSWER
    for message in model.calls[1][0]:
        if isinstance(message, ToolMessage):
            assert "secret-token" not in message.content


class WriteProbe:
    """A consequential tool's handler that records its effect before it answers."""

    def __init__(self, answer: Any = "placed", error: Exception | None = None) -> None:
        self.effects: list[str] = []
        self.answer = answer
        self.error = error

    def __call__(self, args: NoArguments) -> Any:
        self.effects.append("order placed")
        if self.error is not None:
            raise self.error
        return self.answer


def write_dispatcher(probe: WriteProbe, before_write: Any = lambda call: None) -> Dispatcher:
    tool = ExecutableTool("place_order", "places an order", NoArguments, probe, consequential=True)
    return Dispatcher(
        [tool], allowed=["place_order"], before_write=before_write, max_result_bytes=128
    )


@pytest.mark.parametrize(
    ("probe", "told"),
    [
        (WriteProbe(answer="x" * 500), "result_too_large"),
        (WriteProbe(error=TimeoutError("the supplier did not confirm")), "tool_failed"),
    ],
    ids=["result_too_large", "handler_failed"],
)
def test_a_write_whose_handler_ran_is_executed_whatever_the_model_was_told(
    probe: WriteProbe, told: str
) -> None:
    model = ScriptedModel([turn(ask("c1", "place_order")), final("x")])
    record = run_task(model, write_dispatcher(probe), "t", max_steps=3, max_tool_calls=3)
    assert probe.effects == ["order placed"]
    assert observations(record.messages)["c1"] == {"ok": False, "error": told}
    assert record.executed == ("place_order",)
    assert record.refused == ()


def test_a_write_the_authority_refuses_is_refused_and_its_handler_never_runs() -> None:
    def nobody_approves(call: ToolCall) -> None:
        raise PermissionError("no operator approved it")

    probe = WriteProbe()
    model = ScriptedModel([turn(ask("c1", "place_order")), final("x")])
    dispatcher = write_dispatcher(probe, before_write=nobody_approves)
    record = run_task(model, dispatcher, "t", max_steps=3, max_tool_calls=3)
    assert probe.effects == []
    assert observations(record.messages)["c1"] == {"ok": False, "error": "tool_failed"}
    assert record.executed == ()
    assert record.refused == (("place_order", "tool_failed"),)


def test_a_reply_that_repeats_an_id_runs_nothing_and_ends_the_run() -> None:
    probe = WriteProbe()
    model = ScriptedModel(
        [turn(ask("same", "place_order"), ask("same", "place_order")), final("never asked")]
    )
    record = run_task(model, write_dispatcher(probe), "t", max_steps=3, max_tool_calls=3)
    assert record.stop_reason is StopReason.DUPLICATE_CALL_ID
    assert probe.effects == []
    assert len(model.calls) == 1
    assert record.requested == ("place_order", "place_order")
    assert record.executed == ()
    assert record.refused == (("place_order", "duplicate_call_id"),) * 2
    # The reply is in the transcript, and no answer follows it.
    assert record.messages[-1] == turn(ask("same", "place_order"), ask("same", "place_order"))
    assert tool_messages(record.messages) == []
    assert record.answer is None


def test_a_reply_that_reuses_an_id_from_an_earlier_turn_runs_nothing() -> None:
    probe = WriteProbe()
    model = ScriptedModel(
        [
            turn(ask("c1", "place_order")),
            turn(ask("c2", "place_order"), ask("c1", "place_order")),
            final("never asked"),
        ]
    )
    record = run_task(model, write_dispatcher(probe), "t", max_steps=5, max_tool_calls=5)
    assert record.stop_reason is StopReason.DUPLICATE_CALL_ID
    assert record.steps == 2
    # Only the first turn ran; c2 did not run either, though its own id was fresh.
    assert probe.effects == ["order placed"]
    assert record.executed == ("place_order",)
    assert record.refused == (("place_order", "duplicate_call_id"),) * 2
    assert [m.tool_call_id for m in tool_messages(record.messages)] == ["c1"]
    assert isinstance(record.messages[-1], AssistantMessage)


def test_two_calls_without_an_id_in_one_reply_reuse_the_empty_id() -> None:
    model = ScriptedModel(
        [
            turn(
                AssistantToolCall(id="", name="list_stock", arguments_json="{}"),
                AssistantToolCall(id="", name="list_stock", arguments_json="{}"),
            ),
            final("never asked"),
        ]
    )
    record = run_task(model, build_tools(SHOP), "t", max_steps=3, max_tool_calls=3)
    assert record.stop_reason is StopReason.DUPLICATE_CALL_ID
    assert tool_messages(record.messages) == []


def test_an_id_answered_as_malformed_may_not_be_used_again() -> None:
    model = ScriptedModel(
        [
            turn(AssistantToolCall(id="c1", name="list_stock", arguments_json="[]")),
            turn(ask("c1", "list_stock")),
            final("never asked"),
        ]
    )
    record = run_task(model, build_tools(SHOP), "t", max_steps=5, max_tool_calls=5)
    assert record.stop_reason is StopReason.DUPLICATE_CALL_ID
    assert record.executed == ()
    assert record.refused == (
        ("list_stock", "malformed_tool_call"),
        ("list_stock", "duplicate_call_id"),
    )


def test_a_duplicate_id_in_the_last_allowed_step_is_still_named_as_such() -> None:
    model = ScriptedModel([turn(ask("a", "list_stock"), ask("a", "list_stock"))])
    record = run_task(model, build_tools(SHOP), "t", max_steps=1, max_tool_calls=3)
    assert record.stop_reason is StopReason.DUPLICATE_CALL_ID


def nested(depth: int, *, kind: str) -> str:
    """JSON text whose lists or objects nest exactly `depth` levels deep."""
    if kind == "objects":
        return '{"a": ' * depth + "1" + "}" * depth
    # Arguments must be an object: the innermost level is one, wrapped in lists
    # inside an outer object.
    return '{"a": ' + "[" * (depth - 2) + "{}" + "]" * (depth - 2) + "}"


@pytest.mark.parametrize("kind", ["objects", "lists"])
@pytest.mark.parametrize(
    "depth", [2, MAX_ARGUMENTS_DEPTH, MAX_ARGUMENTS_DEPTH + 1, 300, 1000, 2040]
)
def test_arguments_nested_beyond_the_bound_are_malformed_whatever_the_parser_can_do(
    depth: int, kind: str
) -> None:
    # The list form stays within MAX_ARGUMENTS_CHARS at every depth here, so
    # only the depth bound (or the parser giving up) can refuse it.
    text = nested(depth, kind=kind)
    call = parse_tool_call(AssistantToolCall(id="c1", name="supplier", arguments_json=text))
    assert (call is None) == (depth > MAX_ARGUMENTS_DEPTH)


def test_the_depth_bound_holds_under_a_low_recursion_limit() -> None:
    # A parser that gives up early (as older Pythons do at about a thousand
    # levels) must give the same answer as one that copes: malformed.
    text = nested(500, kind="lists")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        call = parse_tool_call(AssistantToolCall(id="c1", name="supplier", arguments_json=text))
    finally:
        sys.setrecursionlimit(limit)
    assert call is None


def test_a_malformed_call_does_not_spend_the_tool_budget() -> None:
    model = ScriptedModel(
        [
            turn(AssistantToolCall(id="bad", name="list_stock", arguments_json="[]")),
            turn(ask("good", "list_stock")),
            final("x"),
        ]
    )
    record = run_task(model, build_tools(SHOP), "t", max_steps=5, max_tool_calls=1)
    assert record.stop_reason is StopReason.FINAL_ANSWER
    assert record.executed == ("list_stock",)


def test_running_out_of_script_is_a_model_error_with_one_line() -> None:
    model = ScriptedModel([turn(ask("c1", "list_stock"))])
    record = run_task(model, build_tools(SHOP), "t", max_steps=5, max_tool_calls=5)
    assert record.stop_reason is StopReason.MODEL_ERROR
    assert (
        record.error == "ModelResponseError: the offline script has no reply left after 1 step(s)"
    )
    assert record.steps == 2
    assert record.executed == ("list_stock",)


class FailingModel:
    def __init__(self, error: Exception) -> None:
        self.error = error

    @property
    def label(self) -> str:
        return "failing"

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        raise self.error


def test_a_provider_error_message_is_reported_on_one_line() -> None:
    error = ModelHTTPError("HTTP 503 from the server:\n  overloaded\n\ttry later", status=503)
    record = run_task(FailingModel(error), build_tools(SHOP), "t", max_steps=2, max_tool_calls=2)
    assert record.stop_reason is StopReason.MODEL_ERROR
    assert record.error == "ModelHTTPError: HTTP 503 from the server: overloaded try later"
    assert record.answer is None
    assert record.messages == (UserMessage(content="t"),)


def test_a_defect_in_the_client_propagates() -> None:
    with pytest.raises(ZeroDivisionError):
        run_task(
            FailingModel(ZeroDivisionError("bug")),
            build_tools(SHOP),
            "t",
            max_steps=2,
            max_tool_calls=2,
        )


def test_a_defect_in_a_tool_handler_propagates() -> None:
    def broken(_: BaseModel) -> None:
        raise ZeroDivisionError("bug")

    tool = ExecutableTool(name="broken", description="d", arguments=NoArguments, handler=broken)
    model = ScriptedModel([turn(ask("c1", "broken"))])
    with pytest.raises(ZeroDivisionError):
        run_task(model, Dispatcher([tool], allowed=["broken"]), "t", max_steps=3, max_tool_calls=3)


@pytest.mark.parametrize("bound", [0, -1, True, False, 1.0, "3", None])
@pytest.mark.parametrize("which", ["max_steps", "max_tool_calls"])
def test_bounds_that_are_not_positive_ints_raise_before_the_model_is_asked(
    bound: object, which: str
) -> None:
    model = ScriptedModel([final("x")])
    bounds: dict[str, Any] = {"max_steps": 3, "max_tool_calls": 3, which: bound}
    with pytest.raises(ValueError, match=which):
        run_task(model, build_tools(SHOP), "t", **bounds)
    assert model.calls == []


def consequential_probe() -> ExecutableTool:
    return ExecutableTool(
        name="place_order",
        description="would buy",
        arguments=NoArguments,
        handler=lambda _: "bought",
        consequential=True,
    )


def test_an_allowed_consequential_tool_without_write_authority_fails_at_setup() -> None:
    model = ScriptedModel([final("x")])
    dispatcher = Dispatcher([consequential_probe()], allowed=["place_order"])
    with pytest.raises(ValueError, match="place_order"):
        run_task(model, dispatcher, "t", max_steps=3, max_tool_calls=3)
    assert model.calls == []


def test_a_registered_but_forbidden_consequential_tool_is_no_misconfiguration() -> None:
    dispatcher = Dispatcher([consequential_probe()], allowed=[])
    record = run_task(ScriptedModel([final("x")]), dispatcher, "t", max_steps=1, max_tool_calls=1)
    assert record.stop_reason is StopReason.FINAL_ANSWER


def test_a_consequential_tool_with_authority_runs_and_a_refusing_authority_is_a_refusal() -> None:
    def refuse(call: ToolCall) -> None:
        raise PermissionError("no")

    for before_write, expected in ((lambda call: None, "executed"), (refuse, "refused")):
        dispatcher = Dispatcher(
            [consequential_probe()], allowed=["place_order"], before_write=before_write
        )
        model = ScriptedModel([turn(ask("c1", "place_order")), final("x")])
        record = run_task(model, dispatcher, "t", max_steps=3, max_tool_calls=3)
        if expected == "executed":
            assert record.executed == ("place_order",)
        else:
            assert record.refused == (("place_order", "tool_failed"),)


def test_the_run_record_is_frozen() -> None:
    record = run_task(
        ScriptedModel([final("x")]), build_tools(SHOP), "t", max_steps=1, max_tool_calls=1
    )
    with pytest.raises(ValidationError):
        record.stop_reason = StopReason.STEP_LIMIT  # type: ignore[misc]
    assert record.requested == ()


def test_stop_reasons_are_exactly_the_named_ones() -> None:
    # Chapter 3's five, then chapter 13's three limits of a run.
    assert [reason.value for reason in StopReason] == [
        "final_answer",
        "step_limit",
        "tool_call_limit",
        "model_error",
        "duplicate_call_id",
        "token_budget",
        "money_budget",
        "deadline",
    ]


class NarrowingDispatcher(Dispatcher):
    """The shop's dispatcher, offering only `list_stock` once any call has been attempted."""

    def __init__(self) -> None:
        shop = build_tools(SHOP)
        super().__init__(shop.tools.values(), allowed=shop.allowed)
        self.narrowed = False

    def schemas(self) -> list[dict[str, Any]]:
        offered = super().schemas()
        if self.narrowed:
            return [tool for tool in offered if tool["function"]["name"] == "list_stock"]
        return offered

    def attempt(self, call: ToolCall) -> ToolOutcome:
        outcome = super().attempt(call)
        self.narrowed = True
        return outcome


def test_the_tools_on_offer_are_asked_for_at_every_step() -> None:
    dispatcher = NarrowingDispatcher()
    model = ScriptedModel(
        [turn(ask("c1", "list_stock")), turn(ask("c2", "list_stock")), final("x")]
    )
    run_task(model, dispatcher, "t", max_steps=5, max_tool_calls=5)
    offered = [[tool["function"]["name"] for tool in tools] for _, tools in model.calls]
    assert offered == [
        ["draft_order", "list_stock", "supplier"],
        ["list_stock"],
        ["list_stock"],
    ]


def test_a_tool_result_with_keys_that_cannot_be_sorted_fails_the_call_not_the_run() -> None:
    # {1: ..., "b": ...} encodes without sort_keys but not with it; the loop
    # sends observations with sorted keys, so the dispatcher must judge the same
    # encoding, or this value would pass its check and crash the loop afterwards.
    mixed = ExecutableTool(
        name="mixed",
        description="Returns a dict whose keys are an int and a str.",
        arguments=NoArguments,
        handler=lambda _: {1: "one", "b": 2},
    )
    dispatcher = Dispatcher([mixed], allowed=["mixed"])
    model = ScriptedModel([turn(ask("call-1", "mixed")), final("done")])

    record = run_task(model, dispatcher, "go", max_steps=3, max_tool_calls=3)

    assert record.stop_reason == StopReason.FINAL_ANSWER
    assert observations(record.messages) == {"call-1": {"ok": False, "error": "tool_failed"}}
    assert record.executed == ("mixed",)
    outcome = dispatcher.attempt(ToolCall(id="x", name="mixed", arguments={}))
    assert outcome.failure is not None and outcome.failure.stage == "result"
