"""Support the book does not print: an evaluation suite in TOML (shop, slips, variants, tasks).

    name = "Lucy's morning re-order"
    max_steps = 6
    max_tool_calls = 10

    [shop]                      # the shop every task starts from
    products = [{ sku = "SKU-VANILLA", name = "Vanilla", on_hand = 2, reorder_point = 8 }, ...]
    prices = { SKU-VANILLA = 250, ... }

    [model]                     # the offline stand-in, and how often it slips
    quantity_as_text = 0.2
    invented_tool = 0.1
    wrong_sku = 0.1

    [[variants]]                # what is compared: the tools' descriptions, hints, code
    name = "full descriptions"
    descriptions = "full"       # full | names | shuffled
    hints = false
    factory = "sovereign_agent.evaluate.variants:variant_tools"   # the default

    [[tasks]]
    name = "morning plan"
    text = "Plan this morning's re-order."
    stock = { SKU-VANILLA = 9 } # optional: on_hand for this task only
    [tasks.expect]              # optional keys, each one check
    stop_reason = "final_answer"
    drafts = { SKU-VANILLA = 6, SKU-STRAWBERRY = 4 }
    total_pence = 2600
    on_hand = { SKU-VANILLA = 2 }
    steps_at_most = 4
    never_executed = ["place_order"]

    [limits]                    # optional: chapter 13's limits, for every run
    max_tokens = 2000           # any field of `sovereign_agent.limits.Limits`
    deadline_s = 30

A task may expect any stop reason the loop names (`StopReason`), chapter 13's
`token_budget`, `money_budget` and `deadline` among them. Those three need
the limit that makes them in `[limits]` (`max_tokens`, `max_pence` with its
`prices`, `deadline_s`): without it the run could never stop so, and the
suite is refused rather than fail every run. The offline stand-in reports no
token counts, so under a token or money budget it stops at its first reply,
as any model that reports none does; a real model reports them.

A mistake in a suite is reported with the file and the key that holds it,
never turned into a default: a suite that silently checks less than it says
would measure nothing while looking as if it did. A suite names code to run
(its factories), so it is a program: run only suites you trust.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from sovereign_agent.limits import Limits
from sovereign_agent.loop import StopReason
from sovereign_agent.trace.inputs import MAX_DEPTH, InputError, depth_problem, read_regular_text

__all__ = [
    "DEFAULT_FACTORY",
    "Expectations",
    "ModelSlips",
    "Suite",
    "SuiteError",
    "Task",
    "Variant",
    "load_suite",
]

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)

Count = Annotated[int, Field(ge=0)]
Chance = Annotated[float, Field(ge=0.0, le=1.0)]
Name = Annotated[str, Field(min_length=1, max_length=80)]


class SuiteError(Exception):
    """A suite that cannot be used as written: names the file and the key."""


class Product(BaseModel):
    model_config = _STRICT

    sku: Name
    name: Name
    on_hand: Count
    reorder_point: Count


class ShopFixture(BaseModel):
    model_config = _STRICT

    products: list[Product] = Field(min_length=1)
    prices: dict[str, Annotated[int, Field(gt=0)]]

    @model_validator(mode="after")
    def _one_row_per_sku(self) -> ShopFixture:
        skus = [product.sku for product in self.products]
        if len(set(skus)) != len(skus):
            raise ValueError("a sku is listed twice")
        return self


class ModelSlips(BaseModel):
    """How often the offline stand-in slips, each a chance per call it writes."""

    model_config = _STRICT

    quantity_as_text: Chance = 0.0
    invented_tool: Chance = 0.0
    wrong_sku: Chance = 0.0


DEFAULT_FACTORY = "sovereign_agent.evaluate.variants:variant_tools"


class Variant(BaseModel):
    """One way of building the tools: how they are described, hints, and which code builds them.

    `factory` names a function (`package.module:function`, or `file.py:function`
    beside the suite) called as `factory(shop, prices, descriptions=..., hints=...)`
    that returns a dispatcher: to compare two versions of the tools' code, or to
    plant a regression and check that the suite notices.
    """

    model_config = _STRICT

    name: Name
    descriptions: Literal["full", "names", "shuffled"] = "full"
    hints: bool = False
    factory: str = Field(default=DEFAULT_FACTORY, pattern=r"^[\w./-]+:\w+$")


# Every reason a run can stop with, in the loop's order.
STOP_REASONS = tuple(reason.value for reason in StopReason)

# The stops chapter 13's limits make, and the field of `Limits` each needs set.
LIMIT_STOPS = {
    StopReason.TOKEN_BUDGET.value: "max_tokens",
    StopReason.MONEY_BUDGET.value: "max_pence",
    StopReason.DEADLINE.value: "deadline_s",
}


class Expectations(BaseModel):
    """What must hold at the end of a run; a key left out is not checked."""

    model_config = _STRICT

    # Text, checked against the loop's own list: strict validation takes no
    # enum from TOML, and a new stop reason needs no second list here.
    stop_reason: str | None = None
    drafts: dict[str, Annotated[int, Field(gt=0)]] | None = None
    total_pence: Count | None = None
    on_hand: dict[str, Count] | None = None
    steps_at_most: Annotated[int, Field(ge=1)] | None = None
    never_executed: list[Name] | None = None

    @field_validator("stop_reason")
    @classmethod
    def _a_stop_the_loop_names(cls, value: str | None) -> str | None:
        if value is not None and value not in STOP_REASONS:
            raise ValueError(
                f"unknown stop reason {value!r}; a run stops with one of: {', '.join(STOP_REASONS)}"
            )
        return value


class Task(BaseModel):
    model_config = _STRICT

    name: Name
    text: str = Field(min_length=1)
    stock: dict[str, Count] = Field(default_factory=dict)
    expect: Expectations

    @model_validator(mode="after")
    def _expects_something(self) -> Task:
        if not self.expect.model_fields_set:
            raise ValueError("[tasks.expect] checks nothing; a task must expect something")
        return self


class Suite(BaseModel):
    model_config = _STRICT

    name: Name
    max_steps: Annotated[int, Field(ge=1, le=100)]
    max_tool_calls: Annotated[int, Field(ge=1, le=1000)]
    system: str | None = None
    shop: ShopFixture
    model: ModelSlips = ModelSlips()
    variants: list[Variant] = Field(min_length=1)
    tasks: list[Task] = Field(min_length=1)
    limits: Limits | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Suite:
        known = {product.sku for product in self.shop.products}
        for label, names in (
            ("variants", [variant.name for variant in self.variants]),
            ("tasks", [task.name for task in self.tasks]),
        ):
            if len(set(names)) != len(names):
                raise ValueError(f"two {label} share a name")
        for task in self.tasks:
            for field, skus in (
                ("stock", task.stock),
                ("expect.drafts", task.expect.drafts or {}),
                ("expect.on_hand", task.expect.on_hand or {}),
            ):
                unknown = sorted(set(skus) - known)
                if unknown:
                    raise ValueError(
                        f"task {task.name!r}: {field} names an unknown sku {unknown[0]}"
                    )
            needed = LIMIT_STOPS.get(task.expect.stop_reason or "")
            if needed is not None and getattr(self.limits, needed, None) is None:
                # Without the limit no run can stop so: every run would fail
                # the expectation, and the suite would measure nothing.
                raise ValueError(
                    f"task {task.name!r}: expect.stop_reason {task.expect.stop_reason} "
                    f"needs [limits] {needed}"
                )
        return self


def _key(location: tuple[int | str, ...]) -> str:
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "(the whole suite)"


def load_suite(path: Path) -> Suite:
    """The suite in `path`, checked; any mistake is a SuiteError naming the file and the key.

    Only a regular file is read (a FIFO is refused at once), and a suite
    nested deeper than any suite needs is refused with the file, not a
    traceback.
    """
    try:
        text = read_regular_text(path)
    except InputError as error:
        raise SuiteError(str(error)) from None
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SuiteError(f"{path}: not valid TOML: {error}") from None
    except RecursionError:
        # tomllib recurses once per nested array or inline table, and a
        # few hundred brackets reach Python's limit; the line is not known.
        raise SuiteError(f"{path}: nested deeper than {MAX_DEPTH} levels") from None
    # Dotted keys (a.b.c... = 1) nest without recursing: checked on the result.
    too_deep = depth_problem(data)
    if too_deep is not None:
        raise SuiteError(f"{path}: {too_deep}")
    try:
        suite = Suite.model_validate(data)
    except ValidationError as error:
        problems = error.errors(include_url=False, include_input=False)
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        message = first["msg"].removeprefix("Value error, ")
        raise SuiteError(f"{path}: {_key(tuple(first['loc']))}: {message}{more}") from None
    # A factory in a file is found beside the suite, wherever the command runs.
    variants = [
        variant.model_copy(update={"factory": str(path.parent / variant.factory)})
        if variant.factory.split(":")[0].endswith(".py")
        and not Path(variant.factory.split(":")[0]).is_absolute()
        else variant
        for variant in suite.variants
    ]
    return suite.model_copy(update={"variants": variants})
