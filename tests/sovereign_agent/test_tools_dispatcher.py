"""The dispatcher's contract: the six checks, in order, and what each refusal leaves untouched."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from sovereign_agent.shop import DraftArguments, NoArguments, ProductArguments
from sovereign_agent.tools import (
    ArgumentProblem,
    Dispatcher,
    ExecutableTool,
    ToolCall,
    ToolFailure,
    ToolOutcome,
)

SECRET = "secret-token-9d41c"


class Recorder:
    """A handler that records every run, so a test can prove it did not run."""

    def __init__(self, result: Callable[[BaseModel], Any] = lambda args: "done") -> None:
        self.runs: list[BaseModel] = []
        self._result = result

    def __call__(self, args: BaseModel) -> Any:
        self.runs.append(args)
        return self._result(args)


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id="call-1", name=name, arguments=arguments)


def single(
    handler: Callable[[BaseModel], Any],
    *,
    arguments: type[BaseModel] = NoArguments,
    consequential: bool = False,
    **dispatcher_options: Any,
) -> Dispatcher:
    tool = ExecutableTool("probe", "A probe.", arguments, handler, consequential=consequential)
    return Dispatcher([tool], allowed=["probe"], **dispatcher_options)


# Construction --------------------------------------------------------------


def test_duplicate_tool_names_are_refused_at_construction() -> None:
    tool = ExecutableTool("probe", "A probe.", NoArguments, Recorder())
    with pytest.raises(ValueError, match="duplicate tool name"):
        Dispatcher([tool, tool], allowed=["probe"])


@pytest.mark.parametrize("bound", [0, 127, 1_048_577, -1, True, 16_384.0, "16384"])
def test_result_bounds_outside_the_range_are_refused(bound: Any) -> None:
    with pytest.raises(ValueError, match="max_result_bytes"):
        single(Recorder(), max_result_bytes=bound)


@pytest.mark.parametrize("bound", [128, 16_384, 1_048_576])
def test_result_bounds_inside_the_range_are_accepted(bound: int) -> None:
    assert single(Recorder(), max_result_bytes=bound).max_result_bytes == bound


def test_registry_is_a_read_only_mapping() -> None:
    dispatcher = single(Recorder())
    assert isinstance(dispatcher.tools, MappingProxyType)
    with pytest.raises(TypeError):
        dispatcher.tools["run_shell"] = dispatcher.tools["probe"]  # type: ignore[index]
    assert list(dispatcher.tools) == ["probe"]


def test_tool_record_is_frozen() -> None:
    tool = ExecutableTool("probe", "A probe.", NoArguments, Recorder())
    with pytest.raises(AttributeError):
        tool.consequential = True  # type: ignore[misc]


def test_schemas_list_only_allowed_tools_sorted_by_name() -> None:
    tools = [
        ExecutableTool(name, f"{name} tool", NoArguments, Recorder())
        for name in ("zeta", "alpha", "hidden", "mid")
    ]
    dispatcher = Dispatcher(tools, allowed=["zeta", "mid", "alpha", "not-registered"])
    names = [schema["function"]["name"] for schema in dispatcher.schemas()]
    assert names == ["alpha", "mid", "zeta"]


def test_schema_parameters_come_from_the_argument_model() -> None:
    tool = ExecutableTool("draft_order", "Draft.", DraftArguments, Recorder())
    schema = tool.schema()
    assert schema["type"] == "function"
    assert schema["function"]["name"] == "draft_order"
    assert schema["function"]["description"] == "Draft."
    parameters = schema["function"]["parameters"]
    assert parameters == DraftArguments.model_json_schema()
    assert parameters["additionalProperties"] is False
    assert parameters["properties"]["quantity"] == {
        "exclusiveMinimum": 0,
        "maximum": 1000,
        "title": "Quantity",
        "type": "integer",
    }


# The request envelope -------------------------------------------------------


@pytest.mark.parametrize(
    "envelope",
    [
        {"id": "", "name": "probe", "arguments": {}},
        {"id": "x" * 201, "name": "probe", "arguments": {}},
        {"id": "c", "name": "", "arguments": {}},
        {"id": "c", "name": "x" * 101, "arguments": {}},
        {"id": "c", "name": "run shell", "arguments": {}},
        {"id": "c", "name": "probe;rm", "arguments": {}},
        {"id": "c", "name": "probe", "arguments": "{}"},
        {"id": 7, "name": "probe", "arguments": {}},
        {"id": "c", "name": "probe", "arguments": {}, "approved": True},
        {"id": "c", "name": "probe"},
    ],
)
def test_malformed_envelopes_are_refused(envelope: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ToolCall.model_validate(envelope)


def test_envelope_at_its_bounds_is_accepted() -> None:
    envelope = {"id": "x" * 200, "name": "A-z_0" + "9" * 95, "arguments": {"k": [1]}}
    assert ToolCall.model_validate(envelope).name == envelope["name"]


# The six checks -----------------------------------------------------------


def test_success_returns_the_value() -> None:
    handler = Recorder(lambda args: {"tubs": 6})
    assert single(handler).invoke(call("probe")) == {"ok": True, "value": {"tubs": 6}}
    assert len(handler.runs) == 1


def test_unknown_and_forbidden_names_get_the_same_refusal() -> None:
    handler = Recorder()
    tools = [
        ExecutableTool("allowed", "Allowed.", NoArguments, handler),
        ExecutableTool("forbidden", "Registered, not allowed.", NoArguments, handler),
    ]
    dispatcher = Dispatcher(tools, allowed=["allowed"])
    unknown = dispatcher.invoke(call("run_shell"))
    forbidden = dispatcher.invoke(call("forbidden"))
    assert unknown == forbidden == {"ok": False, "error": "tool_not_allowed"}
    assert handler.runs == []


def test_name_is_checked_before_arguments() -> None:
    tools = [ExecutableTool("forbidden", "F.", DraftArguments, Recorder())]
    dispatcher = Dispatcher(tools, allowed=[])
    observation = dispatcher.invoke(call("forbidden", quantity="not even close"))
    assert observation == {"ok": False, "error": "tool_not_allowed"}


@pytest.mark.parametrize(
    "arguments",
    [
        {"sku": "SKU-VANILLA", "quantity": True},
        {"sku": "SKU-VANILLA", "quantity": "6"},
        {"sku": "SKU-VANILLA", "quantity": 6.0},
        {"sku": "SKU-VANILLA", "quantity": 0},
        {"sku": "SKU-VANILLA", "quantity": 1001},
        {"sku": "SKU-VANILLA", "quantity": 6, "approved": True},
        {"sku": "", "quantity": 6},
        {"sku": "S" * 101, "quantity": 6},
        {"quantity": 6},
    ],
)
def test_invalid_arguments_never_reach_the_handler(arguments: dict[str, Any]) -> None:
    handler = Recorder()
    observation = single(handler, arguments=DraftArguments).invoke(call("probe", **arguments))
    assert observation == {"ok": False, "error": "invalid_arguments"}
    assert handler.runs == []


def test_bounds_of_the_draft_quantity_are_inclusive_of_1_and_1000() -> None:
    handler = Recorder()
    dispatcher = single(handler, arguments=DraftArguments)
    for quantity in (1, 1000):
        assert dispatcher.invoke(call("probe", sku="S", quantity=quantity))["ok"] is True
    assert [args.quantity for args in handler.runs] == [1, 1000]  # type: ignore[attr-defined]


def test_no_arguments_model_refuses_any_key() -> None:
    handler = Recorder()
    observation = single(handler).invoke(call("probe", anything=1))
    assert observation == {"ok": False, "error": "invalid_arguments"}
    assert handler.runs == []


def test_consequential_tool_without_authority_is_refused_and_never_runs() -> None:
    handler = Recorder()
    observation = single(handler, arguments=ProductArguments, consequential=True).invoke(
        call("probe", sku="SKU-VANILLA")
    )
    assert observation == {"ok": False, "error": "write_authority_required"}
    assert handler.runs == []


def test_arguments_are_checked_before_write_authority() -> None:
    observation = single(Recorder(), arguments=ProductArguments, consequential=True).invoke(
        call("probe", sku=5)
    )
    assert observation == {"ok": False, "error": "invalid_arguments"}


def test_raising_authority_stops_the_handler() -> None:
    handler = Recorder()
    seen: list[ToolCall] = []

    def refuse(request: ToolCall) -> None:
        seen.append(request)
        raise PermissionError(f"refused {SECRET}")

    dispatcher = single(
        handler, arguments=ProductArguments, consequential=True, before_write=refuse
    )
    request = call("probe", sku="SKU-VANILLA")
    observation = dispatcher.invoke(request)
    assert observation == {"ok": False, "error": "tool_failed"}
    assert seen == [request]
    assert handler.runs == []


def test_authority_with_a_defect_propagates_and_the_handler_never_runs() -> None:
    handler = Recorder()

    def broken(request: ToolCall) -> None:
        raise RuntimeError("bug in the authority")

    dispatcher = single(
        handler, arguments=ProductArguments, consequential=True, before_write=broken
    )
    with pytest.raises(RuntimeError):
        dispatcher.invoke(call("probe", sku="SKU-VANILLA"))
    assert handler.runs == []


def test_approving_authority_lets_the_handler_run_after_it() -> None:
    order: list[str] = []
    handler = Recorder(lambda args: order.append("handler") or "purchased")
    dispatcher = single(
        handler,
        arguments=ProductArguments,
        consequential=True,
        before_write=lambda request: order.append("authority"),
    )
    assert dispatcher.invoke(call("probe", sku="S")) == {"ok": True, "value": "purchased"}
    assert order == ["authority", "handler"]
    assert dispatcher.has_write_authority


def test_authority_is_not_consulted_for_a_read_only_tool() -> None:
    consulted: list[ToolCall] = []
    dispatcher = single(Recorder(), before_write=consulted.append)
    assert dispatcher.invoke(call("probe"))["ok"] is True
    assert consulted == []


def test_oversized_result_is_refused_after_the_handler_ran() -> None:
    handler = Recorder(lambda args: "x" * 200)
    observation = single(handler, max_result_bytes=128).invoke(call("probe"))
    assert observation == {"ok": False, "error": "result_too_large"}
    assert len(handler.runs) == 1


def test_result_exactly_at_the_bound_is_delivered() -> None:
    # {"ok": true, "value": "..."} is 26 bytes of envelope around the string.
    envelope = len(json.dumps({"ok": True, "value": ""}))
    handler = Recorder(lambda args: "x" * (128 - envelope))
    assert single(handler, max_result_bytes=128).invoke(call("probe"))["ok"] is True
    handler_over = Recorder(lambda args: "x" * (129 - envelope))
    assert single(handler_over, max_result_bytes=128).invoke(call("probe"))["ok"] is False


@pytest.mark.parametrize("value", [math.nan, math.inf, object(), {1j: "complex key"}])
def test_values_that_are_not_json_become_tool_failed(value: Any) -> None:
    assert single(Recorder(lambda args: value)).invoke(call("probe")) == {
        "ok": False,
        "error": "tool_failed",
    }


@pytest.mark.parametrize(
    "error",
    [ValueError, TypeError, KeyError, PermissionError, TimeoutError, OSError, FileNotFoundError],
)
def test_expected_failures_become_a_code_without_their_message(error: type[Exception]) -> None:
    def failing(args: BaseModel) -> None:
        raise error(f"cannot open /etc/shop.conf with {SECRET}")

    observation = single(failing).invoke(call("probe"))
    assert observation == {"ok": False, "error": "tool_failed"}
    assert SECRET not in json.dumps(observation)


@pytest.mark.parametrize("error", [ZeroDivisionError, RuntimeError, AttributeError, AssertionError])
def test_programming_defects_propagate(error: type[Exception]) -> None:
    def failing(args: BaseModel) -> None:
        raise error("a bug")

    with pytest.raises(error):
        single(failing).invoke(call("probe"))


def test_refusals_are_fresh_dicts_so_callers_cannot_poison_later_ones() -> None:
    dispatcher = single(Recorder())
    first = dispatcher.invoke(call("unknown"))
    first["error"] = "tampered"
    assert dispatcher.invoke(call("unknown")) == {"ok": False, "error": "tool_not_allowed"}


# The outcome the operator sees ------------------------------------------------


def test_invoke_is_the_observation_of_attempt() -> None:
    outcome = single(Recorder(lambda args: {"tubs": 6})).attempt(call("probe"))
    assert outcome == ToolOutcome({"ok": True, "value": {"tubs": 6}}, handler_ran=True)


def test_a_refused_name_reports_that_no_handler_ran() -> None:
    handler = Recorder()
    outcome = single(handler).attempt(call("run_shell"))
    assert outcome == ToolOutcome({"ok": False, "error": "tool_not_allowed"}, handler_ran=False)
    assert handler.runs == []


def test_invalid_arguments_name_each_field_and_rule_but_no_value() -> None:
    outcome = single(Recorder(), arguments=DraftArguments).attempt(
        call("probe", sku=SECRET * 10, quantity="6", approved=True)
    )
    assert outcome.observation == {"ok": False, "error": "invalid_arguments"}
    assert not outcome.handler_ran
    assert outcome.argument_problems == (
        ArgumentProblem(("sku",), "string_too_long"),
        ArgumentProblem(("quantity",), "int_type"),
        ArgumentProblem(("approved",), "extra_forbidden"),
    )
    assert outcome.failure is None
    assert SECRET not in repr(outcome)
    assert "'6'" not in repr(outcome.argument_problems)


def test_a_missing_field_is_named_with_the_kind_missing() -> None:
    outcome = single(Recorder(), arguments=DraftArguments).attempt(call("probe", quantity=6))
    assert outcome.argument_problems == (ArgumentProblem(("sku",), "missing"),)


def test_missing_write_authority_reports_that_no_handler_ran() -> None:
    outcome = single(Recorder(), consequential=True).attempt(call("probe"))
    assert outcome == ToolOutcome(
        {"ok": False, "error": "write_authority_required"}, handler_ran=False
    )


def test_a_refusing_authority_is_told_apart_from_a_failing_handler() -> None:
    def refuse(request: ToolCall) -> None:
        raise PermissionError(f"no operator approved {request.id}")

    def fail(args: BaseModel) -> None:
        raise PermissionError("the supplier refused the order")

    refused = single(Recorder(), consequential=True, before_write=refuse).attempt(call("probe"))
    failed = single(fail, consequential=True, before_write=lambda r: None).attempt(call("probe"))
    # The model is told the same thing both times ...
    assert refused.observation == failed.observation == {"ok": False, "error": "tool_failed"}
    # ... the operator is not.
    assert refused.handler_ran is False
    assert refused.failure == ToolFailure(
        "before_write", "PermissionError", "no operator approved call-1"
    )
    assert failed.handler_ran is True
    assert failed.failure == ToolFailure(
        "handler", "PermissionError", "the supplier refused the order"
    )


def test_a_failing_handler_keeps_its_message_for_the_operator_only() -> None:
    def leaky(args: BaseModel) -> None:
        raise KeyError(SECRET)

    outcome = single(leaky).attempt(call("probe"))
    assert SECRET not in json.dumps(outcome.observation)
    assert outcome.failure == ToolFailure("handler", "KeyError", repr(SECRET))


def test_a_result_that_is_not_json_is_a_failure_after_the_handler_ran() -> None:
    outcome = single(Recorder(lambda args: math.nan)).attempt(call("probe"))
    assert outcome.observation == {"ok": False, "error": "tool_failed"}
    assert outcome.handler_ran is True
    assert outcome.failure is not None
    assert (outcome.failure.stage, outcome.failure.error_type) == ("result", "ValueError")


def test_an_oversized_result_reports_that_the_handler_ran() -> None:
    handler = Recorder(lambda args: "x" * 200)
    outcome = single(handler, max_result_bytes=128).attempt(call("probe"))
    assert outcome == ToolOutcome({"ok": False, "error": "result_too_large"}, handler_ran=True)
    assert len(handler.runs) == 1


def test_the_outcome_record_is_frozen() -> None:
    outcome = single(Recorder()).attempt(call("probe"))
    with pytest.raises(AttributeError):
        outcome.handler_ran = False  # type: ignore[misc]
