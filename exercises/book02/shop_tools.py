"""Exercise Book 2 starter: chapter 2's shop tools, reshaped to the graded interface.

This is the file you saved in chapter 2, with `build_tools` taking the
signature the grader calls: `build_tools(shop, prices, *, extra_tools=(),
allowed=None)`. It works, and it does NOT do the exercises yet: look for the
lines marked `Exercise 1`, `Exercise 2` and `Exercise 3`, and the function marked
`Exercise 4`.

Check your progress at any time (from the repository root):

    uv run python scripts/grade_exercises.py --book 2 exercises/book02

Self-contained: Pydantic and the standard library only. Importing it defines
things and prints nothing.
"""

import copy
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

# Chapter 1's snapshot, copied here so this file runs wherever you save it.
SHOP: dict[str, Any] = {
    "name": "Lucy's Ice Cream",
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ],
}

SUPPLIER = "lucy-local"
CURRENCY = "GBP"
# Integer pence: money is never a float, and never the model's to choose.
PRICES_PENCE: Mapping[str, int] = {
    "SKU-VANILLA": 250,
    "SKU-CHOCOLATE": 300,
    "SKU-STRAWBERRY": 275,
}
SHOP_TOOL_NAMES = ("draft_order", "list_stock", "supplier")


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ProductArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    sku: str = Field(min_length=1, max_length=100)


class DraftArguments(ProductArguments):
    quantity: int = Field(gt=0, le=1000)


def replenishment_need(row: Mapping[str, Any]) -> int:
    """Tubs to order to reach the target; a shop above target needs 0, never a negative."""
    # Exercise 2: rows may carry `reserved` (absent means 0). Count it here.
    return max(0, row["reorder_point"] - row["on_hand"])


def stock_report(products: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every row plus its need, sorted by sku so the report reads the same every time."""
    # Exercise 2: this line works the need out for itself, and so does
    # draft_order below: two copies of one rule, which can drift apart.
    # Make both ask replenishment_need instead.
    rows = [{**row, "needed": max(0, row["reorder_point"] - row["on_hand"])} for row in products]
    return sorted(rows, key=lambda row: row["sku"])


def find_product(products: Iterable[Mapping[str, Any]], sku: str) -> Mapping[str, Any]:
    for row in products:
        if row["sku"] == sku:
            return row
    raise KeyError(sku)


def supplier_quote(prices: Mapping[str, int], sku: str) -> dict[str, Any]:
    """The shop's own price for one sku; an unknown sku fails instead of borrowing a price."""
    if sku not in prices:
        raise KeyError(sku)
    return {
        "sku": sku,
        "supplier": SUPPLIER,
        "currency": CURRENCY,
        "unit_cost_pence": prices[sku],
    }


def draft_order(
    products: Iterable[Mapping[str, Any]], prices: Mapping[str, int], sku: str, quantity: int
) -> dict[str, Any]:
    """A draft for exactly the current need. It buys nothing and changes no stock."""
    row = find_product(products, sku)
    # Exercise 2: the second copy of the rule (see stock_report).
    need = max(0, row["reorder_point"] - row["on_hand"])
    if quantity != need:
        raise ValueError(f"quantity {quantity} does not match the need of {need}")
    quote = supplier_quote(prices, sku)
    return {
        **quote,
        "quantity": quantity,
        "total_pence": quantity * quote["unit_cost_pence"],
        "status": "DRAFT",
    }


Observation = dict[str, Any]

# Failures a handler is expected to raise when a request is wrong for the
# current state of the shop. Anything else is a defect in our own code and
# must stay loud instead of becoming a polite refusal.
EXPECTED_FAILURES: tuple[type[BaseException], ...] = (
    ValueError,
    TypeError,
    KeyError,
    PermissionError,
    TimeoutError,
    OSError,
)

# The smallest bound still fits every refusal and a useful value; the largest
# keeps one observation from swamping a model's context window.
MAX_RESULT_BYTES_LIMITS = (128, 1_048_576)


# Where a `tool_failed` came from: the write authority refusing (the handler
# never ran), the handler raising, or the handler returning a value that is not JSON.
FailureStage = Literal["before_write", "handler", "result"]

# json.dumps given an option builds a new encoder on every call. One encoder,
# built once, encodes every observation: it keeps nothing from one to the next.
OBSERVATION_ENCODER = json.JSONEncoder(sort_keys=True, allow_nan=False)

ArgumentsT = TypeVar("ArgumentsT", bound=BaseModel)


class ToolCall(BaseModel):
    """The request envelope a model sends: which tool, with what, under which id."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=100, pattern=r"^[a-zA-Z0-9_-]+$")
    arguments: dict[str, Any]


@functools.cache
def _schema_text(model: type[BaseModel]) -> str:
    # Pydantic walks the whole model each time it is asked for a schema; one
    # walk per model class is enough. Kept as text, which nothing can change.
    return json.dumps(model.model_json_schema())


def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """An argument model's JSON schema, worked out once and handed out as a fresh copy.

    Each call parses the cached text again, so a caller may change what it
    gets without changing what the next caller, or the next model, is shown.
    """
    schema: dict[str, Any] = json.loads(_schema_text(model))
    return schema


@dataclass(frozen=True)
class ExecutableTool(Generic[ArgumentsT]):
    """One tool: what the model is told about it, and the code that really runs.

    Generic over its argument model, so a type checker sees that the handler
    receives exactly what the dispatcher validated. Frozen, so that ordinary
    assignment cannot re-point a registered tool at another handler, or make it
    non-consequential; it is a guard against mistakes, not a wall against code
    that sets out to break it.
    """

    name: str
    description: str
    arguments: type[ArgumentsT]
    handler: Callable[[ArgumentsT], Any]
    consequential: bool = False

    def schema(self) -> dict[str, Any]:
        """The function schema a model sees; derived from the argument model so it cannot drift."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters_schema(self.arguments),
            },
        }


