"""Printed in chapters 2, 4, 7 and 10: the tool layer, the door from a model's request to the shop.

A model never runs anything. It sends a request envelope (`ToolCall`); the
`Dispatcher` decides, in a fixed order of checks, whether that request reaches a
handler. It answers two readers. The model gets a small observation that is
safe to show it again; the operator gets a `ToolOutcome`, which also says
whether the handler ran and, for a failure, what the model must never see.
Errors a caller can act on are values; programming defects raise.

Chapter 4 adds two options, both off unless asked for: safe hints, which let an
`invalid_arguments` observation say which declared field failed and what it
expects (from the schema alone, never from what the model sent), and a
`Setup`, the recipe a trace records so that a replay can build the same
dispatcher again.

Chapter 7 lets a run's tools narrow while it runs, and never widen.
`Dispatcher.scoped(names)` is a dispatcher that allows only what this one
allows and `names` also holds. A handler that returns `Narrow` asks for the
rest of its run to be scoped so; `attempt` works out against its own
allowlist what that keeps, removes and asked for in vain (a `Narrowing`), and
the loop applies it with `scoped`, records it, and tells the trace.

Chapter 10 makes each tool say what it can do (`sovereign_agent.effects`):
`ExecutableTool` gains its effect classes, and chapter 2's `consequential`
is worked out from them, so every earlier tool, and every earlier chapter,
behaves as before.

The definitions below are the ones chapters 2 to 10 print, line for line (a test
compares their syntax trees with the latest learner file that defines them).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sovereign_agent.effects import Effect, classes_of_consequential, needs_authority

__all__ = [
    "EXPECTED_FAILURES",
    "MAX_RESULT_BYTES_LIMITS",
    "OBSERVATION_ENCODER",
    "ArgumentProblem",
    "Dispatcher",
    "ExecutableTool",
    "Narrow",
    "Narrowing",
    "Observation",
    "Setup",
    "ToolCall",
    "ToolFailure",
    "ToolOutcome",
    "parameters_schema",
    "safe_hints",
]

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
    """One tool: what the model is told about it, what it can do, and the code that really runs.

    `effects` are its effect classes, the primary fact; `consequential`,
    chapter 2's boolean, is worked out from them. A tool that declares no
    classes is read by its boolean, exactly as `classes_of_consequential`
    says, and `effect_classes` names what that stands for. Frozen, so that
    ordinary assignment cannot re-point a registered tool at another handler,
    or take a class away; a guard against mistakes, not a wall against code
    that sets out to break it.
    """

    name: str
    description: str
    arguments: type[ArgumentsT]
    handler: Callable[[ArgumentsT], Any]
    consequential: bool = False
    effects: frozenset[Effect] = frozenset()

    def __post_init__(self) -> None:
        if not isinstance(self.effects, frozenset):
            # A string would be read as its letters, a list could change later:
            # refused, as Narrow refuses them.
            raise TypeError(
                f"{self.name}: effects must be a frozenset, not {type(self.effects).__name__}"
            )
        # Effect("spend") raises ValueError naming the bad class: a typo is loud.
        declared = frozenset(Effect(effect) for effect in self.effects)
        object.__setattr__(self, "effects", declared)
        if not declared:
            return
        if self.consequential and not needs_authority(declared):
            # Two declarations that disagree: which one would the dispatcher obey?
            classes = ", ".join(sorted(declared))
            raise ValueError(
                f"{self.name}: consequential, but its classes ({classes}) need no authority"
            )
        object.__setattr__(self, "consequential", needs_authority(declared))

    @property
    def effect_classes(self) -> frozenset[Effect]:
        """What a call can do: the declared classes, or what chapter 2's boolean stands for."""
        return self.effects or classes_of_consequential(self.consequential)

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
class Narrow:
    """What a handler returns to narrow the rest of its run: the value, and the names to keep.

    The model is told `value`, as from any handler. `keep` is a limit, not a
    grant: the run keeps only the names it already allowed and `keep` holds.
    `reason` is for the record: why the run narrowed.
    """

    value: Any
    keep: frozenset[str]
    reason: str

    def __post_init__(self) -> None:
        # A list or a string here would be a defect in the tool: a string would
        # narrow by its letters. Loud, instead of a scope nobody meant.
        if not isinstance(self.keep, frozenset):
            raise TypeError(f"Narrow.keep must be a frozenset, not {type(self.keep).__name__}")


