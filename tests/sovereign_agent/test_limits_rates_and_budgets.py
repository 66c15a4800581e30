"""Rate limits and budgets: a token bucket against a model of it; budgets stop before the request.

The bucket is checked against a reference written with exact fractions, on
times and rates a binary float holds exactly, so the two must agree to the
last bit. Budgets are checked through the loop of chapter 3 with a model
client that reports usage: a request that would certainly overspend is
never sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from strength import examples

from sovereign_agent.limits import (
    Limits,
    MoneyBudgetSpent,
    Price,
    RateLimit,
    RunLimits,
    TokenBucket,
    TokenBudgetSpent,
    VirtualTimeLoop,
)
from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelReply,
    Usage,
)
from sovereign_agent.shop import NoArguments
from sovereign_agent.tools import Dispatcher, ExecutableTool
from sovereign_agent.trace import JsonLinesFile, Recorder, read_trace
from sovereign_agent.trace.summary import format_summary, summarize


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ModelBucket:
    """The reference: exact arithmetic, the rule in its plainest words."""

    def __init__(self, capacity: int, rate: Fraction) -> None:
        self.capacity, self.rate = capacity, rate
        self.tokens, self.at = Fraction(capacity), Fraction(0)

    def take(self, now: Fraction) -> Fraction:
        self.tokens = min(Fraction(self.capacity), self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return Fraction(0)
        return (1 - self.tokens) / self.rate


@settings(max_examples=examples(400), deadline=None)
@given(
    st.integers(1, 5),
    st.sampled_from([Fraction(1, 4), Fraction(1, 2), Fraction(1), Fraction(2), Fraction(8)]),
    st.lists(st.integers(0, 128), max_size=40),
)
def test_the_bucket_agrees_with_its_model(capacity: int, rate: Fraction, steps: list[int]) -> None:
    clock = Clock()
    bucket = TokenBucket(capacity, float(rate), clock)
    model = ModelBucket(capacity, rate)
    now = Fraction(0)
    for step in steps:
        now += Fraction(step, 64)  # times a float holds exactly
        clock.now = float(now)
        assert bucket.take() == float(model.take(now))


def test_a_third_call_within_a_second_waits_half_a_second() -> None:
    clock = Clock()
    bucket = RateLimit(calls=2, per_s=1.0).bucket(clock)
    assert [bucket.take(), bucket.take(), bucket.take()] == [0.0, 0.0, 0.5]
    clock.now = 0.5
    assert bucket.take() == 0.0
    assert bucket.wait_s() == 0.5


def test_a_clock_that_steps_back_grows_nothing() -> None:
    clock = Clock()
    clock.now = 10.0
    bucket = TokenBucket(1, 1.0, clock)
    assert bucket.take() == 0.0
    clock.now = 5.0
    assert bucket.take() == 1.0


@pytest.mark.parametrize(
    "options",
    [
        {"tool_timeout_s": 0},
        {"tool_timeout_s": float("nan")},
        {"max_tokens": 0},
        {"max_pence": 100},  # a money budget with no price
        {"tool_timeouts_s": {"supplier": -1.0}},
        {"deadline_s": "5"},
        {"surprise": 1},
    ],
)
def test_limits_that_make_no_sense_are_refused_when_written(options: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Limits(**options)


def test_a_dated_model_name_is_priced_by_its_family_and_only_up_to_a_hyphen() -> None:
    limits = Limits(prices={"gpt-4": Price(input_pence_per_million=1, output_pence_per_million=2)})
    assert limits.price("gpt-4-0613") is not None
    assert limits.price("gpt-4o") is None


# -- Budgets, through the loop --------------------------------------------


class Metered:
    """A model that asks to look at the freezer every turn, reporting the usage it was given."""

    def __init__(self, usages: Sequence[tuple[int, int]], model: str = "shop-model") -> None:
        self.usages = list(usages)
        self.model = model
        self.requests = 0

    @property
    def label(self) -> str:
        return "metered"

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        given, produced = self.usages[self.requests]
        self.requests += 1
        look = AssistantToolCall(id=f"c{self.requests}", name="look", arguments_json="{}")
        return ModelReply(
            message=AssistantMessage(tool_calls=(look,)),
            model=self.model,
            usage=Usage(input_tokens=given, output_tokens=produced),
        )


def chat(model: Metered, limits: Limits) -> tuple[int, Any]:
    """Ask until a limit says stop: how many requests went out, and the stop."""
    with RunLimits(limits, loop_factory=VirtualTimeLoop) as run:
        guarded = run.model(model)
        for _ in range(len(model.usages)):
            try:
                guarded.complete([], tools=())
            except (TokenBudgetSpent, MoneyBudgetSpent) as stop:
                return model.requests, stop
    return model.requests, None


def test_the_token_budget_stops_before_the_request_that_would_exceed_it() -> None:
    model = Metered([(30, 10), (50, 10), (70, 10)])
    sent, stop = chat(model, Limits(max_tokens=150))
    # 40 spent, the next reads at least 40: sent. 100 spent, the next reads at least 60: not.
    assert sent == 2
    assert isinstance(stop, TokenBudgetSpent)
    assert str(stop) == "token_budget: 100 of 150 tokens spent; the next request reads at least 60"


def test_the_money_budget_counts_integer_pence_per_million_tokens() -> None:
    price = Price(input_pence_per_million=250, output_pence_per_million=1_000)
    limits = Limits(max_pence=1, prices={"shop-model": price})
    # 2,000 in and 100 out: 0.5p + 0.1p = 0.6p; the next reads at least 2,100 tokens (0.525p).
    sent, stop = chat(Metered([(2_000, 100), (2_100, 100)]), limits)
    assert sent == 1
    assert str(stop) == (
        "money_budget: 0.6000 pence of 1 pence spent; the next request costs at least 0.5250 pence"
    )


def test_a_reply_from_a_model_without_a_price_stops_a_run_with_a_money_budget() -> None:
    price = Price(input_pence_per_million=1, output_pence_per_million=1)
    limits = Limits(max_pence=5, prices={"other-model": price})
    sent, stop = chat(Metered([(1, 1), (1, 1)]), limits)
    assert sent == 1 and str(stop) == "money_budget: no price for the model 'shop-model'"


@settings(max_examples=examples(200), deadline=None)
@given(
    st.integers(1, 2_000),
    st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), min_size=1, max_size=12),
)
def test_no_request_goes_out_once_the_next_would_certainly_overspend(
    budget: int, growth: list[tuple[int, int]]
) -> None:
    # A conversation that grows as real ones do: each request reads all the
    # last one read and wrote, plus what the tools answered.
    usages, reading = [], 0
    for extra, produced in growth:
        reading += extra
        usages.append((reading, produced))
        reading += produced
    model = Metered(usages)
    sent, stop = chat(model, Limits(max_tokens=budget))
    spent_before = [sum(a + b for a, b in usages[:n]) for n in range(len(usages) + 1)]
    for n in range(sent):
        # Every request that went out fitted what was known when it went.
        last = usages[n - 1][0] + usages[n - 1][1] if n else 0
        assert spent_before[n] + last <= budget
    if stop is not None:
        last = usages[sent - 1][0] + usages[sent - 1][1]
        assert spent_before[sent] + last > budget


def test_a_run_over_budget_stops_by_the_limits_name_and_the_summary_counts_it(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.jsonl"
    model = Metered([(30, 10), (50, 10), (70, 10)])
    look = ExecutableTool("look", "Look in the freezer.", NoArguments, lambda _: {"tubs": 4})
    with RunLimits(Limits(max_tokens=150), loop_factory=VirtualTimeLoop) as run:
        record = run_task(
            run.model(model),
            run.dispatcher(Dispatcher([look], allowed=["look"])),
            "plan the week",
            max_steps=5,
            max_tool_calls=5,
            recorder=Recorder(JsonLinesFile(trace)),
        )
    assert model.requests == 2
    assert record.executed == ("look", "look")
    assert record.stop_reason is StopReason.TOKEN_BUDGET
    assert record.error == (
        "TokenBudgetSpent: token_budget: 100 of 150 tokens spent; "
        "the next request reads at least 60"
    )
    lines = format_summary(summarize(read_trace(trace)))
    assert "limits: token_budget 1" in lines
    assert "stops: token_budget 1" in lines