@dataclass(frozen=True)
class ArgumentProblem:
    """One rule a request's arguments broke: where, and which rule; never the value sent.

    `location` is Pydantic's path into the arguments, `kind` its error type
    (`int_type`, `missing`, `extra_forbidden` ...). For `extra_forbidden` the
    location is a key the model invented: fit for an operator's log, not to be
    repeated to the model.
    """

    location: tuple[str | int, ...]
    kind: str


@dataclass(frozen=True)
class ToolFailure:
    """What lies behind a `tool_failed`: for the operator, never for the model."""

    stage: FailureStage
    error_type: str
    message: str


@dataclass(frozen=True)
class ToolOutcome:
    """Everything one request came to: what the model is told, and what only the operator sees.

    `observation` is exactly what `invoke` returns. `handler_ran` is True once
    the handler was entered, whatever the observation says: a handler that
    raised, or whose result was too large, still ran. `failure` is set for
    every `tool_failed`, and `argument_problems` for every `invalid_arguments`.
    """

    observation: Observation
    handler_ran: bool
    failure: ToolFailure | None = None
    argument_problems: tuple[ArgumentProblem, ...] = ()

    @property
    def encoded(self) -> str:
        """The observation as the model receives it: JSON with sorted keys, encoded once."""
        # The first read encodes and keeps the text in the instance's own
        # __dict__ (a frozen dataclass still has one), so `attempt` measuring
        # the result and the loop answering the model share one encoding.
        # functools.cached_property does the same behind a lock that, on
        # Python 3.11, costs more than the lookup it saves.
        text: str | None = self.__dict__.get("_encoded")
        if text is None:
            text = self.__dict__["_encoded"] = OBSERVATION_ENCODER.encode(self.observation)
        return text


def _refusal(error: str) -> Observation:
    # A refusal carries a fixed code only: never the exception text, never the
    # submitted values, so an observation can neither leak nor be steered.
    return {"ok": False, "error": error}


def _failed(stage: FailureStage, error: BaseException, *, handler_ran: bool) -> ToolOutcome:
    # 6. An expected failure becomes a code for the model; its type and its
    #    message stay with the operator.
    failure = ToolFailure(stage=stage, error_type=type(error).__name__, message=str(error))
    return ToolOutcome(_refusal("tool_failed"), handler_ran=handler_ran, failure=failure)


def _argument_problems(error: ValidationError) -> tuple[ArgumentProblem, ...]:
    # Locations and error types only: the submitted values are left out on purpose.
    return tuple(
        ArgumentProblem(location=tuple(problem["loc"]), kind=problem["type"])
        for problem in error.errors(include_url=False, include_context=False, include_input=False)
    )


class Dispatcher:
    """Runs a requested tool only after every check before it has passed."""

    def __init__(
        self,
        tools: Iterable[ExecutableTool[Any]],
        *,
        allowed: Iterable[str],
        before_write: Callable[[ToolCall], None] | None = None,
        max_result_bytes: int = 16_384,
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
            return ToolOutcome(
                _refusal("invalid_arguments"), handler_ran=False, argument_problems=problems
            )
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
    prices: Mapping[str, int],
    *,
    extra_tools: Iterable[ExecutableTool] = (),
    allowed: Iterable[str] | None = None,
    before_write: Callable[[ToolCall], None] | None = None,
) -> Dispatcher:
    """A dispatcher over its own copy of the shop, so no two runs share stock."""
    # Exercise 1: two rows with the same sku should be refused here (ValueError).
    products = copy.deepcopy(list(shop["products"]))
    price_list = dict(prices)
    tools = [
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
    ]
    # Exercise 3: register `extra_tools` too. They must stay forbidden (no
    # schema, refused when invoked) unless `allowed` names them.
    return Dispatcher(
        tools,
        allowed=SHOP_TOOL_NAMES if allowed is None else allowed,
        before_write=before_write,
    )


# --- Exercise 4 (Unit C): a party's tubs, promised (an open design task) -----------


def reservation_tool(
    shop: Mapping[str, Any], reservations: list[dict[str, Any]]
) -> ExecutableTool[Any]:
    """Exercise 4: the `reserve_tubs` tool (arguments `sku` and `tubs`), as Unit C's list says.

    Each reservation it makes is appended to `reservations` as
    {"sku", "tubs"}. The design is yours (Unit C): its argument model, its
    checks, what it answers. For now there is no such tool.
    """
    raise NotImplementedError("Exercise 4: design the reserve_tubs tool")