@dataclass(frozen=True)
class Narrowing:
    """One narrowing of a run's tools, for the record: which call caused it, why, what it changed.

    `kept` are the names the run may still use; `removed` the ones it could
    use before and no longer can; `ignored` the names the tool asked to keep
    that the run did not allow: asked for, never granted.
    """

    call_id: str
    tool: str
    reason: str
    kept: tuple[str, ...]
    removed: tuple[str, ...]
    ignored: tuple[str, ...]


@dataclass(frozen=True)
class ToolOutcome:
    """Everything one request came to: what the model is told, and what only the operator sees.

    `observation` is exactly what `invoke` returns. `handler_ran` is True once
    the handler was entered, whatever the observation says: a handler that
    raised, or whose result was too large, still ran. `failure` is set for
    every `tool_failed`, and `argument_problems` for every `invalid_arguments`.
    `narrowing` is set when the handler returned a `Narrow`, whatever the
    model was then told: the run narrows even if the value never reached it.
    """

    observation: Observation
    handler_ran: bool
    failure: ToolFailure | None = None
    argument_problems: tuple[ArgumentProblem, ...] = ()
    narrowing: Narrowing | None = None

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


@dataclass(frozen=True)
class Setup:
    """How to build a dispatcher again: an importable factory and the arguments it was given.

    `factory` is `package.module:function`; `arguments` are the keyword
    arguments, plain JSON data. A trace writes both when a run starts, so a
    replay in another process, on another day, starts from the same tools.
    """

    factory: str
    arguments: Mapping[str, Any]


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

    def scoped(self, names: Iterable[str]) -> Dispatcher:
        """The same tools, authority and bounds; allowed: what this one allows and `names` holds.

        An intersection, so a scope can only narrow: a name this dispatcher
        refuses stays refused, and scoping a scoped dispatcher shrinks it again.
        It has no setup: this one's would build the wider dispatcher.
        """
        if isinstance(names, str):
            # A string is an iterable of letters: scoped("list_stock") would
            # quietly keep nothing. A mistake like that is refused instead.
            raise TypeError("scoped() takes an iterable of tool names, not one string")
        return Dispatcher(
            self._tools.values(),
            allowed=self._allowed & frozenset(names),
            before_write=self._before_write,
            max_result_bytes=self._max_result_bytes,
            hints=self._hints,
        )

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
        narrowing = None
        if isinstance(value, Narrow):
            # The handler asks to narrow the rest of its run. What that keeps,
            # removes and asked for in vain is decided here, against what this
            # dispatcher runs: naming a tool in `keep` never makes it allowed.
            usable = self._usable
            narrowing = Narrowing(
                call_id=call.id,
                tool=call.name,
                reason=value.reason,
                kept=tuple(sorted(usable & value.keep)),
                removed=tuple(sorted(usable - value.keep)),
                ignored=tuple(sorted(value.keep - usable)),
            )
            value = value.value
        # 5. Bound what goes back into the model's context. The handler has
        #    already run by now: this refusal hides a result, it undoes nothing
        #    (and a narrowing the handler asked for still holds).
        #    The encoder escapes every non-ASCII character, so the length of
        #    `encoded` in characters is its size in bytes. It is the very text
        #    the loop sends, so a value whose keys cannot be sorted ({1: "a", "b": 2})
        #    fails here, as the tool's failure, not later inside the loop.
        outcome = ToolOutcome({"ok": True, "value": value}, handler_ran=True, narrowing=narrowing)
        try:
            size = len(outcome.encoded)
        except EXPECTED_FAILURES as error:
            return replace(_failed("result", error, handler_ran=True), narrowing=narrowing)
        if size > self._max_result_bytes:
            return ToolOutcome(_refusal("result_too_large"), handler_ran=True, narrowing=narrowing)
        return outcome
