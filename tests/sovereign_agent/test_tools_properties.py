"""Property tests: arbitrary JSON-shaped requests can never make `invoke` misbehave."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from strength import examples

from sovereign_agent.shop import DraftArguments, NoArguments, ProductArguments, build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall

SECRET = "secret-token-71be"
REFUSAL_CODES = {
    "tool_not_allowed",
    "invalid_arguments",
    "write_authority_required",
    "tool_failed",
    "result_too_large",
}
SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
names = st.sampled_from(
    ["list_stock", "supplier", "draft_order", "place_order", "run_shell", "hidden"]
) | st.from_regex(r"[a-zA-Z0-9_-]{1,100}", fullmatch=True)
# Arguments that are often nearly right: the interesting cases sit next to valid ones.
near_arguments = st.fixed_dictionaries(
    {},
    optional={
        "sku": st.sampled_from(["SKU-VANILLA", "SKU-MANGO", "", SECRET]) | json_values,
        "quantity": st.sampled_from([6, 4, 0, 1001, True, "6", 6.0]) | json_values,
        "approved": json_values,
    },
)
arguments = near_arguments | st.dictionaries(st.text(max_size=10), json_values, max_size=5)


class Counting:
    """Wraps a handler and records whether the arguments it received had passed validation."""

    def __init__(self, model: type[BaseModel], result: Any) -> None:
        self.model = model
        self.result = result
        self.received: list[BaseModel] = []

    def __call__(self, args: BaseModel) -> Any:
        self.received.append(args)
        return self.result


def validates(model: type[BaseModel], raw: dict[str, Any]) -> bool:
    try:
        model.model_validate(raw, strict=True)
    except ValidationError:
        return False
    return True


@settings(max_examples=examples(300), deadline=None)
@given(name=names, raw=arguments, bound=st.integers(128, 4096), size=st.integers(0, 5000))
def test_invoke_never_raises_never_leaks_and_respects_the_bound(
    name: str, raw: dict[str, Any], bound: int, size: int
) -> None:
    handlers = {
        "list_stock": Counting(NoArguments, ["SKU"] * (size // 8)),
        "supplier": Counting(ProductArguments, {"blob": "x" * size}),
        "draft_order": Counting(DraftArguments, {"sku": "S", "quantity": 6}),
        "place_order": Counting(ProductArguments, "purchased"),
        "hidden": Counting(NoArguments, "hidden"),
    }
    tools = [
        ExecutableTool(tool, tool, handler.model, handler, consequential=tool == "place_order")
        for tool, handler in handlers.items()
    ]
    dispatcher = Dispatcher(
        tools,
        allowed=["list_stock", "supplier", "draft_order", "place_order"],
        max_result_bytes=bound,
    )
    call = ToolCall(id="call-1", name=name, arguments=raw)

    observation = dispatcher.invoke(call)

    encoded = json.dumps(observation, allow_nan=False)
    assert len(encoded.encode("utf-8")) <= bound
    for tool, handler in handlers.items():
        if tool != name or name == "hidden" or not validates(handler.model, raw):
            assert handler.received == [], f"{tool} ran for a request it should not have"
    if observation["ok"] is False:
        # A refusal is exactly a fixed code: nothing submitted can be echoed in it.
        assert set(observation) == {"ok", "error"}
        assert observation["error"] in REFUSAL_CODES
        assert SECRET not in encoded
    else:
        assert set(observation) == {"ok", "value"}


@settings(max_examples=examples(200), deadline=None)
@given(name=names, raw=arguments)
def test_shop_dispatcher_answers_every_request_with_an_observation(
    name: str, raw: dict[str, Any]
) -> None:
    tools = build_tools(SHOP)
    observation = tools.invoke(ToolCall(id="c", name=name, arguments=raw))
    assert observation["ok"] in (True, False)
    if observation["ok"]:
        assert name in {"list_stock", "supplier", "draft_order"}
        assert validates(
            {
                "list_stock": NoArguments,
                "supplier": ProductArguments,
                "draft_order": DraftArguments,
            }[name],
            raw,
        )
    # However the request went, the shop's stock is what it was.
    report = tools.invoke(ToolCall(id="r", name="list_stock", arguments={}))
    assert [row["on_hand"] for row in report["value"]] == [7, 1, 2]


@settings(max_examples=examples(300), deadline=None)
@given(envelope=st.dictionaries(st.sampled_from(["id", "name", "arguments", "extra"]), json_values))
def test_envelope_validation_only_ever_raises_validation_error(envelope: dict[str, Any]) -> None:
    try:
        call = ToolCall.model_validate(envelope)
    except ValidationError:
        return
    assert set(envelope) == {"id", "name", "arguments"}
    assert isinstance(call.arguments, dict)


class Probe:
    """A handler that records every run, and fails (as a shop would) for an unknown sku."""

    def __init__(self, result: Any) -> None:
        self.runs = 0
        self.result = result

    def __call__(self, args: BaseModel) -> Any:
        self.runs += 1
        if getattr(args, "sku", None) == "SKU-MANGO":
            raise KeyError(f"no price for SKU-MANGO, {SECRET}")
        return self.result


def probe_dispatcher(authority: str, bound: int, size: int) -> tuple[Dispatcher, dict[str, Probe]]:
    probes = {
        "list_stock": (NoArguments, Probe(["SKU"] * (size // 8))),
        "supplier": (ProductArguments, Probe({"blob": "x" * size})),
        "draft_order": (DraftArguments, Probe(float("nan") if size % 7 == 0 else "drafted")),
        "place_order": (ProductArguments, Probe("purchased")),
        "hidden": (NoArguments, Probe("hidden")),
    }

    def refuse(call: ToolCall) -> None:
        raise PermissionError(f"not approved, {SECRET}")

    before_write = {"none": None, "approve": lambda call: None, "refuse": refuse}[authority]
    tools = [
        ExecutableTool(tool, tool, model, probe, consequential=tool == "place_order")
        for tool, (model, probe) in probes.items()
    ]
    dispatcher = Dispatcher(
        tools,
        allowed=["list_stock", "supplier", "draft_order", "place_order"],
        before_write=before_write,
        max_result_bytes=bound,
    )
    return dispatcher, {tool: probe for tool, (_, probe) in probes.items()}


@settings(max_examples=examples(300), deadline=None)
@given(
    name=names,
    raw=arguments,
    authority=st.sampled_from(["none", "approve", "refuse"]),
    bound=st.integers(128, 4096),
    size=st.integers(0, 5000),
)
def test_attempt_says_exactly_whether_a_handler_ran_and_why_it_failed(
    name: str, raw: dict[str, Any], authority: str, bound: int, size: int
) -> None:
    call = ToolCall(id="call-1", name=name, arguments=raw)
    dispatcher, probes = probe_dispatcher(authority, bound, size)
    outcome = dispatcher.attempt(call)
    twin, _ = probe_dispatcher(authority, bound, size)

    # The model's view is unchanged: `invoke` is the outcome's observation.
    assert twin.invoke(call) == outcome.observation
    ran = [tool for tool, probe in probes.items() if probe.runs]
    assert ran == ([name] if outcome.handler_ran else [])
    code = outcome.observation.get("error")
    assert (outcome.failure is not None) == (code == "tool_failed")
    assert bool(outcome.argument_problems) == (code == "invalid_arguments")
    if outcome.failure is not None:
        # A refusing authority is not a failing handler: the stage says which it was.
        assert (outcome.failure.stage == "before_write") == (not outcome.handler_ran)
        assert outcome.failure.error_type in {"PermissionError", "KeyError", "ValueError"}
    if code == "result_too_large":
        assert outcome.handler_ran
    # The operator's detail on arguments names places and rules, never a value sent.
    assert SECRET not in repr(outcome.argument_problems)
    assert SECRET not in json.dumps(outcome.observation, allow_nan=False)
